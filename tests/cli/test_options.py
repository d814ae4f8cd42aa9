"""Options every subcommand shares: one clear line and exit status 2 for every bad value, and
--help that explains every option."""

from __future__ import annotations

import pytest

from ..helpers import coefficients_with, run_cli


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["generate", "--dataflow", "xs", "--rows", "2", "--cols", "2"],
            "argument --dataflow: invalid choice: 'xs'",
        ),
        (
            ["generate", "--dataflow", "ws", "--rows", "0", "--cols", "2"],
            "rows must be an integer between 1 and 64 (the RTL generator's), not 0",
        ),
        (
            ["generate", "--dataflow", "ws", "--rows", "65", "--cols", "2"],
            "rows = 65 is beyond what the RTL generator builds (1 to 64); the analytical model",
        ),
        (
            ["generate", "--dataflow", "ws", "--rows", "2", "--cols", "2", "--b-width", "40"],
            "b_width must be an integer between 2 and 16, not 40",
        ),
        (["generate", "--dataflow", "ws", "--rows", "2"], "--cols is required"),
        (["generate", "--rows", "two"], "argument --rows: invalid int value: 'two'"),
        (["generate", "--config", "missing.json"], "cannot read --config missing.json"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (
            [
                "model",
                "--dataflow",
                "ws",
                "--rows",
                "2",
                "--cols",
                "2",
                "--m",
                "2",
                "--k",
                "2",
                "--n",
                "2",
                "--clock-mhz",
                "0",
            ],
            "argument --clock-mhz: must be a positive number",
        ),
    ],
)
def test_bad_options_exit_2_with_one_line(tmp_path, args, message):
    r = run_cli(*args, cwd=tmp_path)
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], r.stderr
    assert "Traceback" not in r.stderr


def test_help_explains_every_option():
    r = run_cli("generate", "--help")
    assert r.returncode == 0
    for option in (
        "--dataflow",
        "--rows",
        "--cols",
        "--a-width",
        "--b-width",
        "--a-unsigned",
        "--b-unsigned",
        "--acc-width",
        "--out",
        "--lint",
        "--config",
        "--design",
    ):
        assert option in r.stdout


def test_cli_bad_coefficients_file(tmp_path):
    bad = coefficients_with(tmp_path, "per_pe = { value = 0.01", "per_pe = { value = -1")
    r = run_cli("sim", "--dataflow", "ws", "--rows", "2", "--cols", "2", "--m", "2", "--k", "2",
                  "--n", "2", "--energy", "--coefficients", str(bad))  # fmt: skip
    assert r.returncode == 2
    assert "leakage.per_pe: value must be >= 0" in r.stderr
    assert "Traceback" not in r.stderr


#: What parsing the command line must not import: the stacks behind the subcommands' work
#: (scikit-learn, Dask, cocotb, plotting, ONNX) load in the subcommand that uses them.
HEAVY = ("sklearn", "dask", "distributed", "cocotb", "cocotb_tools", "matplotlib", "pandas",
         "onnx", "onnxruntime", "plotly")  # fmt: skip


def test_parsing_the_command_line_imports_no_heavy_stack():
    """`systolic --help` and a mistyped option answer in about a second: building every
    subcommand's parser and failing on a bad option loads none of the heavy libraries."""
    import subprocess
    import sys

    code = ("import sys, systolic.cli as c\n"
            "status = c.main(['sim', '--dataflow', 'xs'])\n"
            "print(status, sorted({m.split('.')[0] for m in sys.modules}))")  # fmt: skip
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    status, loaded = r.stdout.split(" ", 1)
    assert status == "2", r.stdout + r.stderr
    assert "systolic" in loaded
    assert not [m for m in HEAVY if f"'{m}'" in loaded], loaded


def _subcommands() -> dict:
    import argparse

    from systolic.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_every_subcommand_follows_one_convention():
    """The clock in MHz wherever a command takes one; a seed drawn (and printed) when not given;
    --json on every command; the configuration's required options say so in --help."""
    commands = _subcommands()
    assert set(commands) >= {"generate", "sim", "model", "compare", "regress", "synth", "sweep",
                             "report", "serve", "quantize", "accuracy"}  # fmt: skip
    for name, parser in commands.items():
        flags = {f: a for a in parser._actions for f in a.option_strings}
        clocks = {f for f in flags if "clock" in f}
        assert clocks <= {"--clock-mhz"}, (name, clocks)
        if "--seed" in flags:
            assert flags["--seed"].default is None, name  # drawn, not a fixed 0
        assert "--json" in flags, name
        if "--dataflow" in flags:
            help_text = parser.format_help()
            assert "required, unless --config" in help_text, name


def test_a_seed_not_given_is_drawn_and_printed(capsys):
    import argparse

    from systolic.cli.options import seed_of

    args = argparse.Namespace(seed=None, command="compare")
    seed = seed_of(args)
    assert 0 <= seed < 2**31 and args.seed == seed
    assert f"systolic compare: seed {seed} (replay with --seed {seed})" in capsys.readouterr().err
    assert seed_of(argparse.Namespace(seed=7, command="compare")) == 7
    assert capsys.readouterr().err == ""  # a given seed is not announced


def test_a_sweep_and_its_report_print_json(tmp_path):
    """--json on stdout, one document; the human lines on stderr."""
    import json

    spec = tmp_path / "s.yaml"
    spec.write_text("name: j\nconfigs: {dataflow: [ws], array: [2x2]}\n"
                    "workloads: [{gemm: {m: 8, k: 8, n: 8}}]\n")  # fmt: skip
    r = run_cli("sweep", str(spec), "--out", str(tmp_path / "out"), "--quiet", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (doc["name"], doc["points"], doc["failed"]) == ("j", 1, 0)
    assert "report:" in r.stderr
    again = run_cli("report", doc["results"], "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["files"]["html"].endswith("report.html")
