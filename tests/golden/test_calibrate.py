"""golden/calibrate.py: scales and zero points that represent zero and the range."""

from __future__ import annotations

import numpy as np


def test_calibration_represents_zero_and_the_range(seed):
    from systolic.golden.calibrate import choose_scale, dequantize, quantize

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


def _gaussian_clip_mse(alpha: float, qmax: int) -> float:
    """Expected squared error of clipping a standard normal at +-alpha and rounding to steps of
    alpha / qmax: the clipped tails' error plus step^2 / 12 inside (Banner et al., ACIQ)."""
    from math import erf, exp, pi, sqrt

    tail = 1 - 0.5 * (1 + erf(alpha / sqrt(2)))  # P(x > alpha)
    pdf = exp(-(alpha**2) / 2) / sqrt(2 * pi)
    clipped = 2 * ((1 + alpha**2) * tail - alpha * pdf)  # 2 E[(x - alpha)^2; x > alpha]
    step = alpha / qmax
    return clipped + step**2 / 12 * (1 - 2 * tail)


def test_mse_range_matches_the_gaussian_optimum(seed):
    from systolic.golden.calibrate import choose_scale

    x = np.random.default_rng(seed).standard_normal(200_000)
    for bits in (8, 4):
        qmax = 2 ** (bits - 1) - 1
        grid = np.linspace(1.0, 6.0, 5001)
        best = grid[np.argmin([_gaussian_clip_mse(a, qmax) for a in grid])]
        got = float(choose_scale(x, bits, symmetric=True, method="mse").scale) * qmax
        assert abs(got - best) / best < 0.05, (bits, got, best)


def test_mse_never_loses_to_minmax_or_percentile(seed):
    from systolic.golden.calibrate import choose_scale, fake_quantize

    x = np.random.default_rng(seed).standard_t(3, (4000, 5))  # heavy tails
    for per_channel in (False, True):
        err = {}
        for m in ("minmax", "percentile", "mse"):
            s = choose_scale(x, 4, method=m, per_channel=per_channel, symmetric=True)
            err[m] = np.mean((fake_quantize(x, s) - x) ** 2, axis=0)
        assert np.all(err["mse"] <= err["minmax"] + 1e-15)
        assert np.all(err["mse"] <= err["percentile"] * 1.02)  # the grid's resolution


def test_entropy_clips_an_outlier_and_keeps_a_bulk(seed):
    from systolic.golden.calibrate import choose_scale

    rng = np.random.default_rng(seed)
    x = np.append(rng.random(10_000), 100.0)  # one outlier 100x the bulk
    s = choose_scale(x, 8, signed=False, method="entropy")
    top = float(s.scale) * 255
    assert 1.0 <= top < 20.0  # the bulk (up to 1) kept, the outlier clipped
    assert float(choose_scale(x, 8, signed=False).scale) * 255 == 100.0  # min/max keeps it


def test_sqnr(seed):
    from systolic.golden.calibrate import sqnr_db

    x = np.random.default_rng(seed).standard_normal(1000)
    assert sqnr_db(x, x) == float("inf")
    assert abs(sqnr_db(x, x * 1.1) - 20.0) < 1e-9  # noise 0.1 x: 10 log10(1 / 0.01)
