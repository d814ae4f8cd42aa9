"""cocotb driver of the device, on the path a CPU takes: for each job of a batch, load its DRAM
image through the backdoor, set the DRAM model's parameters, program the descriptor through the
AXI4-Lite control registers (contract/registers.py) and ring the doorbell, wait for the
interrupt while the simulator runs freely, and read back the status and counters over AXI4-Lite
and the DRAM region holding C.

Run through :func:`sim.simulate.run_gemms`, which writes the batch to ``SYSTOLIC_JOBS`` (JSON)
and reads each job's outcome from ``SYSTOLIC_RESULTS``; the configuration comes in
``SYSTOLIC_CONFIG``, the names of an activity build's counters in the JSON file
``SYSTOLIC_ACTIVITY``.

With ``SYSTOLIC_SLAVE=axi-ram`` the memory is not ours: the build leaves the AXI4 port at the
wrapper's edge and cocotbext-axi's ``AxiRam`` serves it, each of its five channels pausing at
random (``SYSTOLIC_PAUSE`` the share of cycles paused, seeded by ``SYSTOLIC_PAUSE_SEED``).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import time
from pathlib import Path

import cocotb
from cocotb.triggers import FallingEdge, First, RisingEdge, Timer
from systolic.contract.config import ArrayConfig
from systolic.contract.interface import COUNTER_BITS, DEVICE_COUNTERS
from systolic.contract.registers import (
    IRQ_DONE,
    counter_words,
    descriptor_writes,
    register_map,
)
from systolic.contract.trace import LOG_FILE
from systolic.sim.dram import COUNTERS as DRAM_COUNTERS
from systolic.sim.dram import DUMP_FILE, LOAD_FILE, PROTOCOL_ERRORS
from systolic.sim.wrapper import CLOCK_PERIOD_NS, QUEUE_LOG

from .axil import AxiLiteMaster

CONFIG = ArrayConfig.from_json(os.environ["SYSTOLIC_CONFIG"])


class _DramModel:
    """The DRAM model inside the wrapper: run-time parameters and a ``$readmemh`` backdoor."""

    def __init__(self, dut):
        self.dut = dut

    def configure(self, job: dict) -> None:
        for name, value in job["dram"].items():
            getattr(self.dut, f"dram_{name}").value = value

    async def load(self, job: dict) -> None:
        shutil.copy(job["image"], LOAD_FILE)
        await _pulse(self.dut, "dram_load")

    def counters(self) -> dict[str, int]:
        out = {f"{c}_{op}": int(getattr(self.dut, f"dram_{c}_{op}").value)
               for c in DRAM_COUNTERS for op in "abcq"}  # fmt: skip
        out["protocol_errors"] = int(getattr(self.dut, PROTOCOL_ERRORS).value)
        return out

    async def dump(self, first: int, last: int) -> str:
        self.dut.dram_dump_first.value = first
        self.dut.dram_dump_last.value = last
        await _pulse(self.dut, "dram_dump")
        return Path(DUMP_FILE).read_text()


class _AxiRam:
    """cocotbext-axi's AXI RAM on the device's AXI4 port, every channel pausing at random; the
    same hex images and dumps as the DRAM model's backdoor (``sim.dram.image_lines``)."""

    def __init__(self, dut):
        from cocotbext.axi import AxiBus, AxiRam

        self.lanes = CONFIG.bus_width // 8
        self.ram = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst, size=1 << 24)
        share = float(os.environ.get("SYSTOLIC_PAUSE", "0.3"))
        rng = random.Random(int(os.environ.get("SYSTOLIC_PAUSE_SEED", "0")))

        def pauses():
            while True:
                yield rng.random() < share

        for side, names in ((self.ram.write_if, ("aw", "w", "b")),
                            (self.ram.read_if, ("ar", "r"))):  # fmt: skip
            for name in names:
                getattr(side, f"{name}_channel").set_pause_generator(pauses())

    def configure(self, job: dict) -> None:
        pass  # the RAM's timing is its own

    async def load(self, job: dict) -> None:
        word = 0
        for line in Path(job["image"]).read_text().split():
            if line.startswith("@"):
                word = int(line[1:], 16)
            else:
                self.ram.write(word * self.lanes, bytes.fromhex(line)[::-1])
                word += 1

    def counters(self) -> dict[str, int]:
        return {}  # the RAM counts nothing

    async def dump(self, first: int, last: int) -> str:
        blob = self.ram.read(first * self.lanes, (last - first + 1) * self.lanes)
        return "\n".join(blob[i : i + self.lanes][::-1].hex()
                         for i in range(0, len(blob), self.lanes)) + "\n"  # fmt: skip


async def _pulse(dut, name: str) -> None:
    getattr(dut, name).value = 1
    await FallingEdge(dut.clk)
    getattr(dut, name).value = 0
    await FallingEdge(dut.clk)


class _Host:
    """What the CPU does: program a descriptor, take the interrupt, read status and counters,
    all through AXI4-Lite."""

    def __init__(self, dut):
        self.bus = AxiLiteMaster(dut)
        regs = {r.name: r for r in register_map(CONFIG)}
        self.status, self.enable = regs["STATUS"], regs["IRQ_ENABLE"]
        self.pending = regs["IRQ_PENDING"]
        self.counters = counter_words(CONFIG)

    async def post(self, descriptor: dict) -> dict:
        """Enable the interrupt (after the reset: set-up, not counted), then post the
        descriptor; the accesses the posting took."""
        await self.bus.write(self.enable.offset, 1 << IRQ_DONE)
        before = (self.bus.writes, self.bus.cycles)
        for offset, word in descriptor_writes(CONFIG, descriptor):
            await self.bus.write(offset, word)
        return {"post": self.bus.writes - before[0], "post_cycles": self.bus.cycles - before[1]}

    async def complete(self) -> tuple[int, dict]:
        """What the driver does on the interrupt: read and clear ``IRQ_PENDING``, read
        ``STATUS``; its refusal code, and the accesses (every counter's read included)."""
        reads, writes, cycles = self.bus.reads, self.bus.writes, self.bus.cycles
        word, _ = await self.bus.read(self.pending.offset)
        await self.bus.write(self.pending.offset, word)
        status, _ = await self.bus.read(self.status.offset)
        counters = await self.read_counters()
        accesses = {"reads": self.bus.reads - reads, "acks": self.bus.writes - writes,
                    "complete_cycles": self.bus.cycles - cycles}  # fmt: skip
        return self.status.unpack(status)["error"], counters, accesses

    async def read_counters(self) -> dict[str, int]:
        out = {}
        for name, (lo, hi) in self.counters.items():
            low, _ = await self.bus.read(lo)
            high, _ = await self.bus.read(hi)
            out[name] = (high << 32 | low) & ((1 << COUNTER_BITS) - 1)
        return out


async def _queued(dut, memory, host, jobs: list, first: int, results: Path, deadline) -> None:
    """A job and those after it marked ``ahead``: every image loaded, then every descriptor
    posted at once (a full queue holds the doorbell's response), each one's figures read from
    the queue log as it completes (:data:`sim.wrapper.QUEUE_LOG`): a later one may complete
    before a CPU could read the counters. The DRAM model's counts are the group's, on its first
    job."""
    began = time.perf_counter()
    if jobs[0].get("reset", True):
        dut.rst.value = 1
        memory.configure(jobs[0])
        await FallingEdge(dut.clk)
        await FallingEdge(dut.clk)
        dut.rst.value = 0
    memory.configure(jobs[0])
    for job in jobs:
        await memory.load(job)
    await FallingEdge(dut.clk)
    served = memory.counters()
    target = int(dut.bench_dones.value) + len(jobs)
    dut.queue_on.value = 1
    await FallingEdge(dut.clk)
    start = time.perf_counter()

    async def post_all() -> list:  # a full queue holds a doorbell's response: beside the wait
        return [await host.post(job["descriptor"]) for job in jobs]

    posting = cocotb.start_soon(post_all())
    while int(dut.bench_dones.value) < target or not posting.done():  # every thousand cycles
        if time.time() > deadline:
            raise TimeoutError("the wall-clock deadline passed (SYSTOLIC_DEADLINE)")
        await Timer(1000 * CLOCK_PERIOD_NS, "ns")
    drivers = await posting
    for _ in range(3):  # the last completion's line is written the cycle after its done
        await FallingEdge(dut.clk)
    dut.queue_on.value = 0
    await FallingEdge(dut.clk)
    compute_seconds = time.perf_counter() - start
    posts, dones = [], []
    for line in Path(QUEUE_LOG).read_text().splitlines():
        cycle, event, *rest = line.split()
        (posts if event == "post" else dones).append((int(cycle), [int(x) for x in rest]))
    word, _ = await host.bus.read(host.pending.offset)
    await host.bus.write(host.pending.offset, word)
    dram = {k: v - served.get(k, 0) for k, v in memory.counters().items()}
    for i, job in enumerate(jobs):
        (posted, _), (done, (error, *counts)) = posts[i], dones[i]
        outcome = {
            "counters": dict(zip(DEVICE_COUNTERS, counts, strict=True)),
            "error": error,
            "driver": drivers[i],
            "posted": posted,
            "measured_cycles": done - posted - 1,
            "dram": dram if i == 0 else {},
            "compute_seconds": compute_seconds if i == 0 else 0.0,
            "toggles": {},
            "dumps": [await memory.dump(f, last) for f, last in job["dumps"]],
            "trace": None,
            "wall_seconds": (time.perf_counter() - began) if i == 0 else 0.0,
        }
        partial = results / f"job-{first + i}.partial.json"
        partial.write_text(json.dumps(outcome))
        partial.rename(results / f"job-{first + i}.json")


@cocotb.test()
async def run_jobs(dut):
    """Every job of the batch, with a reset before each (unless it says not), or queued behind
    the one before (``ahead``, :func:`_queued`); each outcome is written as soon as it is known
    (``job-<i>.json``), so a crash later loses nothing already done."""
    jobs = json.loads(Path(os.environ["SYSTOLIC_JOBS"]).read_text())
    results = Path(os.environ["SYSTOLIC_RESULTS"])
    deadline = float(os.environ.get("SYSTOLIC_DEADLINE", "inf"))
    activity = json.loads(Path(os.environ["SYSTOLIC_ACTIVITY"]).read_text())
    memory = _AxiRam(dut) if os.environ.get("SYSTOLIC_SLAVE") == "axi-ram" else _DramModel(dut)
    host = _Host(dut)

    def read_activity() -> dict[str, int]:
        return {name: getattr(dut, name).value.to_unsigned() for name in activity}

    i = 0
    while i < len(jobs):
        group = 1
        while i + group < len(jobs) and jobs[i + group].get("ahead"):
            group += 1
        if group > 1:
            await _queued(dut, memory, host, jobs[i : i + group], i, results, deadline)
            i += group
            continue
        job = jobs[i]
        began = time.perf_counter()
        if job.get("reset", True):
            dut.rst.value = 1
            memory.configure(job)
            await FallingEdge(dut.clk)
            await FallingEdge(dut.clk)
            await memory.load(job)
            dut.rst.value = 0
        else:  # a driver's next descriptor: the device and DRAM as the last one left them
            memory.configure(job)
            await memory.load(job)
        await FallingEdge(dut.clk)
        served = memory.counters()  # the DRAM's counts so far: this job's are the difference
        if job.get("trace"):
            dut.trace_on.value = 1  # the logger opens LOG_FILE
        start = time.perf_counter()
        before = read_activity()
        driver = await host.post(job["descriptor"])
        while not int(dut.irq.value):  # look at the wall clock every 100k cycles
            await First(RisingEdge(dut.irq), Timer(1_000_000, "ns"))
            if not int(dut.irq.value) and time.time() > deadline:
                raise TimeoutError("the wall-clock deadline passed (SYSTOLIC_DEADLINE)")
        await FallingEdge(dut.clk)
        compute_seconds = time.perf_counter() - start
        after = read_activity()
        trace = None
        if job.get("trace"):
            dut.trace_on.value = 0  # closes it
            await FallingEdge(dut.clk)
            trace = Path(LOG_FILE).read_text()
        error, counters, accesses = await host.complete()
        outcome = {
            "counters": counters,
            "error": error,
            "driver": driver | accesses,
            "measured_cycles": int(dut.bench_cycles.value),
            "dram": {k: v - served.get(k, 0) for k, v in memory.counters().items()},
            "compute_seconds": compute_seconds,
            "toggles": {name: after[name] - before[name] for name in activity},
            "dumps": [],
            "trace": trace,
        }
        for first, last in job["dumps"]:
            outcome["dumps"].append(await memory.dump(first, last))
        outcome["wall_seconds"] = time.perf_counter() - began
        partial = results / f"job-{i}.partial.json"
        partial.write_text(json.dumps(outcome))
        partial.rename(results / f"job-{i}.json")
        i += 1
