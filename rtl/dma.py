"""The DMA engines: the read engine loads a transfer's words from DRAM into a bank, the write
engine stores a C bank to DRAM (through requantization where asked), both over AXI4 INCR bursts
that :func:`contract.dma.bursts` describes.

A transfer is ``tiles`` contiguous runs of ``lines`` words from ``addr``, ``addr + stride``, ...
(:class:`contract.dma.Transfer`), filling (or draining) its bank from word 0 in order. A DRAM beat
never carries more than one buffer word (:func:`contract.dma.beat_bytes`): a word narrower than
the bus moves in one narrow beat on its byte lanes, a wider one in ``container / bus`` beats.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from amaranth import Cat, Const, Module, Mux, Signal, Value, signed, unsigned
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out
from systolic.contract.axi import ADDR_BITS, AXI_ID, BURST_INCR, OPERANDS
from systolic.contract.config import ArrayConfig
from systolic.contract.dma import DRAIN_LATENCY, WRITE_BUFFER_WORDS, beat_bytes, containers
from systolic.contract.interface import DIM_BITS
from systolic.contract.layouts import layouts

from .arith import divide, equals, remainder
from .array import Flow
from .axi import AxiMaster
from .requant import output_path_layout, requant_word

__all__ = ["ReadEngine", "WriteEngine", "load_layout", "store_layout"]

_ADDR = unsigned(ADDR_BITS)
_COUNT = unsigned(DIM_BITS + 1)
#: Kinds of loads, by operand code (contract.axi.OPERANDS): C and partial sums both go to the C
#: buffer; the parameter table (``q``) exists with requantization only.
LOAD_KINDS = ("a", "b", "c", "q")


def load_kinds(config: ArrayConfig) -> tuple[str, ...]:
    """The kinds of load ``config``'s device makes (no table without requantization, so the
    read engine assembles no word as wide as one)."""
    return LOAD_KINDS if config.requant else LOAD_KINDS[:3]


def load_layout(config: ArrayConfig) -> data.StructLayout:
    """A load command: which buffer (its operand code, contract.axi.OPERANDS), the bank, and the
    transfer's runs; ``more``: a later command goes on filling the bank from where this one
    stops (contract.dma.split_first: its last word is not the bank's); with a staging buffer,
    ``stage``: a convolution's A, for the staging buffer (its words and its end carry the bit,
    so a plain A load still arriving goes to the bank)."""
    return data.StructLayout({"kind": 2, "bank": 1, **_stage(config), "addr": _ADDR,
                              "stride": _ADDR, "tiles": _COUNT, "lines": _COUNT,
                              "more": 1})  # fmt: skip


def _stage(config: ArrayConfig) -> dict:
    """The ``stage`` bit of a load and its words, on a device with a staging buffer."""
    return {"stage": 1} if config.stage_depth else {}


def store_layout() -> data.StructLayout:
    """A store command: finished outputs (``final``, requantized with ``requant``) or partial
    sums, from a C bank to DRAM; ``n0`` is the chunk's first output channel."""
    return data.StructLayout({"final": 1, "requant": 1, "bank": 1, "addr": _ADDR,
                              "stride": _ADDR, "tiles": _COUNT, "lines": _COUNT,
                              "n0": _COUNT})  # fmt: skip


def by_kind(m: Module, kind, kinds: dict):
    """Yield each kind's values inside its case of a switch on ``kind``; where the kinds do not
    cover every code (a device without the table has three kinds of load in a two-bit code),
    the last kind's case is the default."""
    short = len(kinds) < 1 << len(Value.cast(kind))
    with m.Switch(kind):
        for i, (code, values) in enumerate(kinds.items()):
            with m.Default() if short and i == len(kinds) - 1 else m.Case(code):
                yield values


class _Runs:
    """Walks a transfer's runs and splits them into bursts: the current burst's address and
    beats, given the kind's beat and container sizes (constants selected by ``kind``).

    A burst takes the bytes to the next ``max_burst``-beat boundary or the run's bytes left,
    whichever is fewer: arithmetic on the boundary's few low address bits and the run's length,
    so no address-wide adder or comparator stands between a command and its requests (issue
    36); the addresses' sums go to registers."""

    def __init__(self, m: Module, config: ArrayConfig, kinds: dict, kind, name: str):
        bus = config.bus_width // 8
        self.name, self.kinds = name, kinds
        widest = max(c for c, _ in kinds.values())
        run_bits = _COUNT.width + int(math.log2(widest))  # a run's bytes: lines x container
        self.addr = Signal(_ADDR, name=f"{name}_addr")  # next byte to request
        self.row = Signal(_ADDR, name=f"{name}_row")  # start of the current run
        self.tile = Signal(_COUNT, name=f"{name}_tile")
        self.left = Signal(unsigned(run_bits), name=f"{name}_left")  # the run's bytes to request
        self.run = Signal(unsigned(run_bits), name=f"{name}_run")  # bytes of every run
        self.beat_log = Signal(range(8), name=f"{name}_size")  # log2 of the beat's bytes
        span_bits = int(math.log2(config.max_burst * max(b for _, b in kinds.values())))
        room = Signal(unsigned(span_bits + 1), name=f"{name}_room")  # bytes to the boundary
        for _, beat in by_kind(m, kind, kinds):
            span = config.max_burst * beat
            low = self.addr[: int(math.log2(span))] if span > 1 else Const(0, 1)
            m.d.comb += [self.beat_log.eq(int(math.log2(beat))), room.eq(span - low)]
        self.last = Signal(name=f"{name}_last_of_run")  # this burst ends the run
        m.d.comb += self.last.eq(self.left <= room)
        self.take = Signal(unsigned(span_bits + 1), name=f"{name}_take")  # the burst's bytes
        m.d.comb += self.take.eq(Mux(self.last, self.left, room))
        self.beats = Signal(unsigned(max(9, span_bits + 1)), name=f"{name}_beats")  # <= 256
        m.d.comb += self.beats.eq(self.take >> self.beat_log)
        self.lane = Signal(8, name=f"{name}_lane")  # 8 bits, as the burst records hold it
        m.d.comb += self.lane.eq(self.addr[: max(1, int(math.log2(bus)))] if bus > 1 else 0)

    def start(self, m: Module, cmd, kind) -> list:
        """Statements that begin ``cmd`` (of ``kind``, the incoming command's, not the one the
        walk holds): a run's bytes are its lines shifted by the container's log."""
        run = Signal.like(self.run, name=f"{self.name}_next_run")
        for cont, _ in by_kind(m, kind, self.kinds):
            m.d.comb += run.eq(cmd.lines << int(math.log2(cont)))
        return [self.addr.eq(cmd.addr), self.row.eq(cmd.addr), self.tile.eq(0),
                self.left.eq(run), self.run.eq(run)]  # fmt: skip

    def step(self, m: Module, cmd) -> None:
        """After the current burst: the rest of the run, or the next run."""
        with m.If(self.last):
            nxt = self.row + cmd.stride
            m.d.sync += [self.row.eq(nxt), self.addr.eq(nxt), self.tile.eq(self.tile + 1),
                         self.left.eq(self.run)]  # fmt: skip
        with m.Else():
            m.d.sync += [self.addr.eq(self.addr + self.take), self.left.eq(self.left - self.take)]


def _load_kinds(config: ArrayConfig) -> dict[int, tuple[int, int]]:
    """Operand code -> (container bytes, beat bytes) of each load: C loads are
    accumulator-wide."""
    cont = containers(config)
    sizes = {"a": "a", "b": "b", "c": "p", "q": "q"}
    return {OPERANDS[k]: (cont[sizes[k]], beat_bytes(config, sizes[k]))
            for k in load_kinds(config)}  # fmt: skip


class ReadEngine(wiring.Component):
    """Loads transfers into banks.

    Ports
    -----
    cmd : stream load_layout(config)
        The next load; taken when the request side is free (or issuing its last burst), so the
        next load's first request can follow the previous one's last at once.
    mem : the AR and R channels of the AXI4 master (AW, W, B are the write engine's).
    fill_a, fill_b, fill_c, fill_q : Flow {bank, addr, data of the container}; fill_q with
        requantization only.
        One word a cycle into the bank, as its last beat arrives.
    loaded : Flow {kind, bank}
        A load's last word was written this cycle.
    """

    def __init__(self, config: ArrayConfig):
        self._config = config
        self._kinds = _load_kinds(config)
        fill = {k: Flow(data.StructLayout({"bank": 1, **_stage(config),
                                           "addr": unsigned(DIM_BITS + 1),
                                           "data": unsigned(8 * self._kinds[OPERANDS[k]][0])}))
                for k in load_kinds(config)}  # fmt: skip
        super().__init__({
            "cmd": In(stream.Signature(load_layout(config))),
            "mem": Out(AxiMaster(config.bus_width)),
            **{f"fill_{k}": Out(fill[k]) for k in load_kinds(config)},
            "loaded": Out(Flow(data.StructLayout({"kind": 2, "bank": 1, **_stage(config)}))),
            "taken": Out(Flow(unsigned(2))),  # each R beat, with its burst's operand
            "idle": Out(1),
        })  # fmt: skip

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        bus = cfg.bus_width // 8
        # -- request side -----------------------------------------------------------------
        cmd = Signal(load_layout(cfg), name="rd_cmd")
        stage = _stage(cfg)
        active = Signal(name="rd_active")
        runs = _Runs(m, cfg, self._kinds, cmd.kind, "rd")
        inflight = fifo.SyncFIFO(width=2 + 1 + 9 + 8 + 1 + len(stage), depth=cfg.max_reads)
        m.submodules.inflight = inflight
        ar = self.mem.ar
        last_burst = runs.last & (runs.tile + 1 == cmd.tiles)
        m.d.comb += [
            ar.valid.eq(active & inflight.w_rdy),
            ar.payload.addr.eq(runs.addr),
            ar.payload.len.eq(runs.beats - 1),
            ar.payload.size.eq(runs.beat_log),
            ar.payload.burst.eq(BURST_INCR),
            ar.payload.id.eq(AXI_ID),
            ar.payload.user.eq(cmd.kind),
        ]
        record = Cat(cmd.kind, cmd.bank, runs.beats[:9], runs.lane, last_burst & ~cmd.more,
                     *[cmd.stage for _ in stage])  # fmt: skip
        m.d.comb += [inflight.w_en.eq(ar.valid & ar.ready), inflight.w_data.eq(record)]
        sent = ar.valid & ar.ready
        m.d.comb += self.cmd.ready.eq(~active | (sent & last_burst))
        with m.If(sent):
            runs.step(m, cmd)
            with m.If(last_burst):
                m.d.sync += active.eq(0)
        with m.If(self.cmd.valid & self.cmd.ready):
            m.d.sync += [cmd.eq(self.cmd.payload), active.eq(1)]
            m.d.sync += runs.start(m, self.cmd.payload, self.cmd.payload.kind)
        # -- data side ------------------------------------------------------------------------
        head = Signal(data.StructLayout({"kind": 2, "bank": 1, "beats": 9, "lane": 8, "last": 1,
                                         **stage}), name="rd_head")  # fmt: skip
        m.d.comb += head.eq(inflight.r_data)
        r = self.mem.r
        beat = Signal(9, name="rd_beat")  # beats taken of the head burst
        sub = Signal(8, name="rd_sub")  # beats taken of the current word
        lane = Signal(8, name="rd_lane")
        # each buffer's next word: a load split in parts (``more``) goes on where its last part
        # stopped, whatever another buffer's load did in between
        word_addr = {k: Signal(DIM_BITS + 1, name=f"rd_word_{k}") for k in load_kinds(cfg)}
        m.d.comb += r.ready.eq(inflight.r_rdy)  # always, once the burst's request is recorded
        take = r.valid & inflight.r_rdy
        first = ~beat.any()
        this_lane = Mux(first, head.lane, lane)
        size = Signal(range(8))
        per_word = Signal(unsigned(16))  # beats per word
        for cont, bt in by_kind(m, head.kind, self._kinds):
            m.d.comb += [size.eq(int(math.log2(bt))), per_word.eq(cont // bt)]
        widest = max(c for c, _ in self._kinds.values())
        assembled = Signal(8 * max(widest, bus), name="rd_assembled")
        shifted = Signal(cfg.bus_width, name="rd_narrow")
        m.d.comb += shifted.eq(r.payload.data >> (this_lane * 8))
        word = Signal(8 * widest, name="rd_word_data")
        # a narrow word is the beat's lanes; a wide one is the beats so far plus this one (no
        # assembly at all where every kind's word fits a beat)
        beats_of_widest = max(1, widest // bus)
        if beats_of_widest == 1:
            m.d.comb += word.eq(shifted)
        else:
            with m.If(per_word == 1):
                m.d.comb += word.eq(shifted)
            with m.Else():
                pieces = []
                for i in range(beats_of_widest):
                    piece = Signal(cfg.bus_width, name=f"rd_piece{i}")
                    held = assembled[i * cfg.bus_width : (i + 1) * cfg.bus_width]
                    m.d.comb += piece.eq(Mux(equals(sub, i), r.payload.data, held))
                    pieces.append(piece)
                m.d.comb += word.eq(Cat(*pieces))
        complete = take & (sub + 1 == per_word)
        last_beat = beat + 1 == head.beats
        with m.If(take):
            if beats_of_widest > 1:
                with m.Switch(sub):
                    for i in range(beats_of_widest):
                        with m.Case(i) if i < beats_of_widest - 1 else m.Default():
                            part = assembled[i * cfg.bus_width : (i + 1) * cfg.bus_width]
                            m.d.sync += part.eq(r.payload.data)
            lane_bits = max(1, int(math.log2(bus)))
            m.d.sync += [beat.eq(Mux(last_beat, 0, beat + 1)),
                         lane.eq((this_lane + (Const(1, 8) << size))[:lane_bits]),
                         sub.eq(Mux(sub + 1 == per_word, 0, sub + 1))]  # fmt: skip
            for k, at in word_addr.items():
                with m.If(equals(head.kind, OPERANDS[k])):
                    with m.If(last_beat & head.last):
                        m.d.sync += at.eq(0)
                    with m.Elif(complete):
                        m.d.sync += at.eq(at + 1)
            with m.If(last_beat & head.last):
                m.d.sync += sub.eq(0)
        m.d.comb += inflight.r_en.eq(take & last_beat)
        for k in load_kinds(cfg):
            port = getattr(self, f"fill_{k}")
            m.d.comb += [
                port.valid.eq(complete & equals(head.kind, OPERANDS[k])),
                port.payload.bank.eq(head.bank),
                *[port.payload.stage.eq(head.stage) for _ in stage],
                port.payload.addr.eq(word_addr[k]),
                port.payload.data.eq(word),
            ]
        m.d.comb += [
            self.loaded.valid.eq(take & last_beat & head.last),
            self.loaded.payload.kind.eq(head.kind),
            self.taken.valid.eq(take),
            self.taken.payload.eq(head.kind),
            self.loaded.payload.bank.eq(head.bank),
            *[self.loaded.payload.stage.eq(head.stage) for _ in stage],
            self.idle.eq(~active & ~inflight.r_rdy),
        ]
        return m


class _Producer(NamedTuple):
    """The write engine's producer: the FIFO of DRAM words, its counts and its beats a word."""

    words: object
    count: Signal
    line: Signal
    tile: Signal
    in_flight: Signal
    per_word: Signal


class _Requests(NamedTuple):
    """The write engine's request side: its bursts' walk and counts, and the bursts recorded
    for the data side."""

    runs: object
    ahead: Signal
    bursts: object
    outstanding: Signal
    sent: object


class WriteEngine(wiring.Component):
    """Stores C banks to DRAM.

    A producer reads the bank's words in order, one a cycle while the write buffer has room,
    through requantization for a final store with ``requant``, into a FIFO of DRAM words; the
    request side issues a burst once its first beat is in the FIFO (the producer, at least one
    beat a cycle, stays ahead of the DRAM, at most one), and the data side sends the beats with
    ``WLAST`` at each burst's end. A store is done (``stored``) at its last W beat, which
    releases the bank; ``unanswered`` while a write may still be unordered against a later read
    of its bytes: a burst accepted and not yet answered, or requested and not yet accepted (its
    W beats may go first, and a slave may serve a read that arrives before its AW).

    Ports
    -----
    cmd : stream store_layout()
        Taken when the producer and the request side are both done with the previous store.
    mem : the AW, W and B channels of the AXI4 master.
    drain_bank, drain_addr, drain_en / drain_data : the C bank's read port.
    q_addr, q_en / q_data : the per-channel parameters' read port.
    path : in, the descriptor's settings of the fused output path (output zero point, bias,
        clamp).
    """

    def __init__(self, config: ArrayConfig, c_word, q_word):
        self._config = config
        cont = containers(config)
        self._kinds = {
            1: (cont["c"], beat_bytes(config, "c")),
            0: (cont["p"], beat_bytes(config, "p")),
        }
        members = {
            "cmd": In(stream.Signature(store_layout())),
            "mem": Out(AxiMaster(config.bus_width)),
            "drain_bank": Out(1),
            "drain_addr": Out(unsigned(DIM_BITS + 1)),
            "drain_en": Out(1),
            "drain_data": In(c_word),
            "stored": Out(Flow(data.StructLayout({"bank": 1}))),
            "unanswered": Out(1),
            "idle": Out(1),
        }
        if config.requant:
            members |= {
                "q_addr": Out(unsigned(DIM_BITS + 1)),
                "q_en": Out(1),
                "q_data": In(q_word),
                "path": In(output_path_layout(config)),
            }
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        cmd = Signal(store_layout(), name="wr_cmd")
        producing = Signal(name="wr_producing")
        requesting = Signal(name="wr_requesting")
        m.d.comb += self.cmd.ready.eq(~producing & ~requesting)
        start = self.cmd.valid & self.cmd.ready
        prod = self._producer(m, cmd, producing, start)
        req = self._requests(m, cmd, requesting, prod)
        self._data(m, prod.words, req.bursts)
        self._responses(m, producing, requesting, req)
        with m.If(start):
            p = self.cmd.payload
            m.d.sync += [
                cmd.eq(p),
                producing.eq(1),
                requesting.eq(1),
                prod.count.eq(0),
                prod.line.eq(0),
                prod.tile.eq(0),
                req.ahead.eq(0),
            ]
            m.d.sync += req.runs.start(m, p, p.final & (p.requant if self._config.requant else 0))
        return m

    def _producer(self, m: Module, cmd, producing, start) -> _Producer:
        """The bank's words in order, one a cycle while the write buffer has room (requantized
        for a final store with ``requant``), into the FIFO of DRAM words."""
        cfg = self._config
        widest = max(c for c, _ in self._kinds.values())
        depth = WRITE_BUFFER_WORDS
        words = fifo.SyncFIFO(width=8 * widest, depth=depth)
        m.submodules.words = words
        count = Signal(unsigned(2 * DIM_BITS + 2), name="wr_count")  # words read so far
        line = Signal(_COUNT, name="wr_line")
        tile = Signal(_COUNT, name="wr_tile")
        # contract.dma.DRAIN_LATENCY: a word read in cycle t arrives from its bank in t + 1 and
        # passes DRAIN_LATENCY - 1 registers, the write buffer taking it in t + DRAIN_LATENCY;
        # flight[i] marks a word i + 1 cycles after its read
        if DRAIN_LATENCY < 1:
            raise ValueError(f"contract.dma.DRAIN_LATENCY must be at least 1 (the bank's read), "
                             f"not {DRAIN_LATENCY}")  # fmt: skip
        flight = [Signal(name=f"wr_flight{i + 1}") for i in range(DRAIN_LATENCY)]
        in_flight = flight[-1]  # into the buffer now
        room = words.level + sum(flight) < depth
        read = producing & room
        m.d.comb += [
            self.drain_bank.eq(cmd.bank),
            self.drain_addr.eq(count),
            self.drain_en.eq(read),
        ]
        m.d.sync += [f.eq(before) for f, before in zip(flight, [read, *flight[:-1]], strict=True)]
        with m.If(read):
            m.d.sync += count.eq(count + 1)
            end_of_run = line + 1 == cmd.lines
            with m.If(end_of_run):
                m.d.sync += [line.eq(0), tile.eq(tile + 1)]
            with m.Else():
                m.d.sync += line.eq(line + 1)
            with m.If(end_of_run & (tile + 1 == cmd.tiles)):  # the store's last word
                m.d.sync += producing.eq(0)
        raw = self.drain_data
        packed = Signal(8 * widest, name="wr_packed")
        if cfg.requant:
            narrow = self._requantized(m, raw, line, tile, read, start)
            m.d.comb += packed.eq(Mux(cmd.final & cmd.requant, narrow, raw.as_value()))
        else:
            m.d.comb += packed.eq(raw.as_value())
        held = packed
        for i in range(DRAIN_LATENCY - 1):
            stage = Signal.like(packed, name="wr_held" if i == DRAIN_LATENCY - 2 else f"wr_held{i}")
            m.d.sync += stage.eq(held)
            held = stage
        m.d.comb += [words.w_en.eq(in_flight), words.w_data.eq(held)]
        per_word = Signal(unsigned(16), name="wr_per_word")
        beat_log = Signal(range(8), name="wr_beat_log")
        with m.Switch(cmd.final & (cmd.requant if cfg.requant else 0)):
            for k, (cont, bt) in self._kinds.items():
                with m.Case(k):
                    m.d.comb += [per_word.eq(cont // bt), beat_log.eq(int(math.log2(bt)))]
        return _Producer(words, count, line, tile, in_flight, per_word)

    def _requantized(self, m: Module, raw, line, tile, read, start):
        """The word being read, requantized with its channels' parameters (read alongside it
        from the table) and packed at the output width."""
        cfg = self._config
        rowwise = layouts(cfg)["c"].rowwise
        q_base = Signal(_COUNT, name="wr_q_base")  # the chunk's first channel, as Q word ...
        q_lane0 = Signal(range(max(cfg.cols, 2)), name="wr_q_lane0")  # ... and lane
        q_word = Signal(_COUNT, name="wr_q_word")
        q_lane = Signal(range(max(cfg.cols, 2)), name="wr_q_lane")
        # rowwise C: word (t, i) holds channels n0 + t*cols ..; columnwise: channel n0 + i
        if rowwise:
            m.d.comb += [q_word.eq(q_base + tile), q_lane.eq(0)]
        else:
            lane_sum = Signal(range(2 * max(cfg.cols, 2)))
            word_sum = Signal(unsigned(DIM_BITS + 2))
            m.d.comb += [
                lane_sum.eq(q_lane0 + remainder(line, cfg.cols, DIM_BITS + 1)),
                word_sum.eq(q_base + divide(line, cfg.cols, DIM_BITS + 1)),
            ]
            with m.If(lane_sum >= cfg.cols):
                m.d.comb += [q_lane.eq(lane_sum - cfg.cols), q_word.eq(word_sum + 1)]
            with m.Else():
                m.d.comb += [q_lane.eq(lane_sum), q_word.eq(word_sum)]
        m.d.comb += [self.q_addr.eq(q_word), self.q_en.eq(read)]
        lane_r = Signal.like(q_lane, name="wr_q_lane_r")
        m.d.sync += lane_r.eq(q_lane)
        with m.If(start):
            m.d.sync += [
                q_base.eq(divide(self.cmd.payload.n0, cfg.cols, DIM_BITS + 1)),
                q_lane0.eq(remainder(self.cmd.payload.n0, cfg.cols, DIM_BITS + 1)),
            ]
        outs = requant_word(m, cfg, raw, self.q_data, lane_r, Const(0 if rowwise else 1), self.path)
        return Cat(*[o[: cfg.out_width] for o in outs])

    def _requests(self, m: Module, cmd, requesting, prod: _Producer) -> _Requests:
        """The AW channel: a burst once its first beat is in the FIFO, recorded for the data
        side as soon as its AW is valid."""
        cfg = self._config
        kind = Signal(name="wr_kind")
        m.d.comb += kind.eq(cmd.final & (cmd.requant if cfg.requant else 0))
        runs = _Runs(m, cfg, self._kinds, kind, "wr")
        # beats pushed into the FIFO less beats requested, this store: a burst may be requested
        # once its first beat is in (one ahead); a small count where two store-long ones and
        # their comparison stood (an FPGA's critical path)
        ahead = Signal(signed(16), name="wr_ahead")
        bursts_rec = fifo.SyncFIFO(width=9 + 8 + 1 + 1 + 1, depth=cfg.max_writes)
        m.submodules.bursts = bursts_rec
        outstanding = Signal(range(cfg.max_writes + 1), name="wr_outstanding")
        recorded = Signal(name="wr_recorded")  # the pending AW's burst is in bursts_rec
        aw = self.mem.aw
        last_burst = runs.last & (runs.tile + 1 == cmd.tiles)
        m.d.comb += [
            aw.valid.eq(
                requesting
                & (ahead > 0)
                & (outstanding < cfg.max_writes)
                & (bursts_rec.w_rdy | recorded)
            ),  # fmt: skip
            aw.payload.addr.eq(runs.addr),
            aw.payload.len.eq(runs.beats - 1),
            aw.payload.size.eq(runs.beat_log),
            aw.payload.burst.eq(BURST_INCR),
            aw.payload.id.eq(AXI_ID),
            aw.payload.user.eq(OPERANDS["c"]),
            # the burst's W beats may go as soon as its AW is valid, before the slave takes it
            # (AXI4 forbids a master to wait for AWREADY before WVALID)
            bursts_rec.w_en.eq(aw.valid & ~recorded),
            bursts_rec.w_data.eq(Cat(runs.beats[:9], runs.lane, last_burst, kind, cmd.bank)),
        ]
        sent = aw.valid & aw.ready
        with m.If(sent):
            m.d.sync += recorded.eq(0)
        with m.Elif(aw.valid):
            m.d.sync += recorded.eq(1)
        m.d.sync += ahead.eq(
            ahead + Mux(prod.in_flight, prod.per_word, 0) - Mux(sent, runs.beats, 0)
        )
        with m.If(sent):
            runs.step(m, cmd)
            with m.If(last_burst):
                m.d.sync += requesting.eq(0)
        return _Requests(runs, ahead, bursts_rec, outstanding, sent)

    def _data(self, m: Module, words, bursts) -> None:
        """The W channel: each recorded burst's beats from the FIFO, narrow beats on their byte
        lanes, ``WLAST`` at the burst's end; ``stored`` at a store's last beat."""
        cfg = self._config
        bus = cfg.bus_width // 8
        lane_bits = max(1, int(math.log2(bus)))
        widest = max(c for c, _ in self._kinds.values())
        head = Signal(
            data.StructLayout({"beats": 9, "lane": 8, "last": 1, "kind": 1, "bank": 1}),
            name="wr_head",
        )
        m.d.comb += head.eq(bursts.r_data)
        beat = Signal(9, name="wr_beat")
        sub = Signal(8, name="wr_sub")
        lane = Signal(lane_bits, name="wr_lane")
        w = self.mem.w
        w_per_word = Signal(unsigned(16))
        w_log = Signal(range(8))
        w_mask = Signal(bus, name="wr_beat_mask")  # the byte lanes of a narrow beat at lane 0
        with m.Switch(head.kind):
            for k, (cont, bt) in self._kinds.items():
                with m.Case(k):
                    m.d.comb += [w_per_word.eq(cont // bt), w_log.eq(int(math.log2(bt))),
                                 w_mask.eq((1 << bt) - 1)]  # fmt: skip
        this_lane = Mux(~beat.any(), head.lane[:lane_bits], lane)
        word = words.r_data
        wide = Signal(cfg.bus_width, name="wr_piece")
        beats_of_widest = max(1, widest // bus)
        with m.Switch(sub):
            for i in range(beats_of_widest):
                with m.Case(i) if i < beats_of_widest - 1 else m.Default():
                    m.d.comb += wide.eq(word[i * cfg.bus_width : (i + 1) * cfg.bus_width])
        narrow_strb = Signal(bus, name="wr_strb")
        m.d.comb += narrow_strb.eq(w_mask << this_lane)
        m.d.comb += [
            w.valid.eq(bursts.r_rdy & words.r_rdy),
            w.payload.data.eq(Mux(w_per_word == 1, word << (this_lane * 8), wide)),
            w.payload.strb.eq(Mux(w_per_word == 1, narrow_strb, (1 << bus) - 1)),
            w.payload.last.eq(beat + 1 == head.beats),
        ]
        took = w.valid & w.ready
        last_beat = beat + 1 == head.beats
        word_done = took & (sub + 1 == w_per_word)
        m.d.comb += [words.r_en.eq(word_done), bursts.r_en.eq(took & last_beat)]
        with m.If(took):
            m.d.sync += [beat.eq(Mux(last_beat, 0, beat + 1)),
                         sub.eq(Mux(sub + 1 == w_per_word, 0, sub + 1)),
                         lane.eq((this_lane + (Const(1, 8) << w_log))[:lane_bits])]  # fmt: skip
        # the bank travels with the burst: the next store may start before this one's last beat
        m.d.comb += [self.stored.valid.eq(took & last_beat & head.last),
                     self.stored.payload.bank.eq(head.bank)]  # fmt: skip

    def _responses(self, m: Module, producing, requesting, req: _Requests) -> None:
        """The B channel: responses counted in ``outstanding``; idle once all is sent and
        acknowledged."""
        b = self.mem.b
        m.d.comb += b.ready.eq(1)
        m.d.sync += req.outstanding.eq(req.outstanding + req.sent - (b.valid & b.ready))
        m.d.comb += [
            self.unanswered.eq(req.outstanding.any() | self.mem.aw.valid),
            self.idle.eq(~producing & ~requesting & ~req.bursts.r_rdy & ~req.outstanding.any()),
        ]
