"""The bf16 datapath: golden against IEEE float32 where they must agree, and the RTL bit-exact
against golden on random GEMMs and on every pair of special values."""

from __future__ import annotations

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig
from systolic.golden.bf16 import NAN32, bf16_bits, bits_to_float, fp32_add, from_bf16_bits, product
from systolic.golden.data import random_operands
from systolic.golden.reference import reference
from systolic.sim.simulate import run_gemms

SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1.0 + 2.0**-7, -1.5, 3.0e38, -3.0e38,
            2.0**-126, -(2.0**-126), 2.0**-70, 2.0**70, 2.0**-24, 2.0**-25, 1e-39]  # fmt: skip


def _normal_fp32(rng, n):
    """Random normal fp32 values as bit patterns, spread over many exponents."""
    values = rng.standard_normal(n) * 2.0 ** rng.integers(-60, 60, n)
    return values.astype(np.float32).view(np.uint32).astype(np.int64)


def test_fp32_add_is_ieee_round_to_nearest_even(seed):
    rng = np.random.default_rng(seed)
    x, y = _normal_fp32(rng, 20000), _normal_fp32(rng, 20000)
    y[:5000] = x[:5000] ^ (1 << 31)  # exact cancellation: +0
    y[5000:10000] = (x[5000:10000] & ~0x7FFFFF) ^ (1 << 31) | (y[5000:10000] & 0x7FFFFF)  # close
    got = fp32_add(x, y)
    expected = (bits_to_float(x) + bits_to_float(y)).view(np.uint32).astype(np.int64)
    normal = np.abs(bits_to_float(expected)) >= 2.0**-126  # numpy keeps subnormals; we flush
    assert np.array_equal(got[normal], expected[normal])
    assert (got[:5000] == 0).all()
    assert (np.abs(bits_to_float(got[~normal])) == 0).all()


def test_bf16_products_are_exact(seed):
    rng = np.random.default_rng(seed)
    a = bf16_bits(rng.standard_normal(5000) * 2.0 ** rng.integers(-50, 50, 5000))
    b = bf16_bits(rng.standard_normal(5000) * 2.0 ** rng.integers(-50, 50, 5000))
    exact = from_bf16_bits(a).astype(np.float64) * from_bf16_bits(b).astype(np.float64)
    assert np.array_equal(bits_to_float(product(a, b)).astype(np.float64), exact)


def test_special_value_rules():
    one, inf, zero = (int(v) for v in bf16_bits([1.0, np.inf, 0.0]))
    assert product(zero, inf) == NAN32 and product(inf, one) == 0x7F800000
    assert product(int(bf16_bits(2.0**-70)), int(bf16_bits(2.0**-70))) == 0  # underflow: +0
    assert product(int(bf16_bits(2.0**70)), int(bf16_bits(2.0**70))) == 0x7F800000  # overflow
    neg_zero = 1 << 31
    assert fp32_add(neg_zero, neg_zero) == neg_zero and fp32_add(0, neg_zero) == 0
    assert fp32_add(0x7F800000, 0xFF800000) == NAN32
    assert fp32_add(0x00000001, 0x3F800000) == 0x3F800000  # a subnormal input counts as zero


CONFIGS = [ArrayConfig(d, 2, 3, number="bf16", a_depth=64, b_depth=64, c_depth=64)
           for d in ("ws", "os", "is")]  # fmt: skip


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.name)
def test_bf16_gemm_bit_exact(config, seed):
    rng = np.random.default_rng(seed)
    operands = random_operands(rng, config, [(5, 7, 6), (9, 20, 11), (3, 1, 4)])
    for (a, b), res in zip(operands, run_gemms(config, operands), strict=True):
        assert np.array_equal(res.c, reference(config, a, b))


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.name)
def test_bf16_special_values_bit_exact(config):
    bits = bf16_bits(SPECIALS)
    bits = np.append(bits, [0x7FC1, 0x0001, 0x8001])  # NaN with a payload, subnormals
    pairs = np.array([(x, y) for x in bits for y in bits])
    ones = bf16_bits(np.ones((2, 1)))
    # every product: C[i, j] = a_i * b_j; every sum: C[r] = (+0 + x_r) + y_r
    operands = [(bits[:, None], bits[None, :]), (pairs, ones)]
    for (a, b), res in zip(operands, run_gemms(config, operands), strict=True):
        expected = reference(config, a, b)
        bad = np.argwhere(res.c != expected)
        assert not bad.size, [(a[i].tolist(), hex(res.c[i, j]), hex(expected[i, j]))
                              for i, j in bad[:5]]  # fmt: skip
        assert (expected == NAN32).any() and (expected == 0x7F800000).any()


def test_bf16_config_rules():
    c = ArrayConfig("os", 4, 4, number="bf16")
    assert (c.a_width, c.b_width, c.acc_width, c.name) == (16, 16, 32, "os-4x4-bf16")
    with pytest.raises(ValueError, match="number must be one of 'int', 'bf16'"):
        ArrayConfig("os", 4, 4, number="fp8")
    with pytest.raises(ValueError, match="bf16' takes no zero_points or requant"):
        ArrayConfig("ws", 4, 4, number="bf16", requant=True)
