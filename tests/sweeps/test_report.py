"""sweeps/report: the report's data (checked as data, not by parsing HTML), its rendering, and
the report command on a sweep's results."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from systolic.sweeps.report import report_data
from systolic.sweeps.report.render import render
from systolic.sweeps.results import load_results

from ..helpers import TINY, computed_once, run_cli, write_spec


@pytest.fixture
def model_sweep(tmp_path):
    """The tiny sweep, model only: 2 configurations x 2 workloads (run once a test run; each
    test gets a copy of its folder)."""
    out = tmp_path / "out"
    shutil.copytree(computed_once("report-model-sweep", _model_sweep), out)
    return out


def _model_sweep() -> Path:
    folder = Path(tempfile.mkdtemp(dir=os.environ["SYSTOLIC_RUN_DIR"]))
    spec = write_spec(folder, TINY.replace("rtl: all", "rtl: none"))
    r = run_cli("sweep", str(spec), "--out", str(folder / "out"))
    assert r.returncode == 0, r.stderr
    return folder / "out"


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
    # the answers come first, each pointing at a section the page has
    assert [a.topic for a in data.answers][:2] == ["Lowest energy per inference", "Lowest latency"]
    # who wins where: each cell the best dataflow of the records, its margin the runner-up's
    points = [r for r in records if r["kind"] == "model"]
    for m in data.matrices:
        lower = m.figure in ("energy_per_inference_pj", "latency_s")
        assert m.columns == ["2x2 int8"] and sorted(m.rows) == ["gemm 3x9x4", "gemm 8x6x5"]
        for name, (cell,) in zip(m.rows, m.cells, strict=True):
            values = {r["dataflow"]: r[m.figure] for r in points if r["workload"]["name"] == name}
            ranked = sorted(values, key=values.get, reverse=not lower)
            assert cell.winner == ranked[0] and cell.runner_up == ranked[1]
            ratio = values[ranked[1]] / values[ranked[0]]
            assert cell.margin == pytest.approx(ratio - 1 if lower else 1 / ratio - 1)
    # the markdown shows exactly that data: the same rows, in the same order
    md = render(data, {}, "md")
    for row in data.points_table.rows:
        assert "| " + " | ".join(row) + " |" in md
    html = render(data, {}, "html")
    tables = [data.front, data.points_table, data.weight_bandwidth, data.buffer_pressure,
              data.loop_orders, data.inference]  # fmt: skip
    # each workload's whole inference: never faster than its GEMMs, nor better used
    assert len(data.inference.rows) == 2
    for row in data.inference.rows:
        assert float(row[2]) >= float(row[3]) and float(row[4][:-1]) <= float(row[5][:-1])
    assert "Whole inference" in [a.topic for a in data.answers]
    matrix_rows = sum(1 + len(m.rows) for m in data.matrices)
    assert html.count("<tr>") == sum(1 + len(t.rows) for t in tables) + matrix_rows
    for a in data.answers:
        assert f'id="{a.anchor}"' in html, a
    assert html.count('class="plot"') == 1  # the interactive Pareto (no batch profile here)


def test_weight_bandwidth_buffer_pressure_and_loop_order_tables(model_sweep):
    """The memory questions' tables, against facts derived from the workloads alone: every
    weight crosses from DRAM at least once (K x N bytes at int8, times the GEMM's count), the
    bandwidth at a rate is those bytes times the rate, nothing is read less than once, and
    each layer's loop orders are all there with one marked fastest."""
    data = report_data(load_results(model_sweep / "results.jsonl"), "tiny")
    weights = {"gemm 8x6x5": 6 * 5, "gemm 3x9x4": 9 * 4 * 3}  # TINY's workloads
    t = data.weight_bandwidth
    assert sorted(row[0] for row in t.rows) == sorted(weights)
    for row in t.rows:
        mb = float(row[3])
        assert mb * 1e6 >= weights[row[0]]
        for rate, cell in zip((10, 100, 1000), row[5:], strict=True):
            assert float(cell) == pytest.approx(mb * rate / 1e3, rel=1e-2)
    t = data.buffer_pressure
    assert {row[1] for row in t.rows} == {"8x6x5", "3x9x4"}
    for row in t.rows:
        assert float(row[-1]) >= 1 and float(row[-2]) >= 1
        assert float(row[5]) == pytest.approx(float(row[3]) / float(row[4]), rel=1e-2)
    t = data.loop_orders
    assert t.head[2:] == ["nmk", "mnk", "nkm", "knm", "mkn", "kmn"]
    assert all(sum(cell.endswith(" *") for cell in row[2:]) == 1 for row in t.rows)


def test_no_results_is_a_clear_error(tmp_path):
    (tmp_path / "results.jsonl").write_text("")
    r = run_cli("report", str(tmp_path / "results.jsonl"))
    assert r.returncode == 2 and "no results to report" in r.stderr
    assert "Traceback" not in r.stderr


def test_a_long_table_of_points_goes_to_a_csv_file(model_sweep, tmp_path):
    """Past TABLE_ROWS points the report links points.csv instead of tabulating them; the CSV
    always holds every point."""
    import csv

    from systolic.sweeps.report.content import TABLE_ROWS
    from systolic.sweeps.report.render import write_report

    records = load_results(model_sweep / "results.jsonl")
    many = tmp_path / "many" / "results.jsonl"
    many.parent.mkdir()
    copies = [dict(r, id=f"{r['id']}#{i}") for i in range(TABLE_ROWS // len(records) + 1)
              for r in records]  # fmt: skip
    many.write_text("".join(json.dumps(r) + "\n" for r in copies))
    for results, count in ((model_sweep / "results.jsonl", len(records)), (many, len(copies))):
        paths = write_report(results)
        rows = list(csv.reader(paths["csv"].open()))
        assert len(rows) == count + 1 and rows[0][:2] == ["configuration", "workload"]
        html = paths["html"].read_text()
        linked = "points.csv" in html and "too many to read here" in html
        assert linked == (count > TABLE_ROWS), count


def test_identical_series_are_drawn_once():
    from systolic.sweeps.report.interactive import merge_series

    series = {"WS 8x8 int8": ([1, 2, 4], [3.0, 2.0, 1.0]),
              "OS 8x8 int8": ([1, 2, 4], [3.0, 2.5, 1.0]),
              "WS 16x16 int8": ([1, 2, 4], [3.0, 2.0, 1.0])}  # fmt: skip
    merged = merge_series(series)
    assert [labels for labels, _, _ in merged] == [["WS 8x8 int8", "WS 16x16 int8"],
                                                   ["OS 8x8 int8"]]  # fmt: skip
    assert merged[1][2] == [3.0, 2.5, 1.0]
