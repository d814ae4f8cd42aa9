"""Processing elements: one multiply-accumulate and the registers that make the array systolic.

Every register that passes data to a neighbour is named for the direction it travels, so activity
(toggle) figures can be grouped by role: ``east``/``*_out`` registers travel,
``w0``/``w1``/``acc_reg`` stay, and ``mul_a``/``mul_b`` are the multiplier's operands.
"""

from __future__ import annotations

from amaranth import Module, Mux, Shape, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .fp import IntegerArithmetic

__all__ = ["StationaryPE", "OutputStationaryPE"]


class StationaryPE(wiring.Component):
    """PE of the weight- and input-stationary arrays.

    Holds one stationary operand ``w`` in two banks (``w0``, ``w1``) so the next tile can be
    preloaded while the current one computes. The streaming operand travels east (``west`` in,
    ``east`` out) with its ``valid`` and ``bank`` flags; ``bank`` selects which stationary register
    it meets. The partial sum travels south: ``psum_out <= psum_in + x * w[bank]`` (``+ 0`` for an
    invalid ``x``), wrapped to the accumulator width.

    Preloading shifts the stationary operand south through the ``load_bank`` registers of a column:
    while ``load`` is high, ``w[load_bank] <= w_in`` and ``w_out`` shows ``w[load_bank]``.

    Latency: one cycle from ``west``/``psum_in`` to ``east``/``psum_out``.
    """

    @staticmethod
    def lane_layout(stream_shape) -> data.StructLayout:
        """What travels east: the streaming operand and its flags."""
        return data.StructLayout({"x": stream_shape, "valid": 1, "bank": 1})

    def __init__(
        self, *, stream_shape: Shape, stationary_shape: Shape, acc_shape: Shape,
        arithmetic=IntegerArithmetic,
    ):  # fmt: skip
        self._stationary_shape = Shape.cast(stationary_shape)
        self._acc_shape = Shape.cast(acc_shape)
        self._arith = arithmetic
        lane = self.lane_layout(stream_shape)
        super().__init__(
            {
                "west": In(lane),
                "east": Out(lane),
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

        x = self.west
        # The multiplier's operands, named so toggle counts can find them (sim/probes.py).
        mul_a, mul_b = Signal.like(x.x, name="mul_a"), Signal.like(w[0], name="mul_b")
        m.d.comb += [mul_a.eq(x.x), mul_b.eq(Mux(x.bank, w[1], w[0]))]
        product = self._arith.multiply(m, mul_a, mul_b, self._acc_shape, "product")
        total = self._arith.add(m, self.psum_in, product, "sum")
        m.d.sync += [self.east.eq(x), self.psum_out.eq(Mux(x.valid, total, self.psum_in))]
        return m


class OutputStationaryPE(wiring.Component):
    """PE of the output-stationary array.

    ``a`` travels east (``west`` in, ``east`` out) with its ``valid`` and ``last`` flags, ``b``
    travels south; the PE accumulates ``acc += a * b`` for valid pairs, wrapped to the accumulator
    width. The cycle after the pair marked ``last``, ``east.last`` is high and ``acc`` holds the
    finished output: that is the one cycle in which the array reads it, and the accumulator
    restarts from the pair arriving in that same cycle, so consecutive tiles stream back to back.

    Latency: one cycle from ``west``/``b_in`` to ``east``/``b_out`` and to ``acc``.
    """

    @staticmethod
    def lane_layout(a_shape) -> data.StructLayout:
        """What travels east: the A operand and its flags."""
        return data.StructLayout({"a": a_shape, "valid": 1, "last": 1})

    def __init__(
        self, *, a_shape: Shape, b_shape: Shape, acc_shape: Shape, arithmetic=IntegerArithmetic
    ):
        self._acc_shape = Shape.cast(acc_shape)
        self._arith = arithmetic
        lane = self.lane_layout(a_shape)
        super().__init__(
            {
                "west": In(lane),
                "east": Out(lane),
                "b_in": In(b_shape),
                "b_out": Out(b_shape),
                "acc": Out(acc_shape),
            }
        )

    def elaborate(self, platform):
        m = Module()
        a = self.west
        acc = Signal(self._acc_shape, name="acc_reg")
        m.d.comb += self.acc.eq(acc)
        mul_a, mul_b = Signal.like(a.a, name="mul_a"), Signal.like(self.b_in, name="mul_b")
        m.d.comb += [mul_a.eq(a.a), mul_b.eq(self.b_in)]
        product = self._arith.multiply(m, mul_a, mul_b, self._acc_shape, "product")
        kept = Signal(self._acc_shape, name="kept")
        m.d.comb += kept.eq(Mux(self.east.last, 0, acc))
        total = self._arith.add(m, kept, product, "sum")
        m.d.sync += [
            acc.eq(Mux(a.valid, total, kept)),
            self.east.a.eq(a.a),
            self.east.valid.eq(a.valid),
            self.east.last.eq(a.valid & a.last),
            self.b_out.eq(self.b_in),
        ]
        return m
