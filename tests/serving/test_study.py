"""serving/study_spec.py, study.py, report.py and ``systolic serve``: a study from its YAML to its
report, every figure of a record traced to the simulation it came from, and bad specs refused
with the file, line and key."""

from __future__ import annotations

import json

import pytest
from systolic.contract.config import ArrayConfig
from systolic.contract.memory import Memory
from systolic.models.energy import load_coefficients
from systolic.models.technology import dram_energy, factor
from systolic.models.uncertainty import FIT
from systolic.serving.study import run_study
from systolic.serving.study_report import frontier
from systolic.serving.study_spec import load_serving_spec
from systolic.sweeps.sweep_spec import SpecError, load_spec
from systolic.synth.flow import synthesize

from ..helpers import run_cli, write_spec

SPEC = """\
name: small
configs:
  dataflow: [ws]
  array: [8x8]
  depth: [1024]
memory: lpddr4x-4266-x16
clocks: [1000, 500]
replicas: [1, 2]
power_budget_w: 0.5
streams:
  - name: classify
    model: bert-base
    lengths: [16, 32]
    arrival: {poisson: 20}
    requests: 300
    sla_p99_ms: [30, 300]
    policies: [none, {dynamic: {max_batch: 4, max_wait_ms: 5}}]
  - name: chat
    model: gpt2-small
    lengths: [32]
    outputs: [8]
    arrival: {poisson: 1}
    requests: 30
    sla_p99_ms: [1000]
    policies: [{static: 1}, {continuous: 8}]
seed: 3
"""


def test_a_study_from_spec_to_report(tmp_path):
    out = tmp_path / "out"
    r = run_cli("serve", str(write_spec(tmp_path, SPEC)), "--out", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    records = json.loads((out / "serving.json").read_text())["records"]
    # 1 configuration x 2 clocks x 2 replica counts x (2 + 2) policies
    assert len(records) == 16
    assert {(x["stream"], x["clock_mhz"], x["replicas"], x["policy"]) for x in records} == {
        (s, c, n, p) for c in (1000.0, 500.0) for n in (1, 2)
        for s, p in (("classify", "no batching"), ("classify", "dynamic 4, 5 ms"),
                     ("chat", "no batching"), ("chat", "continuous 8"))}  # fmt: skip
    for one in (x for x in records if x["replicas"] == 1):  # two accelerators sustain more
        two = next(x for x in records if x["replicas"] == 2 and all(
            x[k] == one[k] for k in ("stream", "clock_mhz", "policy")))  # fmt: skip
        for a, b in zip(one["capacity"], two["capacity"], strict=True):
            if a["max_rate_rps"]:
                assert b["max_rate_rps"] > 1.5 * a["max_rate_rps"], (one["policy"], a, b)
    ranges = load_coefficients().ranges(dram_energy(Memory.preset("lpddr4x-4266-x16")))
    for x in records:
        e = x["energy_per_unit_pj"]
        assert e["total_pj"] == pytest.approx(e["busy_pj"] + e["idle_pj"] + e["leakage_pj"])
        # the range: the busy energy's terms at their ends, idle and leakage at the logic's
        low, high = x["energy_per_unit_range_pj"]
        assert low < e["total_pj"] < high
        # each term's factor: SRAM's, DRAM's, and the logic's node scaling times its fit's
        logic = [ranges["logic"][i] * ranges[FIT][i] for i in (0, 1)]
        ends = [ranges["sram"], ranges["dram"], logic]
        rest = e["idle_pj"] + e["leakage_pj"]
        assert low >= e["busy_pj"] * min(r[0] for r in ends) + rest * logic[0] - 1e-6
        assert high <= e["busy_pj"] * max(r[1] for r in ends) + rest * logic[1] + 1e-6
        assert x["latency_quantiles_s"][99] == pytest.approx(x["p99_s"])
        slas = [c["sla_p99_ms"] for c in x["capacity"]]
        met = [s for s in slas if x["p99_s"] * 1e3 <= s] if x["power_w"] <= 0.5 else []
        assert x["meets_sla_ms"] == met and x["feasible"] == bool(met)
        curve = [p["p99_s"] for p in x["load_curve"]]
        assert curve[-1] >= curve[0]  # loaded past saturation, the tail is longer
    assert {x["unit"] for x in records if x["stream"] == "chat"} == {"token"}
    front = frontier(records)
    assert front and all(x["sla_p99_ms"] in x["meets_sla_ms"] for x in front)
    text = (out / "report.md").read_text()
    assert "## Pareto frontier (feasible points)" in text and "P99 latency against" in text
    for name in ("latency_cdf.png", "p99_vs_load.png", "energy_vs_throughput.png"):
        assert (out / name).stat().st_size > 0
    assert "on the frontier" in r.stdout


@pytest.mark.parametrize(
    "old, new, message",
    [
        (
            "arrival: {poisson: 20}",
            "arrival: {poisson: -5}",
            r":14: streams.0.arrival.poisson: "
            r"must be a rate per second above 0, not -5",
        ),
        ("    lengths: [16, 32]\n", "", r":11: streams.0: missing key 'lengths'"),
        (
            "policies: [none, {dynamic",
            "policies: [none, {continuous: 4}, {dynamic",
            r"streams.0.policies.1.continuous: unknown key; expected one of static, dynamic",
        ),
        (
            "sla_p99_ms: [1000]",
            "sla_p99_ms: [0]",
            r"streams.1.sla_p99_ms: must be a number of "
            r"milliseconds above 0",
        ),
        ("clocks: [1000, 500]", "clocks: [1000, -1]", r"clocks: must be a clock in MHz"),
        ("model: gpt2-small", "model: llama", r"streams.1.model: must be one of"),
        *(
            (
                "max_wait_ms: 5",
                f"max_wait_ms: {bad}",
                r":\d+: streams.0.policies.1.dynamic."
                rf"max_wait_ms: must be a number of milliseconds, 0 or more, not {shown}",
            )
            for bad, shown in (("abc", "'abc'"), ("true", "True"), ("-1", "-1"))
        ),
        ("    outputs: [8]\n", "    outputs: [0]\n", r"streams.1.outputs: must be an integer"),
    ],
)
def test_a_bad_study_is_refused_with_its_line_and_key(tmp_path, old, new, message):
    assert old in SPEC
    with pytest.raises(SpecError, match=message):
        load_serving_spec(write_spec(tmp_path, SPEC.replace(old, new)))


def test_a_dynamic_policy_may_wait_zero_ms(tmp_path):
    """The edge of "0 or more": no wait at all is a policy (a batch as soon as one waits)."""
    study = load_serving_spec(
        write_spec(tmp_path, SPEC.replace("max_wait_ms: 5", "max_wait_ms: 0"))
    )
    assert [p.max_wait_s for p in study.streams[0].policies if p.name == "dynamic"] == [0.0]


def test_a_trace_out_of_order_is_refused_with_its_line(tmp_path):
    (tmp_path / "trace.csv").write_text("t\n0.0\n0.5\n0.2\n")
    text = SPEC.replace("arrival: {poisson: 20}", "arrival: {trace: trace.csv}")
    with pytest.raises(SpecError, match=r"streams.0.arrival.trace: trace .*trace.csv:4: out of "
                                        r"order"):  # fmt: skip
        load_serving_spec(write_spec(tmp_path, text))


SWEEP = """\
name: with-serving
configs:
  dataflow: [ws]
  array: [8x8]
  depth: [1024]
workloads:
  - gemm: {m: 8, k: 6, n: 5}
serving: study.yaml
"""

STUDY = """\
name: tiny-study
configs:
  dataflow: [ws]
  array: [8x8]
  depth: [1024]
memory: lpddr4x-4266-x16
streams:
  - name: classify
    model: bert-base
    lengths: [16]
    arrival: {poisson: 20}
    requests: 100
    sla_p99_ms: [100]
    policies: [none]
"""


def test_a_sweep_runs_its_serving_study_and_reports_it(tmp_path):
    (tmp_path / "study.yaml").write_text(STUDY)
    out = tmp_path / "out"
    r = run_cli("sweep", str(write_spec(tmp_path, SWEEP)), "--out", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    study = json.loads((out / "serving" / "serving.json").read_text())
    assert study["name"] == "tiny-study" and len(study["records"]) == 1
    text = (out / "report.md").read_text()
    assert "## Serving under load" in text and "serving/report.html" in text
    for row in study["summary"]["frontier_rows"]:  # the study's frontier, as the study wrote it
        assert "| " + " | ".join(row) + " |" in text
    # the answer names the energy per unit with its range, from the study's record
    (record,) = study["records"]
    low, high = (x / 1e9 for x in record["energy_per_unit_range_pj"])
    assert record["meets_sla_ms"]  # on the frontier: the answer names it
    assert f", {low:.3g} to {high:.3g} mJ)" in text, text
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") >= 3 + 3  # the sweep's plots and the study's


def test_a_sweep_naming_a_missing_study_is_refused(tmp_path):
    spec = write_spec(tmp_path, SWEEP.replace("study.yaml", "nowhere.yaml"))
    with pytest.raises(SpecError, match=r":8: serving: no such serving study: .*nowhere.yaml"):
        load_spec(spec)


def test_an_sla_below_the_unloaded_latency_names_its_key(tmp_path):
    text = SPEC.replace("sla_p99_ms: [30, 300]", "sla_p99_ms: [0.001, 300]")
    with pytest.raises(SpecError, match=r"streams.0.sla_p99_ms: 0.001 ms is below the unloaded "
                                        r"latency"):  # fmt: skip
        run_study(load_serving_spec(write_spec(tmp_path, text)))


@pytest.mark.long
def test_synthesis_caps_the_clocks_at_each_configurations_fmax(tmp_path):
    """The 2x2 device synthesizes to about 220 MHz at 0.18 um, about 1.4 GHz scaled to 45 nm:
    of 2000, 1000 and 500 MHz, the study keeps the last two."""
    text = (
        SPEC.replace("array: [8x8]", "array: [2x2]")
        .replace("clocks: [1000, 500]", "clocks: [2000, 1000, 500]\nsynth: true")
        .replace("replicas: [1, 2]\n", "")
        .replace("[30, 300]", "[5000, 20000]")
        .replace("[1000]", "[60000]")
        .replace("requests: 300", "requests: 40")
    )  # a 2x2 array takes 0.7 s a request
    records = run_study(load_serving_spec(write_spec(tmp_path, text)))
    fmax = synthesize(ArrayConfig("ws", 2, 2, a_depth=1024, b_depth=1024, c_depth=1024)).fmax_mhz
    cap = fmax / factor("delay", 180, 45)
    assert {r["clock_mhz"] for r in records} == {f for f in (2000.0, 1000.0, 500.0) if f <= cap}
    assert 500.0 <= cap < 2000.0
    for r in (r for r in records if not r["generation"]):
        assert r["queue_max"] >= 1 and r["queue_mean"] >= 0
