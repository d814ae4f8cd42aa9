"""Clock gating: the device's registers run on a copy of its clock that stops while it idles.

The device's ``clk`` and ``rst`` ports drive the always-on domain ``aon`` (the control registers
and the descriptor queue: a CPU reaches them whatever the device does) and, through a clock gate,
the domain ``sync`` of everything else. The gate lets an edge through when the device had work in
the cycle before it (``active``) or in one of the ``contract.timing.GATE_LINGER`` cycles before
that, so that what settles after the last busy cycle (the ``done`` pulse, counts taken a cycle
late) reaches its idle value; with ``active`` high, the gated domain sees every edge, and the
device does what an ungated one does, cycle for cycle.

The gate is a flip-flop on the clock's falling edge and an AND: the enable changes while the
clock is low, so the gated clock has no glitch. (The OSU 0.18 um library has no integrated clock
gate, and its latch has no area in the liberty file; the falling-edge flip-flop costs one.)
"""

from __future__ import annotations

from amaranth import ClockDomain, Module, Mux, Signal, Value
from systolic.contract.timing import GATE_LINGER as LINGER

__all__ = ["ENABLE", "LINGER", "gate_domains"]

#: The name of the gate's enable register (the power flow checks it stayed open, synth/power.py).
ENABLE = "gate_enabled"


def gate_domains(m: Module, clk: Value, rst: Value, active: Value) -> None:
    """Define ``aon`` (``clk``, ``rst``) and ``sync`` (``clk`` gated while ``active`` and the
    linger after it are low) in ``m``."""
    m.domains.aon = aon = ClockDomain("aon", local=True)
    m.domains.gate = gate = ClockDomain("gate", clk_edge="neg", local=True)
    m.domains.sync = gated = ClockDomain("sync", local=True)
    linger = Signal(range(LINGER + 1), name="gate_linger")
    want = Signal(name="gate_want")
    enabled = Signal(init=1, name=ENABLE)  # taken on the falling edge
    m.d.comb += [
        aon.clk.eq(clk), aon.rst.eq(rst),
        gate.clk.eq(clk), gate.rst.eq(0),
        gated.clk.eq(clk & enabled), gated.rst.eq(rst),
        want.eq(rst | active | linger.any()),
    ]  # fmt: skip
    m.d.aon += linger.eq(Mux(active, LINGER, Mux(linger.any(), linger - 1, 0)))
    m.d.gate += enabled.eq(want)
