"""sweeps/report: the report command on a sweep's results."""

from __future__ import annotations

import json

from ..helpers import TINY, run_cli, write_spec


def test_report_command(tmp_path):
    out = tmp_path / "out"
    assert run_cli("sweep", str(write_spec(tmp_path, TINY.replace("rtl: all", "rtl: none"))),
                     "--out", str(out)).returncode == 0  # fmt: skip
    (out / "report.md").unlink()
    r = run_cli("report", str(out / "results.jsonl"))
    assert r.returncode == 0, r.stderr
    assert (out / "report.md").exists()
    assert json.loads((out / "results.jsonl").read_text().splitlines()[0])["kind"] == "model"
