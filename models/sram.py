"""The SRAM macros' area, access energy, leakage and access time, from a CACTI table.

``models/coefficients/sram_cacti.csv`` holds CACTI 7's figures for single-bank SRAMs of 16 to
4096-bit words and 32 to 65,536 words, with one read and one write port (``1r1w``) or two read
ports (``2r1w``, the accumulator banks), at 90, 45 and 22 nm; its header gives the CACTI build
and the configuration template, and experiments/sram_table.py regenerates it. A memory between
grid points is interpolated linearly in log-log space over word width and depth (extrapolated
the same way past the grid's edges, and noted). Nodes CACTI does not model are scaled from the
nearest one it does with models/technology.py (0.18 um from 90 nm, 7 nm from 22 nm): area,
energy and access time by their factors, leakage left as CACTI's figure at that node (the fits
publish no leakage scaling); every such figure says so in ``source``.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from systolic.contract.config import ArrayConfig
from systolic.contract.memories import Sram, memories

from .technology import factor

__all__ = [
    "CACTI_NODES",
    "MACRO_MAX_WIDTH",
    "NODES",
    "SramMacro",
    "buffer_macros",
    "memory_macro",
    "sram_macro",
    "tiled_memory",
]

TABLE = Path(__file__).parent / "coefficients" / "sram_cacti.csv"
#: Nodes (nm) the table holds.
CACTI_NODES = (90, 45, 22)
#: Nodes (nm) a macro can be priced at, and the CACTI node each is scaled from.
NODES = {180: 90, 90: 90, 45: 45, 22: 22, 7: 22}
#: The widest word one macro holds. A wider memory is tiled from macros side by side (each a
#: slice of the word, all on the same address), as memory compilers, whose word width is capped,
#: have it built: a 512-bit 2r1w memory of 1,024 words from two 256-bit macros reads in 4.1 ns
#: instead of CACTI's 6.2 ns for one 512-bit array (0.18 um), for 1% more area.
MACRO_MAX_WIDTH = 256
_FIGURES = ("read_energy_pJ", "write_energy_pJ", "leakage_mW", "area_mm2", "access_time_ns")


@dataclass(frozen=True)
class SramMacro:
    """One SRAM macro's figures at one node."""

    width: int
    depth: int
    reads: int
    node_nm: int
    read_pj: float  # energy of one word read
    write_pj: float
    leakage_mw: float
    area_um2: float
    access_ns: float
    source: str

    @property
    def bits(self) -> int:
        return self.width * self.depth


@cache
def _grid() -> dict[tuple[int, str], tuple[list[int], list[int], dict]]:
    """(node nm, port kind) -> (widths, depths, {(width, depth): figures})."""
    rows = csv.DictReader(line for line in TABLE.read_text().splitlines()
                          if not line.startswith("#"))  # fmt: skip
    found: dict[tuple[int, str], dict] = {}
    for row in rows:
        node = round(float(row["node_um"]) * 1000)
        point = (int(row["width_bits"]), int(row["depth_words"]))
        found.setdefault((node, row["port_kind"]), {})[point] = [float(row[f]) for f in _FIGURES]
    out = {}
    for key, points in found.items():
        widths = sorted({w for w, _ in points})
        depths = sorted({d for _, d in points})
        if len(points) != len(widths) * len(depths):
            raise ValueError(f"{TABLE}: the {key} grid is not complete")
        out[key] = (widths, depths, points)
    return out


def _bracket(axis: list[int], x: int) -> tuple[int, int, float]:
    """Neighbours of ``x`` on ``axis`` and its position between them in log space (below 0 or
    above 1 past the ends: extrapolation)."""
    i = max(0, min(len(axis) - 2, sum(1 for v in axis if v <= x) - 1))
    lo, hi = axis[i], axis[i + 1]
    return lo, hi, (math.log(x) - math.log(lo)) / (math.log(hi) - math.log(lo))


def _lookup(node: int, kind: str, width: int, depth: int) -> tuple[list[float], bool]:
    widths, depths, points = _grid()[node, kind]
    w0, w1, tw = _bracket(widths, width)
    d0, d1, td = _bracket(depths, depth)
    values = []
    for f in range(len(_FIGURES)):
        logs = {p: math.log(points[p][f]) for p in ((w0, d0), (w0, d1), (w1, d0), (w1, d1))}
        low = logs[w0, d0] * (1 - td) + logs[w0, d1] * td
        high = logs[w1, d0] * (1 - td) + logs[w1, d1] * td
        values.append(math.exp(low * (1 - tw) + high * tw))
    outside = not (0 <= tw <= 1 and 0 <= td <= 1)
    return values, outside


def sram_macro(width: int, depth: int, reads: int = 1, node_nm: int = 45) -> SramMacro:
    """The figures of a ``depth`` x ``width``-bit SRAM with ``reads`` read ports and one write
    port at ``node_nm`` (one of :data:`NODES`)."""
    if node_nm not in NODES:
        raise ValueError(f"node_nm must be one of {', '.join(map(str, NODES))}, not {node_nm!r}")
    if reads not in (1, 2):
        raise ValueError(f"reads must be 1 or 2 (the table's port kinds), not {reads!r}")
    for name, value in (("width", width), ("depth", depth)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, not {value!r}")
    cacti = NODES[node_nm]
    (read, write, leak, area, access), outside = _lookup(cacti, f"{reads}r1w", width, depth)
    source = f"CACTI 7 at {cacti} nm"
    if outside:
        source += ", extrapolated past the table"
    if cacti != node_nm:
        e, a, t = (factor(q, cacti, node_nm) for q in ("energy", "area", "delay"))
        read, write, area, access = read * e, write * e, area * a, access * t
        source += (f", scaled to {node_nm} nm (Stillmaker-Baas; leakage unscaled), "
                   "an estimate")  # fmt: skip
    return SramMacro(width, depth, reads, node_nm, read, write, leak, area * 1e6, access, source)


def tiled_memory(width: int, depth: int, reads: int = 1, node_nm: int = 45) -> SramMacro:
    """A ``depth`` x ``width``-bit memory built from macros of at most :data:`MACRO_MAX_WIDTH`
    bits side by side: area, energy and leakage add up over the macros; the access time is one
    macro's."""
    tiles = -(-width // MACRO_MAX_WIDTH)
    if tiles == 1:
        return sram_macro(width, depth, reads, node_nm)
    one = sram_macro(-(-width // tiles), depth, reads, node_nm)
    return SramMacro(width, depth, reads, node_nm, one.read_pj * tiles, one.write_pj * tiles,
                     one.leakage_mw * tiles, one.area_um2 * tiles, one.access_ns,
                     f"{one.source}; {tiles} macros of {one.width} bits side by side")  # fmt: skip


def memory_macro(memory: Sram, node_nm: int) -> SramMacro:
    """The macro that implements one of the device's memories (:func:`contract.memories.memories`)
    at ``node_nm``: what synthesis places and the energy model prices, the one lookup both use."""
    return tiled_memory(memory.width, memory.depth, memory.reads, node_nm)


def buffer_macros(config: ArrayConfig, node_nm: int) -> dict[str, SramMacro]:
    """The macro of one bank of each buffer (``a``, ``b``, ``c``, ``q`` with requantization,
    ``staging`` with a convolution staging buffer): an access reads or writes one bank."""
    found: dict[str, SramMacro] = {}
    for memory in memories(config):
        key = "staging" if memory.path.startswith("expander.") else memory.path[0]
        found.setdefault(key, memory_macro(memory, node_nm))
    return found
