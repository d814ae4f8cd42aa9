"""tb/packing.py: values packed into Amaranth layouts and back."""

from __future__ import annotations

from amaranth import signed, unsigned
from amaranth.lib import data
from systolic.tb.packing import pack, unpack


def test_struct_of_arrays_round_trip():
    layout = data.StructLayout({"data": data.ArrayLayout(signed(4), 3), "bank": 1})
    value = {"data": [-8, 7, -1], "bank": 1}
    # data[0] = 0b1000 at bits 0..3, data[1] = 0b0111 at 4..7, data[2] = 0b1111 at 8..11, bank at 12
    assert pack(layout, value) == 0b1_1111_0111_1000
    assert unpack(layout, pack(layout, value)) == value


def test_unsigned_values_stay_unsigned():
    layout = data.ArrayLayout(unsigned(8), 2)
    assert unpack(layout, pack(layout, [255, 1])) == [255, 1]
