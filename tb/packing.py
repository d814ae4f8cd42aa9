"""Pack Python values into the bit vectors of Amaranth layouts, and back.

The layouts come from the generator (for example ``StationaryArray.stream_layout(config)``), so the
testbench and the hardware cannot disagree on field order or widths.
"""

from __future__ import annotations

from amaranth import Shape
from amaranth.lib import data

__all__ = ["pack", "unpack"]


def pack(layout, value) -> int:
    """``value`` (an int, a sequence for an ArrayLayout, a mapping for a StructLayout) as bits."""
    if isinstance(layout, data.StructLayout):
        return sum(pack(field.shape, value[name]) << field.offset for name, field in layout)
    if isinstance(layout, data.ArrayLayout):
        width = Shape.cast(layout.elem_shape).width
        if len(value) != layout.length:
            raise ValueError(f"expected {layout.length} elements, got {len(value)}")
        return sum(pack(layout.elem_shape, v) << (i * width) for i, v in enumerate(value))
    width = Shape.cast(layout).width
    return int(value) & ((1 << width) - 1)


def unpack(layout, bits: int):
    """Inverse of :func:`pack`: ints (sign-extended for signed shapes), lists, dicts."""
    if isinstance(layout, data.StructLayout):
        return {
            name: unpack(field.shape, (bits >> field.offset) & ((1 << field.width) - 1))
            for name, field in layout
        }
    if isinstance(layout, data.ArrayLayout):
        width = Shape.cast(layout.elem_shape).width
        mask = (1 << width) - 1
        return [
            unpack(layout.elem_shape, (bits >> (i * width)) & mask) for i in range(layout.length)
        ]
    shape = Shape.cast(layout)
    bits &= (1 << shape.width) - 1
    if shape.signed and bits >> (shape.width - 1):
        bits -= 1 << shape.width
    return bits
