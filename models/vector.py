"""The vector unit on DRAM, cycle for cycle: every counter of a vector descriptor.

A cycle-level account of rtl/vector.py's states (setup, read, wait, write, drain) run by run
(:func:`contract.vector.runs`), against the DRAM model's rules (:class:`models.device.DramBus`):
a run's passes' bursts requested one a cycle, at most ``max_reads`` in flight; its writes
once the last beat is in (and an average's reciprocal, :data:`contract.vector.DIVIDE_CYCLES`
cycles after the run's setup), at most ``max_writes`` bursts unanswered; the descriptor ends
when the last write is answered. Cycle 0 is the descriptor's first running cycle.
"""

from __future__ import annotations

from collections import deque

from systolic.contract.config import ArrayConfig
from systolic.contract.dma import Refusal, bursts
from systolic.contract.interface import DEVICE_COUNTERS
from systolic.contract.memory import Dram
from systolic.contract.vector import DIVIDE_CYCLES, VectorDescriptor, check_vector, runs

from .device import DevicePrediction, DramBus

__all__ = ["predict_vector"]

SETUP, READ, WAIT, WRITE, DRAIN = range(5)


def _bursts(config: ArrayConfig, address: int, beats: int) -> list[int]:
    bus = config.bus_width // 8
    return [n for _, n in bursts(address, beats * bus, bus, config.max_burst)]


def predict_vector(config: ArrayConfig, v: VectorDescriptor, dram: Dram,
                   limit: int = 500_000_000) -> DevicePrediction:  # fmt: skip
    """Every counter of vector descriptor ``v`` on ``config``'s device behind ``dram``; a
    refused descriptor counts nothing."""
    out = DevicePrediction(dict.fromkeys(DEVICE_COUNTERS, 0))
    if check_vector(config, v)[0] is not Refusal.NONE:
        return out
    bus_bytes = config.bus_width // 8
    bus = DramBus(dram)
    latency = bus.latency
    average = v.op == "average_pool"
    outstanding = 0  # write bursts unanswered
    t = 0
    walk = runs(config, v)
    run = next(walk)
    state = SETUP
    while t < limit:
        # B responses come whatever the state
        b_take = bool(bus.responses) and t >= bus.responses[0]
        if state == SETUP:
            reads = deque(n for op, addr in run.reads for n in _bursts(config, addr, run.beats))
            for op, _ in run.reads:
                out[f"dram_read_beats_{op}"] += run.beats
                out[f"dram_read_bytes_{op}"] += run.beats * bus_bytes
            inflight, left, reads_done = 0, len(run.reads) * run.beats, False
            ready_at = t + 1 + DIVIDE_CYCLES if average else 0
            nxt = READ
        elif state == READ:
            ar = bool(reads) and inflight < config.max_reads and bus.out < bus.max_requests
            r_take = bus.head(t, False)[0]
            nxt = WAIT if reads_done and t >= ready_at else READ
            if not (ar or r_take or b_take or nxt != READ):
                t = _skip(t, bus, ready_at if reads_done else None)
                continue
            if r_take:
                left -= 1
                if bus.serve():  # a read is done at its last beat
                    bus.out -= 1
                    inflight -= 1
                reads_done = left == 0
            if ar:
                bus.queue.append(["r", t + latency, reads.popleft(), bus_bytes, 0])
                bus.out += 1
                inflight += 1
        elif state == WAIT:
            aws = deque(_bursts(config, run.write, run.beats))
            w_left = run.beats
            nxt = WRITE
            out["dram_write_beats"] += run.beats
            out["dram_write_bytes"] += run.beats * bus_bytes
        elif state == WRITE:
            aw = bool(aws) and outstanding < config.max_writes and bus.out < bus.max_requests
            w_take = bus.head(t, w_left > 0)[1]
            if not (aw or w_take or b_take):
                t = _skip(t, bus, None)
                continue
            if w_take:
                w_left -= 1
                if bus.serve():  # a write is answered latency cycles after its last beat
                    bus.responses.append(t + latency)
            if aw:
                bus.queue.append(["w", t + 1, aws.popleft(), bus_bytes, 0])
                bus.out += 1
                outstanding += 1
            nxt = WRITE
            if w_left == 0 and not aws:
                out["jobs"] += 1
                run = next(walk, None)
                nxt = SETUP if run is not None else DRAIN
        else:  # DRAIN: done once every write is answered (the cycle after, the device finishes)
            if outstanding == 0:
                out["cycles"] = t + 2
                return out
            if not b_take:
                t = _skip(t, bus, None)
                continue
            nxt = DRAIN
        if b_take:
            bus.responses.popleft()
            bus.out -= 1
            outstanding -= 1
        state = nxt
        t += 1
    raise RuntimeError(f"the vector descriptor ran past {limit} cycles")


def _skip(t: int, bus: DramBus, ready_at: int | None) -> int:
    """The next cycle in which something can happen when nothing does in ``t``: the head
    request's beat slot, a response falling due, or the reciprocal's readiness."""
    times = []
    if bus.queue:
        u = max(bus.clock.v, bus.queue[0][1] * bus.clock.num)
        times.append(-(-u // bus.clock.num))
    if bus.responses:
        times.append(bus.responses[0])
    if ready_at is not None:
        times.append(ready_at)
    return max(t + 1, min(times)) if times else t + 1
