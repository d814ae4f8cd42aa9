"""rtl/clock_gate.py: the gated domain sees an edge exactly when its device had work in the
cycle before it or in one of the LINGER cycles before that (or reset), and the always-on domain
every edge; a value crosses between them as within one domain."""

from __future__ import annotations

import numpy as np
from amaranth import Elaboratable, Module, Signal
from amaranth.sim import Simulator
from systolic.rtl.clock_gate import LINGER, gate_domains


class _Counters(Elaboratable):
    """Counts the edges of each domain; the gated one also copies the always-on count."""

    def __init__(self):
        self.clk, self.rst, self.active = Signal(), Signal(), Signal()
        self.aon_edges, self.gated_edges, self.copied = Signal(16), Signal(16), Signal(16)

    def elaborate(self, platform):
        m = Module()
        gate_domains(m, self.clk, self.rst, self.active)
        m.d.aon += self.aon_edges.eq(self.aon_edges + 1)
        m.d.sync += [self.gated_edges.eq(self.gated_edges + 1), self.copied.eq(self.aon_edges)]
        return m


def test_the_gate_passes_the_edges_of_busy_cycles_and_lingers(seed):
    rng = np.random.default_rng(seed)
    print(f"seed {seed}")
    # bursts of work between idle stretches longer and shorter than the linger
    active = [0, 0] + [int(v) for v in rng.random(200) < 0.15]  # none during the reset
    dut = _Counters()
    seen = []

    async def bench(ctx):
        for cycle, a in enumerate(active):
            ctx.set(dut.active, a)
            ctx.set(dut.rst, 1 if cycle < 2 else 0)
            await ctx.delay(5e-9)
            ctx.set(dut.clk, 0)
            await ctx.delay(5e-9)
            ctx.set(dut.clk, 1)  # the edge that ends the cycle
            await ctx.delay(1e-10)
            seen.append((ctx.get(dut.aon_edges), ctx.get(dut.gated_edges), ctx.get(dut.copied)))

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    gated = 0  # reset (cycles 0 and 1) zeroes both counts
    for cycle, (aon, got, copied) in enumerate(seen[2:], start=2):
        if any(active[max(0, cycle - LINGER) : cycle + 1]):  # work now or LINGER cycles ago
            gated += 1
            assert copied == aon - 1, cycle  # the always-on count before this edge
        assert (aon, got) == (cycle - 1, gated), (cycle, active[max(0, cycle - 5) : cycle + 1])
    assert 0 < gated < len(active) - 2  # it shut and it opened
