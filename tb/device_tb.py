"""cocotb driver of the device: for each job of a batch, load its DRAM image through the
backdoor, set the DRAM model's parameters, post its descriptor, wait for ``done`` while the
simulator runs freely, and read back the counters and the DRAM region holding C.

Run through :func:`sim.simulate.run_gemms`, which writes the batch to ``SYSTOLIC_JOBS`` (JSON)
and reads each job's outcome from ``SYSTOLIC_RESULTS``; the configuration comes in
``SYSTOLIC_CONFIG``, the names of an activity build's counters in ``SYSTOLIC_ACTIVITY``.

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
from cocotb.triggers import FallingEdge, First, ReadOnly, RisingEdge, Timer
from systolic.contract.config import ArrayConfig
from systolic.contract.trace import LOG_FILE
from systolic.rtl.device import descriptor_layout, device_counters_layout
from systolic.sim.dram import COUNTERS as DRAM_COUNTERS
from systolic.sim.dram import DUMP_FILE, LOAD_FILE, PROTOCOL_ERRORS

from .packing import pack, unpack

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
        out = {f"{c}_{op}": getattr(self.dut, f"dram_{c}_{op}").value.to_unsigned()
               for c in DRAM_COUNTERS for op in "abcq"}  # fmt: skip
        out["protocol_errors"] = getattr(self.dut, PROTOCOL_ERRORS).value.to_unsigned()
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


@cocotb.test()
async def run_jobs(dut):
    """Every job of the batch, with a reset before each; each outcome is written as soon as it
    is known (``job-<i>.json``), so a crash later loses nothing already done."""
    jobs = json.loads(Path(os.environ["SYSTOLIC_JOBS"]).read_text())
    results = Path(os.environ["SYSTOLIC_RESULTS"])
    deadline = float(os.environ.get("SYSTOLIC_DEADLINE", "inf"))
    layout = descriptor_layout(CONFIG)
    activity = json.loads(os.environ.get("SYSTOLIC_ACTIVITY", "[]"))
    memory = _AxiRam(dut) if os.environ.get("SYSTOLIC_SLAVE") == "axi-ram" else _DramModel(dut)

    def read_activity() -> dict[str, int]:
        return {name: getattr(dut, name).value.to_unsigned() for name in activity}

    for i, job in enumerate(jobs):
        began = time.perf_counter()
        dut.desc__valid.value = 0
        dut.rst.value = 1
        memory.configure(job)
        await FallingEdge(dut.clk)
        await FallingEdge(dut.clk)
        await memory.load(job)
        dut.rst.value = 0
        await FallingEdge(dut.clk)
        if job.get("trace"):
            dut.trace_on.value = 1  # the logger opens LOG_FILE
        start = time.perf_counter()
        before = read_activity()
        dut.desc__payload.value = pack(layout, job["descriptor"])
        dut.desc__valid.value = 1
        while True:
            await ReadOnly()
            accepted = int(dut.desc__ready.value)
            await FallingEdge(dut.clk)
            if accepted:
                break
        dut.desc__valid.value = 0
        while not int(dut.done.value):  # look at the wall clock every 100k cycles
            await First(RisingEdge(dut.done), Timer(1_000_000, "ns"))
            if not int(dut.done.value) and time.time() > deadline:
                raise TimeoutError("the wall-clock deadline passed (SYSTOLIC_DEADLINE)")
        await FallingEdge(dut.clk)
        compute_seconds = time.perf_counter() - start
        after = read_activity()
        trace = None
        if job.get("trace"):
            dut.trace_on.value = 0  # closes it
            await FallingEdge(dut.clk)
            trace = Path(LOG_FILE).read_text()
        outcome = {
            "counters": unpack(device_counters_layout(), dut.counters.value.to_unsigned()),
            "error": int(dut.error.value),
            "measured_cycles": dut.bench_cycles.value.to_unsigned(),
            "dram": memory.counters(),
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
