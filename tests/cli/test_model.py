"""`systolic model`: the prediction without simulating, and its energy following the data."""

from __future__ import annotations

import json

import pytest

from ..helpers import run_cli


def test_model_prints_prediction_without_simulating():
    r = run_cli("model", "--dataflow", "is", "--rows", "3", "--cols", "5", "--m", "11", "--k",
                 "20", "--n", "6", "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    c = out["counters"]
    parts = c["stream_cycles"] + c["fill_cycles"] + c["stall_cycles"] + c["drain_cycles"]
    assert out["cycles"] == c["cycles"] == parts
    assert out["weight_words_off_array"] == c["b_reads"]
    assert set(out["reuse"]) == {"array_a", "array_b", "offchip_a", "offchip_b"}


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
