"""On-chip buffers built on ``amaranth.lib.memory``.

Each buffer word is one whole array-edge vector, so the array side reads (or writes) a full vector
per cycle: the word is the lock-step union of one bank per vector element.
"""

from __future__ import annotations

from amaranth import Module, Mux, Shape, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from systolic.contract.interface import ADDR_BITS

from .array import Flow
from .fp import IntegerArithmetic

__all__ = ["InputBuffer", "AccumulatorBuffer", "address_shape"]


def address_shape() -> Shape:
    """Buffer addresses: :data:`contract.interface.ADDR_BITS` bits."""
    return unsigned(ADDR_BITS)


class _Buffer(wiring.Component):
    """An SRAM of ``depth`` words of layout ``word``, behind the ports ``members``."""

    def __init__(self, word: data.ArrayLayout, depth: int, members: dict):
        self._word = word
        self._depth = depth
        super().__init__(members)

    @property
    def depth(self) -> int:
        return self._depth

    def _memory(self, m: Module) -> Memory:
        m.submodules.mem = mem = Memory(shape=self._word, depth=self._depth, init=[])
        return mem


class InputBuffer(_Buffer):
    """Operand buffer (A or B): the host writes words, the controller reads them.

    Ports
    -----
    write : stream {addr, data}
        Host writes, one word a cycle; ``ready`` is always high (the SRAM has its own write port).
    read_addr, read_en : in
        Controller reads; ``read_data`` holds the word one cycle after ``read_en``, and keeps it
        while ``read_en`` is low.
    """

    def __init__(self, *, word: data.ArrayLayout, depth: int):
        super().__init__(
            word,
            depth,
            {
                "write": In(
                    stream.Signature(data.StructLayout({"addr": address_shape(), "data": word}))
                ),
                "read_addr": In(address_shape()),
                "read_en": In(1),
                "read_data": Out(word),
            },
        )

    def elaborate(self, platform):
        m = Module()
        mem = self._memory(m)
        wp = mem.write_port()
        rp = mem.read_port()
        m.d.comb += [
            self.write.ready.eq(1),
            wp.addr.eq(self.write.payload.addr),
            wp.data.eq(self.write.payload.data),
            wp.en.eq(self.write.valid),
            rp.addr.eq(self.read_addr),
            rp.en.eq(self.read_en),
            self.read_data.eq(rp.data),
        ]
        return m


class AccumulatorBuffer(_Buffer):
    """Output buffer (C) at accumulator width, accumulating in place.

    Ports
    -----
    update : Flow {addr, data, accumulate}
        From the controller, one word a cycle: ``C[addr] <= data`` or, with ``accumulate``,
        ``C[addr] <= C[addr] + data`` (wrapping). Two stages: the old word is read in the cycle of
        the update and written back in the next; the read is transparent to that write, so
        back-to-back updates of one address add up correctly.
    read : stream addr  /  read_data : stream word
        Host reads, with back-pressure: a request is taken when the data register is free or
        being emptied in the same cycle; its word appears in ``read_data`` the next cycle.
    """

    def __init__(self, *, word: data.ArrayLayout, depth: int, arithmetic=IntegerArithmetic):
        self._arith = arithmetic
        super().__init__(
            word,
            depth,
            {
                "update": In(
                    Flow(
                        data.StructLayout({"addr": address_shape(), "data": word, "accumulate": 1})
                    )
                ),
                "read": In(stream.Signature(address_shape())),
                "read_data": Out(stream.Signature(word)),
            },
        )

    def elaborate(self, platform):
        m = Module()
        mem = self._memory(m)
        wp = mem.write_port()
        old = mem.read_port(transparent_for=(wp,))
        host = mem.read_port()

        # Read-modify-write: stage 1 reads the old word, stage 2 adds and writes.
        upd = self.update
        pending = Signal(upd.payload.shape(), name="rmw_pending")
        pending_valid = Signal(name="rmw_pending_valid")
        m.d.comb += [old.addr.eq(upd.payload.addr), old.en.eq(upd.valid)]
        m.d.sync += [pending.eq(upd.payload), pending_valid.eq(upd.valid)]
        for i in range(self._word.length):
            total = self._arith.add(m, old.data[i], pending.data[i], f"sum{i}")
            m.d.comb += wp.data[i].eq(Mux(pending.accumulate, total, pending.data[i]))
        m.d.comb += [wp.addr.eq(pending.addr), wp.en.eq(pending_valid)]

        # Host reads: a one-entry output register in front of the SRAM's own data register.
        take = self.read.valid & self.read.ready
        m.d.comb += [
            self.read.ready.eq(~self.read_data.valid | self.read_data.ready),
            host.addr.eq(self.read.payload),
            host.en.eq(take),
            self.read_data.payload.eq(host.data),
        ]
        with m.If(take):
            m.d.sync += self.read_data.valid.eq(1)
        with m.Elif(self.read_data.ready):
            m.d.sync += self.read_data.valid.eq(0)
        return m
