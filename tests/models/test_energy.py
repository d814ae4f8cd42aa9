"""models/energy.py: energy follows activity and shape, breakdowns add up, and coefficient
files are validated by name."""

from __future__ import annotations

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig
from systolic.golden.data import DataKind, random_operands
from systolic.models.energy import (
    CoefficientsError,
    energy,
    figures_energy,
    load_coefficients,
    model_energy,
)
from systolic.sim.simulate import run_gemms

from ..helpers import coefficients_with


def test_energy_falls_with_activity(seed):
    """Same configuration and shape: random > sparse > sparser > all zeros."""
    config = ArrayConfig("os", 4, 3)  # built for test_toggles.py too
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
    rtl = [figures_energy(r, r.toggles, source="toggles") for r in results]
    model = [model_energy(config, a, b) for a, b in operands]
    assert [e.total for e in rtl] == sorted(e.total for e in rtl)
    assert [e.total for e in model] == sorted(e.total for e in model)
    for result, measured, predicted in zip(results, rtl, model, strict=True):
        assert predicted.total == pytest.approx(measured.total, rel=0.02)
        # the part DRAM and SRAM cannot hide: registers and datapath, priced from bit flips;
        # close when tiles stream back to back (the model 0.7% to 1.0% low at 8x8x8, 0.4% at
        # 16^3, 0.13% at 32^3 on five seeds: the fill and drain edges weigh less as the GEMM
        # grows), looser with stalls, whose bubbles the model approximates (2.1% to 5.0%)
        bound = 0.2 if result.counters["stall_cycles"] else 0.02
        assert predicted.activity == pytest.approx(measured.activity, rel=bound)


def test_breakdowns_sum_to_the_total(seed):
    config = ArrayConfig("is", 3, 5)
    ((a, b),) = random_operands(np.random.default_rng(seed), config, [(10, 7, 12)])
    report = model_energy(config, a, b)
    by_traffic = sum(sum(levels.values()) for levels in report.traffic.values())
    assert sum(report.components.values()) == pytest.approx(report.total)
    assert by_traffic == pytest.approx(report.total)
    assert report.pj_per_mac == pytest.approx(report.total / (10 * 7 * 12))


def test_every_pricing_path_in_picojoules():
    """One small case priced by hand from the default file's figures, term by term.

    WS 2x2 int8, 64-word buffers: A and B words are 2 x 8 = 16 bits, C words 2 x 32 = 64 bits;
    A and B hold 64 * 16 / 8 / 1024 = 0.125 KiB, C 0.5 KiB. Below the 8 KiB point the SRAM figure
    extrapolates the first segment's slope, log(20 / 10) / log(32 / 8) = 1/2: a 64-bit access
    costs 10 * (0.125 / 8) ** 0.5 = 1.25 pJ in A or B, so 0.3125 pJ per 16-bit word, and
    10 * (0.5 / 8) ** 0.5 = 2.5 pJ per 64-bit C word; writes cost as much (write_factor 1).
    """
    config = ArrayConfig("ws", 2, 2, a_depth=64, b_depth=64, c_depth=64)
    counters = {"cycles": 100, "a_reads": 10, "b_reads": 20, "c_reads": 5, "c_writes": 8}
    offchip = {"a": 3, "b": 4, "c": 2}
    toggles = {
        ("multiplier", "compute"): 16,
        ("accumulator", "psum"): 32,
        ("pipeline", "activation"): 100,
        ("stationary", "weight"): 10,
        ("edge", "output"): 50,
        ("buffer", "activation"): 7,
        ("control", "control"): 20,
    }
    report = energy(config, counters, offchip, toggles, macs=64)  # fmt: skip
    pj = report.components
    # multiply: 0.2 pJ per 8x8 multiply at activity 0.5 over 16 operand bits -> 0.025 a flip
    assert pj["multiplier"] == pytest.approx(16 * 0.2 / (0.5 * 16))  # 0.4
    # accumulator: the register (0.009) plus the 32-bit adder (0.1 / (0.5 * 32)) per flip
    assert pj["accumulator"] == pytest.approx(32 * (0.009 + 0.1 / 16))  # 0.488
    assert pj["pipeline"] == pytest.approx(100 * 0.009)
    assert pj["stationary"] == pytest.approx(10 * 0.009)
    assert pj["edge"] == pytest.approx(50 * 0.009)
    assert pj["buffer"] == pytest.approx(7 * 0.009)
    assert pj["control"] == pytest.approx(20 * 0.018)
    # SRAM: reads and host writes of A and B; C partial sums read and rewritten, and every
    # finished C word written once and read once by the host
    sram = {"activation": (10 + 3) * 0.3125, "weight": (20 + 4) * 0.3125,
            "psum": 5 * 2.5 + (8 - 2) * 2.5, "output": 2 * (2.5 + 2.5)}  # fmt: skip
    assert pj["sram"] == pytest.approx(sum(sram.values()))  # 49.0625
    # DRAM: 1950 pJ per 64 bits moved: A 3 x 16, B 4 x 16, C 2 x 64 bits
    dram = {"activation": 48 / 64 * 1950, "weight": 64 / 64 * 1950, "output": 128 / 64 * 1950}
    assert pj["dram"] == pytest.approx(sum(dram.values()))  # 7312.5
    # clock: 0.002 pJ per mesh flop bit per busy cycle; the 2x2 WS mesh has 4 PEs of a 10-bit
    # lane (8 + valid + bank), a 32-bit partial sum and two 8-bit weights, plus one 10-bit skew
    # register (row 1), one 8-bit preload skew register (column 1) and one 32-bit de-skew
    # register (column 0): 40 + 128 + 64 + 50 = 282
    assert pj["clock"] == pytest.approx(100 * 282 * 0.002)  # 56.4
    # leakage: 0.01 per PE and 0.005 per SRAM KiB (0.125 + 0.125 + 0.5) per busy cycle
    assert pj["leakage"] == pytest.approx(100 * (4 * 0.01 + 0.75 * 0.005))  # 4.375
    assert report.total == pytest.approx(7425.0885)
    t = report.traffic
    assert t["activation"]["array"] == pytest.approx(0.9)
    assert t["activation"]["buffer"] == pytest.approx(7 * 0.009 + sram["activation"])
    assert t["activation"]["offchip"] == pytest.approx(dram["activation"])
    assert t["weight"] == pytest.approx(
        {"array": 0.09, "buffer": sram["weight"], "offchip": dram["weight"]}
    )
    assert t["psum"] == pytest.approx({"array": 32 * 0.009, "buffer": sram["psum"], "offchip": 0})
    assert t["output"] == pytest.approx(
        {"array": 0.45, "buffer": sram["output"], "offchip": dram["output"]}
    )
    assert t["compute"]["array"] == pytest.approx(0.4 + 32 * 0.1 / 16)
    assert t["overhead"]["array"] == pytest.approx(0.36 + 56.4 + 4.375)
    assert report.pj_per_mac == pytest.approx(7425.0885 / 64)


def test_default_coefficients_reproduce_the_published_sram_figures():
    co = load_coefficients()
    assert co.name == "horowitz45"
    # 64-bit words: 8 KB = 1024 words, 32 KB = 4096, 1 MB = 131072 (Horowitz's 10/20/100 pJ)
    for depth, pj in [(1024, 10.0), (4096, 20.0), (131072, 100.0)]:
        assert co.sram_access(64, depth) == pytest.approx(pj)
    assert co.multiply(8, 8) == pytest.approx(0.2)


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
        load_coefficients(coefficients_with(tmp_path, old, new))


def test_missing_coefficients_file(tmp_path):
    with pytest.raises(CoefficientsError, match="cannot read"):
        load_coefficients(tmp_path / "nope.toml")
