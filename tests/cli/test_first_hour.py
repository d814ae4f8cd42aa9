"""What a newcomer meets in the first hour: every wrong path, spec or value is one line with a
status of one meaning, before any work runs; nothing is merged or overwritten silently."""

from __future__ import annotations

import json

import pytest
from systolic.sweeps.results import load_results
from systolic.workloads.markdown import md_escape

from systolic.cli import build_parser, main
from systolic.cli.options import EXIT_STATUSES

from ..helpers import TINY, run_cli, write_spec

_SPEC_ARGS = {"sweep": ["spec.yaml"], "serve": ["study.yaml"], "report": ["results.jsonl"],
              "generate": ["--dataflow", "ws", "--rows", "2", "--cols", "2"],
              "quantize": []}  # fmt: skip


@pytest.mark.parametrize("command", sorted(_SPEC_ARGS))
def test_an_existing_file_where_a_folder_is_wanted_is_one_line(command, tmp_path, capsys):
    taken = tmp_path / "taken"
    taken.write_text("")
    assert main([command, *_SPEC_ARGS[command], "--out", str(taken)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (f"systolic {command}: argument --out: {taken} is a file, not a folder "
                           f"(see systolic {command} --help)")  # fmt: skip
    assert main([command, *_SPEC_ARGS[command], "--out", str(taken / "below")]) == 2
    assert f"{taken} is a file, so {taken / 'below'} cannot be a folder" in capsys.readouterr().err


def test_a_folder_where_a_file_is_wanted_is_one_line_before_any_case_runs(tmp_path, capsys,
                                                                          monkeypatch):  # fmt: skip
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"dataflow": "ws", "rows": 2, "cols": 2}))
    assert main(["regress", str(config), "--junit", str(tmp_path)]) == 2
    assert f"argument --junit: {tmp_path} is a folder, not a file" in capsys.readouterr().err
    for option in ("--waves", "--trace"):
        assert main(["sim", "--dataflow", "ws", "--rows", "2", "--cols", "2", "--m", "2", "--k",
                     "2", "--n", "2", option, str(tmp_path)]) == 2  # fmt: skip
        assert "is a folder, not a file" in capsys.readouterr().err
    # the default report name, taken by a folder: refused before any case is built or run
    monkeypatch.chdir(tmp_path)
    (tmp_path / "regress-ws-2x2-i8-acc32-s7.xml").mkdir()
    assert main(["regress", str(config), "--seed", "7"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("systolic regress: regress-ws-2x2-i8-acc32-s7.xml is a folder, not a file "
                   "(choose another with --junit)")  # fmt: skip


def test_every_help_lists_the_exit_statuses():
    parser = build_parser()
    assert EXIT_STATUSES in parser.format_help()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, command in sub.choices.items():
        assert EXIT_STATUSES in command.format_help(), name


def test_rtl_commands_name_the_rtl_limits(capsys):
    assert main(["sim", "--dataflow", "ws", "--rows", "1000", "--cols", "2", "--m", "2", "--k",
                 "2", "--n", "2"]) == 2  # fmt: skip
    assert capsys.readouterr().err.strip() == (
        "systolic sim: --rows: rows = 1000 is beyond what the RTL generator builds (1 to 64); the "
        "analytical model (systolic model, model-only sweep points) takes up to 512"
    )
    # the model's own command takes what the model takes, and names its limit past it
    assert main(["model", "--dataflow", "ws", "--rows", "1000", "--cols", "2", "--m", "2",
                 "--k", "2", "--n", "2"]) == 2  # fmt: skip
    assert "rows must be an integer between 1 and 512, not 1000" in capsys.readouterr().err


def test_a_wrong_value_type_is_usage_and_any_other_type_error_is_a_bug(tmp_path, capsys,
                                                                       monkeypatch):  # fmt: skip
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"dataflow": "ws", "rows": "2", "cols": 2}))
    assert main(["model", "--config", str(config), "--m", "2", "--k", "2", "--n", "2"]) == 2
    assert "rows must be an integer between 1 and 512, not '2'" in capsys.readouterr().err
    from systolic.cli import model

    def broken(args):
        return len(None)  # a bug: it must show its traceback, not pass for a usage error

    monkeypatch.setattr(model, "run", broken)
    with pytest.raises(TypeError):
        main(["model", "--dataflow", "ws", "--rows", "2", "--cols", "2", "--m", "2", "--k", "2",
              "--n", "2"])  # fmt: skip


def test_markdown_escapes_what_came_from_a_spec():
    assert md_escape("t<script>x|y_z*") == r"t&lt;script&gt;x\|y\_z\*"
    assert md_escape("a & b [c](d) `e` #f \\") == r"a &amp; b \[c\](d) \`e\` \#f \\"


def test_a_resume_from_another_spec_is_refused_and_the_title_is_the_specs_name(tmp_path):
    """A model-only tiny sweep in a folder not named after it: its report's title is the spec's
    name (escaped in Markdown); a resume with a changed depth is refused naming it, and the
    results stay as they were."""
    spec = write_spec(tmp_path, TINY.replace("rtl: all", "rtl: none")
                      .replace("name: tiny", "name: t<b>|x"))  # fmt: skip
    out = tmp_path / "out"
    first = run_cli("sweep", str(spec), "--out", str(out), "--quiet")
    assert first.returncode == 0, first.stderr
    assert (out / "report.md").read_text().startswith("# Sweep report: t&lt;b&gt;\\|x\n")
    assert "<title>Sweep report: t&lt;b&gt;|x" in (out / "report.html").read_text()
    before = (out / "results.jsonl").read_text()
    other = tmp_path / "other"
    other.mkdir()
    changed = write_spec(other, spec.read_text().replace("depth: [1024]", "depth: [512]"))
    again = run_cli("sweep", str(changed), "--out", str(out), "--resume", "--quiet")
    assert again.returncode == 2
    assert again.stderr.strip().endswith(
        f"{out / 'results.jsonl'} holds the results of another spec: {changed} differs from "
        f"{out / 'spec.yaml'} in configs.depth[0]; choose another --out (nothing was run)"
    )
    assert (out / "results.jsonl").read_text() == before
    assert len(load_results(out / "results.jsonl")) == 4
