"""`systolic model`: the prediction without simulating, and its energy following the data."""

from __future__ import annotations

import json

import pytest
from systolic.contract.interface import TIMED_COUNTERS

from ..helpers import run_cli


def test_model_prints_prediction_without_simulating():
    r = run_cli("model", "--dataflow", "is", "--rows", "3", "--cols", "5", "--m", "11", "--k",
                 "20", "--n", "6", "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    c = out["counters"]
    parts = c["stream_cycles"] + c["fill_cycles"] + c["stall_cycles"] + c["drain_cycles"]
    assert c["compute_cycles"] == parts
    assert out["cycles"] == c["cycles"] > c["compute_cycles"]  # the loads come first
    assert out["weight_words_off_array"] == c["b_reads"]
    assert set(out["reuse"]) == {"array_a", "array_b", "offchip_a", "offchip_b"}
    assert out["model"] == "pipeline" and out["memory"]["bandwidth"] == "16"


def test_model_exact_and_pipeline_agree_on_a_memory_bound_gemv():
    """A GEMV behind 2 bytes a cycle: both models within 5% of the DRAM's time for what it
    moves (256 x 256 int8 weights, A, and C at 32 bits)."""
    args = ("model", "--dataflow", "ws", "--rows", "4", "--cols", "4", "--m", "1", "--k", "256",
            "--n", "256", "--bandwidth", "2", "--latency", "50", "--json")  # fmt: skip
    runs = [json.loads(run_cli(*args, *extra).stdout) for extra in ((), ("--exact",))]
    for out in runs:
        c = out["counters"]
        moved = c["dram_read_bytes_a"] + c["dram_read_bytes_b"] + c["dram_write_bytes"]
        assert c["dram_read_bytes_b"] == 256 * 256
        assert moved / 2 <= out["cycles"] <= moved / 2 * 1.05
    assert runs[1]["model"] == "device"
    work = [k for k in runs[0]["counters"] if k not in TIMED_COUNTERS]
    assert {k: runs[0]["counters"][k] for k in work} == {k: runs[1]["counters"][k] for k in work}
    # the array computes as the weights land: busy about as long as the DRAM takes for them
    for out in runs:
        assert out["counters"]["compute_cycles"] >= 256 * 256 / 2 * 0.95


def test_cli_model_energy_follows_the_data():
    def energy(data):
        r = run_cli("model", "--dataflow", "ws", "--rows", "8", "--cols", "8", "--m", "256",
                      "--k", "512", "--n", "384", "--energy", "--data", data, "--json")  # fmt: skip
        assert r.returncode == 0, r.stderr
        e = json.loads(r.stdout)["energy"]
        assert e["source"] == "model" and e["data"] == data
        assert sum(e["components_pj"].values()) == pytest.approx(e["total_pj"])
        return e["activity_pj"]

    assert energy("random") > energy("sparse:0.5") > energy("zeros")
