"""golden/requant.py: SRDHM, rounding division, multiplier quantization and per-channel
requantization against their definitions, and every invalid parameter refused."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig
from systolic.golden.reference import reference, requantized_reference
from systolic.golden.requant import (
    INT32_MAX,
    INT32_MIN,
    RequantParams,
    quantize_multiplier,
    requantize,
    rounding_divide_by_pot,
    srdhm,
)


def _round_half_away(q: Fraction) -> int:
    n = abs(q)
    r = int(n) + (1 if n - int(n) >= Fraction(1, 2) else 0)
    return r if q >= 0 else -r


EDGES = [INT32_MIN, INT32_MIN + 1, -(1 << 30), -3, -2, -1, 0, 1, 2, 3, 1 << 30, INT32_MAX]


def test_srdhm_is_rounded_doubling_high_multiply(seed):
    """gemmlowp's nudge (``1 - 2**30`` below zero) rounds to nearest with ties toward +inf:
    -0.5 goes to 0, not -1, which the runtimes do and so must we."""
    rng = np.random.default_rng(seed)
    values = EDGES + rng.integers(INT32_MIN, INT32_MAX, 200, endpoint=True).tolist()
    # exact ties, a * b an odd multiple of 2**30, both signs: where the nudge decides
    ties = [(1 << 30, 1), (1 << 30, -1), (1 << 30, 5), (-(1 << 30), 7), (3 << 29, 2), (-3, 1 << 30)]
    a = np.array(values * 2 + [x for x, _ in ties])
    b = np.array(values + values[::-1] + [y for _, y in ties])
    got = srdhm(a, b)
    for x, y, g in zip(a.tolist(), b.tolist(), got.tolist(), strict=True):
        q = Fraction(x * y, 1 << 31)
        expected = INT32_MAX if x == y == INT32_MIN else math.floor(q + Fraction(1, 2))
        assert g == expected, (x, y)


def test_rounding_divide_by_pot_rounds_ties_away_from_zero(seed):
    rng = np.random.default_rng(seed)
    values = EDGES + rng.integers(INT32_MIN, INT32_MAX, 100, endpoint=True).tolist()
    for e in range(32):
        got = rounding_divide_by_pot(np.array(values), e)
        for x, g in zip(values, got.tolist(), strict=True):
            assert g == _round_half_away(Fraction(x, 1 << e)), (x, e)


def test_quantize_multiplier_represents_the_scale():
    for real in [1e-9, 0.000123, 0.0625, 0.3, 0.5, 0.99999, 1.0, 3.7, 1000.0]:
        q, shift = quantize_multiplier(real)
        assert (1 << 30) <= q < (1 << 31)
        assert abs(q * 2.0 ** (shift - 31) - real) <= real * 2.0**-30
    assert quantize_multiplier(0.0) == (0, 0)
    with pytest.raises(ValueError, match="finite and >= 0"):
        quantize_multiplier(-1.0)


def test_invalid_quantization_is_refused():
    with pytest.raises(ValueError, match="zero_points need a_width and b_width <= 15"):
        ArrayConfig("ws", 2, 2, a_width=16, zero_points=True)
    with pytest.raises(ValueError, match="requant takes an accumulator of at most 32 bits"):
        ArrayConfig("ws", 2, 2, acc_width=48, requant=True)
    plain = ArrayConfig("ws", 2, 2)
    a = np.zeros((2, 2), dtype=np.int64)
    with pytest.raises(ValueError, match="a_zero = 3 needs a configuration with zero_points"):
        reference(plain, a, a, 3, 0)
    zp = ArrayConfig("ws", 2, 2, a_signed=False, zero_points=True, requant=True)
    with pytest.raises(ValueError, match=r"a_zero must be in the operand range \[0, 255\]"):
        reference(zp, a, a, -1, 0)
    with pytest.raises(ValueError, match=r"b_zero must be in the operand range \[-128, 127\]"):
        reference(zp, a, a, 0, 128)
    ones = np.ones(2, dtype=np.int64)
    for params, message in [
        (RequantParams(ones, ones[:1]), "one value per output channel"),
        (RequantParams(-ones, 0 * ones), r"multipliers must be Q31 values in \[0, 2147483647\]"),
        (RequantParams(ones, 40 * ones), r"shifts must be in \[-31, 31\]"),
        (RequantParams(ones, 0 * ones, out_zero=300), r"out_zero must be in the output range"),
    ]:
        with pytest.raises(ValueError, match=message):
            requantized_reference(zp, a, a, 0, 0, params)
    with pytest.raises(ValueError, match="has no requantization unit"):
        requantized_reference(plain, a, a, 0, 0, RequantParams(ones, 0 * ones))


def test_requantize_is_per_channel():
    acc = np.array([[100, 100], [-100, -100]])
    out = requantize(acc, np.array([1 << 30, 1 << 30]), np.array([0, -1]), 0, 8, True)
    assert out.tolist() == [[50, 25], [-50, -25]]
