"""The control plane: an AXI4-Lite slave holding the registers of :mod:`contract.registers`, the
port a CPU programs the accelerator through.

Writing ``DOORBELL`` posts the ``DESC_*`` registers to the device's descriptor queue (the
write's response waits while the queue is full); ``STATUS``, the interrupt and the counters
report back. One write and one read are served at a time; a write takes its address and data in
either order. Unmapped addresses answer ``SLVERR``.
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, Value, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from systolic.contract.config import ArrayConfig
from systolic.contract.dma import descriptor_fields
from systolic.contract.interface import COUNTER_BITS, DEVICE_COUNTERS, SHIFT_BITS
from systolic.contract.registers import (
    ADDR_BITS,
    IRQ_DONE,
    IRQ_ERROR,
    OKAY,
    SLVERR,
    Access,
    lite_signals,
    register_map,
)

from .arith import equals
from .array import operand_shape

__all__ = ["ControlRegisters", "descriptor_layout", "device_counters_layout"]


def descriptor_layout(config: ArrayConfig) -> data.StructLayout:
    """:func:`contract.dma.descriptor_fields` as an Amaranth layout."""
    signed_fields = {"a_zero": (config.a_width, config.a_signed),
                     "b_zero": (config.b_width, config.b_signed),
                     **{name: (config.out_width, config.out_signed)
                        for name in ("out_zero", "clamp_lo", "clamp_hi", "x_zero", "y_zero")},
                     **{f"{t}_shift": (SHIFT_BITS, True) for t in "xyz"}}  # fmt: skip
    return data.StructLayout({
        name: operand_shape(*signed_fields[name]) if name in signed_fields else unsigned(bits)
        for name, bits in descriptor_fields(config)
    })  # fmt: skip


def device_counters_layout() -> data.StructLayout:
    return data.StructLayout({name: unsigned(COUNTER_BITS) for name in DEVICE_COUNTERS})


def _word(fields, sources: dict) -> Cat:
    """A 32-bit register word with each field's source in its bits (zeros elsewhere)."""
    bits = [Const(0, 1)] * 32
    for f in fields:
        src = sources[f.name]
        for i in range(f.bits):
            bits[f.lsb + i] = src[i]
    return Cat(*bits)


def _decode(addr, regs) -> dict:
    """Per register, whether byte address ``addr`` selects it."""
    word = addr[2:ADDR_BITS]
    return {r.name: equals(word, r.offset >> 2) for r in regs}


def _any(terms) -> Value:
    return _tree_or(list(terms))


def _tree_or(terms: list) -> Value:
    """The OR of ``terms`` as a balanced tree (a long chain makes deep expressions)."""
    while len(terms) > 1:
        terms = [terms[i] | terms[i + 1] if i + 1 < len(terms) else terms[i]
                 for i in range(0, len(terms), 2)]  # fmt: skip
    return Value.cast(terms[0])


class ControlRegisters(wiring.Component):
    """The registers and their AXI4-Lite slave.

    Ports
    -----
    awaddr ... rready : the AXI4-Lite slave (:func:`contract.registers.lite_signals`).
    desc : stream out
        The posted descriptor, to the device's queue.
    busy, done, error, counters : in
        The device's state: running, finished (one cycle), the last refusal, its counters.
    irq : out
        High while an enabled ``IRQ_PENDING`` bit is set.
    """

    def __init__(self, config: ArrayConfig):
        self._config = config
        members = {name: In(bits) if d == "in" else Out(bits) for name, d, bits in lite_signals()}
        members |= {
            "desc": Out(stream.Signature(descriptor_layout(config))),
            "busy": In(1),
            "done": In(1),
            "error": In(4),
            "counters": In(device_counters_layout()),
            "irq": Out(1),
        }
        super().__init__(members)

    def elaborate(self, platform):  # noqa: C901 (one register file)
        m = Module()
        cfg = self._config
        regs = register_map(cfg)
        desc = {name: Signal(bits, name=f"desc_{name}") for name, bits in descriptor_fields(cfg)}
        irq_enable = Signal(2, name="irq_enable")
        irq_pending = Signal(2, name="irq_pending")
        finished = Signal(16, name="finished")
        for name, reg in desc.items():
            m.d.comb += getattr(self.desc.payload, name).eq(reg)
        m.d.comb += self.irq.eq((irq_pending & irq_enable).any())

        # -- what each register reads -------------------------------------------------------------
        sources = {
            "STATUS": {"busy": self.busy, "queue_full": ~self.desc.ready, "error": self.error,
                       "finished": finished},
            "IRQ_ENABLE": {"done": irq_enable[IRQ_DONE], "error": irq_enable[IRQ_ERROR]},
            "IRQ_PENDING": {"done": irq_pending[IRQ_DONE], "error": irq_pending[IRQ_ERROR]},
        }  # fmt: skip
        for name, reg in desc.items():
            sources[f"DESC_{name.upper()}"] = {"value": reg}
        for name in DEVICE_COUNTERS:
            value = getattr(self.counters, name)
            sources[f"COUNTER_{name.upper()}_LO"] = {"value": value[:32]}
            sources[f"COUNTER_{name.upper()}_HI"] = {"value": value[32:]}

        def reads(reg):
            if reg.value is not None:
                return Const(reg.value, 32)
            if reg.access is Access.WO:
                return Const(0, 32)
            return _word(reg.fields, sources[reg.name])

        # -- reads: one at a time ------------------------------------------------------------------
        r_valid = Signal(name="r_valid")
        m.d.comb += [self.arready.eq(~r_valid), self.rvalid.eq(r_valid)]
        with m.If(r_valid & self.rready):
            m.d.sync += r_valid.eq(0)
        r_hits = _decode(self.araddr, regs)
        with m.If(self.arvalid & ~r_valid):
            m.d.sync += [
                r_valid.eq(1),
                self.rresp.eq(Mux(_any(r_hits.values()), OKAY, SLVERR)),
                self.rdata.eq(_tree_or([Mux(r_hits[r.name], reads(r), 0) for r in regs])),
            ]

        # -- writes: address and data in either order, then the response -------------------------
        aw_full, w_full = Signal(name="aw_full"), Signal(name="w_full")
        aw_addr = Signal(ADDR_BITS, name="aw_addr")
        w_data, w_strb = Signal(32, name="w_data"), Signal(4, name="w_strb")
        b_valid = Signal(name="b_valid")
        m.d.comb += [self.awready.eq(~aw_full), self.wready.eq(~w_full), self.bvalid.eq(b_valid)]
        with m.If(self.awvalid & ~aw_full):
            m.d.sync += [aw_full.eq(1), aw_addr.eq(self.awaddr)]
        with m.If(self.wvalid & ~w_full):
            m.d.sync += [w_full.eq(1), w_data.eq(self.wdata), w_strb.eq(self.wstrb)]
        with m.If(b_valid & self.bready):
            m.d.sync += b_valid.eq(0)
        pending = aw_full & w_full & ~b_valid
        w_hits = _decode(aw_addr, regs)
        doorbell = next(r for r in regs if r.name == "DOORBELL")
        ring = pending & w_hits["DOORBELL"] & w_strb[0] & w_data[doorbell.fields[0].lsb]
        m.d.comb += self.desc.valid.eq(ring)
        complete = pending & (~ring | self.desc.ready)  # a full queue holds the response back
        mask = Cat(*(w_strb[i].replicate(8) for i in range(4)))
        with m.If(complete):
            m.d.sync += [aw_full.eq(0), w_full.eq(0), b_valid.eq(1),
                         self.bresp.eq(Mux(_any(w_hits.values()), OKAY, SLVERR))]  # fmt: skip
        for name, reg in desc.items():
            with m.If(complete & w_hits[f"DESC_{name.upper()}"]):
                merged = (reg.as_unsigned() & ~mask) | (w_data & mask)
                m.d.sync += reg.eq(merged[: len(reg)])
        with m.If(complete & w_hits["IRQ_ENABLE"]):
            m.d.sync += irq_enable.eq((irq_enable & ~mask[:2]) | (w_data[:2] & mask[:2]))
        clear = Mux(complete & w_hits["IRQ_PENDING"], w_data[:2] & mask[:2], 0)

        # -- events ----------------------------------------------------------------------------
        events = Cat(self.done, self.done & self.error.any())  # IRQ_DONE, IRQ_ERROR
        m.d.sync += irq_pending.eq((irq_pending & ~clear) | events)
        with m.If(self.done):
            m.d.sync += finished.eq(finished + 1)
        return m
