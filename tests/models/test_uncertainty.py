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


def test_each_designs_fit_range_moves_on_its_own():
    """The fit's error is each design's own: the margin's low end has the winner's logic at its
    high end and the other's at its low end, whatever the shared factors do."""
    a = {"logic": 10.0, "sram": 0.0, "dram": 0.0}
    b = {"logic": 12.0, "sram": 0.0, "dram": 0.0}
    shared = {"logic": (1.0, 1.0), "sram": (1.0, 1.0), "dram": (1.0, 1.0)}
    low, high = margin_range(a, b, shared | {"fit": (0.9, 1.1)}, other_fit=(0.8, 1.05))
    assert low == pytest.approx(12 * 0.8 / (10 * 1.1) - 1)
    assert high == pytest.approx(12 * 1.05 / (10 * 0.9) - 1)
    assert energy_range(a, shared | {"fit": (0.9, 1.1)}) == pytest.approx((9.0, 11.0))


def test_a_configurations_fit_range_is_its_arithmetics():
    from systolic.contract.config import ArrayConfig
    from systolic.models.energy import load_coefficients

    co = load_coefficients()
    assert set(co.precision_ranges) == {"int16", "bf16"}
    assert co.fit_range(ArrayConfig("ws", 4, 4)) == co.logic_range
    assert co.fit_range(ArrayConfig("ws", 4, 4, b_width=4, acc_width=20)) == co.logic_range
    assert co.fit_range(ArrayConfig("os", 4, 4, a_width=16, b_width=16, acc_width=48)) == (
        co.precision_ranges["int16"])  # fmt: skip
    assert co.fit_range(ArrayConfig("is", 4, 4, number="bf16")) == co.precision_ranges["bf16"]
