"""cocotb master for the DRAM model alone (sim/dram.py): plays a scripted list of bursts and
records the cycle of every handshake, so a test can hold the model to docs/memory.md's rules.

The scenario comes as JSON in ``SYSTOLIC_DRAM_SCENARIO``; the record goes to
``SYSTOLIC_DRAM_RESULTS``. Cycle ``c`` counts falling clock edges after reset; a handshake in
cycle ``c`` happens at the rising edge that ends it, when the DRAM's own cycle count is ``c``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge, ReadOnly
from systolic.contract.axi import BURST_INCR
from systolic.rtl.axi import channel_layout
from systolic.sim.dram import DUMP_FILE, LOAD_FILE, image_lines, read_dump

from .packing import pack, unpack


@cocotb.test()
async def play(dut):
    scenario = json.loads(Path(os.environ["SYSTOLIC_DRAM_SCENARIO"]).read_text())
    width = scenario["bus_width"]
    rng = np.random.default_rng(scenario.get("seed", 0))
    pause = scenario.get("r_pause", 0.0)
    fields = {ch: channel_layout(width, ch) for ch in ("ar", "r", "aw", "w", "b")}
    for name in ("ar", "aw", "w"):
        getattr(dut, f"{name}_valid").value = 0
    dut.r_ready.value = 0
    dut.b_ready.value = 0
    for name, value in scenario["params"].items():
        getattr(dut, f"dram_{name}").value = value
    dut.rst.value = 1
    for _ in range(2):
        await FallingEdge(dut.clk)
    regions = {int(a): bytes.fromhex(h) for a, h in scenario.get("image", {}).items()}
    Path(LOAD_FILE).write_text(image_lines(width, regions))
    dut.dram_load.value = 1
    await FallingEdge(dut.clk)
    dut.dram_load.value = 0
    dut.rst.value = 0

    reads = [r for r in scenario["requests"] if r["kind"] == "r"]
    writes = [r for r in scenario["requests"] if r["kind"] == "w"]
    record = {"ar": [], "aw": [], "r": [], "w": [], "b": []}
    w_queue: list[tuple[int, dict]] = []  # accepted writes: (first cycle W may go, request)
    w_beat = 0
    expected_r = sum(r["len"] + 1 for r in reads)
    cycle = 0
    while len(record["r"]) < expected_r or len(record["b"]) < len(writes):
        ar = reads[len(record["ar"])] if len(record["ar"]) < len(reads) else None
        aw = writes[len(record["aw"])] if len(record["aw"]) < len(writes) else None
        offer_ar = ar is not None and cycle >= ar["at"]
        offer_aw = aw is not None and cycle >= aw["at"]
        dut.ar_valid.value = int(offer_ar)
        if offer_ar:
            dut.ar_payload.value = pack(fields["ar"], {"burst": BURST_INCR} | ar)
        dut.aw_valid.value = int(offer_aw)
        if offer_aw:
            dut.aw_payload.value = pack(fields["aw"], {"burst": BURST_INCR} | aw)
        offer_w = bool(w_queue) and cycle >= w_queue[0][0]
        dut.w_valid.value = int(offer_w)
        if offer_w:
            req = w_queue[0][1]
            data = int(req["data"][w_beat], 16)
            dut.w_payload.value = pack(
                fields["w"],
                {
                    "data": data,
                    "strb": int(req["strb"][w_beat], 16),
                    "last": int(w_beat == req.get("last_at", req["len"])),
                },
            )
        take_r = not (pause and rng.random() < pause)
        dut.r_ready.value = int(take_r)
        dut.b_ready.value = 1
        await ReadOnly()
        if offer_ar and int(dut.ar_ready.value):
            record["ar"].append(cycle)
        if offer_aw and int(dut.aw_ready.value):
            record["aw"].append(cycle)
            w_queue.append((cycle + 1, aw))
        if offer_w and int(dut.w_ready.value):
            record["w"].append(cycle)
            w_beat += 1
            if w_beat > w_queue[0][1]["len"]:
                w_queue.pop(0)
                w_beat = 0
        if take_r and int(dut.r_valid.value):
            beat = unpack(fields["r"], dut.r_payload.value.to_unsigned())
            record["r"].append([cycle, f"{beat['data']:x}", beat["last"], beat["id"]])
        if int(dut.b_valid.value):
            record["b"].append(
                [cycle, unpack(fields["b"], dut.b_payload.value.to_unsigned())["id"]]
            )
        await FallingEdge(dut.clk)
        cycle += 1
        if cycle > scenario.get("max_cycles", 100_000):
            raise TimeoutError(f"the scenario did not finish in {cycle} cycles")
    for name in ("ar_valid", "aw_valid", "w_valid"):
        getattr(dut, name).value = 0
    record["counters"] = {
        name: getattr(dut, name).value.to_unsigned() for name in scenario["counters"]
    }
    first, last = scenario.get("dump", [0, 0])
    dut.dram_dump_first.value = first
    dut.dram_dump_last.value = last
    dut.dram_dump.value = 1
    await FallingEdge(dut.clk)
    dut.dram_dump.value = 0
    await FallingEdge(dut.clk)
    record["dump"] = read_dump(Path(DUMP_FILE).read_text(), width).hex()
    Path(os.environ["SYSTOLIC_DRAM_RESULTS"]).write_text(json.dumps(record))
