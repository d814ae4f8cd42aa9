"""Processing elements: one multiply-accumulate and the registers that make the array systolic.

Every register that passes data to a neighbour is named for the direction it travels, so activity
(toggle) figures can be grouped by role: ``*_out`` registers travel, ``w0``/``w1``/``acc`` stay.
"""

from __future__ import annotations

from amaranth import Module, Mux, Shape, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["StationaryPE", "OutputStationaryPE", "wrapping_add"]


def wrapping_add(a, b):
    """``a + b`` modulo ``2**len(a)``: the carry out is dropped, as a two's-complement adder does.

    Both operands must already have the accumulator's width, so the generated Verilog adds operands
    of equal width (no implicit extension for lint to flag).
    """
    return (a + b)[: len(a)]


class StationaryPE(wiring.Component):
    """PE of the weight- and input-stationary arrays.

    Holds one stationary operand ``w`` in two banks (``w0``, ``w1``) so the next tile can be
    preloaded while the current one computes. The streaming operand ``x`` travels east with its
    ``valid`` and ``bank`` flags; ``bank`` selects which stationary register this ``x`` meets. The
    partial sum travels south: ``psum_out <= psum_in + x * w[bank]`` (``+ 0`` for an invalid ``x``),
    wrapped to the accumulator width.

    Preloading shifts the stationary operand south through the ``load_bank`` registers of a column:
    while ``load`` is high, ``w[load_bank] <= w_in`` and ``w_out`` shows ``w[load_bank]``.

    Latency: one cycle from ``x_in``/``psum_in`` to ``x_out``/``psum_out``.
    """

    def __init__(self, *, stream_shape: Shape, stationary_shape: Shape, acc_shape: Shape):
        self._stationary_shape = Shape.cast(stationary_shape)
        self._acc_shape = Shape.cast(acc_shape)
        super().__init__(
            {
                "x_in": In(stream_shape),
                "x_valid_in": In(1),
                "x_bank_in": In(1),
                "x_out": Out(stream_shape),
                "x_valid_out": Out(1),
                "x_bank_out": Out(1),
                "psum_in": In(acc_shape),
                "psum_out": Out(acc_shape),
                "load": In(1),
                "load_bank": In(1),
                "w_in": In(stationary_shape),
                "w_out": Out(stationary_shape),
            }
        )

    def elaborate(self, platform):
        m = Module()
        w = [Signal(self._stationary_shape, name=f"w{i}") for i in range(2)]
        for i, reg in enumerate(w):
            with m.If(self.load & (self.load_bank == i)):
                m.d.sync += reg.eq(self.w_in)
        m.d.comb += self.w_out.eq(Mux(self.load_bank, w[1], w[0]))

        product = Signal(self._acc_shape, name="product")
        m.d.comb += product.eq(self.x_in * Mux(self.x_bank_in, w[1], w[0]))
        m.d.sync += [
            self.x_out.eq(self.x_in),
            self.x_valid_out.eq(self.x_valid_in),
            self.x_bank_out.eq(self.x_bank_in),
            self.psum_out.eq(wrapping_add(self.psum_in, Mux(self.x_valid_in, product, 0))),
        ]
        return m


class OutputStationaryPE(wiring.Component):
    """PE of the output-stationary array.

    ``a`` travels east with its ``valid`` and ``last`` flags, ``b`` travels south; the PE
    accumulates ``acc += a * b`` for valid pairs, wrapped to the accumulator width. The cycle
    after the pair marked ``last``, ``a_last_out`` is high and ``acc`` holds the finished output:
    that is the one cycle in which the array reads it, and the accumulator restarts from the pair
    arriving in that same cycle, so consecutive tiles stream back to back.

    Latency: one cycle from ``a_in``/``b_in`` to ``a_out``/``b_out`` and to ``acc``.
    """

    def __init__(self, *, a_shape: Shape, b_shape: Shape, acc_shape: Shape):
        self._acc_shape = Shape.cast(acc_shape)
        super().__init__(
            {
                "a_in": In(a_shape),
                "a_valid_in": In(1),
                "a_last_in": In(1),
                "a_out": Out(a_shape),
                "a_valid_out": Out(1),
                "a_last_out": Out(1),
                "b_in": In(b_shape),
                "b_out": Out(b_shape),
                "acc": Out(acc_shape),
            }
        )

    def elaborate(self, platform):
        m = Module()
        acc = Signal(self._acc_shape, name="acc_reg")
        m.d.comb += self.acc.eq(acc)
        product = Signal(self._acc_shape, name="product")
        m.d.comb += product.eq(self.a_in * self.b_in)
        kept = Mux(self.a_last_out, 0, acc)
        m.d.sync += [
            acc.eq(wrapping_add(kept, Mux(self.a_valid_in, product, 0))),
            self.a_out.eq(self.a_in),
            self.a_valid_out.eq(self.a_valid_in),
            self.a_last_out.eq(self.a_valid_in & self.a_last_in),
            self.b_out.eq(self.b_in),
        ]
        return m
