"""golden/vector.py: the vector unit's operators against loops written here from their
definitions (windows walked one by one, averages rounded with exact fractions) and against real
arithmetic."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from systolic.golden.vector import (
    AddParams,
    add,
    average_pool,
    global_average_pool,
    max_pool,
    maximum,
)


def _round_away(q: Fraction) -> int:
    """``q`` to the nearest integer, halves away from zero."""
    whole = int(abs(q) + Fraction(1, 2))  # floor(|q| + 1/2)
    return whole if q >= 0 else -whole


def _pool_by_loops(x, kernel, stride, pads, reduce):
    n, h, w, c = x.shape
    (kh, kw), (sh, sw), (top, left, bottom, right) = kernel, stride, pads
    oh, ow = (h + top + bottom - kh) // sh + 1, (w + left + right - kw) // sw + 1
    out = np.zeros((n, oh, ow, c), dtype=np.int64)
    for b in range(n):
        for i in range(oh):
            for j in range(ow):
                for ch in range(c):
                    seen = [int(x[b, r, s, ch])
                            for r in range(i * sh - top, i * sh - top + kh)
                            for s in range(j * sw - left, j * sw - left + kw)
                            if 0 <= r < h and 0 <= s < w]  # fmt: skip
                    out[b, i, j, ch] = reduce(seen)
    return out


@pytest.mark.parametrize(("kernel", "stride", "pads"),
                         [((3, 3), (2, 2), (1, 1, 1, 1)), ((2, 2), (2, 2), (0, 0, 0, 0)),
                          ((3, 2), (1, 2), (0, 1, 2, 0))])  # fmt: skip
def test_pooling_equals_windows_walked_one_by_one(kernel, stride, pads, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (2, 7, 6, 3))
    want_max = _pool_by_loops(x, kernel, stride, pads, max)
    assert np.array_equal(max_pool(x, kernel, stride, pads, -128, 127), want_max)
    want_avg = _pool_by_loops(x, kernel, stride, pads,
                              lambda v: _round_away(Fraction(sum(v), len(v))))  # fmt: skip
    assert np.array_equal(average_pool(x, kernel, stride, pads, -128, 127), want_avg)
    # a clamp narrower than the range (a fused ReLU at zero point 5)
    assert np.array_equal(max_pool(x, kernel, stride, pads, 5, 127), np.maximum(want_max, 5))


def test_averages_round_half_away_from_zero():
    x = np.array([1, 2, -1, -2, 3, 4]).reshape(1, 1, 6, 1)
    # windows of two: 1.5 -> 2, -1.5 -> -2, 3.5 -> 4
    assert average_pool(x, (1, 2), (1, 2), (0, 0, 0, 0), -128, 127).ravel().tolist() == [2, -2, 4]
    plane = np.arange(-4, 5).reshape(1, 3, 3, 1)  # sums to 0; then 9 values of 5 / 9
    assert global_average_pool(plane, -128, 127).ravel().tolist() == [0]
    assert global_average_pool(plane * 0 + 5, -128, 127).shape == (1, 1, 1, 1)


def test_a_residual_add_matches_real_arithmetic_within_a_step(seed):
    """Inputs of scales 0.05 and 0.02 with their zero points, output of scale 0.06: the integer
    sum is the real sum's rounding, give or take one step (two roundings of the inputs', one of
    the output's), and exact where every scale is 1."""
    rng = np.random.default_rng(seed)
    x, y = rng.integers(-128, 128, 500), rng.integers(-128, 128, 500)
    p = AddParams.from_scales(0.05, 3, 0.02, -7, 0.06, 10)
    z = add(x, y, p, -128, 127)
    real = (0.05 * (x - 3) + 0.02 * (y + 7)) / 0.06 + 10
    assert np.abs(z - np.clip(real, -128, 127)).max() <= 1.0
    assert (z[real >= 128] == 127).all() and (z[real <= -129] == -128).all()
    ones = AddParams.from_scales(1.0, 0, 1.0, 0, 1.0, 0)
    small = rng.integers(-60, 60, 100)
    assert np.array_equal(add(small, small[::-1], ones, -128, 127), small + small[::-1])
    # the sum is the same either way round
    q = AddParams.from_scales(0.02, -7, 0.05, 3, 0.06, 10)
    assert np.array_equal(add(y, x, q, -128, 127), z)


def test_maximum_and_bad_parameters():
    assert maximum([1, -5, 7], [2, -9, 3], -4, 6).tolist() == [2, -4, 6]
    with pytest.raises(ValueError, match="y_scale must be a positive real scale, not 0"):
        AddParams.from_scales(0.1, 0, 0, 0, 0.1, 0)
    with pytest.raises(ValueError, match="a 5x5 window does not fit a 3x3 plane"):
        max_pool(np.zeros((1, 3, 3, 1)), (5, 5), (1, 1), (0, 0, 0, 0), -128, 127)


def test_a_global_average_rounds_its_plane_half_away_from_zero():
    """2 x 2 planes summing to 6 and -6: 1.5 goes to 2 and -1.5 to -2; 5 over 4 to 1."""
    x = np.array([[1, 2], [1, 2]])[None, :, :, None] * np.array([1, -1])  # two channels
    assert global_average_pool(x, -128, 127).ravel().tolist() == [2, -2]
    assert global_average_pool(np.array([2, 1, 1, 1]).reshape(1, 2, 2, 1), -128, 127).item() == 1


def test_a_residual_add_refuses_an_output_it_cannot_scale_down_to():
    with pytest.raises(ValueError, match=r"z_scale = 1e-09 must be above twice the larger input"):
        AddParams.from_scales(0.05, 0, 0.02, 0, 1e-9, 0)
    p = AddParams.from_scales(np.float32(0.05), 0, np.float32(0.02), 0, np.float32(0.06), 0)
    assert p.x_multiplier > 0  # scales as ONNX files hold them, float32
