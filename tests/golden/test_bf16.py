"""golden/bf16.py: fp32 addition as IEEE round-to-nearest-even, exact bf16 products, and the
rules for subnormals, infinities and NaN."""

from __future__ import annotations

import numpy as np
from systolic.golden.bf16 import NAN32, bf16_bits, bits_to_float, fp32_add, from_bf16_bits, product


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
