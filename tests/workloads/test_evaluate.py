"""workloads/evaluate.py: the GEMMs the driver posts (a layer past a descriptor's fields in pieces),
and a model point's figures for them."""

from __future__ import annotations

import pytest
from systolic.contract.config import ArrayConfig
from systolic.contract.interface import DIM_BITS
from systolic.contract.memory import Memory
from systolic.models.energy import load_coefficients
from systolic.workloads.evaluate import driver_workload, model_record
from systolic.workloads.library import Gemm, Workload, cnn

TOP = (1 << DIM_BITS) - 1


def _one(m, k, n, count=1):
    return Workload("w", "w", "gemm", 1, None, (Gemm("g", m, k, n, count),))


def test_layers_past_a_descriptor_run_in_pieces_with_the_same_macs():
    for m, n in ((TOP, 7), (TOP + 1, 7), (100_352, 64), (70_000, 140_001), (5, 3 * TOP + 2)):
        whole = _one(m, 9, n, count=3)
        posted = driver_workload(whole)
        assert posted.macs == whole.macs, (m, n)
        assert all(g.m <= TOP and g.n <= TOP and g.k == 9 for g in posted.gemms), (m, n)
        pieces_m, pieces_n = -(-m // TOP), -(-n // TOP)  # the fewest descriptors that fit
        assert sum(g.count for g in posted.gemms) == 3 * pieces_m * pieces_n, (m, n)
    assert driver_workload(_one(TOP, TOP, TOP)) == _one(TOP, TOP, TOP)  # fits: unchanged
    with pytest.raises(ValueError, match=f"K = {TOP + 1}, past the descriptor's {TOP}"):
        driver_workload(_one(4, TOP + 1, 4))


def test_a_layer_past_a_descriptor_costs_its_cycles():
    """ResNet-50's first convolution at batch 8 (M = 100,352) once counted no cycles (its one
    descriptor was refused): in pieces, at least its MACs over the PEs."""
    config = ArrayConfig("ws", 8, 8, a_depth=4096, b_depth=4096, c_depth=4096)
    record = model_record(config, cnn("resnet50", 8), Memory.preset("lpddr4x-4266-x16"),
                          load_coefficients(), "random", 0)  # fmt: skip
    conv1 = [g for g in record["gemms"] if g["name"].startswith("conv1")]
    assert sum(g["count"] for g in conv1) == 2
    for g in record["gemms"]:
        assert g["cycles"] * config.pes >= g["macs"] > 0, g["name"]
