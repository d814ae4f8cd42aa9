"""Ranges of energy figures, and of the margin between two, from their terms' ranges.

An energy is a sum of terms (:data:`models.energy.UNCERTAIN`: logic, SRAM, DRAM), each known
within a range of factors. Two kinds of range:

- **shared**: what two designs compared in one technology and behind one memory have in common
  (the node scaling of logic, CACTI's SRAM, the DRAM device's sources): if DRAM costs 30% more
  than its nominal figure, it does for both. A margin is taken at each corner of their box, the
  same corner for both designs;
- **the fit's** (:data:`FIT`): each design's own error of the logic fit against the gate level,
  for its kind of arithmetic (int8's held-out points, int16's, bf16's), which need not move
  with another design's: a margin's low end takes the winner's logic at its high end and the
  runner-up's at its low end.

A ratio of sums linear in each factor takes its extremes at the corners of the box, so a range
is the lowest and highest over the corners.
"""

from __future__ import annotations

import itertools

__all__ = ["FIT", "corners", "energy_range", "margin_range"]

#: The range that scales a design's logic term on its own (the fit's error), beside the shared
#: ones keyed by the terms they scale.
FIT = "fit"


def corners(ranges: dict[str, tuple[float, float]]) -> list[dict[str, float]]:
    """Every corner of the box of ``ranges``: one factor per key, each at its low or high."""
    names = sorted(ranges)
    return [dict(zip(names, pick, strict=True))
            for pick in itertools.product(*(ranges[n] for n in names))]  # fmt: skip


def _at(terms: dict[str, float], corner: dict[str, float], fit: float) -> float:
    return sum(energy * corner.get(term, 1.0) * (fit if term == "logic" else 1.0)
               for term, energy in terms.items())  # fmt: skip


def _split(ranges: dict[str, tuple[float, float]]):
    shared = {k: v for k, v in ranges.items() if k != FIT}
    return shared, ranges.get(FIT, (1.0, 1.0))


def energy_range(terms: dict[str, float], ranges: dict[str, tuple[float, float]]
                 ) -> tuple[float, float]:  # fmt: skip
    """The lowest and highest the sum of ``terms`` can be within ``ranges``."""
    shared, (fl, fh) = _split(ranges)
    low = {k: v[0] for k, v in shared.items()}
    high = {k: v[1] for k, v in shared.items()}
    return _at(terms, low, fl), _at(terms, high, fh)


def margin_range(winner: dict[str, float], other: dict[str, float],
                 ranges: dict[str, tuple[float, float]],
                 other_fit: tuple[float, float] | None = None) -> tuple[float, float]:  # fmt: skip
    """The range of ``other``'s energy over ``winner``'s, minus one: over the corners of the
    shared ranges, the same for both, and each design's own fit range (``ranges[FIT]`` for the
    winner, ``other_fit`` for the other, the winner's when None) at its own ends. Below zero at
    its low end: somewhere in the ranges the other wins."""
    shared, mine = _split(ranges)
    theirs = other_fit or mine
    values = []
    for corner in corners(shared):
        for fw, fo in itertools.product(mine, theirs):
            w = _at(winner, corner, fw)
            values.append(_at(other, corner, fo) / w - 1 if w else 0.0)
    return min(values), max(values)
