"""The technology a figure is priced in: scaling between nodes, and the DRAM devices.

**Scaling.** Area, delay and dynamic energy measured at one node, estimated at another.

The open-tool flow measures at 0.18 um (OSU cells, 1.8 V); the energy model's coefficients are
for 45 nm. :func:`scale` carries a figure between nodes with Stillmaker and Baas' published
fits (``models/coefficients/stillmaker_baas_2017.toml``, with its sources), so both can be shown
side by side. Every scaled figure is an estimate and is labelled as one; the measured 0.18 um
figure stays the reference. 22 nm is not a node of the fits: it is interpolated linearly in the
node size between 32 and 20 nm (:data:`INTERPOLATED`).

**DRAM devices.** What a bit costs to read from or write to each memory preset
(``models/coefficients/dram_devices.toml``, every figure cited, with the range its sources
span): :func:`dram_energy` gives a memory's, its own when it carries one.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path

from systolic.contract.memory import DEFAULT_MEMORY_PRESET, DRAM_PRESETS, DramEnergy, Memory

__all__ = [
    "DRAM_FILE",
    "dram_devices",
    "dram_energy",
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
#: The node the default technology file describes (calibrated45.toml).
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


DRAM_FILE = Path(__file__).parent / "coefficients" / "dram_devices.toml"
_DRAM_KEYS = ("read_pj_per_bit", "write_pj_per_bit", "low_pj_per_bit", "high_pj_per_bit",
              "source")  # fmt: skip


@cache
def dram_devices(path: Path = DRAM_FILE) -> dict[str, DramEnergy]:
    """Each memory preset's energy per bit, from the devices file (every preset has one)."""
    raw = tomllib.loads(path.read_text())
    devices = raw.get("device", {})
    found = {}
    for name, entry in devices.items():
        where = f"{path}: device.{name}"
        if name not in DRAM_PRESETS:
            raise ValueError(f"{where}: not a memory preset ({', '.join(DRAM_PRESETS)})")
        if not isinstance(entry, dict) or set(entry) != set(_DRAM_KEYS):
            raise ValueError(f"{where}: must hold exactly {', '.join(_DRAM_KEYS)}")
        try:
            found[name] = DramEnergy(**entry)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{where}: {e}") from None
    missing = [name for name in DRAM_PRESETS if name not in found]
    if missing:
        raise ValueError(f"{path}: no energy for the presets {', '.join(missing)}")
    return found


def dram_energy(memory: Memory | None) -> DramEnergy:
    """What ``memory``'s bits cost: its own figures, else its device preset's (the default
    memory's when None)."""
    if memory is None:
        return dram_devices()[DEFAULT_MEMORY_PRESET]
    if memory.energy is not None:
        return memory.energy
    if memory.device not in DRAM_PRESETS:
        raise ValueError(f"memory {memory.name!r} has no energy per bit: give it a preset (one "
                         f"of {', '.join(DRAM_PRESETS)}) or its own read_pj_per_bit, "
                         "write_pj_per_bit and energy_source")  # fmt: skip
    return dram_devices()[memory.device]
