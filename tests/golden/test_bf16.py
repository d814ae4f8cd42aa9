"""golden/bf16.py: fp32 addition as IEEE round-to-nearest-even, exact bf16 products, and the
rules for subnormals, infinities and NaN."""

from __future__ import annotations

import numpy as np
from systolic.golden.bf16 import (
    NAN32,
    bf16_bits,
    bits_to_float,
    fp32_add,
    fp32_running_sums,
    from_bf16_bits,
    product,
)


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


def test_running_sums_equal_fp32_add_step_by_step(seed):
    """The vectorized running sums against fp32_add term by term from +0, on every axis: on
    ordinary values, on zeros of both signs, and on values whose sums overflow or would be
    subnormal (where the sums must be taken step by step)."""
    rng = np.random.default_rng(seed)
    specials = [0.0, -0.0, 1.0, -1.0, 3e38, -3e38, 1e-30, -1e-30, 2.0**-63]
    for trial in range(120):
        shape = tuple(int(x) for x in rng.integers(1, 12, 3))
        kind = trial % 3
        if kind == 0:
            a, b = (bf16_bits(rng.standard_normal(shape)) for _ in range(2))
        elif kind == 1:
            a, b = (bf16_bits(rng.choice(specials, shape)) for _ in range(2))
        else:  # products near fp32's smallest normal: sums in the subnormal range
            a, b = (bf16_bits(rng.standard_normal(shape) * 2.0**-63) for _ in range(2))
        terms = product(a, b)
        for axis in range(3):
            moved = np.moveaxis(terms, axis, 0)
            total, steps = np.zeros(moved.shape[1:], np.int64), []
            for term in moved:
                total = fp32_add(total, term)
                steps.append(total)
            expected = np.moveaxis(np.stack(steps), 0, axis)
            assert np.array_equal(fp32_running_sums(terms, axis), expected), (trial, axis)
