"""rtl/fp.py: bf16 GEMMs and every pair of special values bit-exact in every dataflow."""

from __future__ import annotations

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig
from systolic.golden.bf16 import NAN32, bf16_bits
from systolic.golden.data import random_operands
from systolic.golden.reference import reference
from systolic.sim.simulate import run_gemms

SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1.0 + 2.0**-7, -1.5, 3.0e38, -3.0e38,
            2.0**-126, -(2.0**-126), 2.0**-70, 2.0**70, 2.0**-24, 2.0**-25, 1e-39]  # fmt: skip


#: Hardware other tests build: WS 4x4 and OS 3x4 as activity builds (the accuracy experiment's
#: and test_toggles.py's, so these run with activity counting on), IS 2x3 (test_simulate.py's).
CONFIGS = [ArrayConfig("ws", 4, 4, number="bf16"), ArrayConfig("os", 3, 4, number="bf16"),
           ArrayConfig("is", 2, 3, number="bf16", a_depth=64, b_depth=64, c_depth=64)]  # fmt: skip
ACTIVITY = {"ws", "os"}


def _run(config, operands):
    return run_gemms(config, operands, activity=config.dataflow.value in ACTIVITY)


@pytest.mark.long
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.name)
def test_bf16_gemm_bit_exact(config, seed):
    rng = np.random.default_rng(seed)
    operands = random_operands(rng, config, [(5, 7, 6), (9, 20, 11), (3, 1, 4)])
    for (a, b), res in zip(operands, _run(config, operands), strict=True):
        assert np.array_equal(res.c, reference(config, a, b))


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.name)
def test_bf16_special_values_bit_exact(config):
    bits = bf16_bits(SPECIALS)
    bits = np.append(bits, [0x7FC1, 0x0001, 0x8001])  # NaN with a payload, subnormals
    pairs = np.array([(x, y) for x in bits for y in bits])
    ones = bf16_bits(np.ones((2, 1)))
    # every product: C[i, j] = a_i * b_j; every sum: C[r] = (+0 + x_r) + y_r
    operands = [(bits[:, None], bits[None, :]), (pairs, ones)]
    for (a, b), res in zip(operands, _run(config, operands), strict=True):
        expected = reference(config, a, b)
        bad = np.argwhere(res.c != expected)
        assert not bad.size, [(a[i].tolist(), hex(res.c[i, j]), hex(expected[i, j]))
                              for i, j in bad[:5]]  # fmt: skip
        assert (expected == NAN32).any() and (expected == 0x7F800000).any()
