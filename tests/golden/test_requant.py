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
    activation_bounds,
    activation_clamp,
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
        (RequantParams(ones, ones, bias=ones[:1]), r"bias needs one value per output channel"),
        (RequantParams(ones, ones, bias=ones << 31), r"bias values must be int32"),
        (RequantParams(ones, ones, clamp=(5, 4)), r"clamp = \(5, 4\) must satisfy"),
        (RequantParams(ones, ones, clamp=(0, 128)), r"-128 <= lo <= hi <= 127"),
    ]:
        with pytest.raises(ValueError, match=message):
            requantized_reference(zp, a, a, 0, 0, params)
    with pytest.raises(ValueError, match="has no requantization unit"):
        requantized_reference(plain, a, a, 0, 0, RequantParams(ones, 0 * ones))


def test_requantize_is_per_channel():
    acc = np.array([[100, 100], [-100, -100]])
    out = requantize(acc, np.array([1 << 30, 1 << 30]), np.array([0, -1]), 0, 8, True)
    assert out.tolist() == [[50, 25], [-50, -25]]


def test_the_bias_is_added_before_the_scale_wrapping_in_32_bits():
    half = np.array([1 << 30])  # 0.5
    # (100 + 50) * 0.5 = 75; a bias added after the scale would give 100
    assert requantize([[100]], half, [0], 0, 8, True, bias=[50]).tolist() == [[75]]
    # the sum wraps as int32 arithmetic does: 2**31 - 1 + 2 is -2**31 + 1, then * 0.5 rounds
    wrapped = requantize([[(1 << 31) - 1]], [1 << 30], [-24], 0, 8, True, bias=[2])
    assert wrapped.tolist() == [[round((-(1 << 31) + 1) / 2**25)]]
    # per channel, along the last axis
    two = requantize([[10, 10]], np.array([1 << 30] * 2), [1, 1], 0, 8, True, bias=[-10, 6])
    assert two.tolist() == [[0, 16]]


def test_the_activation_clamps_after_the_zero_point():
    acc = np.arange(-300, 301, 50)[:, None]
    one = ([1 << 30], [1])  # scale 1.0
    out = requantize(acc, *one, 3, 8, True)
    assert out.min() == -128 and out.max() == 127  # saturation only
    relu = requantize(acc, *one, 3, 8, True, relu=True)
    assert relu.min() == 3 and relu.max() == 127
    relu6 = requantize(acc, *one, 3, 8, True, relu=True, clamp=(-128, 3 + 60))  # scale 0.1
    assert relu6.min() == 3 and relu6.max() == 63
    inside = (acc >= 0) & (acc <= 60)
    assert (relu6[inside] == acc[inside] + 3).all()
    assert activation_bounds(3, 8, True) is None
    assert activation_bounds(3, 8, True, relu=True) == (3, 127)
    assert activation_bounds(3, 8, True, relu=True, clamp=(-5, 10)) == (3, 10)
    assert activation_bounds(0, 4, False, clamp=(2, 99)) == (2, 15)


def test_activations_quantize_their_bounds_on_the_output_scale():
    # ReLU6 on an output of scale 0.1 and zero point 3: 6 / 0.1 = 60 steps above the zero
    assert activation_clamp("relu6", 0.1, 3, 8, True) == (3, 63)
    assert activation_clamp("relu6", 6 / 255, 0, 8, False) == (0, 255)
    assert activation_clamp("relu6", 0.01, -128, 8, True) == (-128, 127)  # 600 steps: the top
    assert activation_clamp("relu", 0.5, 10, 8, True) == (10, 127)
    assert activation_clamp((-1.0, 2.0), 0.25, 0, 4, True) == (-4, 7)  # Clip(-1, 2), top 7
    with pytest.raises(ValueError, match="scale > 0 and lo <= hi"):
        activation_clamp((1.0, 0.0), 0.1, 0, 8, True)


def test_activation_bounds_round_half_away_from_zero_and_name_their_choices():
    """C's round, which TFLite's bounds use: Clip(0, 0.5) at scale 1 keeps 1, not 0 (ties to
    even would give 0); -2.5 goes to -3."""
    assert activation_clamp((0.0, 0.5), 1.0, 0, 8, True) == (0, 1)
    assert activation_clamp((-2.5, 0.0), 1.0, 0, 8, True) == (-3, 0)
    with pytest.raises(ValueError, match="activation must be one of relu, relu6"):
        activation_clamp("gelu", 0.1, 0, 8, True)
    ones = np.ones(2, dtype=np.int64)
    config = ArrayConfig("ws", 2, 2, requant=True)
    with pytest.raises(ValueError, match=r"ReLU \(nothing below out_zero = 0\) and clamp"):
        RequantParams(ones, ones, relu=True, clamp=(-128, -10)).check(config, 2)
