"""Switching activity and energy: hand-counted toggles, physical trends, the model against the
RTL, and the coefficients file's validation."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from systolic.contract.activity import datapath_flop_bits
from systolic.contract.config import ArrayConfig
from systolic.golden.data import DataKind, random_operands
from systolic.models.energy import (
    DEFAULT_COEFFICIENTS,
    CoefficientsError,
    figures_energy,
    load_coefficients,
    model_energy,
)
from systolic.models.toggles import predict_toggles
from systolic.rtl.generate import design_verilog
from systolic.sim.probes import probes
from systolic.sim.simulate import run_gemm, run_gemms

# -- toggle counts under a known stimulus ------------------------------------------------------

A_COLUMN = np.array([[3], [5], [6]])  # 0b011, 0b101, 0b110: two bits flip between neighbours
B_ONE = np.array([[1]])


def test_hand_counted_toggles_ws():
    """1x1 WS, C = [3, 5, 6]^T @ [1]: one tile, B = 1 stationary in bank 0."""
    r = run_gemm(ArrayConfig("ws", 1, 1), A_COLUMN, B_ONE, activity=True)
    assert r.toggles[("stationary", "weight")] == 1  # w0: 0 -> 1
    # psum: 0 -> 3 -> 5 -> 6 -> 0 (the lane goes invalid, psum_in + 0): 2 + 2 + 2 + 2
    assert r.toggles[("accumulator", "psum")] == 8
    # east: x 0 -> 3 -> 5 -> 6 (held) = 6, valid up and down = 2, bank flag moves on after the
    # tile = 1
    assert r.toggles[("pipeline", "activation")] == 9
    # mul_a = x: 6; mul_b = w[bank]: 0 -> 1 at preload, 1 -> 0 when the flag selects bank 1
    assert r.toggles[("multiplier", "compute")] == 8
    assert ("edge", "activation") not in r.toggles  # a 1x1 mesh has no skew registers


def test_hand_counted_toggles_is():
    """1x1 IS on the same GEMM: A is stationary, one tile per element of A, back to back;
    B = 1 streams one vector per tile."""
    r = run_gemm(ArrayConfig("is", 1, 1), A_COLUMN, B_ONE, activity=True)
    assert r.counters["stall_cycles"] == 0
    # banks alternate: w0 <- 3 (2 flips), w1 <- 5 (2), w0: 3 -> 6 (2)
    assert r.toggles[("stationary", "activation")] == 6
    # x 0 -> 1, then held (1); valid rises and falls once (2); the bank flag moves after each of
    # the three tiles (3)
    assert r.toggles[("pipeline", "weight")] == 6
    assert r.toggles[("accumulator", "psum")] == 8  # 0 -> 3 -> 5 -> 6 -> 0
    # mul_a: 0 -> 1 (1); mul_b follows the selected bank: 0 -> 3 (w0 loading), 3 -> 5 (w1),
    # 5 -> 6 (w0 again), 6 -> 5 (the flag moves to w1 after the last tile): 2 each
    assert r.toggles[("multiplier", "compute")] == 9


def test_hand_counted_toggles_os():
    """1x1 OS: three tiles of one step each, back to back (K = 1 = drain cycles, no gap)."""
    r = run_gemm(ArrayConfig("os", 1, 1), A_COLUMN, B_ONE, activity=True)
    # east: a 0 -> 3 -> 5 -> 6 = 6, valid up and down = 2, last up and down = 2
    assert r.toggles[("pipeline", "activation")] == 10
    assert r.toggles[("pipeline", "weight")] == 1  # b_out: 0 -> 1, then held
    # acc restarts each tile: 0 -> 3 -> 5 -> 6 -> 0 = 8
    assert r.toggles[("accumulator", "output")] == 8
    assert r.toggles[("multiplier", "compute")] == 7  # mul_a 6, mul_b 1


def test_zero_gemm_flips_only_flags_and_control():
    config = ArrayConfig("ws", 2, 2)
    zeros = np.zeros((4, 4), dtype=np.int64)
    r = run_gemm(config, zeros, zeros, activity=True)
    for key in [("accumulator", "psum"), ("multiplier", "compute"), ("stationary", "weight")]:
        assert r.toggles[key] == 0, key
    assert r.toggles[("pipeline", "activation")] > 0  # valid and bank flags still move


# -- the model's prediction of the datapath ----------------------------------------------------

DATAPATH = ("multiplier", "accumulator", "pipeline", "stationary", "edge")


@pytest.mark.parametrize(
    "config, shape",
    [
        (ArrayConfig("ws", 4, 4), (24, 12, 8)),
        (ArrayConfig("is", 3, 4, a_width=6, b_width=5, acc_width=24), (8, 9, 20)),
        (ArrayConfig("os", 4, 3), (8, 16, 9)),
        (ArrayConfig("ws", 4, 4, number="bf16"), (24, 16, 12)),  # fp32 partial sums
        (ArrayConfig("os", 3, 4, number="bf16"), (6, 20, 8)),
    ],
    ids=lambda v: v.name if isinstance(v, ArrayConfig) else "x".join(map(str, v)),
)
def test_model_predicts_datapath_toggles_exactly_without_stalls(config, shape, seed):
    rng = np.random.default_rng(seed)
    ((a, b),) = random_operands(rng, config, [shape])
    r = run_gemm(config, a, b, activity=True)
    assert r.counters["stall_cycles"] == 0  # the shapes are chosen to stream without gaps
    predicted = predict_toggles(config, a, b)
    for key, flips in r.toggles.items():
        if key[0] in DATAPATH:
            assert predicted.get(key, 0) == flips, key


@pytest.mark.parametrize(
    "config",
    [ArrayConfig("ws", 4, 3), ArrayConfig("os", 3, 5, a_width=4, b_width=6, acc_width=20),
     ArrayConfig("is", 2, 4, a_width=5, b_width=7, acc_width=24), ArrayConfig("os", 1, 1)],
    ids=lambda c: c.name,
)  # fmt: skip
def test_datapath_flop_bits_match_the_verilog(config):
    found: dict[str, int] = {}
    for probe in probes(config, design_verilog(config)):
        if probe.flop and probe.component in ("pipeline", "accumulator", "stationary", "edge"):
            found[probe.component] = found.get(probe.component, 0) + probe.width
    expected = {k: v for k, v in datapath_flop_bits(config).items() if v}
    assert found == expected


# -- energy behaves physically -----------------------------------------------------------------


def test_energy_falls_with_activity(seed):
    """Same configuration and shape: random > sparse > sparser > all zeros."""
    config = ArrayConfig("os", 4, 4)
    shape = (16, 24, 16)
    operands = []
    for i, kind in enumerate(["random", "sparse:0.5", "sparse:0.9", "zeros"]):
        rng = np.random.default_rng([seed, i])
        operands += random_operands(rng, config, [shape], DataKind(kind))
    results = run_gemms(config, operands, activity=True)
    totals = [figures_energy(r, r.toggles, source="toggles").total for r in results]
    assert totals == sorted(totals, reverse=True) and len(set(totals)) == 4, totals


def test_energy_grows_with_shape_as_the_model_predicts(seed):
    config = ArrayConfig("ws", 4, 4)
    shapes = [(8, 8, 8), (16, 16, 16), (32, 32, 32)]
    operands = random_operands(np.random.default_rng(seed), config, shapes)
    results = run_gemms(config, operands, activity=True)
    rtl = [figures_energy(r, r.toggles, source="toggles").total for r in results]
    model = [model_energy(config, a, b).total for a, b in operands]
    assert rtl == sorted(rtl) and model == sorted(model)
    for measured, predicted in zip(rtl, model, strict=True):
        assert predicted == pytest.approx(measured, rel=0.02)


def test_breakdowns_sum_to_the_total(seed):
    config = ArrayConfig("is", 3, 5)
    ((a, b),) = random_operands(np.random.default_rng(seed), config, [(10, 7, 12)])
    report = model_energy(config, a, b)
    by_traffic = sum(sum(levels.values()) for levels in report.traffic.values())
    assert sum(report.components.values()) == pytest.approx(report.total)
    assert by_traffic == pytest.approx(report.total)
    assert report.pj_per_mac == pytest.approx(report.total / (10 * 7 * 12))


# -- coefficients ------------------------------------------------------------------------------


def test_default_coefficients_reproduce_the_published_sram_figures():
    co = load_coefficients()
    assert co.name == "horowitz45"
    # 64-bit words: 8 KB = 1024 words, 32 KB = 4096, 1 MB = 131072 (Horowitz's 10/20/100 pJ)
    for depth, pj in [(1024, 10.0), (4096, 20.0), (131072, 100.0)]:
        assert co.sram_access(64, depth) == pytest.approx(pj)
    assert co.multiply(8, 8) == pytest.approx(0.2)


def _with(tmp_path, old: str, new: str):
    text = DEFAULT_COEFFICIENTS.read_text()
    assert old in text
    path = tmp_path / "coefficients.toml"
    path.write_text(text.replace(old, new))
    return path


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("control = {", "controller = {", "toggle.controller: unknown key"),
        ("edge = { value = 0.009", "edge = { value = -0.009", "toggle.edge: value must be >= 0"),
        ("per_pe = { value = 0.01", "per_pe = { value = \"a lot\"",
         "leakage.per_pe: value must be a number"),
        ('source = "Horowitz ISSCC 2014: DRAM 64-bit access 1.3-2.6 nJ; the midpoint"',
         'source = "  "', "dram.access_64bit: source must name where"),
        ("[dram]", "[drams]", "drams: unknown key"),
        ("[clock]", "[clock", "not valid TOML"),
    ],
    ids=["unknown-component", "negative", "not-a-number", "dram-source", "unknown-section",
         "syntax"],
)  # fmt: skip
def test_bad_coefficients_are_named(tmp_path, old, new, message):
    with pytest.raises(CoefficientsError, match=message.replace("(", r"\(")):
        load_coefficients(_with(tmp_path, old, new))


def test_missing_coefficients_file(tmp_path):
    with pytest.raises(CoefficientsError, match="cannot read"):
        load_coefficients(tmp_path / "nope.toml")


# -- command line ------------------------------------------------------------------------------


def _systolic(*args):
    return subprocess.run([sys.executable, "-m", "systolic.cli", *args], capture_output=True,
                          text=True)  # fmt: skip


def test_cli_sim_energy_json():
    r = _systolic("sim", "--dataflow", "ws", "--rows", "2", "--cols", "2", "--m", "6", "--k", "5",
                  "--n", "4", "--seed", "3", "--energy", "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    energy = json.loads(r.stdout)["energy"]
    assert energy["source"] == "toggles"
    assert sum(energy["components_pj"].values()) == pytest.approx(energy["total_pj"])
    assert energy["pj_per_mac"] == pytest.approx(energy["total_pj"] / (6 * 5 * 4))


def test_cli_bad_coefficients_file(tmp_path):
    bad = _with(tmp_path, "edge = { value = 0.009", "edge = { value = -1")
    r = _systolic("sim", "--dataflow", "ws", "--rows", "2", "--cols", "2", "--m", "2", "--k", "2",
                  "--n", "2", "--energy", "--coefficients", str(bad))  # fmt: skip
    assert r.returncode == 2
    assert "toggle.edge: value must be >= 0" in r.stderr
    assert "Traceback" not in r.stderr


def test_cli_model_energy_follows_the_data():
    def energy(data):
        r = _systolic("model", "--dataflow", "ws", "--rows", "8", "--cols", "8", "--m", "256",
                      "--k", "512", "--n", "384", "--energy", "--data", data, "--json")  # fmt: skip
        assert r.returncode == 0, r.stderr
        e = json.loads(r.stdout)["energy"]
        assert e["source"] == "model" and e["data"] == data
        assert sum(e["components_pj"].values()) == pytest.approx(e["total_pj"])
        return e["activity_pj"]

    assert energy("random") > energy("sparse:0.5") > energy("zeros")
