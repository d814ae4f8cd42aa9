"""Ping-pong buffers: each is two SRAM banks with their own ports, so the DMA fills (or drains)
one bank while the array works on the other. Which client owns a bank is the sequencer's
business (rtl/sequencer.py); the banks only route each port to the bank it names."""

from __future__ import annotations

from amaranth import Module, Mux, Signal
from amaranth.lib import data
from amaranth.lib.wiring import In, Out
from systolic.contract.timing import UPDATE_LATENCY

from .array import Flow
from .buffers import _Buffer, address_shape
from .fp import IntegerArithmetic

__all__ = ["BankedAccumulator", "BankedInput", "fill_layout"]


def fill_layout(word) -> data.StructLayout:
    """A DMA write of one word: its bank, address and data."""
    return data.StructLayout({"bank": 1, "addr": address_shape(), "data": word})


class BankedInput(_Buffer):
    """An operand buffer (A, B) of two banks of ``depth`` words.

    Ports
    -----
    fill : Flow {bank, addr, data}
        DMA writes, one word a cycle.
    read_bank, read_addr, read_en : in
        Controller reads of bank ``read_bank``; ``read_data`` holds the word one cycle after
        ``read_en`` and keeps it while ``read_en`` is low.
    """

    def __init__(self, *, word, depth: int):
        super().__init__(word, depth, {
            "fill": In(Flow(fill_layout(word))),
            "read_bank": In(1),
            "read_addr": In(address_shape()),
            "read_en": In(1),
            "read_data": Out(word),
        })  # fmt: skip

    def elaborate(self, platform):
        m = Module()
        last_bank = Signal(name="last_read_bank")
        with m.If(self.read_en):
            m.d.sync += last_bank.eq(self.read_bank)
        outs = []
        for b in range(2):
            m.submodules[f"bank{b}"] = mem = self._sram()
            en, addr, out = mem.read_port(0)
            m.d.comb += [
                mem.w_addr.eq(self.fill.payload.addr),
                mem.w_data.eq(self.fill.payload.data),
                mem.w_en.eq(self.fill.valid & (self.fill.payload.bank == b)),
                addr.eq(self.read_addr),
                en.eq(self.read_en & (self.read_bank == b)),
            ]
            outs.append(out)
        m.d.comb += self.read_data.eq(Mux(last_bank, outs[1], outs[0]))
        return m


class BankedAccumulator(_Buffer):
    """The output buffer (C) at accumulator width: two banks, each accumulating in place.

    Ports
    -----
    update : Flow {bank, addr, data, accumulate}
        From the controller: ``C[addr] <= data`` or ``C[addr] + data`` in bank ``bank``, a
        read-modify-write written :data:`contract.timing.UPDATE_LATENCY` cycles later; updates
        of one address in consecutive cycles add up.
    fill : Flow {bank, addr, data}
        DMA writes (C or partial sums loaded from DRAM); never to the bank being updated.
    drain_bank, drain_addr, drain_en : in
        DMA reads for a store; ``drain_data`` holds the word one cycle after ``drain_en``.
    """

    def __init__(self, *, word, depth: int, arithmetic=IntegerArithmetic):
        self._arith = arithmetic
        update = data.StructLayout(
            {"bank": 1, "addr": address_shape(), "data": word, "accumulate": 1}
        )
        super().__init__(word, depth, {
            "update": In(Flow(update)),
            "fill": In(Flow(fill_layout(word))),
            "drain_bank": In(1),
            "drain_addr": In(address_shape()),
            "drain_en": In(1),
            "drain_data": Out(word),
        })  # fmt: skip

    def elaborate(self, platform):
        if UPDATE_LATENCY != 2:
            raise ValueError(f"BankedAccumulator writes an update 2 cycles after it arrives, "
                             f"not contract.timing.UPDATE_LATENCY = {UPDATE_LATENCY}")  # fmt: skip
        m = Module()
        upd = self.update
        # the update's old word is read in its cycle, registered in the next (``reading``), and
        # the sum written in the one after (``pending``)
        reading = Signal(upd.payload.shape(), name="rmw_reading")
        reading_valid = Signal(name="rmw_reading_valid")
        pending = Signal(upd.payload.shape(), name="rmw_pending")
        pending_valid = Signal(name="rmw_pending_valid")
        m.d.sync += [reading.eq(upd.payload), reading_valid.eq(upd.valid), pending.eq(reading),
                     pending_valid.eq(reading_valid)]  # fmt: skip
        drained_bank = Signal(name="drained_bank")
        with m.If(self.drain_en):
            m.d.sync += drained_bank.eq(self.drain_bank)
        olds, drains, writes = [], [], []
        for b in range(2):
            # read port 0 (transparent): the update's old word; port 1: the store's drain
            m.submodules[f"bank{b}"] = mem = self._sram(reads=2, transparent=True)
            (old_en, old_addr, old), (drain_en, drain_addr, drain) = map(mem.read_port, (0, 1))
            mine = pending_valid & (pending.bank == b)
            m.d.comb += [
                old_addr.eq(upd.payload.addr),
                old_en.eq(upd.valid & (upd.payload.bank == b)),
                drain_addr.eq(self.drain_addr),
                drain_en.eq(self.drain_en & (self.drain_bank == b)),
                mem.w_addr.eq(Mux(mine, pending.addr, self.fill.payload.addr)),
                mem.w_en.eq(mine | (self.fill.valid & (self.fill.payload.bank == b))),
            ]
            olds.append(old)
            drains.append(drain)
            writes.append((mem, mine))
        # one set of adders, on the bank the pending update names, from a register: an update
        # one cycle behind another of the same word read it before that one's sum is written
        # (two behind, the transparent read gives the sum), so it takes the sum
        old_word = Signal(self._word, name="rmw_old")
        new_word = Signal(self._word, name="rmw_new")
        same = pending_valid & (pending.bank == reading.bank) & (pending.addr == reading.addr)
        m.d.sync += old_word.eq(Mux(same, new_word, Mux(reading.bank, olds[1], olds[0])))
        for i in range(self._word.length):
            total = self._arith.add(m, old_word[i], pending.data[i], f"sum{i}")
            m.d.comb += new_word[i].eq(Mux(pending.accumulate, total, pending.data[i]))
        for mem, mine in writes:
            m.d.comb += mem.w_data.eq(Mux(mine, new_word, self.fill.payload.data))
        m.d.comb += self.drain_data.eq(Mux(drained_bank, drains[1], drains[0]))
        return m
