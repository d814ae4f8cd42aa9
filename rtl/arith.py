"""Division by a constant without a divider: ``floor(x / d)`` as a multiplication by a rounded
reciprocal and a shift (Granlund and Montgomery's method), exact for every ``x`` below
``2**bits``. The DMA and the sequencer divide chunk offsets by the array's edge; a generic
divider would be large, and Amaranth's output of one does not lint clean."""

from __future__ import annotations

import math

from amaranth import Value

__all__ = ["divide", "equals", "magic", "remainder"]


def magic(d: int, bits: int) -> tuple[int, int]:
    """``(multiplier, shift)`` with ``(x * multiplier) >> shift == x // d`` for ``0 <= x <
    2**bits``: the shift is ``bits + ceil(log2 d)`` and the multiplier ``ceil(2**shift / d)``."""
    if d < 1:
        raise ValueError(f"the divisor must be a positive integer, not {d!r}")
    shift = bits + max(0, math.ceil(math.log2(d)))
    return -(-(1 << shift) // d), shift


def _fit(x, bits: int):
    x = Value.cast(x).as_unsigned()
    return x[:bits] if len(x) > bits else x


def divide(x, d: int, bits: int):
    """``x // d`` for a value ``x`` below ``2**bits`` (an Amaranth expression)."""
    x = _fit(x, bits)
    if d & (d - 1) == 0:
        return x >> int(math.log2(d))
    multiplier, shift = magic(d, bits)
    return (x * multiplier) >> shift


def remainder(x, d: int, bits: int):
    """``x % d`` for a value ``x`` of at most ``bits`` bits."""
    x = _fit(x, bits)
    if d & (d - 1) == 0:
        return x & (d - 1)
    return (x - divide(x, d, bits) * d)[: max(1, math.ceil(math.log2(d)))]


def equals(x, value: int):
    """``x == value``, written for zero as a reduction (``x == 0`` becomes a multi-bit logical
    NOT in Amaranth's Verilog, which Verilator's lint flags)."""
    return ~Value.cast(x).any() if value == 0 else x == value
