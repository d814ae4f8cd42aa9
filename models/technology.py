"""Technology scaling: area, delay and dynamic energy measured at one node, estimated at another.

The open-tool flow measures at 0.18 um (OSU cells, 1.8 V); the energy model's coefficients are
for 45 nm. :func:`scale` carries a figure between nodes with Stillmaker and Baas' published
fits (``models/coefficients/stillmaker_baas_2017.toml``, with its sources), so both can be shown
side by side. Every scaled figure is an estimate and is labelled as one; the measured 0.18 um
figure stays the reference. 22 nm is not a node of the fits: it is interpolated linearly in the
node size between 32 and 20 nm (:data:`INTERPOLATED`).
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path

__all__ = [
    "CELL_LIBRARY_NM",
    "COEFFICIENTS_NM",
    "INTERPOLATED",
    "NODES",
    "QUANTITIES",
    "factor",
    "scale",
]

#: The node synthesis measures at: the OSU 0.18 um standard cells (synth/).
CELL_LIBRARY_NM = 180
#: The node the default energy coefficients describe (horowitz45.toml: 45 nm at 0.9 V).
COEFFICIENTS_NM = 45

SCALING_FILE = Path(__file__).parent / "coefficients" / "stillmaker_baas_2017.toml"
#: The quantities that scale.
QUANTITIES = ("area", "delay", "energy")
#: Nodes (nm) whose factors are interpolated rather than fitted: between these fitted nodes.
INTERPOLATED = {22: (32, 20)}


@cache
def _nodes() -> dict[int, dict]:
    data = tomllib.loads(SCALING_FILE.read_text())
    return {int(k): v for k, v in data["node"].items()}


def _fitted(quantity: str, node: int) -> float:
    """The fit of ``quantity`` at ``node``'s nominal supply (area: the factor from 180 nm)."""
    row = _nodes()[node]
    if quantity == "area":
        return row["area"]
    coefficients = row[quantity]
    v = row["vdd"]
    return sum(c * v ** (len(coefficients) - 1 - i) for i, c in enumerate(coefficients))


def _value(quantity: str, node: int) -> float:
    if node in INTERPOLATED:
        big, small = INTERPOLATED[node]
        t = (big - node) / (big - small)
        return (1 - t) * _fitted(quantity, big) + t * _fitted(quantity, small)
    return _fitted(quantity, node)


#: Nodes (nm) a figure can be scaled between.
NODES = tuple(sorted({*_nodes(), *INTERPOLATED}, reverse=True))


def factor(quantity: str, from_nm: int, to_nm: int) -> float:
    """What a ``quantity`` (:data:`QUANTITIES`) measured at ``from_nm`` is multiplied by to
    estimate it at ``to_nm``, each node at its nominal supply."""
    if quantity not in QUANTITIES:
        raise ValueError(f"quantity must be one of {', '.join(QUANTITIES)}, not {quantity!r}")
    for name, node in (("from_nm", from_nm), ("to_nm", to_nm)):
        if node not in NODES:
            raise ValueError(f"{name} must be one of {', '.join(map(str, NODES))} nm, "
                             f"not {node!r}")  # fmt: skip
    return _value(quantity, to_nm) / _value(quantity, from_nm)


def scale(quantity: str, value: float, from_nm: int, to_nm: int) -> float:
    """``value`` of ``quantity`` measured at ``from_nm``, estimated at ``to_nm``."""
    return value * factor(quantity, from_nm, to_nm)
