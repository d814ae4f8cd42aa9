"""models/uncertainty.py: ranges of an energy and of a margin, from the terms' ranges."""

from __future__ import annotations

import numpy as np
import pytest
from systolic.models.uncertainty import corners, energy_range, margin_range


def test_corners_cover_the_box():
    box = corners({"dram": (0.5, 2.0), "logic": (0.8, 1.1), "sram": (0.9, 1.5)})
    assert len(box) == 8 and len({tuple(sorted(c.items())) for c in box}) == 8
    assert {"dram": 0.5, "logic": 1.1, "sram": 1.5} in box


def test_a_margin_range_is_its_extremes_over_shared_factors(seed):
    """Against a dense sample of the box: no factor setting gives a margin outside the range,
    and the range is reached (its ends are corners)."""
    rng = np.random.default_rng(seed)
    ranges = {"logic": (0.3, 1.1), "sram": (0.9, 1.5), "dram": (0.8, 1.7)}
    a = dict(zip(ranges, rng.uniform(1, 100, 3), strict=True))
    b = dict(zip(ranges, rng.uniform(1, 100, 3), strict=True))
    low, high = margin_range(a, b, ranges)
    sample = {t: rng.uniform(lo, hi, 20000) for t, (lo, hi) in ranges.items()}
    margins = (sum(b[t] * sample[t] for t in ranges) / sum(a[t] * sample[t] for t in ranges)) - 1
    assert low - 1e-12 <= margins.min() and margins.max() <= high + 1e-12
    nominal = sum(b.values()) / sum(a.values()) - 1
    assert low <= nominal <= high
    lo_e, hi_e = energy_range(a, ranges)
    assert lo_e == pytest.approx(sum(a[t] * ranges[t][0] for t in ranges))
    assert hi_e == pytest.approx(sum(a[t] * ranges[t][1] for t in ranges))


def test_a_margin_that_one_term_explains_can_reverse():
    """A wins on DRAM alone, B on logic: with DRAM at the low end of its range, B wins."""
    a = {"logic": 10.0, "sram": 5.0, "dram": 10.0}
    b = {"logic": 5.0, "sram": 5.0, "dram": 17.0}
    ranges = {"logic": (1.0, 1.0), "sram": (1.0, 1.0), "dram": (0.5, 1.5)}
    low, high = margin_range(a, b, ranges)
    assert low == pytest.approx((5 + 5 + 8.5) / (10 + 5 + 5) - 1)  # < 0: B wins there
    assert high == pytest.approx((5 + 5 + 25.5) / (10 + 5 + 15) - 1)
    assert low < 0 < high
