"""cocotb driver of the device: for each job of a batch, load its DRAM image through the
backdoor, set the DRAM model's parameters, post its descriptor, wait for ``done`` while the
simulator runs freely, and read back the counters and the DRAM region holding C.

Run through :func:`sim.simulate.run_gemms`, which writes the batch to ``SYSTOLIC_JOBS`` (JSON)
and reads each job's outcome from ``SYSTOLIC_RESULTS``; the configuration comes in
``SYSTOLIC_CONFIG``, the names of an activity build's counters in ``SYSTOLIC_ACTIVITY``.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import cocotb
from cocotb.triggers import FallingEdge, First, ReadOnly, RisingEdge, Timer
from systolic.contract.config import ArrayConfig
from systolic.rtl.device import descriptor_layout, device_counters_layout
from systolic.sim.dram import COUNTERS as DRAM_COUNTERS
from systolic.sim.dram import DUMP_FILE, LOAD_FILE

from .packing import pack, unpack

CONFIG = ArrayConfig.from_json(os.environ["SYSTOLIC_CONFIG"])


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

    def read_activity() -> dict[str, int]:
        return {name: getattr(dut, name).value.to_unsigned() for name in activity}

    for i, job in enumerate(jobs):
        began = time.perf_counter()
        dut.desc__valid.value = 0
        dut.rst.value = 1
        for name, value in job["dram"].items():
            getattr(dut, f"dram_{name}").value = value
        await FallingEdge(dut.clk)
        await FallingEdge(dut.clk)
        shutil.copy(job["image"], LOAD_FILE)
        await _pulse(dut, "dram_load")
        dut.rst.value = 0
        await FallingEdge(dut.clk)
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
        outcome = {
            "counters": unpack(device_counters_layout(), dut.counters.value.to_unsigned()),
            "error": int(dut.error.value),
            "measured_cycles": dut.bench_cycles.value.to_unsigned(),
            "dram": {
                f"{c}_{op}": getattr(dut, f"dram_{c}_{op}").value.to_unsigned()
                for c in DRAM_COUNTERS
                for op in "abcq"
            },  # fmt: skip
            "compute_seconds": compute_seconds,
            "toggles": {name: after[name] - before[name] for name in activity},
            "dumps": [],
        }
        for first, last in job["dumps"]:
            dut.dram_dump_first.value = first
            dut.dram_dump_last.value = last
            await _pulse(dut, "dram_dump")
            outcome["dumps"].append(Path(DUMP_FILE).read_text())
        outcome["wall_seconds"] = time.perf_counter() - began
        partial = results / f"job-{i}.partial.json"
        partial.write_text(json.dumps(outcome))
        partial.rename(results / f"job-{i}.json")
