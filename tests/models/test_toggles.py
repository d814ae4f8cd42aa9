"""models/toggles.py: bit flips predicted from the operands, group by group against the RTL's:
the datapath exactly when tiles stream back to back, the buffer ports and the control logic
(estimated from event counts) within stated bounds, and no group on one side only."""

from __future__ import annotations

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig
from systolic.golden.data import random_operands
from systolic.models.toggles import predict_toggles
from systolic.sim.simulate import run_gemm

DATAPATH = ("multiplier", "accumulator", "pipeline", "stationary", "edge")
#: How far the estimates of the other groups may be from the RTL's count (measured: buffer
#: ports within 4.3%, control within 9.2%, on these cases over eight seeds).
BOUNDS = {"buffer": 0.06, "control": 0.2}


@pytest.mark.parametrize(
    "config, shape",
    [
        (ArrayConfig("ws", 4, 4), (24, 12, 4)),
        (ArrayConfig("is", 3, 4, a_width=6, b_width=5, acc_width=24), (4, 9, 20)),
        (ArrayConfig("os", 4, 3), (8, 16, 9)),
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
    assert set(predicted) == set(r.toggles), "groups on one side only"
    for key, flips in r.toggles.items():
        if key[0] in DATAPATH:
            assert predicted[key] == flips, key
        else:
            assert predicted[key] == pytest.approx(flips, rel=BOUNDS[key[0]]), key


def test_a_depthwise_slice_is_estimated_on_its_block_diagonal_weights():
    """A depthwise 1x2 slice of 4 channels on WS 4x4, small enough that the estimate's sample is
    the whole GEMM: its flips are the exact model's on the weights the driver posts (a zero
    weight wherever an output channel would read another channel: contract.conv's
    depthwise_slices laid out as the device's B), and fewer than on dense weights."""
    from systolic.contract.conv import Conv, depthwise_slices, device_gemm, device_weights
    from systolic.models.toggles import estimate_toggles

    config, seed = ArrayConfig("ws", 4, 4), 7
    conv = Conv(1, 6, 7, 4, 4, (1, 2), groups=4)
    ((part, _, ones),) = depthwise_slices(conv, np.zeros((1, 6, 7, 4)), np.ones((4, 1, 2, 1)), 4)
    m, k, n = device_gemm(part, 4)
    assert (m, k, n) == (36, 8, 4)
    ((a, b),) = random_operands(np.random.default_rng(seed), config, [(m, k, n)])
    posted = b * (device_weights(part, ones, 4) != 0)
    want = predict_toggles(config, a, posted)
    got = estimate_toggles(config, m, k, n, seed=seed, diagonal=4)
    assert got == want
    dense = estimate_toggles(config, m, k, n, seed=seed)
    assert dense == predict_toggles(config, a, b)
    assert sum(got.values()) < sum(dense.values())
