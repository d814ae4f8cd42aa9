"""The control registers driven by an AXI4-Lite master that is not ours: cocotbext-axi's
``AxiLiteMaster`` on ``s_axil_*``, with its ``AxiRam`` serving the AXI4 port. Every other test
programs the device through tb/axil.py; this one checks the register semantics against
contract/registers.py with an independent implementation of the protocol.

``SYSTOLIC_DESCRIPTOR``: the fields of a descriptor that runs (on zeroed memory);
``SYSTOLIC_RESULTS``: where the counters it ends with are written, for the test to compare
with the model.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import cocotb
from cocotb.triggers import Event, FallingEdge, RisingEdge, Timer, with_timeout
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam
from cocotbext.axi.address_space import Region
from cocotbext.axi.axil_master import (
    AxiLiteMasterRead,
    AxiLiteMasterWrite,
    AxiLiteReadCmd,
    AxiLiteWriteCmd,
)
from cocotbext.axi.constants import AxiProt
from systolic.contract.config import ArrayConfig
from systolic.contract.dma import Refusal
from systolic.contract.interface import COUNTER_BITS
from systolic.contract.registers import (
    ADDR_BITS,
    IRQ_DONE,
    IRQ_ERROR,
    OKAY,
    SLVERR,
    counter_words,
    descriptor_writes,
    register_map,
)

CONFIG = ArrayConfig.from_json(os.environ["SYSTOLIC_CONFIG"])
REGS = {r.name: r for r in register_map(CONFIG)}


# -- cocotbext-axi's master under cocotb 2 ----------------------------------------------------
# Its read() and write() hand results back through ``Event.set(data)`` and ``Event.data``,
# which cocotb 2 deprecates (2.1 still honours them, with a warning, and a later release drops
# them: ../shared/TOOLCHAIN.md). The subclasses below carry the result on the event object
# instead; everything else (the channels, the handshakes) is cocotbext-axi's own code.
class _ResultEvent(Event):
    def __init__(self):
        super().__init__()
        self.result = None

    def set(self, data=None) -> None:  # cocotbext-axi calls event.set(response)
        self.result = data
        super().set()


class _Write(AxiLiteMasterWrite):
    async def write(self, address, data, prot=AxiProt.NONSECURE):
        event = _ResultEvent()
        self.in_flight_operations += 1
        self._idle.clear()
        await self.write_command_queue.put(AxiLiteWriteCmd(address, bytes(data), prot, event))
        await event.wait()
        return event.result


class _Read(AxiLiteMasterRead):
    async def read(self, address, length, prot=AxiProt.NONSECURE):
        event = _ResultEvent()
        self.in_flight_operations += 1
        self._idle.clear()
        await self.read_command_queue.put(AxiLiteReadCmd(address, length, prot, event))
        await event.wait()
        return event.result


class Cocotb2AxiLiteMaster(AxiLiteMaster):
    """``AxiLiteMaster`` with results carried as cocotb 2 allows."""

    def __init__(self, bus, clock, *args, **kwargs):  # the reset and its level, as the base's
        self.write_if = _Write(bus.write, clock, *args, **kwargs)
        self.read_if = _Read(bus.read, clock, *args, **kwargs)
        Region.__init__(self, max(self.write_if.size, self.read_if.size), **kwargs)


# -- the bench ----------------------------------------------------------------------------------
async def _reset(dut):
    dut.rst.value = 1
    for _ in range(3):
        await FallingEdge(dut.clk)
    dut.rst.value = 0
    await FallingEdge(dut.clk)


async def _every_edge(clock) -> None:
    while True:
        await RisingEdge(clock)


def _bench(dut):
    master = Cocotb2AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
    AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst, size=1 << 24)
    # Measured here (cocotb 2.1, Verilator 5.49 with --timing and the clock inside the
    # wrapper): when nothing else waits on the clock, the master's channel source, woken by an
    # Event, waits on RisingEdge(clk) forever; a coroutine that keeps waiting on it avoids that.
    cocotb.start_soon(_every_edge(dut.clk))
    return master


async def _read(master, name: str) -> int:
    return await _read_at(master, REGS[name].offset)


async def _read_at(master, offset: int) -> int:
    resp = await master.read(offset, 4)
    assert resp.resp == OKAY, f"0x{offset:03x}: RRESP {resp.resp}"
    return int.from_bytes(resp.data, "little")


async def _write(master, name: str, word: int) -> None:
    resp = await master.write(REGS[name].offset, word.to_bytes(4, "little"))
    assert resp.resp == OKAY, f"{name}: BRESP {resp.resp}"


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def registers_read_write_and_refuse_as_defined(dut):
    master = _bench(dut)
    await _reset(dut)
    for reg in REGS.values():
        if reg.value is not None:
            assert await _read(master, reg.name) == reg.value, reg.name
    rng = random.Random(int(os.environ.get("SYSTOLIC_SEED", "0")))
    for reg in REGS.values():
        if reg.name.startswith("DESC_"):
            word = rng.getrandbits(32)
            await _write(master, reg.name, word)
            assert await _read(master, reg.name) == word & reg.fields[0].mask, reg.name
    # a read-only register ignores writes; the doorbell reads 0 (not rung here: its post bit
    # is 0 in this word)
    await _write(master, "ID", 0)
    assert await _read(master, "ID") == REGS["ID"].value
    await _write(master, "DOORBELL", 0xFFFFFFFE)
    assert await _read(master, "DOORBELL") == 0
    assert await _read(master, "STATUS") & REGS["STATUS"].fields[0].mask == 0  # not busy
    # byte strobes: a write of byte 1 leaves byte 0 alone
    await _write(master, "IRQ_ENABLE", 0b11)
    await master.write(REGS["IRQ_ENABLE"].offset + 1, b"\x00")
    assert await _read(master, "IRQ_ENABLE") == 0b11
    # an address with no register answers SLVERR, reads 0
    used = {r.offset for r in REGS.values()}
    for offset in (max(used) + 4, (1 << ADDR_BITS) - 4, 0x03C):
        assert offset not in used
        got = await master.read(offset, 4)
        assert (got.resp, got.data) == (SLVERR, bytes(4)), hex(offset)
        assert (await master.write(offset, bytes(4))).resp == SLVERR, hex(offset)


async def _wait_irq(dut, cycles: int = 20_000) -> None:
    if not int(dut.irq.value):
        await with_timeout(RisingEdge(dut.irq), cycles * 10, "ns")


@cocotb.test(timeout_time=2, timeout_unit="ms")
async def descriptors_post_queue_and_interrupt(dut):
    master = _bench(dut)
    await _reset(dut)
    values = json.loads(os.environ["SYSTOLIC_DESCRIPTOR"])
    status = REGS["STATUS"]
    await _write(master, "IRQ_ENABLE", 1 << IRQ_DONE | 1 << IRQ_ERROR)
    # refused (M = 0): done at once, with the error, and both pending bits
    for offset, word in descriptor_writes(CONFIG, values | {"m": 0}):
        assert (await master.write(offset, word.to_bytes(4, "little"))).resp == OKAY
    await _wait_irq(dut)
    got = status.unpack(await _read(master, "STATUS"))
    assert got["error"] == Refusal.DIMENSION and got["finished"] == 1 and not got["busy"], got
    assert await _read(master, "IRQ_PENDING") == 0b11
    await _write(master, "IRQ_PENDING", 1 << IRQ_DONE)  # write 1 to clear
    assert await _read(master, "IRQ_PENDING") == 1 << IRQ_ERROR
    await FallingEdge(dut.clk)
    assert int(dut.irq.value) == 1, "the error bit is still pending and enabled"
    await _write(master, "IRQ_PENDING", 1 << IRQ_ERROR)
    await FallingEdge(dut.clk)
    assert int(dut.irq.value) == 0 and await _read(master, "IRQ_PENDING") == 0
    # more descriptors than the queue holds: the doorbell's response waits for room
    posts = CONFIG.queue_depth + 2
    for offset, word in descriptor_writes(CONFIG, values)[:-1]:
        assert (await master.write(offset, word.to_bytes(4, "little"))).resp == OKAY
    doorbell = REGS["DOORBELL"]
    rings = [cocotb.start_soon(master.write(doorbell.offset, (1).to_bytes(4, "little")))
             for _ in range(posts)]  # fmt: skip
    full = False
    for _ in range(2000):
        word = status.unpack(await _read(master, "STATUS"))
        full |= bool(word["queue_full"])
        if word["finished"] == 1 + posts:
            break
    else:
        raise AssertionError(f"{posts} descriptors did not finish: STATUS {word}")
    assert full, "the queue never filled"
    for ring in rings:
        assert (await ring).resp == OKAY
    assert word["error"] == 0 and not word["busy"]
    counters = {}
    for name, (lo, hi) in counter_words(CONFIG).items():
        counters[name] = (await _read_at(master, hi)) << 32 | await _read_at(master, lo)
        assert counters[name] < 1 << COUNTER_BITS
    Path(os.environ["SYSTOLIC_RESULTS"]).write_text(json.dumps(counters))
    await Timer(10, "ns")
