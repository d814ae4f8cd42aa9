"""The sweep harness: spec validation, workloads, a tiny sweep end to end, resumption after a
kill, failures recorded without stopping, Pareto fronts and SCALE-Sim topologies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from systolic.sweeps.pareto import dominates, pareto_front
from systolic.sweeps.results import load_results
from systolic.sweeps.spec import SpecError, load_spec
from systolic.sweeps.workloads import WorkloadError, cnn, read_scalesim_topology, transformer

TINY = """\
name: tiny
configs:
  dataflow: [ws, os]
  array: [2x2]
  depth: [256]
workloads:
  - gemm: {m: 8, k: 6, n: 5}
  - gemm: {m: 3, k: 9, n: 4}
    count: 3
evaluate:
  rtl: all
"""


def _spec(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def _systolic(*args, env=None):
    return subprocess.run([sys.executable, "-m", "systolic.cli", *args], capture_output=True,
                          text=True, env={**os.environ, **(env or {})})  # fmt: skip


# -- specification -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("name: tiny", "nmae: tiny", ":1: nmae: unknown key; expected one of name, configs"),
        ("array: [2x2]", "array: [2by2]", ":4: configs.array.0: must be ROWSxCOLS like 8x8"),
        ("array: [2x2]", "array: [1x0]",
         ":4: configs.array: cols must be an integer between 1 and 512"),
        ("depth: [256]", "depth: [256]\n  precision: [int7]",
         ":6: configs.precision: must be one of int4, int8, int16, bf16, not 'int7'"),
        ("{m: 8, k: 6, n: 5}", "{m: 8, k: six, n: 5}",
         ":7: workloads.0.gemm.k: must be an integer >= 1, not 'six'"),
        ("{m: 8, k: 6, n: 5}", "{m: 8, k: 6}", ":7: workloads.0.gemm: missing key 'n'"),
        ("count: 3", "count: 3\n    batch: 2", ":10: workloads.1.batch: unknown key"),
        ("rtl: all", "rtl: most", ":11: evaluate.rtl: must be one of none, all, sample, pareto"),
        ("  - gemm: {m: 3, k: 9, n: 4}\n    count: 3", "  - transformer: bert-huge",
         ":8: workloads.1.transformer: must be one of bert-base"),
        ("dataflow: [ws, os]", "dataflow: [ws, os", ":4: not valid YAML"),
    ],
    ids=["unknown-key", "array-format", "array-range", "precision", "wrong-type", "missing",
         "key-of-other-kind", "rtl-mode", "unknown-model", "yaml-syntax"],
)  # fmt: skip
def test_spec_errors_name_line_and_key(tmp_path, old, new, message):
    assert old in TINY
    path = _spec(tmp_path, TINY.replace(old, new))
    with pytest.raises(SpecError) as e:
        load_spec(path)
    assert str(e.value).startswith(str(path)), e.value
    assert message in str(e.value), e.value


def test_spec_error_on_the_command_line(tmp_path):
    path = _spec(tmp_path, TINY.replace("rtl: all", "rtl: most"))
    r = _systolic("sweep", str(path), "--out", str(tmp_path / "out"))
    assert r.returncode == 2
    assert f"{path}:11: evaluate.rtl: must be one of" in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()  # nothing ran


def test_spec_crosses_configs_and_workloads(tmp_path):
    sweep = load_spec(_spec(tmp_path, TINY.replace("array: [2x2]", "array: [2x2, 3x4]")))
    assert [c.name for c in sweep.configs] == [
        "ws-2x2-i8-acc32-d256.256.256", "ws-3x4-i8-acc32-d256.256.256",
        "os-2x2-i8-acc32-d256.256.256", "os-3x4-i8-acc32-d256.256.256",
    ]  # fmt: skip
    assert sweep.points == 8 and sweep.rtl == "all"


def test_workloads_marked_model_only_are_never_simulated(tmp_path):
    from systolic.sweeps.evaluate import point_id
    from systolic.sweeps.run import _Point, select_rtl

    text = TINY.replace("    count: 3", "    count: 3\n    rtl: false") + (
        "  - gemm: {m: 8, k: 6, n: 5}\n    rtl: false\n"  # the same point again: still simulated
    )
    sweep = load_spec(_spec(tmp_path, text.replace("evaluate:\n  rtl: all\n", "") +
                            "evaluate:\n  rtl: all\n"))  # fmt: skip
    assert len(sweep.workloads) == 2 and sweep.model_only == {"gemm 3x9x4"}
    points = [_Point(point_id(c, w), c, w) for c in sweep.configs for w in sweep.workloads]
    chosen = select_rtl(sweep, points, {p.id: {} for p in points})
    assert {p.workload.name for p in chosen} == {"gemm 8x6x5"} and len(chosen) == 2


# -- workloads ---------------------------------------------------------------------------------


def test_cnn_workloads_match_published_operation_counts():
    # Howard et al. 2017, table 1 and section 4.2: MobileNet-v1 1.0-224 has 569 M mult-adds.
    assert cnn("mobilenet-v1", 1).macs == pytest.approx(569e6, rel=0.005)
    # ResNet-50 (torchvision v1.5, stride on the 3x3): about 4.1 G multiply-accumulates.
    assert cnn("resnet50", 1).macs == pytest.approx(4.1e9, rel=0.01)
    assert cnn("resnet50", 8).macs == 8 * cnn("resnet50", 1).macs


def test_transformer_workload_scales_with_batch_and_sequence():
    one = transformer("bert-base", 1, 128)
    # per block: 4 d^2 T (QKV, output) + 2 d ffn T (FFN) + 2 T^2 d (attention), 12 blocks
    d, ffn, t = 768, 3072, 128
    assert one.macs == 12 * (4 * d * d * t + 2 * d * ffn * t + 2 * t * t * d)
    assert transformer("bert-base", 4, 128).macs == 4 * one.macs
    with pytest.raises(WorkloadError, match="seq must be a positive integer"):
        transformer("bert-base", 1, 0)


# -- SCALE-Sim topologies ----------------------------------------------------------------------


def test_scalesim_conv_topology_with_its_quirks(tmp_path):
    path = tmp_path / "net.csv"
    path.write_text(
        "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, "
        "Num Filter, Strides,\n"
        "Conv1, 224, 224, 7, 7, 3, 64, 2,\n"  # trailing comma
        "Conv2, 56, 56, 3, 3, 64, 64, 1\n"  # no trailing comma
        "\n"
        "CB2a_DP, 56, 56, 3, 3, 64, 1, 1, 1:2,\n"  # depthwise, with a sparsity column
    )
    w = read_scalesim_topology(path, batch=2)
    conv1, conv2, dp = w.gemms
    out1 = (224 - 7 + 2 + 1) // 2  # ceil((224 - 7 + 2) / 2) = 110: SCALE-Sim pads nothing
    assert (conv1.m, conv1.k, conv1.n) == (2 * out1 * out1, 7 * 7 * 3, 64)
    assert (conv2.m, conv2.k, conv2.n) == (2 * 54 * 54, 9 * 64, 64)
    assert (dp.m, dp.k, dp.n, dp.count) == (2 * 54 * 54, 9, 1, 64)


def test_scalesim_gemm_topology(tmp_path):
    path = tmp_path / "gemms.csv"
    path.write_text("Layer, M, N, K,\nqkv, 128, 2304, 768,\n")
    (g,) = read_scalesim_topology(path).gemms
    assert (g.name, g.m, g.k, g.n) == ("qkv", 128, 768, 2304)


def test_scalesim_topology_errors_name_the_line(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("Layer, M, N, K,\nok, 1, 2, 3,\nbad, 1, 2,\n")
    with pytest.raises(WorkloadError, match=r"bad.csv:3: expected a layer name and 7 numbers"):
        read_scalesim_topology(path)
    path.write_text("Layer, M, N, K,\nneg, 1, -2, 3,\n")
    with pytest.raises(WorkloadError, match=r"bad.csv:2: values must be positive"):
        read_scalesim_topology(path)


# -- Pareto ------------------------------------------------------------------------------------


def _p(name, throughput, latency, energy, model="m"):
    return {"id": name, "workload": {"model": model, "seq": None}, "throughput_inf_s": throughput,
            "latency_s": latency, "energy_per_inference_pj": energy}  # fmt: skip


def test_pareto_front_on_hand_made_points():
    points = [
        _p("fast", 100, 1.0, 50),  # best latency and throughput
        _p("frugal", 10, 5.0, 10),  # best energy
        _p("middle", 50, 2.0, 30),  # a trade-off: on the front
        _p("worse", 40, 2.5, 35),  # dominated by middle
        _p("tie", 50, 2.0, 30),  # equal to middle: neither dominates
        _p("other", 1, 100.0, 1000, model="n"),  # alone in its group: on its front
    ]
    assert dominates(points[2], points[3]) and not dominates(points[2], points[4])
    assert sorted(p["id"] for p in pareto_front(points)) == [
        "fast", "frugal", "middle", "other", "tie"]  # fmt: skip


# -- running -----------------------------------------------------------------------------------


def test_tiny_sweep_end_to_end(tmp_path):
    out = tmp_path / "out"
    r = _systolic("sweep", str(_spec(tmp_path, TINY)), "--out", str(out), "--jobs", "2")
    assert r.returncode == 0, r.stderr
    records = load_results(out / "results.jsonl")
    assert Counter(rec["kind"] for rec in records) == {"model": 4, "rtl": 4}
    for rec in records:
        assert rec["status"] == "ok", rec
        if rec["kind"] == "rtl":
            assert rec["bit_exact"]
            assert rec["model_diff"]["cycles"] == 0  # the model is exact on cycles
            assert abs(rec["model_diff"]["energy_percent"]) < 5
    for name in ("report.md", "report.html", "pareto.png", "traffic.png", "utilization.png"):
        assert (out / name).stat().st_size > 0, name
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") >= 3  # self-contained
    assert "Which dataflow wins where" in (out / "report.md").read_text()


def test_resume_after_a_killed_worker(tmp_path):
    spec = _spec(tmp_path, TINY.replace("dataflow: [ws, os]", "dataflow: [ws]").replace(
        "workloads:", "workloads:\n  - gemm: {m: 4, k: 4, n: 4}"))  # fmt: skip
    out = tmp_path / "out"
    killed = _systolic("sweep", str(spec), "--out", str(out), "--jobs", "1",
                       env={"SYSTOLIC_SWEEP_KILL_AFTER": "1"})  # fmt: skip
    assert killed.returncode == 3, killed.stderr
    assert "--resume" in killed.stderr
    first = load_results(out / "results.jsonl")
    assert Counter(r["kind"] for r in first) == {"model": 3, "rtl": 1}
    again = _systolic("sweep", str(spec), "--out", str(out))
    assert again.returncode == 3 and "already holds" in again.stderr  # never overwritten
    resumed = _systolic("sweep", str(spec), "--out", str(out), "--resume")
    assert resumed.returncode == 0, resumed.stderr
    records = load_results(out / "results.jsonl")
    keys = Counter((r["id"], r["kind"]) for r in records)
    assert len(keys) == 6 and set(keys.values()) == {1}  # every point once, none repeated
    assert records[: len(first)] == first  # nothing already finished was rewritten


def test_a_failing_point_is_recorded_and_the_sweep_goes_on(tmp_path):
    # One 90x90x90 GEMM as a single command: 182 k cycles on 2x2, past the 0.2 s deadline at its
    # first check (every 100 k cycles; the simulator's start alone takes longer), and 13 k cycles
    # on 8x8, which finishes before any check. Buffers of 4096 words hold it whole.
    spec = _spec(tmp_path, """\
        name: failing
        configs:
          dataflow: [ws]
          array: [2x2, 8x8]
          depth: [4096]
        workloads:
          - gemm: {m: 90, k: 90, n: 90}
        evaluate:
          rtl: all
          timeout: 0.2
        """)  # fmt: skip
    out = tmp_path / "out"
    r = _systolic("sweep", str(spec), "--out", str(out), "--jobs", "1")
    assert r.returncode == 1, r.stderr
    assert "1 failed evaluation" in r.stdout, r.stderr[-4000:]
    rtl = {rec["config"]["rows"]: rec for rec in load_results(out / "results.jsonl")
           if rec["kind"] == "rtl"}  # fmt: skip
    assert rtl[8]["status"] == "ok" and rtl[8]["bit_exact"]
    assert rtl[2]["status"] == "failed"
    assert "deadline" in Path(rtl[2]["log"]).read_text()
    report = (out / "report.md").read_text()
    assert "## Failures" in report and rtl[2]["log"] in report


def test_report_command(tmp_path):
    out = tmp_path / "out"
    assert _systolic("sweep", str(_spec(tmp_path, TINY.replace("rtl: all", "rtl: none"))),
                     "--out", str(out)).returncode == 0  # fmt: skip
    (out / "report.md").unlink()
    r = _systolic("report", str(out / "results.jsonl"))
    assert r.returncode == 0, r.stderr
    assert (out / "report.md").exists()
    assert json.loads((out / "results.jsonl").read_text().splitlines()[0])["kind"] == "model"


@pytest.mark.parametrize("name", ["default", "large"])
def test_shipped_specs_are_valid(name):
    spec = Path(__file__).parent.parent / "sweeps" / "specs" / f"{name}.yaml"
    sweep = load_spec(spec)
    assert sweep.points == len(sweep.configs) * len(sweep.workloads) > 0
    assert {c.precision for c in sweep.configs} >= {"int8", "bf16"}
