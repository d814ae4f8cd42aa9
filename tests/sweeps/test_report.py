"""sweeps/report: the report's data (checked as data, not by parsing HTML), its rendering, and
the report command on a sweep's results."""

from __future__ import annotations

import json

import pytest
from systolic.sweeps.report import report_data
from systolic.sweeps.report.render import render
from systolic.sweeps.results import load_results

from ..helpers import TINY, run_cli, write_spec


@pytest.fixture
def model_sweep(tmp_path):
    """The tiny sweep, model only: 2 configurations x 2 workloads."""
    out = tmp_path / "out"
    spec = write_spec(tmp_path, TINY.replace("rtl: all", "rtl: none"))
    assert run_cli("sweep", str(spec), "--out", str(out)).returncode == 0
    return out


def test_report_command(model_sweep):
    out = model_sweep
    (out / "report.md").unlink()
    r = run_cli("report", str(out / "results.jsonl"))
    assert r.returncode == 0, r.stderr
    assert (out / "report.md").exists()
    assert json.loads((out / "results.jsonl").read_text().splitlines()[0])["kind"] == "model"


def test_report_data_says_what_the_records_hold(model_sweep):
    records = load_results(model_sweep / "results.jsonl")
    data = report_data(records, "tiny")
    assert data.title == "Sweep report: tiny"
    assert data.intro.startswith("4 points (0 simulated in RTL with toggle-based energy, 4 from")
    assert len(data.points_table.rows) == 4 and data.failures is None
    assert all(len(row) == len(data.points_table.head) for row in data.points_table.rows)
    # every point's cycles in the table are the records' own
    at = data.points_table.head.index("cycles")
    cycles = sorted(int(row[at].replace(",", "")) for row in data.points_table.rows)
    assert cycles == sorted(r["cycles"] for r in records if r["kind"] == "model")
    assert data.front.rows and {row[1] for row in data.front.rows} <= {
        r["config_name"] for r in records
    }
    assert any("Lowest energy per inference" in line for line in data.summary)
    # the markdown shows exactly that data: the same rows, in the same order
    md = render(data, {}, "md")
    for row in data.points_table.rows:
        assert "| " + " | ".join(row) + " |" in md
    html = render(data, {}, "html")
    assert html.count("<tr>") == 1 + len(data.front.rows) + 1 + len(data.points_table.rows)


def test_no_results_is_a_clear_error(tmp_path):
    (tmp_path / "results.jsonl").write_text("")
    r = run_cli("report", str(tmp_path / "results.jsonl"))
    assert r.returncode == 2 and "no results to report" in r.stderr
    assert "Traceback" not in r.stderr
