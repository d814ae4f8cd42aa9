"""The device on DRAM at sweep scale: every counter of a descriptor from its chunk pipeline, in
time proportional to the chunks (about a millisecond for a transformer GEMM), not the cycles.

:mod:`models.device` follows the device cycle by cycle and is exact on every counter; it is
what the RTL is held to, and at the sweeps' scales it would take seconds a layer. This model
gives the same descriptor's counters:

- **exactly**: the chunks, every compute counter (the chunks' classes of
  :func:`models.cycles.command_counters`, summed) and the DRAM beats and bytes per operand (the
  loads and stores of :func:`contract.dma.jobs`, found with numpy from the loop order);
- **approximately**: ``cycles``, ``array_wait_cycles`` and ``dma_wait_cycles``, from a timeline
  of the chunks' transfers rather than of their beats. The ping-pong banks let chunk ``j``
  compute while the read engine loads chunk ``j + 2`` into the bank chunk ``j`` frees and the
  write engine stores chunk ``j``; a transfer takes a latency and its beats (``max(1, beat /
  bandwidth)`` cycles each) or, when too few requests may be in flight to cover the latency,
  its bursts' round trips; reads and writes share one bus; partial sums wait for every write's
  answer. What it leaves out is the order in which the DRAM serves reads and writes burst by
  burst: a store interleaved with reads that each wait a latency takes longer than its beats.
  ``tests/models/test_pipeline.py`` bounds the difference against :mod:`models.device` on
  random configurations, shapes, memories and loop orders, and docs/memory.md gives the
  figures.
"""

from __future__ import annotations

import math

import numpy as np
from systolic.contract.axi import MAX_BURST_BYTES
from systolic.contract.config import ArrayConfig
from systolic.contract.dma import (
    Descriptor,
    Refusal,
    beat_bytes,
    c_format,
    check_descriptor,
    containers,
    q_transfer,
    word_layout,
)
from systolic.contract.interface import COUNTERS, DEVICE_COUNTERS
from systolic.contract.memory import Dram

from .cycles import command_counters
from .device import DevicePrediction

__all__ = ["predict_pipeline"]

#: Cycles the device spends around the data: from the descriptor's start to the first AR, from
#: the last beat of a chunk's loads to its compute, between chunks, and from a chunk's end to
#: its store's first beat.
_START, _HANDOFF, _STORE_START = 1, 1, 3


def _sizes(total: int, chunk: int) -> np.ndarray:
    """The length of each chunk along one dimension."""
    starts = np.arange(0, total, chunk)
    return np.minimum(starts + chunk, total) - starts


def _blocks(config: ArrayConfig, fmt: str, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``(tile rows, words per tile row)`` of ``rows x cols`` blocks in the format ``fmt``: a
    transfer is one contiguous run of DRAM per tile row (:func:`contract.dma.transfers`)."""
    word = word_layout(config, fmt)
    if word.rowwise:
        return np.stack([-(-cols // word.tile), rows])
    return np.stack([-(-rows // word.tile), cols])


class _Bus:
    """The DRAM's time for transfers: the cycles of their beats on the bus (at the bandwidth, at
    most one a cycle) and, when only ``window`` bursts may be in flight and each is a round
    trip (latency, then its beats), the cycles those round trips need."""

    def __init__(self, config: ArrayConfig, dram: Dram):
        self.config, self.dram = config, dram
        self.bw = float(dram.bandwidth)
        self.cont = containers(config)
        self.beat = {f: beat_bytes(config, f) for f in self.cont}

    def time(self, fmt: str, blocks: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray]:
        """``(bus cycles, cycles the transfer keeps the engine busy)`` of each transfer of
        ``blocks`` (tile rows, words per tile row): its bus time, or its bursts' round trips
        when the window is too small to fill the bus (a burst never spans two tile rows)."""
        cont, beat = self.cont[fmt], self.beat[fmt]
        runs, per_run = blocks[0], blocks[1] * (cont // beat)
        beats = runs * per_run
        per_beat = max(1.0, beat / self.bw)
        burst = min(self.config.max_burst, MAX_BURST_BYTES // beat)
        bursts = runs * -(-per_run // burst)
        window = min(window, self.dram.max_requests)
        trip = self.dram.latency + np.minimum(burst, np.maximum(per_run, 1)) * per_beat
        bus = beats * per_beat
        rounds = np.where(bursts > 0, bursts * trip / window, 0.0)
        return bus, np.maximum(bus, rounds)


def predict_pipeline(config: ArrayConfig, d: Descriptor, dram: Dram) -> DevicePrediction:
    """Every counter of descriptor ``d`` on the device of ``config`` behind ``dram`` (see the
    module for which are exact); a refused descriptor counts nothing."""
    out = DevicePrediction(dict.fromkeys(DEVICE_COUNTERS, 0))
    if check_descriptor(config, d)[0] is not Refusal.NONE:
        return out
    mc, kc, nc = d.chunk
    size = {"m": _sizes(d.m, mc), "k": _sizes(d.k, kc), "n": _sizes(d.n, nc)}
    counts = [len(size[dim]) for dim in d.order]
    grid = np.indices(counts).reshape(3, -1)
    index = {dim: grid[i] for i, dim in enumerate(d.order)}
    jobs = grid.shape[1]
    m, k, n = (size[x][index[x]] for x in "mkn")
    im, ik, inn = index["m"], index["k"], index["n"]

    def changed(*keys) -> np.ndarray:
        """Whether each job's key differs from the previous job's (the first job's does)."""
        new = np.ones(jobs, bool)
        if jobs > 1:
            new[1:] = np.any([key[1:] != key[:-1] for key in keys], axis=0)
        return new

    new_a, new_b, new_c = changed(im, ik), changed(ik, inn), changed(im, inn)
    leaves = np.ones(jobs, bool)
    leaves[:-1] = new_c[1:]
    first_k = ik == 0
    last_k = ik == len(size["k"]) - 1
    accumulate = ~first_k | d.accumulate
    c_in = new_c & accumulate  # partial sums back (k0 > 0), or the C to accumulate into

    # compute: the chunks' classes (each dimension has at most two chunk lengths)
    cls = ((m != mc) * 1 + (k != kc) * 2 + (n != nc) * 4 + accumulate * 8).astype(np.int64)
    times = np.bincount(cls, minlength=16)
    cycles_of = np.zeros(16, np.int64)
    for c in np.flatnonzero(times):
        j = int(np.argmax(cls == c))
        counters = command_counters(config, int(m[j]), int(k[j]), int(n[j]), bool(accumulate[j]))
        cycles_of[c] = counters["cycles"]
        out["compute_cycles"] += counters["cycles"] * int(times[c])
        for name in COUNTERS:
            if name != "cycles":
                out[name] += counters[name] * int(times[c])
    compute = cycles_of[cls]
    out["jobs"] = jobs

    # DRAM traffic: loads where the key changed, stores where the chunk leaves its C bank
    cont = containers(config)
    fmt = c_format(config, d)
    blocks = {
        "a": np.where(new_a, _blocks(config, "a", m, k), 0),
        "b": np.where(new_b, _blocks(config, "b", k, n), 0),
        "c": np.where(c_in, _blocks(config, "p", m, n), 0),
        "final": np.where(leaves & last_k, _blocks(config, fmt, m, n), 0),
        "partial": np.where(leaves & ~last_k, _blocks(config, "p", m, n), 0),
    }
    words = {key: b[0] * b[1] for key, b in blocks.items()}
    for op, f in (("a", "a"), ("b", "b"), ("c", "p")):
        total = int(words[op].sum())
        out[f"dram_read_bytes_{op}"] = total * cont[f]
        out[f"dram_read_beats_{op}"] = total * cont[f] // beat_bytes(config, f)
    q_words = 0
    if d.requant and config.requant:
        q_words = q_transfer(config, d).words
        out["dram_read_bytes_q"] = q_words * cont["q"]
        out["dram_read_beats_q"] = q_words * cont["q"] // beat_bytes(config, "q")
    for key, f in (("final", fmt), ("partial", "p")):
        total = int(words[key].sum())
        out["dram_write_bytes"] += total * cont[f]
        out["dram_write_beats"] += total * cont[f] // beat_bytes(config, f)

    # timing: the pipeline of chunks on one DRAM bus
    bus = _Bus(config, dram)
    reads = config.max_reads
    parts = [bus.time("a", blocks["a"], reads), bus.time("b", blocks["b"], reads),
             bus.time("p", blocks["c"], reads)]  # fmt: skip
    stores = [bus.time(fmt, blocks["final"], config.max_writes),
              bus.time("p", blocks["partial"], config.max_writes)]  # fmt: skip
    store_bus = sum(p[0] for p in stores)
    store_span = sum(p[1] for p in stores)
    table = bus.time("q", np.array([[1], [q_words]]), config.max_reads)[1][0] if q_words else 0.0
    lists = lambda xs: [x.tolist() for x in xs]  # noqa: E731 (plain floats: a faster loop)
    cycles, waits = _timeline(
        jobs, (compute + 2).tolist(), lists(p[0] for p in parts), lists(p[1] for p in parts),
        store_bus.tolist(), store_span.tolist(), lists([new_a, new_b, c_in]), new_c.tolist(),
        (c_in & ~first_k).tolist(), dram.latency, table,
        min(config.max_reads, dram.max_requests) * config.max_burst
        * max(1.0, config.bus_width / 8 / bus.bw),
    )  # fmt: skip
    out["cycles"] = int(math.ceil(cycles))
    out["array_wait_cycles"], out["dma_wait_cycles"] = (int(round(w)) for w in waits)
    return out


def _timeline(jobs, busy, buses, spans, store_bus, store_span, loads, new_c, partial,
              latency, table, read_window) -> tuple[float, tuple[float, float]]:  # fmt: skip
    """Cycles of the chunk pipeline, and the array's and the read engine's waits.

    Chunk ``j`` computes ``busy[j]`` cycles from ``S[j]`` (its loads in, the previous chunk done,
    its C bank stored from two C chunks back) to ``F[j]``. The read engine takes the chunks'
    loads in order; a load starts once the engine has issued the previous one and its bank is
    free (the last chunk using what the bank holds is done), and partial sums once every write
    is answered; its data arrives ``load_span`` after it starts, or later when the bus is still
    busy. A chunk's store starts when it is done and ends ``store_span`` later, or later behind
    the reads already requested (at most ``read_window`` cycles of them); the reads behind it
    move back by its bus time.
    """
    ops = range(len(loads))
    bank_of = [(np.cumsum(np.asarray(need, int)) % 2).tolist() for need in loads]  # loads so far
    free = [[0.0, 0.0] for _ in ops]  # per operand: when each bank is free
    ready = [0.0] * jobs
    bus_free = acked = end = dma_wait = waiting = prev = written = 0.0
    issued = float(_START) + table
    c_free = [0.0, 0.0]
    c_bank = 1

    def load(j: int, parts) -> None:
        """The read engine serves chunk ``j``'s loads in order: A, B, then C or partial sums."""
        nonlocal bus_free, issued, dma_wait
        for i in parts:
            if not loads[i][j]:
                continue
            gate = max(issued, free[i][bank_of[i][j] ^ 1])
            if i == 2 and partial[j]:  # partial sums: once every write is answered
                gate = max(gate, acked)
            dma_wait += gate - issued
            bus_free = max(gate + latency + spans[i][j], bus_free + buses[i][j])
            ready[j] = bus_free
            issued = max(gate, bus_free - latency)

    def loaded_before(j: int) -> None:
        if not any(loads[i][j] for i in ops):
            ready[j] = ready[j - 1] if j else issued

    for j in range(min(jobs, 2)):
        loaded_before(j)
        load(j, ops)
    for j in range(jobs):
        if new_c[j]:
            c_bank ^= 1
        begin = max(prev, ready[j] + _HANDOFF, c_free[c_bank])
        waiting += begin - prev
        prev = begin + busy[j]
        for i in ops:  # the banks whose chunk this was the last to use
            if j + 1 == jobs or loads[i][j + 1]:
                free[i][bank_of[i][j] ^ 1] = prev
        if j + 2 < jobs:  # A and B of the chunk after next go out before this store
            loaded_before(j + 2)
            load(j + 2, ops[:2])
        if store_bus[j]:  # one store at a time, behind the reads already requested
            start = max(prev + _STORE_START, written)
            behind = max(min(bus_free, start + latency + read_window), written)
            written = max(start + store_span[j], behind + store_bus[j])
            bus_free = max(bus_free, start) + store_bus[j]
            acked = written + latency
            end = max(end, acked)
            c_free[c_bank] = written + 1
        if j + 2 < jobs:
            load(j + 2, ops[2:])
    return max(end, prev, bus_free) + 1, (waiting, dma_wait)
