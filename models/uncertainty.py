"""Ranges of energy figures, and of the margin between two, from their terms' ranges.

An energy is a sum of terms (:data:`models.energy.UNCERTAIN`: logic, SRAM, DRAM), each known
within a range of factors. Two designs compared in one technology and behind one memory share
those factors: if DRAM costs 30% more than its nominal figure, it does for both. So the margin
between them is taken at each corner of the factors' box, the same corner for both, and its
range is the lowest and highest over the corners (a ratio of two sums linear in the factors
takes its extremes at the corners).
"""

from __future__ import annotations

import itertools

__all__ = ["corners", "energy_range", "margin_range"]


def corners(ranges: dict[str, tuple[float, float]]) -> list[dict[str, float]]:
    """Every corner of the box of ``ranges``: one factor per term, each at its low or high."""
    names = sorted(ranges)
    return [dict(zip(names, pick, strict=True))
            for pick in itertools.product(*(ranges[n] for n in names))]  # fmt: skip


def _at(terms: dict[str, float], corner: dict[str, float]) -> float:
    return sum(energy * corner[term] for term, energy in terms.items())


def energy_range(terms: dict[str, float], ranges: dict[str, tuple[float, float]]
                 ) -> tuple[float, float]:  # fmt: skip
    """The lowest and highest the sum of ``terms`` can be within ``ranges``."""
    return (sum(e * ranges[t][0] for t, e in terms.items()),
            sum(e * ranges[t][1] for t, e in terms.items()))  # fmt: skip


def margin_range(winner: dict[str, float], other: dict[str, float],
                 ranges: dict[str, tuple[float, float]]) -> tuple[float, float]:  # fmt: skip
    """The range of ``other``'s energy over ``winner``'s, minus one, over the corners of
    ``ranges`` shared by both. Below zero at its low end: at some corner the other wins."""
    values = []
    for corner in corners(ranges):
        mine = _at(winner, corner)
        values.append(_at(other, corner) / mine - 1 if mine else 0.0)
    return min(values), max(values)
