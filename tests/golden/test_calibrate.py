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
