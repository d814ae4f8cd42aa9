"""rtl/sequencer.py: the chunk walker visits the jobs of contract.dma.jobs, in every loop order,
with the same loads, banks and stores (Amaranth's simulator: a unit of logic, no Verilator)."""

from __future__ import annotations

import numpy as np
import pytest
from amaranth.sim import Simulator
from systolic.contract.config import ArrayConfig
from systolic.contract.dma import LOOP_ORDERS, Descriptor, Region, jobs
from systolic.rtl.sequencer import ChunkWalker

_C_IN = {None: 0, "c": 1, "p": 2}
_STORE = {None: 0, "c": 1, "p": 2}


#: Offsets the walker keeps in the tests, one per dimension, with their steps.
_TRACKS = {"x": "m", "y": "k", "z": "n"}
_STEPS = {"x": 3, "y": 1000, "z": (1 << 32) - 7}  # the last wraps around 32 bits


_SEEN = ("m0", "k0", "n0", "mlen", "klen", "nlen", "load_a", "load_b", "c_in", "store",
         "bank_a", "bank_b", "bank_c", "last", *(f"offset_{t}" for t in _TRACKS))  # fmt: skip


def _walk(nest: dict, count: int) -> list[dict]:
    dut = ChunkWalker(_TRACKS)
    seen = []

    async def bench(ctx):
        for name, value in nest.items():
            ctx.set(getattr(dut.nest, name), value)
            ctx.set(getattr(dut.next_nest, name), value)
        for name, value in _STEPS.items():
            ctx.set(getattr(dut, f"step_{name}"), value)
        ctx.set(dut.restart, 1)
        await ctx.tick()
        ctx.set(dut.restart, 0)
        ctx.set(dut.advance, 1)
        for _ in range(count + 1):
            if not ctx.get(dut.valid):
                break
            seen.append({name: ctx.get(getattr(dut, name)) for name in _SEEN})
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return seen


@pytest.mark.parametrize("order", LOOP_ORDERS)
def test_walker_visits_the_contract_jobs(order, seed):
    rng = np.random.default_rng([seed, LOOP_ORDERS.index(order)])
    config = ArrayConfig("ws", 2, 2)
    for _ in range(4):
        m, k, n = (int(v) for v in rng.integers(1, 12, 3))
        chunk = tuple(int(rng.integers(1, t + 1)) for t in (m, k, n))
        accumulate = bool(rng.integers(0, 2))
        d = Descriptor(m, k, n, chunk, Region(0, 0), Region(0, 0), Region(0, 0), order=order,
                       accumulate=accumulate)  # fmt: skip
        want = jobs(config, d)
        nest = {"m": m, "k": k, "n": n, "mc": chunk[0], "kc": chunk[1], "nc": chunk[2],
                "order": LOOP_ORDERS.index(order), "accumulate": int(accumulate)}  # fmt: skip
        got = _walk(nest, len(want))
        assert len(got) == len(want), (m, k, n, chunk)
        for i, (g, j) in enumerate(zip(got, want, strict=True)):
            ch = j.chunk
            expected = {
                "m0": ch.m0, "k0": ch.k0, "n0": ch.n0, "mlen": ch.shape[0], "klen": ch.shape[1],
                "nlen": ch.shape[2], "load_a": int(j.load_a), "load_b": int(j.load_b),
                "c_in": _C_IN[j.c_in], "store": _STORE[j.store], "bank_a": j.banks["a"],
                "bank_b": j.banks["b"], "bank_c": j.banks["c"], "last": int(i == len(want) - 1),
            }  # fmt: skip
            for name, dim in _TRACKS.items():  # a step per chunk before this one, mod 2**32
                before = getattr(ch, f"{dim}0") // chunk["mkn".index(dim)]
                expected[f"offset_{name}"] = before * _STEPS[name] % (1 << 32)
            assert g == expected, (i, m, k, n, chunk)
