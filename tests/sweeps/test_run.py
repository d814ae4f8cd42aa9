"""sweeps/run.py: a tiny sweep end to end, resumption after a kill, failures recorded while the
sweep goes on, and which points run in RTL."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from systolic.sweeps.results import load_results
from systolic.sweeps.sweep_spec import load_spec

from ..helpers import TINY, run_cli, run_faulty, write_spec


def test_workloads_marked_model_only_are_never_simulated(tmp_path):
    from systolic.sweeps.run import _Point, select_rtl
    from systolic.workloads.evaluate import point_id

    text = TINY.replace("    count: 3", "    count: 3\n    rtl: false") + (
        "  - gemm: {m: 8, k: 6, n: 5}\n    rtl: false\n"  # the same point again: still simulated
    )
    sweep = load_spec(write_spec(tmp_path, text.replace("evaluate:\n  rtl: all\n", "") +
                            "evaluate:\n  rtl: all\n"))  # fmt: skip
    assert len(sweep.workloads) == 2 and sweep.model_only == {"gemm 3x9x4"}
    (memory,) = sweep.memories  # the default
    assert memory.name == "lpddr4x-4266-x32"
    points = [_Point(point_id(c, w, memory), c, w, memory) for c in sweep.configs
              for w in sweep.workloads]  # fmt: skip
    chosen = select_rtl(sweep, points, {p.id: {} for p in points})
    assert {p.workload.name for p in chosen} == {"gemm 8x6x5"} and len(chosen) == 2


def test_tiny_sweep_end_to_end(tmp_path):
    out = tmp_path / "out"
    r = run_cli("sweep", str(write_spec(tmp_path, TINY)), "--out", str(out), "--jobs", "2")
    assert r.returncode == 0, r.stderr
    records = load_results(out / "results.jsonl")
    assert Counter(rec["kind"] for rec in records) == {"model": 4, "rtl": 4}
    model = {(rec["config_name"], rec["workload"]["name"]): rec for rec in records
             if rec["kind"] == "model"}  # fmt: skip
    for rec in records:
        assert rec["status"] == "ok", rec
        if rec["kind"] == "rtl":
            assert rec["bit_exact"]
            assert rec["model_diff"]["cycles"] == 0  # the device model is exact on cycles
            # the model record's energy against the RTL's, term by term: the memories exactly
            # (the same accesses), what the clock pays per cycle in proportion to the sweep
            # model's cycles (the pipeline model's, not the exact one's), the rest within 20%:
            # bit flips of another draw of random operands, on GEMMs of a few hundred MACs
            # (measured at seed 0, the spec's: -6.5% to +12.9%)
            mine = model[(rec["config_name"], rec["workload"]["name"])]
            a, b = rec["components_pj"], mine["components_pj"]
            assert (a["sram"], a["dram"]) == pytest.approx((b["sram"], b["dram"]), rel=1e-12)
            for c in ("device", "leakage"):
                assert b[c] / a[c] == pytest.approx(mine["cycles"] / rec["cycles"], rel=1e-9)
            per_cycle = ("clock", "device", "leakage", "sram", "dram")
            rest = [sum(v for k, v in x.items() if k not in per_cycle) for x in (a, b)]
            assert rest[1] == pytest.approx(rest[0], rel=0.2), (rec["config_name"], a, b)
    for name in ("report.md", "report.html", "pareto.png", "traffic.png", "utilization.png"):
        assert (out / name).stat().st_size > 0, name
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") >= 2  # self-contained: PNGs embedded,
    assert "<script src" not in html and 'class="plot"' in html  # plotly.js inline
    md = (out / "report.md").read_text()
    assert md.index("## Answers") < md.index("## Who wins where") < md.index("## Pareto front")
    assert "Model against RTL" in md  # the RTL points' agreement is among the answers


def test_resume_after_the_sweep_itself_is_killed(tmp_path):
    """SIGKILL of the sweep's own process (the one writer) between two RTL groups: --resume
    finishes the rest, every point once, nothing already written rewritten. (A dead worker is
    tests/sweeps/test_engines.py's.)"""
    spec = write_spec(tmp_path, TINY)
    out = tmp_path / "out"
    killed = run_faulty("sweep", str(spec), "--out", str(out), "--jobs", "1",
                        env={"SYSTOLIC_SWEEP_KILL_AFTER": "1"})  # fmt: skip
    assert killed.returncode == -9, killed.stderr
    first = load_results(out / "results.jsonl")
    assert Counter(r["kind"] for r in first) == {"model": 4, "rtl": 2}  # one configuration's
    again = run_cli("sweep", str(spec), "--out", str(out))
    assert again.returncode == 2 and "already holds" in again.stderr  # never overwritten
    resumed = run_cli("sweep", str(spec), "--out", str(out), "--resume")
    assert resumed.returncode == 0, resumed.stderr
    records = load_results(out / "results.jsonl")
    keys = Counter((r["id"], r["kind"]) for r in records)
    assert len(keys) == 8 and set(keys.values()) == {1}  # every point once, none repeated
    assert records[: len(first)] == first  # nothing already finished was rewritten


def test_a_failing_point_is_recorded_and_the_sweep_goes_on(tmp_path):
    # One 90x90x90 GEMM: over 182 k cycles on 2x2, past the 0.2 s deadline at its first check
    # (every 100 k cycles; the simulator's start alone takes longer), and about 50 k cycles on
    # 4x4, which finishes before any check (4x4 with 1024-word buffers is built for
    # tests/models/test_toggles.py too).
    spec = write_spec(tmp_path, """\
        name: failing
        configs:
          dataflow: [ws]
          array: [2x2, 4x4]
          depth: [1024]
        workloads:
          - gemm: {m: 90, k: 90, n: 90}
        evaluate:
          rtl: all
          timeout: 0.2
        """)  # fmt: skip
    out = tmp_path / "out"
    r = run_cli("sweep", str(spec), "--out", str(out), "--jobs", "1")
    assert r.returncode == 1, r.stderr
    assert "1 failed evaluation" in r.stdout, r.stderr[-4000:]
    rtl = {rec["config"]["rows"]: rec for rec in load_results(out / "results.jsonl")
           if rec["kind"] == "rtl"}  # fmt: skip
    assert rtl[4]["status"] == "ok" and rtl[4]["bit_exact"]
    assert rtl[2]["status"] == "failed"
    assert "deadline" in Path(rtl[2]["log"]).read_text()
    report = (out / "report.md").read_text()
    assert "## Failures" in report and rtl[2]["log"] in report


def test_rtl_points_run_convolutions_as_the_driver_lowers_them(tmp_path):
    """An ONNX model of one padded 3x3 convolution and a strided 1x1 on a WS device with a
    staging buffer: the RTL point simulates the 3x3 as a convolution descriptor (the strided
    1x1 as its im2col GEMM), as the model's record lowers them: bit-exact against the
    convolution's golden model, the exact model's cycles, and the same DRAM bytes per GEMM as
    the model record's."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weights = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
               for name, shape in (("w1", (4, 4, 3, 3)), ("w2", (3, 4, 1, 1)))]  # fmt: skip
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="three", pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["c1", "w2"], ["y"], name="one", strides=[2, 2]),
    ]
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        nodes,
        "two_convs",
        [helper.make_tensor_value_info("x", f, [1, 4, 6, 5])],
        [helper.make_tensor_value_info("y", f, [1, 3, 3, 3])],
        weights,
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
              str(tmp_path / "two_convs.onnx"))  # fmt: skip
    spec = ("name: convs\nconfigs:\n  dataflow: [ws]\n  array: [4x4]\n  depth: [256]\n"
            "  stage_depth: [128]\nworkloads:\n  - onnx: two_convs.onnx\nevaluate:\n"
            "  rtl: all\n")  # fmt: skip
    from systolic.sweeps.run import run_sweep

    out = tmp_path / "out"  # in process, one worker, no report (the tiny sweep draws one)
    results = run_sweep(load_spec(write_spec(tmp_path, spec)), out, jobs=1, progress=False)
    records = {rec["kind"]: rec for rec in load_results(results)}
    rtl, model = records["rtl"], records["model"]
    assert rtl["status"] == "ok" and rtl["bit_exact"], rtl.get("error")
    assert rtl["model_diff"]["cycles"] == 0
    names = [g["name"] for g in rtl["gemms"]]
    assert names == [g["name"] for g in model["gemms"]] == ["three", "one"]
    assert [g["read_bytes"] for g in rtl["gemms"]] == [g["read_bytes"] for g in model["gemms"]]
    three = rtl["gemms"][0]
    assert three["read_bytes"]["a"] < three["once_bytes"]["a"]  # staged, not im2col
