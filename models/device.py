"""The device on DRAM, cycle for cycle: every counter of a descriptor, the waits included.

A cycle-level account of the device's control (rtl/device.py, rtl/dma.py, rtl/sequencer.py) and
of the DRAM model's rules (docs/memory.md, sim/dram.py), without its datapath: the three
walkers and their bank states, the read engine's bursts and outstanding limit, the compute
core's command cycles (:func:`models.cycles.command_counters`), the write engine's producer,
write buffer and bursts, and the DRAM's in-order bus with its beat clock
(:class:`contract.memory.BeatClock`). Cycle 0 is the descriptor's first running cycle, the
one :data:`contract.timing.DESCRIPTOR_LATENCY` cycles after its acceptance.

It is exact (tests/sim/test_device.py holds it to the RTL on every counter) and runs in time
proportional to the cycles: the reference that a closed-form model for the sweeps' scales is
checked against.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from systolic.contract.config import ArrayConfig
from systolic.contract.dma import (
    WRITE_BUFFER_WORDS,
    Descriptor,
    Refusal,
    beat_bytes,
    bursts,
    c_format,
    check_descriptor,
    containers,
    jobs,
    offchip_words,
    q_transfer,
    transfers,
)
from systolic.contract.figures import GemmFigures
from systolic.contract.interface import COUNTERS, DEVICE_COUNTERS
from systolic.contract.memory import BeatClock, Dram
from systolic.contract.timing import DESCRIPTOR_LATENCY

from .cycles import command_counters

__all__ = ["DeviceFigures", "DevicePrediction", "predict_device", "trace_device"]

#: The simulation's bench monitor counts from the descriptor's acceptance, this account from the
#: device's first running cycle, which comes DESCRIPTOR_LATENCY cycles later.
TRACE_OFFSET = DESCRIPTOR_LATENCY

FREE, LOADING, FULL, LOADED, COMPUTE, STORING = range(6)


def _fmt(config: ArrayConfig, d: Descriptor, kind: str, store: bool) -> str:
    """The DRAM format a transfer moves: C and partial sums come in at accumulator width and
    finished outputs leave as :func:`contract.dma.c_format` says."""
    if store:
        return c_format(config, d) if kind == "c" else "p"
    return "p" if kind in "cp" else kind


def _moves(config: ArrayConfig, d: Descriptor) -> tuple[list, list, list]:
    """Per job, its loads ``(buffer, bank, bursts, from partial sums)`` and its stores ``(bank,
    bursts, words, beat bytes, container bytes)``, and the table's load; a burst is
    ``(address, beats, beat bytes)``."""
    cont = containers(config)

    def burst_list(t, fmt):
        beat = beat_bytes(config, fmt)
        out = []
        for address, words in t.segments:
            out += [(a, n, beat) for a, n in bursts(address, words * cont[fmt], beat,
                                                    config.max_burst)]  # fmt: skip
        return out

    loads, stores = [], []
    for job in jobs(config, d):
        ls, ss = transfers(config, d, job)
        loads.append([("c" if t.kind in "cp" else t.kind, t.bank,
                       burst_list(t, _fmt(config, d, t.kind, False)), t.kind == "p")
                      for t in ls])  # fmt: skip
        stores.append([(t.bank, burst_list(t, f), t.words, beat_bytes(config, f), cont[f])
                       for t in ss for f in [_fmt(config, d, t.kind, True)]])  # fmt: skip
    q = []
    if d.requant and config.requant:
        q = [("q", 0, burst_list(q_transfer(config, d), "q"), False)]
    return loads, stores, q


def _timeline(config: ArrayConfig, d: Descriptor, dram: Dram, limit: int,
              trace: list | None = None) -> dict:  # fmt: skip
    """Cycles, jobs and waits of ``d``, one cycle at a time; ``trace`` (a list) collects the
    events ``(cycle, event, what)`` of :mod:`contract.trace`: a load starting and ending
    (``what`` its buffer and bank), a chunk's compute starting and ending (its index), a store
    starting and ending (its C bank)."""
    note = trace.append if trace is not None else (lambda _: None)
    js = jobs(config, d)
    clock = BeatClock.of(dram)
    loads, stores, q = _moves(config, d)
    state = {k: [FREE, FREE] for k in "abc"}
    q_pending = bool(q)
    q_loaded = False
    q_cmd = q[0] if q else None
    # read side
    rd_job, rd_issued = 0, 0  # loads issued of the current job
    # read engine
    rd_active = None  # deque of bursts left of the command being requested
    rd_cmd = None
    inflight = deque()  # (kind, bank, beats, last)
    r_beat = 0
    # compute
    cp_job, computing, cp_done_at = 0, False, None
    counters = {"array_wait_cycles": 0, "dma_wait_cycles": 0, "jobs": 0}
    # write side
    wr_job = 0
    producing = None  # [words left]
    requesting = None  # deque of bursts left
    pushed = announced = 0
    fifo_words = 0
    in_flight = 0
    wrecs = deque()  # (beats, last, bank, per_word)
    w_beat = 0
    w_sub = 0
    outstanding_w = 0
    store_bank, store_per_word, producing_per_word = 0, 1, 1
    # DRAM
    queue = deque()  # [kind, ready, beats, size, served]
    dram_out = 0
    b_due = deque()
    t = 0
    while t < limit:
        # ---- decisions from the state at the start of the cycle ----
        # read engine: can it send an AR this cycle?
        ar_taken = bool(rd_active) and len(inflight) < config.max_reads and (
            dram_out < dram.max_requests)  # fmt: skip
        last_ar = ar_taken and len(rd_active) == 1
        rd_ready = rd_active is None or last_ar
        # read side command
        cmd = None
        dma_wait = False
        rd_advance = False
        if q_pending:
            cmd = q_cmd
        elif rd_job < len(js):
            need = loads[rd_job][rd_issued:]
            if not need:
                rd_advance = True
            else:
                kind, bank, bl, from_p = need[0]
                if state[kind][bank] == FREE and not (from_p and outstanding_w):
                    cmd = need[0]
                else:
                    dma_wait = True
        accept_rd = cmd is not None and rd_ready
        # AW side of the write engine
        aw_taken = False
        if (
            requesting
            and pushed > announced
            and outstanding_w < config.max_writes
            and len(wrecs) < config.max_writes
            and dram_out + ar_taken < dram.max_requests
        ):
            aw_taken = True
        # DRAM head service
        r_take = w_take = False
        if queue:
            kind, ready, beats, size, served = queue[0]
            u = max(clock.v, ready * clock.num)
            if t * clock.num >= u:
                if kind == "r":
                    r_take = True
                elif wrecs and fifo_words > 0:
                    w_take = True
        b_take = bool(b_due) and t >= b_due[0]
        # compute
        go = False
        finished = False
        if cp_job < len(js):
            j = js[cp_job]
            if computing:
                finished = t == cp_done_at
            else:
                c_now = state["c"][j.banks["c"]]
                c_ready = (
                    (c_now == LOADED)
                    if j.c_in
                    else ((c_now == FREE) if _new_c(js, cp_job) else True)
                )
                ready = (
                    state["a"][j.banks["a"]] == FULL
                    and state["b"][j.banks["b"]] == FULL
                    and c_ready
                )
                if ready:
                    go = True
                else:
                    counters["array_wait_cycles"] += 1
        counters["dma_wait_cycles"] += dma_wait
        # write side
        wr_accept = None
        wr_advance = False
        if wr_job < len(js):
            if not stores[wr_job]:
                wr_advance = True
            else:
                bank = stores[wr_job][0][0]
                final = js[wr_job].store == "c"
                ok = state["c"][bank] == FULL and (
                    q_loaded or not final or not (d.requant and config.requant)
                )
                if ok and producing is None and requesting is None:
                    wr_accept = stores[wr_job][0]
        # producer read this cycle?
        prod_read = producing is not None and fifo_words + in_flight < WRITE_BUFFER_WORDS
        # finish?
        idle_all = (
            cp_job >= len(js)
            and wr_job >= len(js)
            and producing is None
            and requesting is None
            and not wrecs
            and outstanding_w == 0
            and rd_active is None
            and not inflight
        )
        if idle_all:
            break
        # ---- updates at the end of the cycle ----
        completed = 0
        loaded_event = None
        if r_take:
            k, bank, beats, last = inflight[0]
            kind, ready, qbeats, size, served = queue[0]
            clock.v = max(clock.v, ready * clock.num) + clock.step(size)
            queue[0][4] += 1
            r_beat += 1
            if r_beat == beats:
                inflight.popleft()
                r_beat = 0
                queue.popleft()
                completed += 1
                if last:
                    loaded_event = (k, bank)
        stored_event = None
        if w_take:
            kind, ready, qbeats, size, served = queue[0]
            clock.v = max(clock.v, ready * clock.num) + clock.step(size)
            queue[0][4] += 1
            beats, last, bank, per_word = wrecs[0]
            w_beat += 1
            w_sub += 1
            if w_sub == per_word:
                fifo_words -= 1
                w_sub = 0
            if w_beat == beats:
                wrecs.popleft()
                w_beat = 0
                queue.popleft()
                b_due.append(t + dram.latency)
                if last:
                    stored_event = bank
        if b_take:
            b_due.popleft()
            completed += 1
            outstanding_w -= 1
        # producer
        if in_flight:
            fifo_words += 1
            pushed += producing_per_word
        in_flight = 1 if prod_read else 0
        if prod_read:
            producing[0] -= 1
            if producing[0] == 0:
                producing = None
        # AW
        if aw_taken:
            a, beats, beat = requesting.popleft()
            announced += beats
            wrecs.append((beats, not requesting, store_bank, store_per_word))
            queue.append(["w", t + 1, beats, beat, 0])
            outstanding_w += 1
            if not requesting:
                requesting = None
        if ar_taken:
            a, beats, beat = rd_active.popleft()
            inflight.append((rd_cmd[0], rd_cmd[1], beats, not rd_active))
            queue.append(["r", t + dram.latency, beats, beat, 0])
            if not rd_active:
                rd_active = None
        # AR/AW in the same cycle: AR first in the queue
        if ar_taken and aw_taken:
            queue[-1], queue[-2] = queue[-2], queue[-1]
        dram_out += ar_taken + aw_taken - completed
        if accept_rd:
            note((t, "load", f"{cmd[0]}{cmd[1]}"))
            rd_cmd = cmd
            rd_active = deque(cmd[2])
            if cmd[0] == "q":
                q_pending = False
            else:
                state[cmd[0]][cmd[1]] = LOADING
                rd_issued += 1
        if rd_advance:
            rd_job += 1
            rd_issued = 0
        if loaded_event:
            note((t, "loaded", f"{loaded_event[0]}{loaded_event[1]}"))
            k, bank = loaded_event
            if k == "q":
                q_loaded = True
            else:
                state[k][bank] = LOADED if k == "c" else FULL
        if go:
            note((t, "compute", cp_job))
            j = js[cp_job]
            computing = True
            cp_done_at = t + 1 + command_counters(config, *j.chunk.shape, j.accumulate)["cycles"]
            state["c"][j.banks["c"]] = COMPUTE
        if finished:
            note((t, "computed", cp_job))
            j = js[cp_job]
            computing = False
            counters["jobs"] += 1
            if j.store:
                state["c"][j.banks["c"]] = FULL
            nxt = js[cp_job + 1] if cp_job + 1 < len(js) else None
            if nxt is None or nxt.load_a:
                state["a"][j.banks["a"]] = FREE
            if nxt is None or nxt.load_b:
                state["b"][j.banks["b"]] = FREE
            cp_job += 1
        if wr_accept is not None:
            note((t, "store", wr_accept[0]))
            bank, bl, words, beat, cont_bytes = wr_accept
            state["c"][bank] = STORING
            producing = [words]
            requesting = deque(bl)
            pushed = announced = 0
            store_bank = bank
            producing_per_word = max(1, cont_bytes // beat)
            store_per_word = producing_per_word
            wr_job += 1
        elif wr_advance:
            wr_job += 1
        if stored_event is not None:
            note((t, "stored", stored_event))
            state["c"][stored_event] = FREE
        t += 1
    counters["cycles"] = t + 1
    return counters


def _new_c(js, i):
    if i == 0:
        return True
    a, b = js[i - 1].chunk, js[i].chunk
    return (a.m0, a.n0) != (b.m0, b.n0)


class DevicePrediction(dict):
    """:data:`contract.interface.DEVICE_COUNTERS` of one descriptor, and ``measured_cycles``:
    the cycles from its acceptance to ``done`` as the simulation's bench counts them."""

    @property
    def measured_cycles(self) -> int:
        return self["cycles"] + DESCRIPTOR_LATENCY if self["cycles"] else 0


@dataclass
class DeviceFigures(GemmFigures):
    """The figures of one GEMM from a device's counters (this model's, the pipeline model's or
    the RTL's): utilization over the whole descriptor, reuse, the words that crossed to DRAM."""

    config: ArrayConfig
    shape: tuple[int, int, int]
    descriptor: Descriptor
    counters: dict[str, int]

    @property
    def offchip_words(self) -> dict[str, int]:
        return offchip_words(self.config, self.descriptor, self.counters)

    def summary(self) -> dict:
        return self.figures() | {"chunks": self.counters["jobs"],
                                 "chunk": list(self.descriptor.chunk)}  # fmt: skip


def trace_device(config: ArrayConfig, d: Descriptor, dram: Dram,
                 limit: int = 50_000_000) -> list[tuple[int, str, object]]:  # fmt: skip
    """The timeline of descriptor ``d`` (:mod:`contract.trace`), without simulating: the events
    of the cycle-level account, on the cycles the simulation's log gives them."""
    events: list = []
    if check_descriptor(config, d)[0] is Refusal.NONE:
        _timeline(config, d, dram, limit, trace=events)
    return [(t + TRACE_OFFSET, name, what) for t, name, what in events]


def predict_device(config: ArrayConfig, d: Descriptor, dram: Dram,
                   limit: int = 50_000_000) -> DevicePrediction:  # fmt: skip
    """Every counter of descriptor ``d`` on the device of ``config`` behind ``dram``; a refused
    descriptor counts nothing."""
    out = DevicePrediction(dict.fromkeys(DEVICE_COUNTERS, 0))
    if check_descriptor(config, d)[0] is not Refusal.NONE:
        return out
    out.update(_timeline(config, d, dram, limit))
    for job in jobs(config, d):
        counters = command_counters(config, *job.chunk.shape, job.accumulate)
        out["compute_cycles"] += counters["cycles"]
        for name in COUNTERS:
            if name != "cycles":
                out[name] += counters[name]
    loads, stores, q = _moves(config, d)
    for buf, _, burst_list, _ in q + [load for job in loads for load in job]:
        out[f"dram_read_beats_{buf}"] += sum(n for _, n, _ in burst_list)
        out[f"dram_read_bytes_{buf}"] += sum(n * beat for _, n, beat in burst_list)
    for _, burst_list, _, _, _ in (store for job in stores for store in job):
        out["dram_write_beats"] += sum(n for _, n, _ in burst_list)
        out["dram_write_bytes"] += sum(n * beat for _, n, beat in burst_list)
    return out
