"""On-chip buffers, each memory of them an SRAM module of its own (rtl/sram.py).

Each buffer word is one whole array-edge vector, so the array side reads (or writes) a full vector
per cycle: the word is the lock-step union of one bank per vector element.
"""

from __future__ import annotations

from amaranth import Module, Shape, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from systolic.contract.interface import ADDR_BITS

from .sram import SramMacro

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

    def _sram(self, reads: int = 1, transparent: bool = False) -> SramMacro:
        """One SRAM of this buffer's words (contract.memories)."""
        return SramMacro(width=Shape.cast(self._word).width, depth=self._depth, reads=reads,
                         transparent=transparent)  # fmt: skip


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
        m.submodules.sram = mem = self._sram()
        en, addr, out = mem.read_port(0)
        m.d.comb += [
            self.write.ready.eq(1),
            mem.w_addr.eq(self.write.payload.addr),
            mem.w_data.eq(self.write.payload.data),
            mem.w_en.eq(self.write.valid),
            addr.eq(self.read_addr),
            en.eq(self.read_en),
            self.read_data.eq(out),
        ]
        return m
