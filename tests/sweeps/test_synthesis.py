"""sweeps/synthesis.py: ``synth: true`` synthesizes each configuration once, every point of it
runs at its Fmax with its area, and area joins the Pareto objectives."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from systolic.contract.memory import Memory
from systolic.sweeps.results import load_results
from systolic.sweeps.sweep_spec import SpecError, load_spec
from systolic.synth.flow import SynthReport
from systolic.workloads.pareto import OBJECTIVES, objectives_of, pareto_front

from ..helpers import run_cli, write_spec

SPEC = """\
name: synthesized
configs:
  dataflow: [ws]
  array: [2x2, 128x128]
  depth: [1024]
workloads:
  - gemm: {m: 8, k: 6, n: 5}
memory: [lpddr4x-4266-x16]
evaluate:
  rtl: all
  synth: true
"""


@pytest.mark.long
def test_a_synthesized_sweep_runs_each_configuration_at_its_own_clock(tmp_path):
    out = tmp_path / "out"
    spec = write_spec(tmp_path, SPEC)
    r = run_cli("sweep", str(spec), "--out", str(out), "--jobs", "2")
    assert r.returncode == 1, r.stderr  # some evaluations failed (128x128), the rest is there
    assert "2 failed evaluation(s)" in r.stdout
    records = load_results(out / "results.jsonl")
    assert Counter((x["kind"], x["status"]) for x in records) == {
        ("synth", "ok"): 1, ("synth", "failed"): 1,  # 128x128 is past the generator's limits
        ("model", "ok"): 1, ("model", "failed"): 1, ("rtl", "ok"): 1,
    }  # fmt: skip
    synth = next(x for x in records if x["kind"] == "synth" and x["status"] == "ok")
    # the figures are the synthesis run's own report, read back here from its folder
    saved = Path(synth["directory"]) / "report.json"
    report = SynthReport.from_dict(json.loads(saved.read_text()))
    assert synth["fmax_mhz"] == pytest.approx(report.fmax_mhz)
    assert synth["area_mm2"] == pytest.approx(report.total_area_um2 / 1e6)
    memory = Memory.preset("lpddr4x-4266-x16")
    for point in (x for x in records if x["kind"] in ("model", "rtl") and x["status"] == "ok"):
        assert point["clock_mhz"] == pytest.approx(report.fmax_mhz)
        assert point["latency_s"] == pytest.approx(point["cycles"] / (report.fmax_mhz * 1e6))
        # the DRAM is seen in cycles of the point's own clock
        assert point["memory"]["latency_cycles"] == memory.at(report.fmax_mhz).latency
        assert point["area_mm2"] == synth["area_mm2"]
        assert point["throughput_per_mm2"] == pytest.approx(
            point["throughput_inf_s"] / synth["area_mm2"])  # fmt: skip
    rtl = next(x for x in records if x["kind"] == "rtl")
    assert rtl["bit_exact"] and rtl["model_diff"]["cycles"] == 0
    failed = next(x for x in records if x["kind"] == "model" and x["status"] == "failed")
    assert "not synthesized" in failed["error"] and "rows = 128" in failed["error"]
    text = (out / "report.md").read_text()  # Markdown: names escaped
    assert "## Area and clock" in text and "## Efficiency" in text and "area\\_mm2" in text
    # resumed, nothing is synthesized again
    again = run_cli("sweep", str(spec), "--out", str(out), "--resume")
    assert again.returncode == 1, again.stderr
    assert "synthesizing" not in again.stderr
    assert load_results(out / "results.jsonl") == records


def test_area_is_an_objective_only_when_every_point_has_one():
    fast = {"throughput_inf_s": 2.0, "latency_s": 1.0, "energy_per_inference_pj": 5.0,
            "workload": {"model": "x"}, "area_mm2": 4.0}  # fmt: skip
    small = fast | {"throughput_inf_s": 1.0, "latency_s": 2.0, "area_mm2": 1.0}
    assert objectives_of([fast, small]) == OBJECTIVES | {"area_mm2": -1}
    assert pareto_front([fast, small], objectives_of([fast, small])) == [fast, small]
    assert pareto_front([fast, small]) == [fast]  # without area, the smaller one is dominated
    assert objectives_of([fast, {k: v for k, v in small.items() if k != "area_mm2"}]) == OBJECTIVES


@pytest.mark.parametrize(
    "evaluate, message",
    [
        ("synth: yes please", "evaluate.synth: must be true or false"),
        ("clock_mhz: 0", "evaluate.clock_mhz: must be a number of MHz from 1 to 10000"),
        ("clock_mhz: fast", "evaluate.clock_mhz: must be a number of MHz from 1 to 10000"),
    ],
)
def test_bad_synthesis_settings_name_their_key(tmp_path, evaluate, message):
    spec = write_spec(tmp_path, SPEC.replace("  synth: true", f"  {evaluate}"))
    with pytest.raises(SpecError, match=message):
        load_spec(spec)
