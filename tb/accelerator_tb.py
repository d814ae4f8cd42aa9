"""cocotb driver of the accelerator: runs a batch of GEMMs in one simulator process.

Run through :func:`sim.simulate.run_gemms`, which writes the batch to ``SYSTOLIC_JOBS`` (an
.npz) and reads the outcome from ``SYSTOLIC_RESULTS``; the configuration comes in
``SYSTOLIC_CONFIG``.
Python moves data into and out of the buffers (with random valid/ready pauses when asked) and
then only waits for ``done``: the simulator runs the compute at full speed.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

import cocotb
import numpy as np
from amaranth import Shape
from cocotb.triggers import FallingEdge, First, ReadOnly, RisingEdge, Timer, with_timeout
from systolic.contract.config import ArrayConfig
from systolic.contract.layouts import footprint, from_words, layouts, to_words
from systolic.contract.plan import c_read_requests, check_command, q_words, steps
from systolic.rtl.top import (
    c_read_layout,
    command_layout,
    counters_layout,
    q_word_layout,
    word_layouts,
    write_layout,
)
from systolic.sim.build import BACKDOOR_PREFIX

from .packing import pack, unpack

CONFIG = ArrayConfig.from_json(os.environ["SYSTOLIC_CONFIG"])


class Host:
    """The driver: buffer writes, commands, counter and C reads, with optional stream pauses."""

    def __init__(self, dut, rng: np.random.Generator, pause: float, deadline: float = math.inf):
        self.dut = dut
        self.deadline = deadline  # Unix time after which a command is abandoned
        self.rng = rng
        self.pause = pause
        self.words = word_layouts(CONFIG)
        self.layouts = layouts(CONFIG)
        self.write_layouts = {name: write_layout(self.words[name]) for name in ("a", "b")}
        if CONFIG.requant:
            self.write_layouts["q"] = write_layout(q_word_layout(CONFIG))
        self.zeros = {"a_zero": 0, "b_zero": 0}  # of the GEMM being run (zero_points)
        self.backdoor = os.environ.get("SYSTOLIC_BACKDOOR") == "1"
        self.requant: dict | None = None  # its requantization (requant), or raw accumulators
        self.compute_seconds = 0.0  # wall time spent waiting for `done`
        # Activity counters of an activity build (sim.build.build_model(activity=True)), by name.
        self.activity = json.loads(os.environ.get("SYSTOLIC_ACTIVITY", "[]"))
        self.toggles: dict[str, int] = {}  # of the last command
        self.measured_cycles = 0  # of the last command, counted by the bench monitor
        self.c_writes_seen = 0  # C buffer writes of the last command, seen by the monitor
        self.last_c_write = 0  # the busy cycle of its last C write

    def _read_activity(self) -> dict[str, int]:
        return {name: getattr(self.dut, name).value.to_unsigned() for name in self.activity}

    def _paused(self) -> bool:
        return self.pause > 0 and self.rng.random() < self.pause

    async def reset(self) -> None:
        dut = self.dut
        ports = ["a_write", "b_write", "cmd", "c_read"] + (["q_write"] if CONFIG.requant else [])
        for port in ports:
            getattr(dut, f"{port}__valid").value = 0
            getattr(dut, f"{port}__payload").value = 0
        dut.c_data__ready.value = 0
        dut.rst.value = 1
        for _ in range(2):
            await FallingEdge(dut.clk)
        dut.rst.value = 0

    async def write(self, name: str, words: np.ndarray) -> int:
        """Write ``words`` to buffer ``name`` from address 0, one per accepted transfer (or,
        with ``SYSTOLIC_BACKDOOR=1``, A and B all at once through the simulator's backdoor).
        Returns the words that crossed into the buffer: accepted transfers as the bench monitor
        counts them, or the lines of the backdoor's file."""
        if self.backdoor and name in ("a", "b"):
            return await self._backdoor(name, words)
        before = self.crossed(f"{name}_write")
        valid = getattr(self.dut, f"{name}_write__valid")
        payload = getattr(self.dut, f"{name}_write__payload")
        ready = getattr(self.dut, f"{name}_write__ready")
        layout = self.write_layouts[name]
        i = 0
        while i < len(words):
            offer = not self._paused()
            valid.value = int(offer)
            if offer:
                word = words[i].tolist() if hasattr(words[i], "tolist") else words[i]
                payload.value = pack(layout, {"addr": i, "data": word})
            await ReadOnly()
            fire = offer and int(ready.value)
            await FallingEdge(self.dut.clk)
            i += fire
        valid.value = 0
        return self.crossed(f"{name}_write") - before

    async def _backdoor(self, name: str, words) -> int:
        layout = self.words[name]
        digits = (Shape.cast(layout).width + 3) // 4
        lines = [f"{pack(layout, w.tolist()):0{digits}x}" for w in words]
        path = Path(f"{BACKDOOR_PREFIX}{name}.hex")
        path.write_text("\n".join(lines) + "\n")
        trigger = getattr(self.dut, f"{BACKDOOR_PREFIX}{name}")
        trigger.value = 1
        await FallingEdge(self.dut.clk)
        trigger.value = 0
        await FallingEdge(self.dut.clk)
        return len(path.read_text().split())  # the words $readmemh loaded

    async def command(self, m, k, n, accumulate) -> tuple[dict, bool]:
        """Issue one command (checked on the host first), wait for ``done``."""
        check_command(CONFIG, m, k, n)
        cmd = {"m": m, "k": k, "n": n, "a_base": 0, "b_base": 0, "c_base": 0,
               "accumulate": int(accumulate)}  # fmt: skip
        if CONFIG.zero_points:
            cmd |= self.zeros
        return await self.issue(cmd)

    def crossed(self, stream: str) -> int:
        """Words that crossed a host stream so far, counted by the simulation's bench monitor
        (sim/build.py) at the port, not by this driver."""
        return getattr(self.dut, f"bench_{stream}_words").value.to_unsigned()

    async def issue(self, cmd: dict, timeout_cycles: int | None = None) -> tuple[dict, bool]:
        """Drive ``cmd`` as it is, wait for ``done``; return the counters and the error flag.
        ``measured_cycles`` keeps the bench monitor's own count of the cycles from the
        command's acceptance to ``done``."""
        dut = self.dut
        before = self._read_activity()
        cmd = ({"a_zero": 0, "b_zero": 0} if CONFIG.zero_points else {}) | cmd
        dut.cmd__payload.value = pack(command_layout(CONFIG), cmd)
        dut.cmd__valid.value = 1
        while True:
            await ReadOnly()
            accepted = int(dut.cmd__ready.value)
            await FallingEdge(dut.clk)
            if accepted:
                break
        dut.cmd__valid.value = 0
        start = time.perf_counter()
        if not int(dut.done.value):
            done = RisingEdge(dut.done)  # the simulator runs freely until then
            if timeout_cycles is not None:
                await with_timeout(done, timeout_cycles * 10, "ns")
            elif self.deadline == math.inf:
                await done
            else:  # look at the wall clock every 100k cycles: one callback, not one a cycle
                while not int(dut.done.value):
                    await First(done, Timer(1_000_000, "ns"))
                    if not int(dut.done.value) and time.time() > self.deadline:
                        raise TimeoutError("the wall-clock deadline passed (SYSTOLIC_DEADLINE)")
            await FallingEdge(dut.clk)
        self.compute_seconds += time.perf_counter() - start
        counters = unpack(counters_layout(), dut.counters.value.to_unsigned())
        self.measured_cycles = dut.bench_cycles.value.to_unsigned()
        self.c_writes_seen = dut.bench_c_writes.value.to_unsigned()
        self.last_c_write = dut.bench_last_c_write.value.to_unsigned()
        after = self._read_activity()
        self.toggles = {name: after[name] - before[name] for name in self.activity}
        return counters, bool(int(dut.error.value))

    async def read_c(self, count: int, options: list[dict] | None = None) -> np.ndarray:
        """Read C words ``0 .. count-1`` through the request and data streams; ``options``
        (with ``requant``) says how each word is requantized."""
        dut = self.dut
        layout = self.words["c"]
        request = c_read_layout(CONFIG)
        requested, got = 0, []
        while len(got) < count:
            ask = requested < count and not self._paused()
            dut.c_read__valid.value = int(ask)
            if ask:
                if CONFIG.requant:
                    opts = {"requant": 0, "q_addr": 0, "q_lane": 0, "q_broadcast": 0,
                            "out_zero": 0, "relu": 0}  # fmt: skip
                    if options is not None:
                        opts |= options[requested]
                    dut.c_read__payload.value = pack(request, {"addr": requested, **opts})
                else:
                    dut.c_read__payload.value = requested
            take = not self._paused()
            dut.c_data__ready.value = int(take)
            await ReadOnly()
            if ask and int(dut.c_read__ready.value):
                requested += 1
            if take and int(dut.c_data__valid.value):
                got.append(unpack(layout, dut.c_data__payload.value.to_unsigned()))
            await FallingEdge(dut.clk)
        dut.c_read__valid.value = 0
        dut.c_data__ready.value = 0
        return np.array(got, dtype=np.int64).reshape(count, layout.length)

    async def gemm(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, dict]:
        """``A @ B`` through the accelerator, tiled by :func:`contract.plan.plan` (with the zero
        points in ``self.zeros`` and the requantization in ``self.requant``)."""
        (m, k), n = a.shape, b.shape[1]
        c = np.zeros((m, n), dtype=np.int64)
        offchip = {"a": 0, "b": 0, "c": 0}
        rq = self.requant
        if rq is not None:
            before = self.crossed("q_write")
            await self.write("q", q_words(CONFIG, rq["multiplier"], rq["shift"]))
            offchip["q"] = self.crossed("q_write") - before
        commands = []
        for step in steps(CONFIG, m, k, n):
            ch = step.chunk
            parts = {
                "a": (step.write_a, a[ch.m0 : ch.m1, ch.k0 : ch.k1]),
                "b": (step.write_b, b[ch.k0 : ch.k1, ch.n0 : ch.n1]),
            }
            for name, (needed, part) in parts.items():
                if needed:
                    offchip[name] += await self.write(name, to_words(part, self.layouts[name]))
            mc, kc, nc = ch.shape
            counters, error = await self.command(mc, kc, nc, ch.accumulate)
            commands.append({"shape": [mc, kc, nc], "accumulate": ch.accumulate,
                             "counters": counters, "error": error,
                             "measured_cycles": self.measured_cycles,
                             "c_writes_seen": self.c_writes_seen,
                             "last_c_write": self.last_c_write})  # fmt: skip
            if self.activity:
                commands[-1]["toggles"] = self.toggles
            if step.read_c:
                count = self.layouts["c"].words((mc, nc))
                options = None
                if rq is not None:
                    extra = {"requant": 1, "out_zero": rq["out_zero"], "relu": int(rq["relu"])}
                    options = [r | extra for r in c_read_requests(CONFIG, ch)]
                before = self.crossed("c_data")
                words = await self.read_c(count, options)
                c[ch.m0 : ch.m1, ch.n0 : ch.n1] = from_words(words, self.layouts["c"], (mc, nc))
                offchip["c"] += self.crossed("c_data") - before
        return c, {"commands": commands, "offchip_words": offchip}


@cocotb.test()
async def run_jobs(dut):
    """Every GEMM of the batch, with a reset before each. Each job's outcome is written to
    ``SYSTOLIC_RESULTS/job-<i>.npz`` as soon as it finishes, so a crash or timeout later in the
    batch loses nothing already done. ``SYSTOLIC_DEADLINE`` (a Unix time) fails the run once
    passed."""
    jobs = np.load(os.environ["SYSTOLIC_JOBS"])
    meta = json.loads(str(jobs["meta"]))
    results = Path(os.environ["SYSTOLIC_RESULTS"])
    deadline = float(os.environ.get("SYSTOLIC_DEADLINE", "inf"))
    for i, job in enumerate(meta["jobs"]):
        rng = np.random.default_rng([meta["seed"], i])
        host = Host(dut, rng, job["pause"], deadline)
        host.zeros = {"a_zero": job.get("a_zero", 0), "b_zero": job.get("b_zero", 0)}
        host.requant = job.get("requant")
        await host.reset()
        start = time.perf_counter()
        c, details = await host.gemm(jobs[f"a{i}"], jobs[f"b{i}"])
        details["wall_seconds"] = time.perf_counter() - start
        details["compute_seconds"] = host.compute_seconds
        partial = results / f"job-{i}.partial.npz"
        np.savez(partial, info=json.dumps(details), c=c)
        partial.rename(results / f"job-{i}.npz")  # appears whole or not at all


@cocotb.test()
async def malformed_commands(dut):
    """Commands the host would refuse, driven straight at the hardware: flagged, never hung."""
    host = Host(dut, np.random.default_rng(0), 0.0)
    await host.reset()
    tile = (CONFIG.rows, CONFIG.rows, CONFIG.cols)
    good = {"m": tile[0], "k": tile[1], "n": tile[2], "a_base": 0, "b_base": 0, "c_base": 0,
            "accumulate": 0}  # fmt: skip
    for field in ("m", "k", "n"):
        counters, error = await host.issue(good | {field: 0}, timeout_cycles=20)
        assert error, f"a command with {field} = 0 must raise error"
        assert counters["cycles"] == 0, f"a refused command ran for {counters['cycles']} cycles"
        assert host.measured_cycles == 0, f"done came {host.measured_cycles} cycles late"
    need = footprint(CONFIG, *tile)
    for buf in ("a", "b", "c"):
        depth = getattr(CONFIG, f"{buf}_depth")
        bad = good | {f"{buf}_base": depth - need[buf] + 1}  # the last word lies past the end
        counters, error = await host.issue(bad, timeout_cycles=100_000)
        assert error, f"{buf}_base past the end of the {buf.upper()} buffer must raise error"
    counters, error = await host.issue(good, timeout_cycles=100_000)
    assert not error, "error must clear with the next good command"
    assert counters["cycles"] > 0
    assert host.measured_cycles == counters["cycles"], "the cycle counter disagrees with the bench"
