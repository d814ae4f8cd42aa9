"""quant/calibrate.py: scales and zero points that represent zero and the range."""

from __future__ import annotations

import numpy as np
import pytest

from ..helpers import at_most

#: Bounds of sampled statistics, from their spread over seeds 1-200 (``make seeds``): six
#: standard deviations above the mean, rounded up (int8: mean 0.0024, sd 0.0024, worst 0.0101;
#: int4: mean 0.00022, sd 0.00023, worst 0.0011).
MSE_EXCESS = {8: 0.017, 4: 0.0017}
#: MSE's error over percentile's, minus one, is -0.55 (per tensor) and -0.49 (per channel) on
#: average over seeds 1-200, at worst 0 and 2.5e-6: never positive beyond rounding, so mean + 6
#: sd (0.51) says nothing; the bound is the grid's resolution (a step of 1% of the range).
MSE_OVER_PERCENTILE = 0.02


def test_calibration_represents_zero_and_the_range(seed):
    from systolic.quant.calibrate import choose_scale, dequantize, quantize

    rng = np.random.default_rng(seed)
    x = rng.standard_normal((200, 6)) * np.array([0.1, 1, 10, 100, 1000, 1e-3]) + 0.5
    for kwargs in [{}, {"per_channel": True}, {"method": "percentile", "percentile": 99.0},
                   {"per_channel": True, "symmetric": True}]:  # fmt: skip
        s = choose_scale(x, 8, signed=True, **kwargs)
        q = quantize(x, s)
        assert q.min() >= -128 and q.max() <= 127
        assert np.all(dequantize(quantize(np.zeros(6), s), s) == 0)  # zero is exact
        if kwargs.get("method") != "percentile":  # min/max: every value within half a step
            assert np.all(np.abs(dequantize(q, s) - x) <= s.scale / 2 + 1e-12)


def _gaussian_quantization_mse(alpha: float, bits: int) -> float:
    """Expected squared error of quantizing a standard normal with the symmetric scale
    ``alpha / qmax`` into signed ``bits``-bit integers (levels ``qmin..qmax``, the lowest one
    further out than the highest), integrated exactly level by level:
    ``int_a^b (x - c)^2 phi(x) dx = [Phi(x) (1 + c^2) - (x - 2c) phi(x)]_a^b``."""
    from math import erf, exp, inf, pi, sqrt

    def antiderivative(x: float, c: float) -> float:
        if x in (-inf, inf):
            return (1 + c * c) * (x > 0)
        cdf, pdf = 0.5 * (1 + erf(x / sqrt(2))), exp(-x * x / 2) / sqrt(2 * pi)
        return (1 + c * c) * cdf - (x - 2 * c) * pdf

    qmax = 2 ** (bits - 1) - 1
    qmin, step = -qmax - 1, alpha / qmax
    total = 0.0
    for k in range(qmin, qmax + 1):  # level k takes the values that round to it (or clamp)
        lo = -inf if k == qmin else (k - 0.5) * step
        hi = inf if k == qmax else (k + 0.5) * step
        total += antiderivative(hi, k * step) - antiderivative(lo, k * step)
    return total


def _gaussian_quantiles(n: int) -> np.ndarray:
    """``n`` values spread exactly as a standard normal (its quantiles at the midpoints of ``n``
    equal-probability intervals): an exact sample, so the optimum below is not a draw's."""
    from scipy.special import ndtri

    return ndtri((np.arange(n) + 0.5) / n)


def test_mse_range_matches_the_gaussian_optimum():
    from systolic.quant.calibrate import MSE_GRID, choose_scale, fake_quantize

    x = _gaussian_quantiles(200_000)
    step = (MSE_GRID[1] - MSE_GRID[0]) * np.abs(x).max()  # the search's resolution in range
    for bits in (8, 4):
        qmax = 2 ** (bits - 1) - 1
        grid = np.linspace(1.0, 6.0, 5001)
        expected = [_gaussian_quantization_mse(a, bits) for a in grid]
        best = grid[np.argmin(expected)]
        s = choose_scale(x, bits, symmetric=True, method="mse")
        got = float(s.scale) * qmax
        assert abs(got - best) <= step, (bits, got, best, step)
        # the exact sample's error is the expectation's (to the sample's resolution)
        assert np.mean((fake_quantize(x, s) - x) ** 2) == pytest.approx(
            _gaussian_quantization_mse(got, bits), rel=0.02
        )  # int8 1.5%: the tails are sparse


def test_mse_range_is_the_samples_own_optimum(seed):
    """On a random sample, the chosen range's error against the least error of any range (a
    search 5 times finer than the method's): the method's grid costs at most a bounded excess."""
    from systolic.quant.calibrate import Scale, choose_scale, fake_quantize

    x = np.random.default_rng(seed).standard_normal(20_000)
    peak = np.abs(x).max()
    for bits in (8, 4):
        qmax = 2 ** (bits - 1) - 1

        def error(s):
            return float(np.mean((fake_quantize(x, s) - x) ** 2))

        got = error(choose_scale(x, bits, symmetric=True, method="mse"))
        fine = min(
            error(Scale(np.asarray(f * peak / qmax), np.asarray(0), bits, True))
            for f in np.linspace(0.2, 1.0, 401)
        )
        at_most(got / fine - 1, MSE_EXCESS[bits], f"int{bits} MSE over the finest range's - 1")


def test_mse_never_loses_to_minmax_or_percentile(seed):
    """MSE minimizes the error of what it ranges (the tensor, or each channel): never worse than
    min/max (on its grid), and no worse than percentile beyond the grid's resolution wherever
    percentile's range is within the grid's span (the search shrinks the range to 20% at most)."""
    from systolic.quant.calibrate import MSE_GRID, choose_scale, fake_quantize

    x = np.random.default_rng(seed).standard_t(3, (4000, 5))  # heavy tails
    for per_channel in (False, True):
        err, factor = {}, {}
        for m in ("minmax", "percentile", "mse"):
            s = choose_scale(x, 4, method=m, per_channel=per_channel, symmetric=True)
            err[m] = np.mean((fake_quantize(x, s) - x) ** 2, axis=0 if per_channel else None)
            factor[m] = s.scale
        assert np.all(err["mse"] <= err["minmax"] + 1e-15)  # min/max is on the grid
        reach = factor["percentile"] / factor["minmax"] >= MSE_GRID[0]
        excess = np.where(reach, err["mse"] / err["percentile"], 1.0)
        at_most(
            float(np.max(excess)) - 1,
            MSE_OVER_PERCENTILE,
            f"MSE's error over percentile's - 1 (per channel: {per_channel})",
        )


def test_entropy_clips_an_outlier_and_keeps_a_bulk(seed):
    from systolic.quant.calibrate import choose_scale

    rng = np.random.default_rng(seed)
    x = np.append(rng.random(10_000), 100.0)  # one outlier 100x the bulk
    s = choose_scale(x, 8, signed=False, method="entropy")
    top = float(s.scale) * 255
    assert 1.0 <= top < 20.0  # the bulk (up to 1) kept, the outlier clipped
    assert float(choose_scale(x, 8, signed=False).scale) * 255 == 100.0  # min/max keeps it


def test_sqnr(seed):
    from systolic.quant.calibrate import sqnr_db

    x = np.random.default_rng(seed).standard_normal(1000)
    assert sqnr_db(x, x) == float("inf")
    assert abs(sqnr_db(x, x * 1.1) - 20.0) < 1e-9  # noise 0.1 x: 10 log10(1 / 0.01)
