"""The device on DRAM, cycle for cycle: every counter of a descriptor, the waits included.

A cycle-level account of the device's control (rtl/device.py, rtl/dma.py, rtl/sequencer.py) and
of the DRAM model's rules (docs/memory.md, sim/dram.py), without its datapath: the three
walkers and their bank states, the read engine's bursts and outstanding limit, the compute
core's command cycles (:func:`models.cycles.gated_counters`), the write engine's producer,
write buffer and bursts, and the DRAM's in-order bus with its beat clock
(:class:`contract.memory.BeatClock`). Cycle 0 is the descriptor's first running cycle, the
one :data:`contract.timing.DESCRIPTOR_LATENCY` cycles after its acceptance.

It is exact (tests/sim/test_device.py holds it to the RTL on every counter) and runs in time
proportional to the cycles: the reference that a closed-form model for the sweeps' scales is
checked against.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace
from typing import NamedTuple

from systolic.contract.config import ArrayConfig, Dataflow
from systolic.contract.dma import (
    DRAIN_LATENCY,
    WRITE_BUFFER_WORDS,
    Descriptor,
    Refusal,
    beat_bytes,
    bursts,
    check_descriptor,
    containers,
    jobs,
    offchip_words,
    q_transfer,
    reads_what_writes,
    transfers,
    word_layout,
)
from systolic.contract.figures import GemmFigures
from systolic.contract.interface import COUNTERS, DEVICE_COUNTERS
from systolic.contract.memory import BeatClock, Dram
from systolic.contract.timing import (
    CHECK_CYCLES,
    CONV_SETUP_CYCLES,
    DESCRIPTOR_LATENCY,
    expansion_cycles,
)

from .cycles import gated_counters

__all__ = [
    "DeviceFigures",
    "DevicePrediction",
    "DramBus",
    "QueuePrediction",
    "predict_device",
    "predict_stream",
    "trace_device",
]

FREE, LOADING, FULL, LOADED, COMPUTE, STORING = range(6)


def _expansion(config: ArrayConfig, pixels: int, words: int) -> int:
    """A load's cycles from its last staged word to its bank full (0: not a convolution's)."""
    if not words:
        return 0
    tile = word_layout(config, "a").tile
    return expansion_cycles(config.dataflow is not Dataflow.WS, tile, pixels, words)


class _Load(NamedTuple):
    """A read command of the read side (a load, or a part of one: contract.dma.split_first)."""

    kind: str  # the buffer: "a", "b", "c" (C or partial sums), "q"
    bank: int
    bursts: list  # (address, beats, beat bytes)
    from_p: bool  # partial sums back
    expand: int  # a convolution's A: cycles from its last staged word to its bank full
    per_word: int  # beats a word
    opens: bool = True  # its first word is the bank's first
    closes: bool = True  # its last word is the bank's last


def _moves(config: ArrayConfig, d: Descriptor) -> tuple[list, list, list]:
    """Per job, its loads (:class:`_Load`) and its stores ``(bank, bursts, words, beat bytes,
    container bytes)``, and the table's load; a burst is ``(address, beats, beat bytes)``."""
    cont = containers(config)

    def burst_list(t):
        beat = beat_bytes(config, t.fmt)
        out = []
        for address, words in t.segments:
            out += [(a, n, beat) for a, n in bursts(address, words * cont[t.fmt], beat,
                                                    config.max_burst)]  # fmt: skip
        return out

    loads, stores = [], []
    for job in jobs(config, d):
        ls, ss = transfers(config, d, job)
        pixels = job.chunk.m1 - job.chunk.m0
        loads.append([_Load("c" if t.kind in "cp" else t.kind, t.bank, burst_list(t),
                            t.kind == "p", _expansion(config, pixels, t.expand),
                            max(1, cont[t.fmt] // beat_bytes(config, t.fmt)), t.opens, t.closes)
                      for t in ls])  # fmt: skip
        stores.append([(t.bank, burst_list(t), t.words, beat_bytes(config, t.fmt), cont[t.fmt])
                       for t in ss])  # fmt: skip
    q = []
    if d.requant and config.requant:
        q = [_Load("q", 0, burst_list(q_transfer(config, d)), False, 0, 1)]
    return loads, stores, q


class DramBus:
    """The DRAM's in-order bus (docs/memory.md): requests in acceptance order, each served
    beat by beat on the beat clock from its ready cycle, a write's response ``latency``
    cycles after its last beat."""

    __slots__ = ("clock", "latency", "max_requests", "out", "queue", "responses")

    def __init__(self, dram: Dram):
        self.clock = BeatClock.of(dram)
        self.latency, self.max_requests = dram.latency, dram.max_requests
        self.queue = deque()  # [kind, ready, beats, size, served]
        self.out = 0  # requests accepted and not yet completed
        self.responses = deque()  # the cycles write responses are due

    def head(self, t: int, can_write: bool) -> tuple[bool, bool]:
        """Whether the head request serves a read beat, or a write beat, this cycle."""
        if not self.queue:
            return False, False
        kind, ready, _, _, _ = self.queue[0]
        clock = self.clock
        if t * clock.num < max(clock.v, ready * clock.num):
            return False, False
        return kind == "r", kind != "r" and can_write

    def serve_beat(self) -> None:
        """The head request's next beat crosses the bus."""
        head = self.queue[0]
        clock = self.clock
        clock.v = max(clock.v, head[1] * clock.num) + clock.step(head[3])
        head[4] += 1

    def serve(self) -> bool:
        """:meth:`serve_beat`, and the head request leaves the queue after its last beat;
        whether it did."""
        self.serve_beat()
        if self.queue[0][4] < self.queue[0][2]:
            return False
        self.queue.popleft()
        return True


class _Reader:
    """The read side: a job's loads (A and B in :func:`contract.dma.transfers`' order, then C)
    each once its bank is free, the requantization table first; and the read engine's bursts,
    at most ``max_reads`` in flight (rtl/dma.py's ReadEngine), recording the cycle each A and B
    word lands in its bank (``arrivals``: the compute may start before the last). A
    convolution's A load first sets the expander up (once the bank is free and the expander
    done with the load before), then stages, then expands (rtl/expander.py;
    contract.timing.CONV_SETUP_CYCLES, expansion_cycles)."""

    __slots__ = ("active", "arrivals", "beat", "cmd", "expand", "expanded_at", "inflight",
                 "issued", "job", "loads", "max_reads", "q_cmd", "q_loaded", "q_pending",
                 "setup", "setup_at", "sub")  # fmt: skip

    def __init__(self, config: ArrayConfig):
        self.loads, self.max_reads = [], config.max_reads
        self.q_pending, self.q_loaded = False, False
        self.q_cmd = None
        self.job = self.issued = 0  # the job whose loads are issued, and how many are
        self.active = None  # bursts left to request of the command being requested
        self.cmd = None
        self.inflight = deque()  # (kind, bank, beats, last, words expanded, beats a word)
        self.beat = self.sub = 0  # beats in of the oldest burst in flight, and of its word
        self.arrivals = {}  # (buffer, bank): the cycle each word of its last A or B load landed
        self.setup = False  # the expander is set up for the pending load (or being set up)
        self.setup_at = None  # the cycle its staging command is ready
        self.expand = None  # the expander's load: (bank, words), from setup to expanded
        self.expanded_at = None  # the cycle its last A word is written

    def restart(self, loads: list, q: list) -> None:
        """On the next descriptor's jobs (its table's load pending, if it has one)."""
        self.loads, self.job, self.issued = loads, 0, 0
        self.q_pending, self.q_cmd = bool(q), (q[0] if q else None)

    def ar_taken(self, bus: DramBus) -> bool:
        return bool(self.active) and len(self.inflight) < self.max_reads and (
            bus.out < bus.max_requests)  # fmt: skip

    def command(self, t: int, state: dict, writes_out: bool, ready: bool, q_now: bool) -> tuple:
        """``(command accepted or None, waiting for a bank, job advances, expander set up)``
        this cycle; ``q_now``: the table's load may go (it goes first)."""
        cmd, wait, advance, setup = None, False, False, False
        if q_now:
            cmd = self.q_cmd
        elif self.job < len(self.loads):
            need = self.loads[self.job][self.issued :]
            if not need:
                advance = True
            else:
                load = need[0]
                kind, bank = load.kind, load.bank
                if load.expand and self.setup:
                    cmd = load if t >= self.setup_at else None
                elif load.expand:
                    setup = state[kind][bank] == FREE and self.expand is None
                    wait = not setup
                elif not load.opens:
                    cmd = load  # the rest of a load begun before: its bank is its own
                elif (state[kind][bank] == FREE and not (load.from_p and writes_out)
                      and not (kind == "a" and self.expand is not None)):  # fmt: skip
                    cmd = load  # (the A bank's write port is the expander's while it works)
                else:
                    wait = True
        return (cmd if ready else None), wait, advance, setup

    def set_up(self, t: int) -> None:
        """The expander takes the pending A load: its staging command is ready after the
        setup's cycles."""
        load = self.loads[self.job][self.issued]
        self.setup, self.setup_at = True, t + CONV_SETUP_CYCLES
        self.expand = (load.bank, load.expand)

    def expanded(self, state: dict) -> tuple:
        """The expander writes its load's last A word: the bank is full."""
        bank, _ = self.expand
        state["a"][bank] = FULL
        self.expand = self.expanded_at = None
        return "a", bank

    def take_beat(self, t: int, bus: DramBus) -> tuple[int, tuple | None]:
        """A read beat arrives in cycle ``t``: ``(requests completed, (buffer, bank, words to
        expand) loaded or None)``."""
        kind, bank, beats, last, expand, per_word = self.inflight[0]
        bus.serve_beat()
        self.beat += 1
        self.sub += 1
        if self.sub == per_word:  # a word is written into the bank
            self.sub = 0
            if kind in "ab" and not expand:
                self.arrivals[kind, bank].append(t)
        if self.beat < beats:
            return 0, None
        self.inflight.popleft()
        self.beat = 0
        if last:
            self.sub = 0
        bus.queue.popleft()
        return 1, ((kind, bank, expand) if last else None)

    def send_ar(self, t: int, bus: DramBus) -> None:
        _, beats, beat = self.active.popleft()
        cmd = self.cmd
        self.inflight.append((cmd.kind, cmd.bank, beats, not self.active and cmd.closes,
                              cmd.expand, cmd.per_word))  # fmt: skip
        bus.queue.append(["r", t + bus.latency, beats, beat, 0])
        if not self.active:
            self.active = None

    def accept(self, cmd: tuple, state: dict) -> None:
        self.cmd = cmd
        self.active = deque(cmd.bursts)
        if cmd.kind == "q":
            self.q_pending = False
        else:
            if cmd.opens:
                state[cmd.kind][cmd.bank] = LOADING
                self.arrivals[cmd.kind, cmd.bank] = []
            self.issued += 1
            self.setup = False

    def loaded(self, t: int, event: tuple, state: dict) -> bool:
        """A load's last word is in: its bank is full (loaded, for C), or, for a staging load,
        the expander starts; whether the bank is full now."""
        kind, bank, expand = event
        if kind == "q":
            self.q_loaded = True
        elif expand:
            self.expanded_at = t + expand
            return False
        else:
            state[kind][bank] = LOADED if kind == "c" else FULL
        return True


class _Compute:
    """The compute core: a chunk runs once its A and B banks are full or loading (not a
    convolution's A, which the expander writes out of order) and its C bank is its own
    (loaded, for a C read back; free, for a new C). Started on a loading bank, its controller
    reads each word once it has landed: its end is known once the last has
    (:func:`models.cycles.gated_counters`)."""

    __slots__ = ("busy", "config", "counters", "done_at", "early_a", "job", "js", "pending",
                 "started")  # fmt: skip

    def __init__(self, config: ArrayConfig):
        self.config, self.js = config, []
        self.job, self.busy, self.done_at = 0, False, None
        self.early_a = True
        self.pending = set()  # the loading banks whose words the running chunk still awaits
        self.started = 0
        self.counters = None  # the running chunk's

    def restart(self, js: list, early_a: bool) -> None:
        self.js, self.job, self.early_a = js, 0, early_a

    def decide(self, t: int, state: dict) -> tuple[bool, bool, bool]:
        """``(a chunk starts, the running one finishes, the array waits)`` this cycle."""
        if self.job >= len(self.js):
            return False, False, False
        if self.busy:
            return False, t == self.done_at, False
        j = self.js[self.job]
        c_now = state["c"][j.banks["c"]]
        if j.c_in:
            c_ready = c_now == LOADED
        else:
            c_ready = (c_now == FREE) if _new_c(self.js, self.job) else True
        a, b = state["a"][j.banks["a"]], state["b"][j.banks["b"]]
        ready = ((a == FULL or (a == LOADING and self.early_a)) and b in (FULL, LOADING)
                 and c_ready)  # fmt: skip
        return ready, False, not ready

    def start(self, t: int, state: dict, arrivals: dict) -> None:
        j = self.js[self.job]
        self.busy, self.started = True, t
        self.pending = {(k, j.banks[k]) for k in "ab" if state[k][j.banks[k]] == LOADING}
        state["c"][j.banks["c"]] = COMPUTE
        self.done_at = None if self.pending else self._done(arrivals)

    def landed(self, what: tuple, arrivals: dict) -> None:
        """A load ``(buffer, bank)`` has its last word in: the running chunk's end is known
        once every load it awaits has."""
        if self.busy and what in self.pending:
            self.pending.discard(what)
            if not self.pending:
                self.done_at = self._done(arrivals)

    def _done(self, arrivals: dict) -> int:
        """The running chunk's counters and last busy cycle, from the cycles its words landed:
        a word that landed in cycle ``u`` is read from ``u + 1`` on, busy cycle ``u - t0``
        of a chunk started in ``t0``."""
        j, t0 = self.js[self.job], self.started
        ready = {}
        for k in "ab":
            landed = arrivals.get((k, j.banks[k]))
            if landed and landed[-1] > t0:
                ready[k] = [u - t0 for u in landed]
        self.counters = gated_counters(self.config, *j.chunk.shape, j.accumulate, ready)
        return t0 + 1 + self.counters["cycles"]

    def finish(self, state: dict, counts: dict) -> None:
        js, i = self.js, self.job
        j = js[i]
        self.busy = False
        if any(state[k][j.banks[k]] == LOADING for k in "ab"):
            raise AssertionError("a chunk ended before its loads did")  # its reads wait for them
        for name, value in self.counters.items():
            counts["compute_cycles" if name == "cycles" else name] += value
        if j.store:
            state["c"][j.banks["c"]] = FULL
        nxt = js[i + 1] if i + 1 < len(js) else None
        if nxt is None or nxt.load_a:
            state["a"][j.banks["a"]] = FREE
        if nxt is None or nxt.load_b:
            state["b"][j.banks["b"]] = FREE
        self.job += 1


class _Writer:
    """The write engine (rtl/dma.py's WriteEngine): a producer reading the C bank a word a
    cycle while the write buffer has room, the AW requests once their first beat is in, the W
    beats, and the B responses counted in ``outstanding``."""

    __slots__ = ("announced", "beat", "bursts", "fifo_words", "in_flight", "job", "js",
                 "max_writes", "outstanding", "per_word", "producing", "producing_per_word",
                 "pushed", "requesting", "store_bank", "stores", "sub")  # fmt: skip

    def __init__(self, config: ArrayConfig):
        self.js, self.stores, self.max_writes = [], [], config.max_writes
        self.job = 0
        self.producing = None  # [words left]
        self.requesting = None  # deque of bursts left to request
        self.pushed = self.announced = 0  # beats into the FIFO, and requested, of this store
        self.fifo_words = 0
        self.in_flight = [0] * DRAIN_LATENCY  # words read, by cycles until the buffer takes them
        self.bursts = deque()  # (beats, last, bank, per_word) requested, data to send
        self.beat = self.sub = 0  # beats sent of the head burst, and of the current word
        self.outstanding = 0  # bursts whose response is still to come
        self.store_bank, self.per_word, self.producing_per_word = 0, 1, 1

    def aw_valid(self) -> bool:
        """A burst's AW is requested (taken, or held by a full DRAM)."""
        return bool(
            self.requesting
            and self.pushed > self.announced
            and self.outstanding < self.max_writes
            and len(self.bursts) < self.max_writes
        )

    def aw_taken(self, bus: DramBus, ar_taken: bool) -> bool:
        return self.aw_valid() and bus.out + ar_taken < bus.max_requests

    def unanswered(self) -> bool:
        """A write may still be unordered against a later read of its bytes: accepted and not
        answered, or requested and not accepted (rtl/dma.py's ``unanswered``)."""
        return self.outstanding > 0 or self.aw_valid()

    def restart(self, js: list, stores: list) -> None:
        self.js, self.stores, self.job = js, stores, 0

    def idle(self) -> bool:
        """Nothing stored is left to produce, request, send or have acknowledged."""
        return (self.producing is None and self.requesting is None and not self.bursts
                and self.outstanding == 0)  # fmt: skip

    def can_write(self) -> bool:
        return bool(self.bursts) and self.fifo_words > 0

    def command(self, js: list, state: dict, table_in: bool) -> tuple:
        """``(store accepted or None, job advances)`` this cycle; a final store of a
        requantizing descriptor waits for the table (``table_in``)."""
        if self.job >= len(js):
            return None, False
        if not self.stores[self.job]:
            return None, True
        bank = self.stores[self.job][0][0]
        final = js[self.job].store == "c"
        ok = state["c"][bank] == FULL and (table_in or not final)
        if ok and self.producing is None and self.requesting is None:
            return self.stores[self.job][0], False
        return None, False

    def producer_reads(self) -> bool:
        return (self.producing is not None
                and self.fifo_words + sum(self.in_flight) < WRITE_BUFFER_WORDS)  # fmt: skip

    def take_beat(self, t: int, bus: DramBus):
        """A write beat leaves: the C bank whose store ended, or None."""
        bus.serve_beat()
        beats, last, bank, per_word = self.bursts[0]
        self.beat += 1
        self.sub += 1
        if self.sub == per_word:
            self.fifo_words -= 1
            self.sub = 0
        if self.beat < beats:
            return None
        self.bursts.popleft()
        self.beat = 0
        bus.queue.popleft()
        bus.responses.append(t + bus.latency)
        return bank if last else None

    def produce(self, reads: bool) -> None:
        if self.in_flight[-1]:
            self.fifo_words += 1
            self.pushed += self.producing_per_word
        self.in_flight = [1 if reads else 0, *self.in_flight[:-1]]
        if reads:
            self.producing[0] -= 1
            if self.producing[0] == 0:
                self.producing = None

    def send_aw(self, t: int, bus: DramBus) -> None:
        _, beats, beat = self.requesting.popleft()
        self.announced += beats
        self.bursts.append((beats, not self.requesting, self.store_bank, self.per_word))
        bus.queue.append(["w", t + 1, beats, beat, 0])
        self.outstanding += 1
        if not self.requesting:
            self.requesting = None

    def accept(self, store: tuple, state: dict) -> None:
        bank, burst_list, words, beat, cont_bytes = store
        state["c"][bank] = STORING
        self.producing = [words]
        self.requesting = deque(burst_list)
        self.pushed = self.announced = 0
        self.store_bank = bank
        self.producing_per_word = self.per_word = max(1, cont_bytes // beat)
        self.job += 1


# what an engine with nothing left to do decides (see _timeline)
_NOTHING = (None, False, False, False)
_NO_STORE = (None, False)
_NONE2 = (False, False)
_NONE3 = (False, False, False)


def _next_event(t: int, bus: DramBus, wr: _Writer, cp: _Compute, limit: int,
                others: list) -> int:  # fmt: skip
    """The first cycle after ``t`` in which something can happen when nothing happens in ``t``:
    only time moves the state on then, through the bus head's beat slot, a write response
    falling due, the running chunk's end, or ``others`` (a check's end, a descriptor's arrival;
    ``limit`` if nothing is pending)."""
    times = [limit, *others]
    if bus.queue:
        kind, ready = bus.queue[0][0], bus.queue[0][1]
        if kind == "r" or wr.can_write():
            u = max(bus.clock.v, ready * bus.clock.num)
            times.append(-(-u // bus.clock.num))
    if bus.responses:
        times.append(bus.responses[0])
    if cp.busy and cp.done_at is not None:
        times.append(cp.done_at)
    return max(t + 1, min(times))


def _reader_times(rd: _Reader) -> list[int]:
    """The cycles the read side moves by itself: a setup's end, an expansion's last word."""
    return [u for u in (rd.setup_at if rd.setup else None, rd.expanded_at) if u is not None]


class _Entry:
    """A descriptor on its way through the device: its jobs and moves (banks chosen when it
    starts), the cycles it was checked, started and completed, and its counts."""

    __slots__ = ("accepted", "checked", "counts", "d", "depends", "done", "js", "loads", "post",
                 "q", "refused", "start", "stores")  # fmt: skip

    def __init__(self, config: ArrayConfig, d: Descriptor, post: int, before):
        self.d, self.post = d, post
        self.refused = check_descriptor(config, d)[0] is not Refusal.NONE
        self.accepted = self.checked = self.start = self.done = None
        self.js = self.loads = self.stores = self.q = None
        self.depends = (before is not None and not self.refused and not before.refused
                        and reads_what_writes(config, d, before.d))  # fmt: skip
        waits = ("array_wait_cycles", "dma_wait_cycles", "jobs", "compute_cycles")
        self.counts = dict.fromkeys(waits + tuple(n for n in COUNTERS if n != "cycles"), 0)

    def begin(self, config: ArrayConfig, banks: dict) -> None:
        """Its jobs on the banks after ``banks`` (the last job's before it), which it updates."""
        flip = {k: 1 ^ banks[k] for k in "abc"}
        self.js = [replace(j, banks={k: b ^ flip[k] for k, b in j.banks.items()})
                   for j in jobs(config, self.d)]  # fmt: skip
        loads, stores, self.q = _moves(config, self.d)
        self.loads = [[load._replace(bank=load.bank ^ flip[load.kind]) for load in job]
                      for job in loads]  # fmt: skip
        self.stores = [[(bank ^ flip["c"], *rest) for bank, *rest in job] for job in stores]
        banks.update(self.js[-1].banks)


class _Moves(NamedTuple):
    """What the queue does in a cycle, decided from the state at its start."""

    check_ends: int | None  # the entry whose check ends
    accept: bool
    pop: bool
    start: bool  # the read side starts entry ``x``
    x: int
    cp_follow: bool
    wr_follow: bool
    complete: bool
    refused: bool
    q_now: bool  # the table's load may go
    rd_valid: bool
    cp_valid: bool
    wr_valid: bool


class _Queue:
    """The descriptors on their way (rtl/device.py's queue, slots and pointers): accepted in
    order as the queue has room, taken into a free slot and checked one at a time, started,
    followed side by side, completed in order."""

    def __init__(self, config: ArrayConfig, items: list):
        self.config = config
        self.entries = []
        for d, post in items:
            self.entries.append(_Entry(config, d, post, self.entries[-1] if self.entries else None))
        self.banks = {"a": 1, "b": 1, "c": 1}  # the walkers' banks after reset
        self.cur = {"rd": None, "cp": None, "wr": None}  # the entry each side is on
        self.nxt = {"rd": 0, "cp": 0, "wr": 0}  # the entry each side takes next
        self.accepted = self.popped = self.completed = 0
        self.checking = self.check_end = None

    def decide(self, t: int, rd: _Reader, cp: _Compute, wr: _Writer) -> _Moves:
        es, cur, nxt = self.entries, self.cur, self.nxt
        acc, popped, done = self.accepted, self.popped, self.completed
        chk_now = self.checking if self.check_end == t else None
        accept = (acc < len(es) and es[acc].post <= t and acc - popped < self.config.queue_depth
                  and (acc == 0 or es[acc - 1].accepted < t))  # fmt: skip
        pop = (self.check_end is None and popped < acc and es[popped].accepted < t
               and (popped < 2 or es[popped - 2].done is not None))  # fmt: skip
        x = nxt["rd"]
        rd_valid = cur["rd"] is not None and rd.job < len(rd.loads)
        start = False
        if x < popped and not es[x].refused and (es[x].checked is not None or chk_now == x):
            prev = es[cur["rd"]] if cur["rd"] is not None else None
            prev_running = prev is not None and prev.done is None
            start = not rd_valid and not rd.q_pending and not (prev_running and es[x].depends)

        def running_or_starting(i):
            return i < len(es) and ((es[i].start is not None and es[i].done is None)
                                    or (start and i == x))  # fmt: skip

        cp_valid = cur["cp"] is not None and cp.job < len(cp.js)
        wr_valid = cur["wr"] is not None and wr.job < len(wr.js)
        wr_idle = wr.idle()
        head = es[done] if done < popped else None
        refused = head is not None and head.refused and (head.checked is not None
                                                         or chk_now == done)  # fmt: skip
        complete = refused or (head is not None and head.start is not None and not head.refused
                               and cur["wr"] == done and not wr_valid and wr_idle)  # fmt: skip
        q_now = rd.q_pending and cur["wr"] == cur["rd"] and (
            wr.producing is None and wr.requesting is None)  # fmt: skip
        return _Moves(chk_now, accept, pop, start, x,
                      not cp_valid and running_or_starting(nxt["cp"]),
                      not wr_valid and wr_idle and running_or_starting(nxt["wr"]),
                      complete, refused, q_now, rd_valid, cp_valid, wr_valid)  # fmt: skip

    def moves(self, mv: _Moves) -> bool:
        return bool(mv.accept or mv.pop or mv.check_ends is not None or mv.start or mv.cp_follow
                    or mv.wr_follow or mv.complete)  # fmt: skip

    def next_times(self) -> list[int]:
        """The cycles the queue moves by itself: a check's end, a descriptor's post."""
        out = [self.check_end] if self.check_end is not None else []
        if self.accepted < len(self.entries):
            out.append(self.entries[self.accepted].post)
        return out

    def apply(self, t: int, mv: _Moves, rd: _Reader, cp: _Compute, wr: _Writer) -> None:
        es, cur, nxt = self.entries, self.cur, self.nxt
        if mv.accept:
            es[self.accepted].accepted = t
            self.accepted += 1
        if mv.check_ends is not None:
            es[mv.check_ends].checked = t
            self.checking = self.check_end = None
        if mv.pop:
            self.checking, self.check_end = self.popped, t + CHECK_CYCLES
            self.popped += 1
        if mv.start:
            e = es[mv.x]
            e.start = t
            e.begin(self.config, self.banks)
            rd.restart(e.loads, e.q if self.config.requant and e.d.requant else [])
            cur["rd"], nxt["rd"] = mv.x, mv.x + 1
        if mv.cp_follow:
            cp.restart(es[nxt["cp"]].js, es[nxt["cp"]].d.conv is None)
            cur["cp"], nxt["cp"] = nxt["cp"], nxt["cp"] + 1
        if mv.wr_follow:
            wr.restart(es[nxt["wr"]].js, es[nxt["wr"]].stores)
            rd.q_loaded = False
            cur["wr"], nxt["wr"] = nxt["wr"], nxt["wr"] + 1
        if mv.complete:
            es[self.completed].done = t
            if mv.refused:  # every side passes over it
                for side in cur:
                    cur[side], nxt[side] = self.completed, self.completed + 1
            self.completed += 1


def _timeline(config: ArrayConfig, items: list, dram: Dram, limit: int,
              trace: list | None = None) -> list[_Entry]:  # fmt: skip
    """The descriptors ``items`` (``(descriptor, cycle a driver posts it)``, in order) through
    the device, one cycle at a time (rtl/device.py): each accepted into the queue, taken into a
    free slot and checked, started once the read side is done with the one before (after it
    completes, if it reads what that one writes), its jobs walked by the read, compute and
    write sides in turn, completed in order (:class:`_Queue`). ``trace`` (a list) collects the
    events ``(cycle, event, what)`` of :mod:`contract.trace`: a load starting and ending
    (``what`` its buffer and bank), a chunk's compute starting and ending (its index), a store
    starting and ending (its C bank).

    Each cycle first decides, from the state at its start, what every engine does; then
    applies the updates in the order the hardware's registers take them. A cycle in which
    nothing happens is followed by the same until a timed event (:func:`_next_event`): the walk
    jumps there, so its time grows with the events, not the cycles."""
    note = trace.append if trace is not None else (lambda _: None)
    queue = _Queue(config, items)
    entries, cur = queue.entries, queue.cur
    state = {k: [FREE, FREE] for k in "abc"}
    bus, rd, cp, wr = DramBus(dram), _Reader(config), _Compute(config), _Writer(config)
    t = min((post for _, post in items), default=0)
    while queue.completed < len(entries) and t < limit:
        # ---- decisions from the state at the start of the cycle ----
        mv = queue.decide(t, rd, cp, wr)
        ar_taken = rd.active is not None and rd.ar_taken(bus)
        rd_ready = rd.active is None or (ar_taken and len(rd.active) == 1)
        cmd, dma_wait, rd_advance, setup = rd.command(
            t, state, wr.unanswered(), rd_ready, mv.q_now) if (
            mv.q_now or mv.rd_valid) else _NOTHING  # fmt: skip
        expanded = rd.expanded_at == t
        aw_taken = wr.requesting is not None and wr.aw_taken(bus, ar_taken)
        r_take, w_take = bus.head(t, wr.can_write()) if bus.queue else _NONE2
        b_take = bool(bus.responses) and t >= bus.responses[0]
        if cp.busy:
            go, finished, array_wait = False, t == cp.done_at, False
        else:
            go, finished, array_wait = cp.decide(t, state) if mv.cp_valid else _NONE3
        if mv.wr_valid:
            requant = config.requant and entries[cur["wr"]].d.requant
            store, wr_advance = wr.command(wr.js, state, rd.q_loaded or not requant)
        else:
            store, wr_advance = _NO_STORE
        prod_read = wr.producing is not None and wr.producer_reads()
        if not (ar_taken or aw_taken or r_take or w_take or b_take or go or finished or prod_read
                or any(wr.in_flight) or rd_advance or wr_advance or cmd is not None or setup
                or expanded or store is not None or queue.moves(mv)):  # fmt: skip
            # nothing happens: nothing will until the next timed event, so skip to it (the
            # cycles between wait as this one does)
            skip_to = _next_event(t, bus, wr, cp, limit, queue.next_times() + _reader_times(rd))
            if array_wait:
                entries[cur["cp"]].counts["array_wait_cycles"] += skip_to - t
            if dma_wait:
                entries[cur["rd"]].counts["dma_wait_cycles"] += skip_to - t
            t = skip_to
            continue
        if array_wait:
            entries[cur["cp"]].counts["array_wait_cycles"] += 1
        if dma_wait:
            entries[cur["rd"]].counts["dma_wait_cycles"] += 1
        # ---- updates at the end of the cycle ----
        completed_requests, loaded = rd.take_beat(t, bus) if r_take else (0, None)
        stored = wr.take_beat(t, bus) if w_take else None
        if b_take:
            bus.responses.popleft()
            completed_requests += 1
            wr.outstanding -= 1
        if prod_read or any(wr.in_flight):
            wr.produce(prod_read)
        if aw_taken:
            wr.send_aw(t, bus)
        if ar_taken:
            rd.send_ar(t, bus)
        if ar_taken and aw_taken:  # the same cycle: the AR first in the queue
            bus.queue[-1], bus.queue[-2] = bus.queue[-2], bus.queue[-1]
        bus.out += ar_taken + aw_taken - completed_requests
        if setup:
            rd.set_up(t)
        if cmd is not None:
            if cmd.opens:  # a load in parts starts with its first
                note((t, "load", f"{cmd.kind}{cmd.bank}"))
            rd.accept(cmd, state)
        if rd_advance:
            rd.job += 1
            rd.issued = 0
        if loaded and rd.loaded(t, loaded, state):
            note((t, "loaded", f"{loaded[0]}{loaded[1]}"))
            cp.landed(loaded[:2], rd.arrivals)
        if expanded:
            note((t, "loaded", "a{}".format(*rd.expanded(state)[1:])))
        if go:
            note((t, "compute", cp.job))
            cp.start(t, state, rd.arrivals)
        if finished:
            note((t, "computed", cp.job))
            entries[cur["cp"]].counts["jobs"] += 1
            cp.finish(state, entries[cur["cp"]].counts)
        if store is not None:
            note((t, "store", store[0]))
            wr.accept(store, state)
        elif wr_advance:
            wr.job += 1
        if stored is not None:
            note((t, "stored", stored))
            state["c"][stored] = FREE
        queue.apply(t, mv, rd, cp, wr)
        t += 1
    return entries


def _new_c(js, i):
    if i == 0:
        return True
    a, b = js[i - 1].chunk, js[i].chunk
    return (a.m0, a.n0) != (b.m0, b.n0)


class DevicePrediction(dict):
    """:data:`contract.interface.DEVICE_COUNTERS` of one descriptor, and ``measured_cycles``:
    the cycles from its acceptance to ``done`` as the simulation's bench counts them."""

    measured: int | None = None  # set in a stream, where the queue and the others decide it
    accepted: int = 0  # in a stream: the cycle the device accepted it, from the first's

    @property
    def measured_cycles(self) -> int:
        if self.measured is not None:
            return self.measured
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
    of the cycle-level account, on the cycles the simulation's log gives them (counted from
    the one after its acceptance)."""
    events: list = []
    if check_descriptor(config, d)[0] is Refusal.NONE:
        _timeline(config, [(d, 0)], dram, limit, trace=events)
    return [(t - 1, name, what) for t, name, what in events]


def predict_device(config: ArrayConfig, d: Descriptor, dram: Dram,
                   limit: int = 50_000_000) -> DevicePrediction:  # fmt: skip
    """Every counter of descriptor ``d`` on the device of ``config`` behind ``dram``, alone on
    it; a refused descriptor counts nothing."""
    return predict_stream(config, [(d, 0)], dram, limit)[0]


class QueuePrediction(list):
    """:class:`DevicePrediction` of each descriptor of a queue, its own events each, and
    ``registers``: what the device's counters show once the last has completed (they count
    from the check of a descriptor posted to an idle device, so a queue's add up)."""

    registers: dict[str, int]


def predict_stream(config: ArrayConfig, items: list, dram: Dram,
                   limit: int = 50_000_000) -> QueuePrediction:  # fmt: skip
    """Every counter of each GEMM descriptor of ``items`` (``(descriptor, cycle a driver posts
    it)``, in order, the first on an idle device), queued on one device behind ``dram``: each
    accepted at its post, or once the queue has room; the descriptors overlap as the hardware
    lets them (contract.timing.DESCRIPTOR_SLOTS); each one's ``measured_cycles`` run from its
    acceptance to its ``done``, ``accepted`` counts from the first's."""
    out = QueuePrediction()
    entries = _timeline(config, items, dram, limit)
    for e in entries:
        pred = DevicePrediction(dict.fromkeys(DEVICE_COUNTERS, 0))
        if e.done is None:
            raise RuntimeError(f"the stream did not finish within {limit} cycles")
        pred.measured, pred.accepted = e.done - e.accepted, e.accepted - entries[0].accepted
        out.append(pred)
        if e.refused:
            continue
        pred.update(e.counts, cycles=e.done - e.start)
        pred.update(_static_counts(config, e.d))
    # the registers count from the last check on an idle device: the descriptor before had
    # completed before the check's last cycle
    z = max(i for i, e in enumerate(entries) if i == 0 or entries[i - 1].done < e.checked)
    registers = dict.fromkeys(DEVICE_COUNTERS, 0)
    for pred in out[z:]:
        for name in DEVICE_COUNTERS:
            registers[name] += pred[name]
    busy, last = 0, None  # cycles some descriptor runs: the union of (start, done]
    for e in entries[z:]:
        if e.start is not None:
            busy += e.done - max(e.start, last if last is not None else e.start)
            last = e.done
    registers["cycles"] = busy
    out.registers = registers
    return out


def _static_counts(config: ArrayConfig, d: Descriptor) -> dict[str, int]:
    """The counters a descriptor's jobs fix whatever the timing: the DRAM traffic of each
    operand (the compute core's come from the timeline, as a chunk may wait for its words)."""
    out = {n: 0 for n in DEVICE_COUNTERS if n.startswith("dram_")}
    loads, stores, q = _moves(config, d)
    for buf, _, burst_list, *_ in q + [load for job in loads for load in job]:
        out[f"dram_read_beats_{buf}"] += sum(n for _, n, _ in burst_list)
        out[f"dram_read_bytes_{buf}"] += sum(n * beat for _, n, beat in burst_list)
    for _, burst_list, _, _, _ in (store for job in stores for store in job):
        out["dram_write_beats"] += sum(n for _, n, _ in burst_list)
        out["dram_write_bytes"] += sum(n * beat for _, n, beat in burst_list)
    return out
