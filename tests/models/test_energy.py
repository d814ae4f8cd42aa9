"""models/energy.py: energy follows activity and shape, breakdowns add up, and coefficient
files are validated by name."""

from __future__ import annotations

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig
from systolic.golden.data import DataKind, random_operands
from systolic.models.energy import (
    CoefficientsError,
    figures_energy,
    load_coefficients,
    model_energy,
)
from systolic.sim.simulate import run_gemms

from ..helpers import coefficients_with


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
