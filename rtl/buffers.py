"""On-chip buffers built on ``amaranth.lib.memory``.

Each buffer word is one whole array-edge vector, so the array side reads (or writes) a full vector
per cycle: the word is the lock-step union of one bank per vector element.
"""

from __future__ import annotations

from amaranth import Module, Shape, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from systolic.contract.interface import ADDR_BITS

__all__ = ["InputBuffer", "address_shape"]


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
