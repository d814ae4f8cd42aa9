"""Timing of the meshes and their controllers: the formulas the generator implements.

The Amaranth components expose these as properties that delegate here; the analytical model
(models/cycles.py) sums them; the RTL tests measure that the hardware keeps them. Cycle numbers
count from the first busy cycle, the one after a command is accepted.
"""

from __future__ import annotations

from dataclasses import dataclass

from .config import ArrayConfig, Dataflow
from .interface import DIM_BITS

__all__ = [
    "CHECK_CYCLES",
    "CHECK_PRODUCT_BITS",
    "CONV_SETUP_CYCLES",
    "DESCRIPTOR_LATENCY",
    "DESCRIPTOR_SLOTS",
    "DONE_DELAY",
    "EDGE_REGISTERS",
    "EXPAND_LATENCY",
    "GATE_LINGER",
    "expansion_cycles",
    "READ_LATENCY",
    "UPDATE_LATENCY",
    "MeshTiming",
    "bank_release",
    "drain_cycles",
    "latency",
    "mesh_timing",
    "preload_cycles",
    "release_wait",
]

#: A buffer read issued in cycle ``t`` reaches the mesh in cycle ``t + READ_LATENCY``: the
#: SRAM's read port registers its word, and the controllers register the matching ``valid``
#: (one cycle); then a register at the mesh's edge takes the word and its flags (one more), so
#: that the SRAM's access time does not add to the first PE's multiply-add (issue 36).
READ_LATENCY = 2
#: Of :data:`READ_LATENCY`, the cycles of the edge registers between the controller and the
#: mesh (rtl.core.compute_core).
EDGE_REGISTERS = 1

#: The descriptor check's products (a matrix's tile rows times its stride, a chunk's tile rows
#: times its lines) take their tile-row operand one bit a cycle, this many bits: dimensions have
#: DIM_BITS bits and a tile-row count one more.
CHECK_PRODUCT_BITS = DIM_BITS + 1

#: Cycles the device spends checking a descriptor (contract.dma.check_descriptor, rtl/device.py):
#: one to load the products' operands, one per operand bit to shift and add (an adder per product
#: instead of a multiplier, for a check run once per GEMM), one to compare, and the cycle in which
#: the result starts or refuses the descriptor.
CHECK_CYCLES = 1 + CHECK_PRODUCT_BITS + 1 + 1

#: The device starts a descriptor this many cycles after accepting it: one to read it from the
#: queue, then its check.
DESCRIPTOR_LATENCY = 1 + CHECK_CYCLES

#: Descriptors the device holds past its queue: the oldest runs, the next is checked while it
#: does and starts as soon as the read side has issued the oldest's last load (its first loads
#: overlap the oldest's last computes and stores), unless it reads what the oldest writes.
#: Descriptors complete in order.
DESCRIPTOR_SLOTS = 2

#: A convolution's A load (contract.conv): the expander takes it once the A bank is free and the
#: load before is expanded, and its staging command (the input rows the chunk reads) is ready
#: this many cycles later: one to step the chunk's output row and slice on from the load
#: before, one to register the rows' first pixel and count.
CONV_SETUP_CYCLES = 2

#: From the cycle the staging load's last word is written to the cycle the expander writes the
#: chunk's first A word (a staging read, then the write): its last word ``EXPAND_LATENCY +
#: words - 1`` cycles after, the cycle the bank counts as full.
EXPAND_LATENCY = 2


def expansion_cycles(transposed: bool, tile: int, pixels: int, words: int) -> int:
    """Cycles from the staging load's last word to the cycle the expander writes the chunk's
    last A word (the bank full) for ``words`` A words of a chunk of ``pixels`` output pixels.
    WS writes one a cycle from :data:`EXPAND_LATENCY` on. OS and IS (``transposed``: A words of
    ``tile`` pixels of one channel) first gather a block of ``tile`` pixels' slices (fewer in a
    chunk of fewer pixels), a read a cycle, then write its ``tile`` words, a word a cycle, while
    the next block gathers: the first block's pixels later."""
    return EXPAND_LATENCY + words - 1 + (min(tile, pixels) if transposed else 0)


#: Edges the device's gated clock keeps after it goes idle (rtl.clock_gate): what settles after
#: the last busy cycle (the ``done`` pulse, counts taken a cycle late) reaches its idle value.
#: No cycle count depends on it: with work to do the gate is open.
GATE_LINGER = 3

#: A result reaching the C buffer in cycle ``t`` is written in cycle ``t + UPDATE_LATENCY``: the
#: word it adds to is read in ``t``, registered in ``t + 1`` and the sum written in ``t + 2``,
#: so that the SRAM's access time and the accumulate adders take separate cycles (issue 36); a
#: result one cycle behind another of the same word takes that one's sum (rtl.banks).
UPDATE_LATENCY = 2

#: ``busy`` stays high this many cycles after the cycle in which the last result reached the C
#: buffer (the controller's ``finishing`` registers): until that result is written, so the
#: counters see the final update and the C bank is whole when the array lets it go.
DONE_DELAY = UPDATE_LATENCY


def latency(config: ArrayConfig) -> int:
    """Cycles from a vector entering the mesh to its result vector leaving it.

    WS/IS: ``rows + cols - 1``. A vector entering in cycle ``t`` meets PE ``(r, c)`` in cycle
    ``t + r + c`` (``r`` skew and ``c`` PE registers); the partial sum leaves the bottom of column
    ``c`` in cycle ``t + rows + c``, and ``cols - 1 - c`` de-skew registers align every column at
    ``t + rows + cols - 1``.

    OS: ``cols``, to result row 0 (row ``r`` leaves ``r`` cycles later). The ``last`` step
    reaches PE ``(r, c)`` after ``r + c`` skew and PE registers, its accumulator is read one
    cycle later, and column ``c`` is de-skewed by ``cols - 1 - c``:
    ``r + c + 1 + cols - 1 - c = cols + r``.
    """
    if config.dataflow is Dataflow.OS:
        return config.cols
    return config.rows + config.cols - 1


def preload_cycles(config: ArrayConfig) -> int:
    """WS/IS: ``rows``, one row of the stationary tile shifts in per cycle (OS: 0, no preload)."""
    return 0 if config.dataflow is Dataflow.OS else config.rows


def bank_release(config: ArrayConfig) -> int:
    """WS/IS: ``0``. The preload follows the stream's wavefront: column ``c`` takes it ``c``
    cycles late and PE row ``r`` shifts only from the tile's ``r``-th row on, so it overwrites
    PE ``(r, c)`` ``r + c`` cycles after it starts, just behind the last vector of the bank
    when it starts with that vector (rtl.array.StationaryArray)."""
    _stationary(config, "bank_release")
    return 0


def release_wait(config: ArrayConfig) -> int:
    """WS/IS controller: issue cycles from a bank's last stream read to the first preload read
    that may reuse it, ``max(bank_release, 1)`` (the bank's busy flag clears one cycle after
    that read): 1, the preload may start the cycle after the last vector."""
    return max(bank_release(config), 1)


def drain_cycles(config: ArrayConfig) -> int:
    """OS: ``rows``. A column's output path carries one finished row per cycle, so the ``last``
    steps of consecutive tiles must be at least this many cycles apart."""
    if config.dataflow is not Dataflow.OS:
        raise ValueError(f"drain_cycles is a fact of the 'os' mesh, not {config.dataflow.value!r}")
    return config.rows


def _stationary(config: ArrayConfig, what: str) -> None:
    if config.dataflow is Dataflow.OS:
        raise ValueError(f"{what} is a fact of the 'ws' and 'is' meshes, not 'os'")


@dataclass(frozen=True)
class MeshTiming:
    """Every timing fact of one configuration (zeros where a dataflow has no such thing)."""

    latency: int
    preload_cycles: int  # WS/IS
    bank_release: int  # WS/IS
    release_wait: int  # WS/IS
    drain_cycles: int  # OS


def mesh_timing(config: ArrayConfig) -> MeshTiming:
    if config.dataflow is Dataflow.OS:
        return MeshTiming(latency(config), 0, 0, 0, drain_cycles(config))
    return MeshTiming(
        latency(config), preload_cycles(config), bank_release(config), release_wait(config), 0
    )
