"""The accelerator as a device: it takes GEMM descriptors, fetches its operands from DRAM over
AXI4, computes chunk by chunk on ping-pong banks, and stores C (docs/memory.md).

Three walkers of the chunk nest (rtl/sequencer.py) drive three engines that overlap: the read
engine loads the next chunk's operands while the array computes the current one and the write
engine stores the previous one's C. Each bank has a state that hands it from one engine to the
next; nothing else synchronizes them.
"""

from __future__ import annotations

from typing import NamedTuple

from amaranth import Cat, Const, DomainRenamer, Module, Mux, Signal, Value
from amaranth.lib import data, fifo, wiring
from amaranth.lib.wiring import In, Out
from systolic.contract.axi import ADDR_BITS, OPERANDS, channel_fields, master_signals
from systolic.contract.config import ArrayConfig
from systolic.contract.dma import (
    LOOP_ORDERS,
    Q_ENTRY_BYTES,
    Q_ENTRY_FIELDS,
    SPLIT_OPERAND,
    Refusal,
    beat_bytes,
    containers,
    word_layout,
)
from systolic.contract.interface import COUNTERS, DEVICE_COUNTERS, DIM_BITS
from systolic.contract.plan import granularity
from systolic.contract.registers import lite_signals
from systolic.contract.timing import CHECK_CYCLES, CHECK_PRODUCT_BITS
from systolic.contract.vector import VECTOR_OPS

from .arith import divide, equals, remainder
from .banks import BankedAccumulator, BankedInput
from .buffers import InputBuffer
from .clock_gate import gate_domains
from .control import ControlRegisters, descriptor_layout, device_counters_layout
from .core import command_counters, compute_core, count_up, offset, read_gates, word_layouts
from .dma import ReadEngine, WriteEngine
from .expander import Expander
from .fp import arithmetic
from .requant import output_path_layout, q_word_layout
from .sequencer import ChunkWalker
from .vector import VectorUnit

__all__ = ["Device", "descriptor_layout", "device_counters_layout"]

# bank states
FREE, LOADING, FULL, LOADED, COMPUTE, STORING = range(6)
_STATE = range(6)


class _Geometry:
    """Per buffer kind: the tile rows and words per tile row of a matrix, and where a chunk
    starts in its DRAM region (combinational, on the walker's outputs)."""

    def __init__(self, config: ArrayConfig):
        self.config = config

    def shape(self, kind, m, k, n):
        return {"a": (m, k), "b": (k, n), "c": (m, n), "p": (m, n)}[kind]

    def tiles_lines(self, kind, rows, cols):
        word = word_layout(self.config, kind)
        if word.rowwise:
            return divide(cols + word.tile - 1, word.tile, DIM_BITS + 1), rows
        return divide(rows + word.tile - 1, word.tile, DIM_BITS + 1), cols

    def tile_dim(self, kind) -> str:
        """The dimension (of m, k, n) along which a matrix's tile rows follow each other."""
        rows, cols = self.shape(kind, "m", "k", "n")
        return cols if word_layout(self.config, kind).rowwise else rows

    def origin(self, kind, r0, c0):
        """``(t0, i0)``: the first tile row and line of a chunk starting at ``(r0, c0)``;
        chunk origins along a word are multiples of the tile (contract.plan.granularity)."""
        word = word_layout(self.config, kind)
        if word.rowwise:
            return divide(c0, word.tile, DIM_BITS), r0
        return divide(r0, word.tile, DIM_BITS), c0


# descriptor slot states
EMPTY, CHECKING, WAITING, RUNNING, REFUSED = range(5)


class _Slot:
    """One descriptor the device holds (contract.timing.DESCRIPTOR_SLOTS): its fields, state,
    refusal, the walkers' steps, and where its C and partial sums end in DRAM (for the next
    descriptor's dependency on it)."""

    def __init__(self, layout, i: int):
        self.desc = Signal(layout, name=f"slot{i}_desc")
        self.state = Signal(range(5), name=f"slot{i}_state")
        self.error = Signal(4, name=f"slot{i}_error")
        self.steps = {k: Signal(ADDR_BITS, name=f"slot{i}_step_{k}") for k in "abcp"}
        self.end = {k: Signal(ADDR_BITS + 1, name=f"slot{i}_end_{k}") for k in "cp"}
        self.spills = Signal(name=f"slot{i}_spills")
        self.b_first = Signal(name=f"slot{i}_b_first")  # its jobs load B before A
        # its jobs that load A and B split one's load around the other (contract.dma.split_first)
        self.split = Signal(name=f"slot{i}_split")
        self.depends = Signal(name=f"slot{i}_depends")  # reads what the slot before writes
        # the compute and write sides have taken it (the other slot may hold an older one)
        self.took = {w: Signal(name=f"slot{i}_{w}_took") for w in ("cp", "wr")}
        # a convolution's chunks: output rows and images an M chunk, slices a K chunk
        self.conv = {n: Signal(DIM_BITS, name=f"slot{i}_conv_{n}")
                     for n in ("rows", "images_per_chunk", "slices_per_chunk")}  # fmt: skip


class _Run:
    """The control registers, the descriptor slots and the pointers that walk them in order:
    ``fill`` (the next to take a descriptor from the queue), ``head`` (the oldest, next to
    complete) and, per walker (read, compute, write), the slot it works on; each walker's
    descriptor view (``views``) follows its pointer, and ``next_views`` shows the next slot's
    (the one its restart begins)."""

    def __init__(self, ctl, layout):
        self.ctl = ctl
        self.slots = [_Slot(layout, i) for i in range(2)]
        self.ptr = {p: Signal(name=f"{p}_slot", init=init)
                    for p, init in (("fill", 0), ("head", 0), ("chk", 0), ("rd", 1), ("cp", 1),
                                    ("wr", 1))}  # fmt: skip
        self.restart = {w: Signal(name=f"{w}_restart") for w in ("rd", "cp", "wr")}
        self.views = {v: Signal(layout, name=f"{v}_desc") for v in ("chk", "rd", "cp", "wr",
                                                                     "head")}  # fmt: skip
        self.next_views = {v: Signal(layout, name=f"{v}_next_desc") for v in ("rd", "cp", "wr")}
        self.checking = Signal(name="checking")
        self.error = Signal(4, name="error")  # the last completed descriptor's refusal
        # the checker's results (set by Device._check)
        self.checked = self.refusal = self.depends = self.steps = self.ends = self.spills = None
        self.b_first = self.split = None
        self.conv = None  # a convolution's check (with a staging buffer)
        self.queued = None  # the queue holds a descriptor

    def slot_field(self, ptr, get):
        """``get(slot)`` of the slot ``ptr`` names."""
        a, b = (Value.cast(get(s)) for s in self.slots)
        return Mux(ptr, b, a)

    def state(self, ptr):
        return self.slot_field(ptr, lambda s: s.state)


class _Engines(NamedTuple):
    a_buf: object
    b_buf: object
    c_buf: object
    rd: object
    wr: object
    vec: object  # the vector unit, or None
    exp: object  # the convolution expander, or None


class _ConvCheck(NamedTuple):
    """A convolution descriptor's check: its refusal, its input's slices and pixels (A's tile
    rows and lines in DRAM) and its chunks' shape (stored in its slot)."""

    refused: object
    slices: object
    pixels: object
    chunks: dict


class _Banks:
    """The state of each A, B and C bank (FREE ... STORING), and whether the requantization
    table is in."""

    def __init__(self):
        self.a = [Signal(_STATE, name=f"a_bank{b}_state") for b in (0, 1)]
        self.b = [Signal(_STATE, name=f"b_bank{b}_state") for b in (0, 1)]
        self.c = [Signal(_STATE, name=f"c_bank{b}_state") for b in (0, 1)]
        self.q_loaded = Signal(name="q_loaded")
        # per A and B bank: the words its load has written so far (in address order)
        self.landed = {k: [Signal(ADDR_BITS + 1, name=f"{k}_bank{b}_landed") for b in (0, 1)]
                       for k in "ab"}  # fmt: skip


class _ReadSide(NamedTuple):
    done_mask: Signal
    q_pending: Signal
    dma_wait: object


class _ComputeSide(NamedTuple):
    array_wait: object
    finished: object
    per_command: object


def _state_of(states, bank):
    return Mux(bank, states[1], states[0])


def _set_state(m: Module, states, bank, value) -> None:
    for b, s in enumerate(states):
        with m.If(bank == b):
            m.d.sync += s.eq(value)


def _shift_add(m: Module, name: str, x0, y, steps, cap=None):
    """``x0 * y`` (``x0`` of :data:`contract.timing.CHECK_PRODUCT_BITS` bits), its most
    significant bit first: ``steps = (load, shifting)``, final the cycle after the last
    shifting one. With ``cap``, exact below ``2**cap`` and at least that above it (a sticky bit
    past ``cap`` bits: the partial sums only grow), all that a comparison with a smaller bound
    needs."""
    bits = CHECK_PRODUCT_BITS
    load, shifting = steps
    x = Signal(bits, name=f"{name}_x")
    width = bits + len(y) if cap is None else min(cap, bits + len(y))
    acc = Signal(width, name=name)
    over = Signal(name=f"{name}_over")
    total = (acc << 1) + Mux(x[-1], y, 0)
    with m.If(load):
        m.d.sync += [x.eq(x0), acc.eq(0), over.eq(0)]
    with m.Elif(shifting):
        m.d.sync += [x.eq(x << 1), acc.eq(total[:width])]
        if width < bits + len(y):
            m.d.sync += over.eq(over | total[width:].any())
    return acc if width == bits + len(y) else Cat(acc, over)


class Device(wiring.Component):
    """A GEMM device on DRAM, with the ports an SoC connects.

    Ports
    -----
    s_axil_awaddr ... s_axil_rready : AXI4-Lite slave, 32-bit data
        The control registers (:mod:`contract.registers`): a CPU writes a GEMM
        (:class:`contract.dma.Descriptor`) into ``DESC_*`` and rings ``DOORBELL``; descriptors
        queue (``queue_depth`` deep) while another runs; ``STATUS``, ``IRQ_*`` and
        ``COUNTER_*`` report back.
    m_axi_arvalid ... m_axi_bid : AXI4 master, ``bus_width`` bits
        To DRAM (:func:`contract.axi.master_signals`).
    irq : out
        The interrupt, high while an enabled ``IRQ_PENDING`` bit is set.
    busy, done : out
        Optional status pins: ``busy`` while a descriptor is checked or run, ``done`` for one
        cycle at its end.

    Clock ``clk``; reset ``rst``, active high, synchronous. With ``clock_gate`` (the default)
    every register but the control plane's and the queue's runs on a copy of the clock that
    stops while the device idles (rtl.clock_gate).
    """

    def __init__(self, config: ArrayConfig, *, clock_gate: bool = True):
        if not isinstance(config, ArrayConfig):
            raise TypeError(f"config must be an ArrayConfig, not {config!r}")
        self._config = config
        self._gated = clock_gate
        # gated, the clock and reset are ports of their own (rtl.clock_gate); otherwise the
        # default domain's
        members = {"clk": In(1), "rst": In(1)} if clock_gate else {}
        for name, direction, bits in lite_signals():
            members[f"s_axil_{name}"] = In(bits) if direction == "in" else Out(bits)
        for name, direction, bits in master_signals(config.bus_width):
            members[f"m_axi_{name}"] = Out(bits) if direction == "out" else In(bits)
        members |= {"irq": Out(1), "busy": Out(1), "done": Out(1)}
        super().__init__(members)

    @property
    def config(self) -> ArrayConfig:
        return self._config

    def elaborate(self, platform):
        m = Module()
        geo = _Geometry(self._config)
        run = self._descriptors(m, geo)
        if self._gated:  # idle: no descriptor queued, checked or held, reset released
            gate_domains(m, self.clk, self.rst, self.busy | run.queued)
        eng = self._engines(m, run)
        walkers = self._walkers(m, geo, run)
        banks = _Banks()
        rd_side = self._read_side(m, geo, run, walkers["rd"], eng, banks)
        cp_side = self._compute(m, run, walkers["cp"], eng, banks)
        self._stores(m, geo, run, walkers["wr"], eng, banks)
        self._sequence(m, run, walkers, eng, banks, rd_side)
        self._counters(m, run, eng, rd_side, cp_side)
        return m

    def _descriptors(self, m: Module, geo: _Geometry) -> _Run:
        """The control registers, the descriptor queue, the slots a descriptor moves into from
        it (one at a time, in turn) and the check of each."""
        cfg = self._config
        layout = descriptor_layout(cfg)
        ctl = ControlRegisters(cfg)
        always_on = DomainRenamer("aon") if self._gated else (lambda e: e)
        m.submodules.control = always_on(ctl)
        for name, direction, _ in lite_signals():
            port, inner = getattr(self, f"s_axil_{name}"), getattr(ctl, name)
            m.d.comb += inner.eq(port) if direction == "in" else port.eq(inner)
        m.d.comb += self.irq.eq(ctl.irq)
        queue = fifo.SyncFIFO(width=layout.size, depth=cfg.queue_depth)
        m.submodules.queue = always_on(queue)
        m.d.comb += [queue.w_data.eq(ctl.desc.payload), queue.w_en.eq(ctl.desc.valid),
                     ctl.desc.ready.eq(queue.w_rdy)]  # fmt: skip
        run = _Run(ctl, layout)
        run.queued = queue.r_rdy
        ptr, slots = run.ptr, run.slots
        for view, name in ((run.views["chk"], "chk"), (run.views["head"], "head")):
            m.d.comb += view.eq(run.slot_field(ptr[name], lambda s: s.desc))
        for w in ("rd", "cp", "wr"):  # a walker's descriptor, and the next (its restart's)
            m.d.comb += run.views[w].eq(run.slot_field(ptr[w], lambda s: s.desc))
            m.d.comb += run.next_views[w].eq(run.slot_field(~ptr[w], lambda s: s.desc))
        m.d.comb += self.busy.eq(run.checking | Cat(s.state.any() for s in slots).any())
        m.d.comb += queue.r_en.eq(~run.checking & queue.r_rdy
                                  & ~run.state(ptr["fill"]).any())  # fmt: skip
        with m.If(queue.r_en):
            m.d.sync += [run.checking.eq(1), ptr["chk"].eq(ptr["fill"]),
                         ptr["fill"].eq(~ptr["fill"])]  # fmt: skip
            for i, slot in enumerate(slots):
                with m.If(ptr["fill"] == i):
                    m.d.sync += [slot.desc.eq(queue.r_data), slot.state.eq(CHECKING),
                                 slot.took["cp"].eq(0), slot.took["wr"].eq(0)]  # fmt: skip
        self._check(m, run, geo)
        with m.If(run.checked):
            m.d.sync += run.checking.eq(0)
            for i, slot in enumerate(slots):
                with m.If(ptr["chk"] == i):
                    verdict = Mux(run.refusal.any(), REFUSED, WAITING)
                    m.d.sync += [slot.error.eq(run.refusal), slot.depends.eq(run.depends),
                                 slot.state.eq(verdict)]  # fmt: skip
                    m.d.sync += [slot.steps[k].eq(run.steps[k]) for k in "abcp"]
                    m.d.sync += [slot.b_first.eq(run.b_first), slot.split.eq(run.split)]
                    m.d.sync += [slot.end[k].eq(run.ends[k]) for k in "cp"]
                    m.d.sync += slot.spills.eq(run.spills)
                    if run.conv is not None:
                        m.d.sync += [slot.conv[n].eq(v) for n, v in run.conv.chunks.items()]
        return run

    def _engines(self, m: Module, run: _Run) -> _Engines:
        """The A, B and C banks (and the requantization table), the read and write engines on
        the AXI4 ports, and the wiring between them."""
        cfg, d = self._config, run.views["wr"]
        words = word_layouts(cfg)
        m.submodules.a_buffer = a_buf = BankedInput(word=words["a"], depth=cfg.a_depth)
        m.submodules.b_buffer = b_buf = BankedInput(word=words["b"], depth=cfg.b_depth)
        m.submodules.c_buffer = c_buf = BankedAccumulator(
            word=words["c"], depth=cfg.c_depth, arithmetic=arithmetic(cfg)
        )
        m.submodules.reader = rd = ReadEngine(cfg)
        m.submodules.writer = wr = WriteEngine(cfg, words["c"], q_word_layout(cfg))
        vec = None
        if cfg.vector:  # a vector descriptor runs alone, as the oldest: it has the port
            m.submodules.vector = vec = VectorUnit(cfg)
            head = run.views["head"]
            m.d.comb += vec.desc.eq(head)
            # from the moment it is the oldest (checked or not): every GEMM before it has
            # completed, its reads consumed and its writes answered, so the engines are idle
            vector_port = head.vector & run.state(run.ptr["head"]).any()
        for engine, channels in ((rd, ("ar", "r")), (wr, ("aw", "w", "b"))):
            for channel in channels:
                shared = None if vec is None else (getattr(vec.mem, channel), vector_port)
                self._port(m, channel, getattr(engine.mem, channel), shared)
        exp = None
        if cfg.stage_depth:  # a convolution's A loads stage, then expand into the A bank
            m.submodules.expander = exp = Expander(cfg)
        for k, buf in (("a", a_buf), ("b", b_buf), ("c", c_buf)):
            fill = getattr(rd, f"fill_{k}")
            if k == "a" and exp is not None:
                self._fill_a(m, fill, buf, exp)
                continue
            m.d.comb += [buf.fill.valid.eq(fill.valid), buf.fill.payload.bank.eq(fill.payload.bank),
                         buf.fill.payload.addr.eq(fill.payload.addr),
                         buf.fill.payload.data.eq(fill.payload.data)]  # fmt: skip
        if cfg.requant:
            m.submodules.q_buffer = q_buf = InputBuffer(word=q_word_layout(cfg), depth=cfg.q_depth)
            qf = rd.fill_q
            m.d.comb += [
                q_buf.write.valid.eq(qf.valid),
                q_buf.write.payload.addr.eq(qf.payload.addr),
            ]
            bits = 8 * Q_ENTRY_BYTES
            for j in range(cfg.cols):  # a DRAM entry (contract.dma.Q_ENTRY_FIELDS)
                entry = qf.payload.data[bits * j : bits * (j + 1)]
                dest = q_buf.write.payload.data[j]
                for name in ("multiplier", "shift", "bias"):
                    at = Q_ENTRY_FIELDS[name]
                    m.d.comb += getattr(dest, name).eq(entry[at : at + len(getattr(dest, name))])
            m.d.comb += [q_buf.read_addr.eq(wr.q_addr), q_buf.read_en.eq(wr.q_en),
                         wr.q_data.eq(q_buf.read_data)]  # fmt: skip
            for name in output_path_layout(cfg).members:
                m.d.comb += getattr(wr.path, name).eq(getattr(d, name))
        m.d.comb += [
            c_buf.drain_bank.eq(wr.drain_bank),
            c_buf.drain_addr.eq(wr.drain_addr),
            c_buf.drain_en.eq(wr.drain_en),
            wr.drain_data.eq(c_buf.drain_data),
        ]
        return _Engines(a_buf, b_buf, c_buf, rd, wr, vec, exp)

    @staticmethod
    def _fill_a(m: Module, fill, buf, exp) -> None:
        """The A bank's one write port: the read engine's words, or the expander's; a staging
        load's words go to the staging buffer."""
        staging = fill.payload.stage  # the load's own bit: a plain A load may still arrive
        m.d.comb += [exp.fill.valid.eq(fill.valid & staging),
                     exp.fill.payload.addr.eq(fill.payload.addr),
                     exp.fill.payload.data.eq(fill.payload.data)]  # fmt: skip
        ours = exp.write.valid
        m.d.comb += [
            buf.fill.valid.eq((fill.valid & ~staging) | ours),
            buf.fill.payload.bank.eq(Mux(ours, exp.write.payload.bank, fill.payload.bank)),
            buf.fill.payload.addr.eq(Mux(ours, exp.write.payload.addr, fill.payload.addr)),
            buf.fill.payload.data.eq(Mux(ours, exp.write.payload.data, fill.payload.data)),
        ]

    def _walkers(self, m: Module, geo: _Geometry, run: _Run) -> dict:
        """One walker of the chunk nest per side (read, compute, write), each on its own slot's
        descriptor and restarted on the next by ``run.restart`` (:meth:`_sequence`)."""
        walkers = {}
        tracked = {"rd": "abcp", "cp": "", "wr": "cp"}  # DRAM offsets each walker keeps
        for side in ("rd", "cp", "wr"):
            m.submodules[f"walk_{side}"] = w = ChunkWalker(
                {k: geo.tile_dim(k) for k in tracked[side]}
            )
            walkers[side] = w
            for k in tracked[side]:  # used from the cycle after a restart on
                m.d.comb += getattr(w, f"step_{k}").eq(run.slot_field(run.ptr[side], lambda s, k=k:
                                                                      s.steps[k]))  # fmt: skip
            for f in ("m", "k", "n", "mc", "kc", "nc", "order", "accumulate"):
                m.d.comb += [
                    getattr(w.nest, f).eq(getattr(run.views[side], f)),
                    getattr(w.next_nest, f).eq(getattr(run.next_views[side], f)),
                ]
            m.d.comb += w.restart.eq(run.restart[side])
        return walkers

    def _read_side(self, m: Module, geo: _Geometry, run: _Run, w, eng: _Engines,
                   banks: _Banks) -> _ReadSide:  # fmt: skip
        """A job's loads, A then B then C, each once its bank is free; the table first, when the
        descriptor requantizes, as soon as the write side has finished the descriptor before
        (whose final stores read the table's buffer)."""
        cfg, d, rd, wr = self._config, run.views["rd"], eng.rd, eng.wr
        cont = containers(cfg)
        a_state, b_state, c_state = banks.a, banks.b, banks.c
        # loads of the current job already issued (A, B, C), and the split operand's first part
        done_mask = Signal(4, name="rd_done")
        q_pending = Signal(name="q_pending")
        need = Cat(w.load_a, w.load_b, w.c_in.any()) & ~done_mask[:3]
        kind = Signal(2, name="rd_kind")  # 0 A, 1 B, 2 C
        b_first = run.slot_field(run.ptr["rd"], lambda s: s.b_first)
        # a job loading A and B whose descriptor splits: the split operand's first tile row,
        # the other operand, the rest of the first (contract.dma.split_first)
        y = 0 if SPLIT_OPERAND[cfg.dataflow] == "a" else 1
        split = run.slot_field(run.ptr["rd"], lambda s: s.split) & w.load_a & w.load_b
        head = split & ~done_mask[3]  # the first part is next
        rest = split & done_mask[3]  # (the first part is out)
        whole = Mux(need[1] & b_first, 1, Mux(need[0], 0, Mux(need[1], 1, 2)))
        parts = Mux(head, y, Mux(need[1 - y], 1 - y, Mux(need[y], y, 2)))
        m.d.comb += kind.eq(Mux(split, parts, whole))
        any_need = need.any()
        bank = Mux(~kind.any(), w.bank_a, Mux(kind == 1, w.bank_b, w.bank_c))
        y_rest = rest & equals(kind, y)  # the split operand's second part: its bank is loading
        # partial sums come back only once every write is acknowledged and no AW waits (AXI
        # orders nothing between a write and a later read of the same address, and a slave
        # may take a read before a write whose W beats went ahead of its AW)
        c_free = ~_state_of(c_state, w.bank_c).any() & (~wr.unanswered | (w.c_in != 2))
        a_free = ~_state_of(a_state, w.bank_a).any()
        exp = eng.exp
        if exp is not None:  # the A bank's write port is the expander's while it works
            a_free &= exp.idle
        b_free = ~_state_of(b_state, w.bank_b).any()
        free = y_rest | Mux(~kind.any(), a_free, Mux(kind == 1, b_free, c_free))
        cmd = rd.cmd
        addr = {}
        for k in "abcp":
            _, i0 = geo.origin(k, *geo.shape(k, w.m0, w.k0, w.n0))
            addr[k] = Signal(ADDR_BITS, name=f"rd_addr_{k}")
            size = cont["p"] if k == "c" else cont[k]  # C comes in at accumulator width
            m.d.comb += addr[k].eq(getattr(d, f"{k}_addr") + getattr(w, f"offset_{k}") + i0 * size)
        lens = {}
        for k in "abc":
            rows, cols = geo.shape(k, w.mlen, w.klen, w.nlen)
            lens[k] = geo.tiles_lines("p" if k == "c" else k, rows, cols)
        c_from_p = w.c_in == 2
        q_now = q_pending & (run.ptr["wr"] == run.ptr["rd"]) & wr.cmd.ready
        conv_a = Const(0)
        if exp is not None:
            conv_a = ~q_now & w.valid & any_need & ~kind.any() & d.conv
            self._expander_load(m, run, w, exp, d, conv_a, a_free)
            free = Mux(conv_a, exp.setting | a_free, free)  # a setup of its own is no wait
            m.d.comb += exp.accepted.eq(conv_a & cmd.valid & cmd.ready)
        with m.If(q_now):
            nq = divide(d.n + cfg.cols - 1, cfg.cols, DIM_BITS + 1)
            m.d.comb += [cmd.valid.eq(1), cmd.payload.kind.eq(OPERANDS["q"]),
                         cmd.payload.bank.eq(0), cmd.payload.addr.eq(d.q_addr),
                         cmd.payload.stride.eq(0),
                         cmd.payload.tiles.eq(1), cmd.payload.lines.eq(nq)]  # fmt: skip
            with m.If(cmd.ready):
                m.d.sync += q_pending.eq(0)
        if exp is not None:  # (a Python if: the Elif chain goes on past it)
            with m.Elif(conv_a):
                m.d.comb += [cmd.valid.eq(exp.cmd_valid), cmd.payload.kind.eq(OPERANDS["a"]),
                             cmd.payload.stage.eq(1),
                             cmd.payload.bank.eq(w.bank_a), cmd.payload.addr.eq(exp.cmd_addr),
                             cmd.payload.stride.eq(exp.cmd_stride),
                             cmd.payload.tiles.eq(exp.cmd_tiles),
                             cmd.payload.lines.eq(exp.cmd_lines)]  # fmt: skip
                with m.If(cmd.valid & cmd.ready):
                    m.d.sync += done_mask.eq(done_mask | 1)
                    _set_state(m, a_state, w.bank_a, LOADING)
                    _set_state(m, banks.landed["a"], w.bank_a, 0)
        with m.Elif(w.valid & any_need):
            m.d.comb += [cmd.valid.eq(free), cmd.payload.bank.eq(bank)]
            # the split operand's rest starts a tile row on: taken as its first part goes, so
            # that no second adder stands in front of the read engine
            rest_addr = Signal(ADDR_BITS, name="rd_rest_addr")
            self._load_command(m, cmd.payload, d, kind, lens, addr, c_from_p,
                               (y, head, y_rest, rest_addr))  # fmt: skip
            y_tiles = lens["ab"[y]][0]
            with m.If(cmd.valid & cmd.ready):
                with m.If(head):  # the whole load, if its first tile row is all of it
                    m.d.sync += done_mask.eq(done_mask | 8 | Mux(y_tiles > 1, 0, 1 << y))
                    m.d.sync += rest_addr.eq(addr["ab"[y]] + getattr(d, f"{'ab'[y]}_stride"))
                with m.Else():
                    m.d.sync += done_mask.eq(done_mask | (1 << kind))
                with m.If(equals(kind, 0) & ~y_rest):  # (the rest: loading since the first)
                    _set_state(m, a_state, w.bank_a, LOADING)
                    _set_state(m, banks.landed["a"], w.bank_a, 0)
                with m.Elif((kind == 1) & ~y_rest):
                    _set_state(m, b_state, w.bank_b, LOADING)
                    _set_state(m, banks.landed["b"], w.bank_b, 0)
                with m.Elif(kind == 2):
                    _set_state(m, c_state, w.bank_c, LOADING)
        dma_wait = ~q_now & w.valid & any_need & ~free
        m.d.comb += w.advance.eq(~q_now & w.valid & ~any_need)
        with m.If(w.advance):
            m.d.sync += done_mask.eq(0)
        loaded = rd.loaded
        staged = Const(0)
        if exp is not None:
            staged = loaded.payload.stage
            m.d.comb += exp.staged.eq(loaded.valid & equals(loaded.payload.kind, OPERANDS["a"])
                                      & staged)  # fmt: skip
            with m.If(exp.expanded):
                _set_state(m, a_state, exp.write.payload.bank, FULL)
        with m.If(loaded.valid):
            got = loaded.payload.kind
            with m.If(equals(got, OPERANDS["a"])), m.If(~staged):
                _set_state(m, a_state, loaded.payload.bank, FULL)
            with m.Elif(got == OPERANDS["b"]):
                _set_state(m, b_state, loaded.payload.bank, FULL)
            with m.Elif(got == OPERANDS["c"]):
                _set_state(m, c_state, loaded.payload.bank, LOADED)
            with m.Else():
                m.d.sync += banks.q_loaded.eq(1)
        return _ReadSide(done_mask, q_pending, dma_wait)

    @staticmethod
    def _load_command(m: Module, cmd, d, kind, lens: dict, addr: dict, c_from_p, parts) -> None:
        """The read command of the job's next plain load, of ``kind`` (0 A, 1 B, 2 C or partial
        sums); ``parts``: the split operand's code, and whether its first part or its rest is
        next (contract.dma.split_first), and where the rest starts."""
        y, head, y_rest, rest_addr = parts
        with m.Switch(kind):
            for code, k in enumerate("abc"):
                with m.Case(code) if k != "c" else m.Default():
                    tiles, lines = lens[k]
                    region = addr[k] if k != "c" else Mux(c_from_p, addr["p"], addr["c"])
                    stride = getattr(d, f"{k}_stride") if k != "c" else Mux(
                        c_from_p, d.p_stride, d.c_stride)  # fmt: skip
                    m.d.comb += [cmd.kind.eq(OPERANDS[k]), cmd.addr.eq(region),
                                 cmd.stride.eq(stride), cmd.tiles.eq(tiles),
                                 cmd.lines.eq(lines)]  # fmt: skip
                    if k == "ab"[y]:  # its parts: the first tile row, then the others
                        with m.If(head):
                            m.d.comb += [cmd.tiles.eq(1), cmd.more.eq(tiles > 1)]
                        with m.Elif(y_rest):
                            m.d.comb += [cmd.addr.eq(rest_addr), cmd.tiles.eq(tiles - 1)]

    def _expander_load(self, m: Module, run: _Run, w, exp, d, conv_a, a_free) -> None:
        """A convolution's A load goes through the expander: it takes the load once the bank
        is free and it is done with the one before, and offers the staging command after its
        setup."""
        m.d.comb += exp.start.eq(conv_a & a_free)
        for name in ("images", "height", "width", "channels", "out_height", "out_width", "kh",
                     "kw", "sh", "sw", "dh", "dw", "top", "left"):  # fmt: skip
            m.d.comb += getattr(exp.geo, name).eq(getattr(d, f"conv_{name}"))
        m.d.comb += [exp.geo.a_addr.eq(d.a_addr), exp.geo.a_stride.eq(d.a_stride)]
        if self._config.zero_points:
            m.d.comb += exp.geo.a_zero.eq(d.a_zero)
        for name in ("rows", "images_per_chunk", "slices_per_chunk"):
            m.d.comb += getattr(exp.geo, name).eq(
                run.slot_field(run.ptr["rd"], lambda s, name=name: s.conv[name])
            )
        m.d.comb += [exp.chunk.m0.eq(w.m0), exp.chunk.mlen.eq(w.mlen), exp.chunk.k0.eq(w.k0),
                     exp.chunk.klen.eq(w.klen), exp.chunk.bank.eq(w.bank_a)]  # fmt: skip

    def _compute(self, m: Module, run: _Run, w, eng: _Engines, banks: _Banks) -> _ComputeSide:
        """A chunk runs once its operands are in and its C bank is its own."""
        cfg, d = self._config, run.views["cp"]
        a_buf, b_buf, c_buf = eng.a_buf, eng.b_buf, eng.c_buf
        a_state, b_state, c_state = banks.a, banks.b, banks.c
        cmd_view = Signal(data.StructLayout({"m": DIM_BITS, "k": DIM_BITS, "n": DIM_BITS,
                                             "a_base": 1, "b_base": 1, "c_base": 1}))  # fmt: skip
        m.d.comb += [cmd_view.m.eq(w.mlen), cmd_view.k.eq(w.klen), cmd_view.n.eq(w.nlen)]
        a_data, b_data = a_buf.read_data, b_buf.read_data
        if cfg.zero_points:
            a_data = offset(m, a_data, d.a_zero, "a_offset")
            b_data = offset(m, b_data, d.b_zero, "b_offset")
        depths = {"a": cfg.a_depth, "b": cfg.b_depth, "c": cfg.c_depth}
        ctrl, _, reads, streamed, preloaded = compute_core(m, cfg, a_data, b_data, cmd_view, depths)
        for buf, read, bank in ((a_buf, reads["a"], w.bank_a), (b_buf, reads["b"], w.bank_b)):
            m.d.comb += [buf.read_addr.eq(read.payload), buf.read_en.eq(read.valid),
                         buf.read_bank.eq(bank)]  # fmt: skip
        upd = ctrl.update
        m.d.comb += [c_buf.update.valid.eq(upd.valid), c_buf.update.payload.bank.eq(w.bank_c),
                     c_buf.update.payload.addr.eq(upd.payload.addr),
                     c_buf.update.payload.data.eq(upd.payload.data),
                     c_buf.update.payload.accumulate.eq(upd.payload.accumulate)]  # fmt: skip
        c_now = _state_of(c_state, w.bank_c)
        c_ready = Mux(w.c_in.any(), c_now == LOADED, Mux(w.new_c, ~c_now.any(), 1))
        # a chunk may start on banks still loading (not a convolution's A: the expander writes
        # it out of order); its controller reads a word once it has landed
        for k, buf in (("a", a_buf), ("b", b_buf)):
            with m.If(buf.fill.valid):
                _set_state(m, banks.landed[k], buf.fill.payload.bank, buf.fill.payload.addr + 1)
        a_now, b_now = _state_of(a_state, w.bank_a), _state_of(b_state, w.bank_b)
        gates = read_gates(cfg, ctrl)
        for k, now, bank in (("a", a_now, w.bank_a), ("b", b_now, w.bank_b)):
            is_open, landed = gates[k]
            m.d.comb += [is_open.eq(now != LOADING), landed.eq(_state_of(banks.landed[k], bank))]
        early_a = ~d.conv if cfg.stage_depth else Const(1)
        a_ok = (a_now == FULL) | ((a_now == LOADING) & early_a)
        ready = a_ok & ((b_now == FULL) | (b_now == LOADING)) & c_ready
        computing = Signal(name="computing")
        go = w.valid & ~computing & ready
        m.d.comb += [ctrl.start.eq(go), ctrl.accumulate.eq(w.k0.any() | w.c_in.any())]
        array_wait = w.valid & ~computing & ~ready
        with m.If(go):
            m.d.sync += computing.eq(1)
            _set_state(m, c_state, w.bank_c, COMPUTE)
        per_command = command_counters(m, ctrl, reads, streamed, preloaded, upd, go)
        finished = computing & ctrl.done
        m.d.comb += w.advance.eq(finished)
        with m.If(finished):
            m.d.sync += computing.eq(0)
            with m.If(w.store.any()):
                _set_state(m, c_state, w.bank_c, FULL)
            with m.If(w.last | w.next_load_a):
                _set_state(m, a_state, w.bank_a, FREE)
            with m.If(w.last | w.next_load_b):
                _set_state(m, b_state, w.bank_b, FREE)
        return _ComputeSide(array_wait, finished, per_command)

    def _stores(self, m: Module, geo: _Geometry, run: _Run, w, eng: _Engines,
                banks: _Banks) -> None:  # fmt: skip
        """A finished C bank goes to DRAM, and comes back free."""
        cfg, d, wr = self._config, run.views["wr"], eng.wr
        cont = containers(cfg)
        c_state = banks.c
        final = w.store == 1
        c_full = _state_of(c_state, w.bank_c) == FULL
        store_ok = c_full & (banks.q_loaded | ~final | (~d.requant if cfg.requant else 1))
        scmd = wr.cmd
        tiles, lines = geo.tiles_lines("p", *geo.shape("c", w.mlen, w.klen, w.nlen))
        addr_c = Signal(ADDR_BITS, name="wr_addr_c")
        addr_p = Signal(ADDR_BITS, name="wr_addr_p")
        c_size = Mux(d.requant, cont["c"], cont["p"]) if cfg.requant else cont["p"]
        for k, sig, size in (("c", addr_c, c_size), ("p", addr_p, cont["p"])):
            _, i0 = geo.origin(k, *geo.shape(k, w.m0, w.k0, w.n0))
            m.d.comb += sig.eq(getattr(d, f"{k}_addr") + getattr(w, f"offset_{k}") + i0 * size)
        m.d.comb += [
            scmd.valid.eq(w.valid & w.store.any() & store_ok),
            scmd.payload.final.eq(final),
            scmd.payload.requant.eq(final & d.requant if cfg.requant else 0),
            scmd.payload.bank.eq(w.bank_c),
            scmd.payload.addr.eq(Mux(final, addr_c, addr_p)),
            scmd.payload.stride.eq(Mux(final, d.c_stride, d.p_stride)),
            scmd.payload.tiles.eq(tiles),
            scmd.payload.lines.eq(lines),
            scmd.payload.n0.eq(w.n0),
        ]
        with m.If(scmd.valid & scmd.ready):
            _set_state(m, c_state, w.bank_c, STORING)
        m.d.comb += w.advance.eq((scmd.valid & scmd.ready) | (w.valid & ~w.store.any()))
        with m.If(wr.stored.valid):
            _set_state(m, c_state, wr.stored.payload.bank, FREE)

    def _sequence(self, m: Module, run: _Run, walkers: dict, eng: _Engines, banks: _Banks,
                  rd_side: _ReadSide) -> None:  # fmt: skip
        """Descriptors start, pass from walker to walker and complete, in order.

        A GEMM starts once checked and the read side has issued every load of the one before
        (unless it reads what that one writes: then once that one has completed); the compute
        and write sides follow it onto its slot when done with theirs, the write side only once
        the one before has completed (its last response in). A vector descriptor runs alone, as
        the oldest; a refused one completes in its turn. Completing, a descriptor shows its
        refusal and pulses ``done``."""
        cfg, ptr, slots = self._config, run.ptr, run.slots
        vec = eng.vec

        def vector(p):
            return run.slot_field(p, lambda s: s.desc.vector) if cfg.vector else Const(0)

        def checked_ok(p):  # the slot's check ends this cycle, without a refusal
            return run.checked & (ptr["chk"] == p) & ~run.refusal.any()

        head = ptr["head"]
        head_state = run.state(head)
        vector_running = (head_state == RUNNING) & vector(head)
        nxt = ~ptr["rd"]
        depends = Mux(checked_ok(nxt), run.depends, run.slot_field(nxt, lambda s: s.depends))
        ready = (run.state(nxt) == WAITING) | checked_ok(nxt)
        start = Signal(name="start")  # a GEMM starts on the read side
        m.d.comb += start.eq(ready & ~vector(nxt) & ~walkers["rd"].valid & ~rd_side.q_pending
                             & ~vector_running
                             & ~((run.state(ptr["rd"]) == RUNNING) & depends))  # fmt: skip
        m.d.comb += run.restart["rd"].eq(start)
        for side in ("cp", "wr"):
            after = ~ptr[side]
            took = run.slot_field(after, lambda s, side=side: s.took[side])
            taken = ((run.state(after) == RUNNING) & ~took) | (start & (nxt == after))
            follow = ~walkers[side].valid & taken
            if side == "wr":
                follow &= eng.wr.idle
            m.d.comb += run.restart[side].eq(follow)
            with m.If(follow):
                m.d.sync += ptr[side].eq(after)
                for i, slot in enumerate(slots):
                    with m.If(after == i):
                        m.d.sync += slot.took[side].eq(1)
        with m.If(run.restart["wr"]):
            m.d.sync += banks.q_loaded.eq(0)
        vector_start = Const(0)
        if vec is not None:
            vector_start = ((head_state == WAITING) | checked_ok(head)) & vector(head)
            m.d.comb += vec.start.eq(vector_start)
        with m.If(start):
            m.d.sync += ptr["rd"].eq(nxt)
            if cfg.requant:
                m.d.sync += rd_side.q_pending.eq(run.slot_field(nxt, lambda s: s.desc.requant))
        refused = (head_state == REFUSED) | (run.checked & (ptr["chk"] == head) & run.refusal.any())
        gemm_done = ((head_state == RUNNING) & ~vector(head) & (ptr["wr"] == head)
                     & ~walkers["wr"].valid & eng.wr.idle)  # fmt: skip
        complete = refused | gemm_done
        if vec is not None:
            complete |= vector_running & vec.idle
        with m.If(refused | vector_start):  # the walkers pass over the slot
            m.d.sync += [ptr[side].eq(head) for side in ("rd", "cp", "wr")]
        for i, slot in enumerate(slots):
            with m.If((start & (nxt == i)) | (vector_start & (head == i))):
                m.d.sync += slot.state.eq(RUNNING)
            with m.If(complete & (head == i)):
                m.d.sync += slot.state.eq(EMPTY)
        with m.If(complete):
            m.d.sync += [head.eq(~head),
                         run.error.eq(Mux(run.checked & (ptr["chk"] == head), run.refusal,
                                          run.slot_field(head, lambda s: s.error)))]  # fmt: skip
        m.d.sync += self.done.eq(complete)

    def _counters(self, m: Module, run: _Run, eng: _Engines, rd_side: _ReadSide,
                  cp_side: _ComputeSide) -> None:  # fmt: skip
        """The device counters (:data:`contract.interface.DEVICE_COUNTERS`), zeroed while a
        descriptor is checked on an otherwise idle device: a descriptor posted alone counts its
        own events; one queued behind another adds to what the queue has counted since it
        began, and the last to complete shows the whole queue's."""
        cfg, ctl, rd = self._config, run.ctl, eng.rd
        cnt = Signal(device_counters_layout(), name="device_counter")
        m.d.comb += [ctl.counters.eq(cnt), ctl.busy.eq(self.busy), ctl.done.eq(self.done),
                     ctl.error.eq(run.error)]  # fmt: skip
        running = Cat(s.state == RUNNING for s in run.slots).any()
        incs = {
            "cycles": running,
            "array_wait_cycles": cp_side.array_wait,
            "dma_wait_cycles": rd_side.dma_wait,
        }
        vec = eng.vec
        for k, i in OPERANDS.items():  # the read engine knows each beat's burst
            mine = rd.taken.valid & equals(rd.taken.payload, i)
            size = beat_bytes(cfg, {"a": "a", "b": "b", "c": "p", "q": "q"}[k])
            incs[f"dram_read_beats_{k}"] = mine
            incs[f"dram_read_bytes_{k}"] = Mux(mine, size, 0)
            if vec is not None:  # and the vector unit its own, whole bus beats
                theirs = vec.taken.valid & equals(vec.taken.payload, i)
                incs[f"dram_read_beats_{k}"] = mine | theirs
                incs[f"dram_read_bytes_{k}"] = Mux(mine, size, Mux(theirs, cfg.bus_width // 8, 0))
        w_take = self.m_axi_wvalid & self.m_axi_wready  # whichever engine has the port
        incs["dram_write_beats"] = w_take
        incs["dram_write_bytes"] = Mux(w_take, self.m_axi_wstrb, 0)  # its popcount, once late
        # DRAM traffic counts a cycle late, from registers: the engines' handshakes and the
        # strobes would otherwise sit in front of the 48-bit adders (the strobes' popcount is
        # taken from the register). The last beat comes long before the descriptor's end (a
        # write's response, a read's compute follow).
        for name in [n for n in incs if n.startswith("dram_")]:
            late = Signal.like(Value.cast(incs[name]), name=f"{name}_inc")
            m.d.sync += late.eq(incs[name])
            incs[name] = late
        strobes = incs["dram_write_bytes"]
        incs["dram_write_bytes"] = sum(strobes[i] for i in range(len(strobes)))
        alone = run.checking & ~run.state(~run.ptr["chk"]).any()
        with m.If(alone):  # every descriptor, refused ones too, starts from zero
            m.d.sync += [getattr(cnt, name).eq(0) for name in DEVICE_COUNTERS]
        with m.Else():
            for name, inc in incs.items():
                now = getattr(cnt, name)
                m.d.sync += now.eq(count_up(now, inc) if len(Value.cast(inc)) == 1 else now + inc)
            per_command = cp_side.per_command
            with m.If(cp_side.finished):
                m.d.sync += cnt.jobs.eq(cnt.jobs + 1)
                m.d.sync += cnt.compute_cycles.eq(cnt.compute_cycles + per_command.cycles)
                for name in COUNTERS:
                    if name != "cycles":
                        total = getattr(cnt, name) + getattr(per_command, name)
                        m.d.sync += getattr(cnt, name).eq(total)
            if vec is not None:
                with m.Elif(vec.run_done):  # a vector run written: a job, no array work
                    m.d.sync += cnt.jobs.eq(cnt.jobs + 1)

    def _port(self, m: Module, channel: str, stream_, other=None) -> None:
        """An engine's AXI4 channel (a valid/ready stream) on the ``m_axi_<channel>*`` ports;
        ``other = (stream, select)`` shares them with the vector unit's, which has them while
        ``select`` is high (a vector descriptor runs, and the engines are idle)."""
        sends = channel in ("ar", "aw", "w")
        valid, ready = (
            getattr(self, f"m_axi_{channel}valid"),
            getattr(self, f"m_axi_{channel}ready"),
        )
        if other is None:
            m.d.comb += [valid.eq(stream_.valid), stream_.ready.eq(ready)] if sends else \
                [stream_.valid.eq(valid), ready.eq(stream_.ready)]  # fmt: skip
            for name, _ in channel_fields(self._config.bus_width)[channel]:
                port = getattr(self, f"m_axi_{channel}{name}")
                field = getattr(stream_.payload, name)
                m.d.comb += port.eq(field) if sends else field.eq(port)
            return
        alt, sel = other
        if sends:
            m.d.comb += [valid.eq(Mux(sel, alt.valid, stream_.valid)),
                         stream_.ready.eq(ready & ~sel), alt.ready.eq(ready & sel)]  # fmt: skip
        else:
            m.d.comb += [stream_.valid.eq(valid & ~sel),
                         ready.eq(Mux(sel, alt.ready, stream_.ready)),
                         alt.valid.eq(valid & sel)]  # fmt: skip
        for name, _ in channel_fields(self._config.bus_width)[channel]:
            port, field = getattr(self, f"m_axi_{channel}{name}"), getattr(stream_.payload, name)
            if sends:
                m.d.comb += port.eq(Mux(sel, getattr(alt.payload, name), field))
            else:
                m.d.comb += [field.eq(port), getattr(alt.payload, name).eq(port)]

    def _conv_check(self, m: Module, d, product, load, shifting) -> _ConvCheck:
        """A convolution descriptor's :data:`Refusal.CONV` (contract.conv.check_conv): a zero
        geometry field, a GEMM that is not the convolution's, chunks that are not whole output
        rows tiling the images and whole slices, or a chunk staging past ``stage_depth``; and
        its chunks' rows, images and slices. The divisions are shift-and-subtract, a dividend
        bit a cycle, beside the products."""
        cfg = self._config
        bits = CHECK_PRODUCT_BITS
        tile = word_layout(cfg, "a").tile

        def quotient(name, x, y):
            """``(x // y, x % y)``, final from step ``bits + 1`` on."""
            n = Signal(bits, name=f"check_{name}_n")
            q = Signal(bits, name=f"check_{name}_q")
            r = Signal(len(Value.cast(y)) + 1, name=f"check_{name}_r")
            with m.If(load):
                m.d.sync += [n.eq(x), q.eq(0), r.eq(0)]
            with m.Elif(shifting):
                up = Cat(n[-1], r)
                fits = up >= y
                m.d.sync += [n.eq(n << 1), q.eq(Cat(fits, q)), r.eq(Mux(fits, up - y, up))]
            return q, r

        g = {n: getattr(d, f"conv_{n}") for n in ("images", "height", "width", "channels",
             "out_height", "out_width", "kh", "kw", "sh", "sw", "dh", "dw")}  # fmt: skip
        zero = Cat(~v.any() for v in g.values()).any()
        hwo = Signal(2 * DIM_BITS, name="check_conv_hwo")
        hw = Signal(2 * DIM_BITS, name="check_conv_hw")
        m.d.comb += [hwo.eq(g["out_height"] * g["out_width"]), hw.eq(g["height"] * g["width"])]
        slices = divide(g["channels"] + tile - 1, tile, DIM_BITS + 1)
        per_slice = Signal(16, name="check_conv_per_slice")
        m.d.comb += per_slice.eq(g["kh"] * g["kw"] * tile)
        gemm = (d.m != product("conv_m", d.conv_images, hwo)) | (d.k != per_slice * slices)
        rows, r_ow = quotient("conv_rows", d.mc, g["out_width"])
        _, r_tile = quotient("conv_tiles", hwo[:bits], d.mc)
        images, r_images = quotient("conv_images", d.mc, hwo)
        chunk_slices, r_kc = quotient("conv_slices", d.kc, per_slice)
        whole_rows = ~r_ow.any() & (~r_tile.any() | ~r_images.any())
        span = (rows - 1) * g["sh"] + (g["kh"] - 1) * g["dh"] + 1
        staged = Mux(rows <= g["out_height"], Mux(span > g["height"], g["height"], span),
                     images * g["height"])  # fmt: skip
        need = chunk_slices * staged * g["width"]
        refused = d.conv & (zero | gemm | ~whole_rows | r_kc.any() | (need > cfg.stage_depth))
        pixels = product("conv_pixels", d.conv_images, hw)
        return _ConvCheck(refused, slices, pixels, {"rows": rows, "images_per_chunk": images,
                                                    "slices_per_chunk": chunk_slices})  # fmt: skip

    def _vector_checks(self, d) -> list:
        """A vector descriptor's refusals, ``(condition, code)`` in the order of
        :func:`contract.vector.check_vector` (its operator code always names one: two bits,
        four operators)."""
        assert len(VECTOR_OPS) == 4
        bus = self._config.bus_width // 8
        pooling = d.op[1]
        out = [(d.clamp & (d.clamp_lo > d.clamp_hi), Refusal.CLAMP)]
        out += [(~getattr(d, f).any(), Refusal.DIMENSION)
                for f in ("batch", "height", "width", "channels")]  # fmt: skip
        for size, stride, pad, o, plane in (
            ("pool_h", "stride_h", "pad_top", "out_h", "height"),
            ("pool_w", "stride_w", "pad_left", "out_w", "width"),
        ):
            size, stride, pad = getattr(d, size), getattr(d, stride), getattr(d, pad)
            o, plane = getattr(d, o), getattr(d, plane)
            # every window must cover the plane: the first ends below its top, the last
            # starts inside it
            out += [(pooling & (~size.any() | ~stride.any()), Refusal.WINDOW),
                    (pooling & (pad >= size), Refusal.WINDOW),
                    (pooling & (~o.any() | ((o - 1) * stride > plane - 1 + pad)),
                     Refusal.WINDOW)]  # fmt: skip
        out.append((d.channels[: bus.bit_length() - 1].any(), Refusal.ALIGNMENT))
        pixels = d.batch * d.height * d.width
        out_pixels = Mux(pooling, d.batch * d.out_h * d.out_w, pixels)
        tensors = ((d.a_addr, Const(1), pixels), (d.b_addr, ~pooling, pixels),
                   (d.c_addr, Const(1), out_pixels))  # fmt: skip
        out += [(on & addr[: bus.bit_length() - 1].any(), Refusal.ALIGNMENT)
                for addr, on, _ in tensors]  # fmt: skip
        out += [(on & (addr + n * d.channels > (1 << ADDR_BITS)), Refusal.RANGE)
                for addr, on, n in tensors]  # fmt: skip
        return out

    def _check(self, m: Module, run: _Run, geo: _Geometry) -> None:
        """The :class:`contract.dma.Refusal` of ``d``, in the contract's order of checks, over the
        :data:`contract.timing.CHECK_CYCLES` cycles that ``checking`` is high, and the walkers'
        steps; returns ``(ready, code, steps)``: ``ready`` in the last of those cycles, when
        ``code`` holds the result, and ``steps[k]``, the DRAM distance between the first tile
        rows of two chunks of matrix ``k`` (``abcp``) that follow each other along its tile rows.

        The products of a tile-row count and a stride or a line count are shift-and-add, the
        tile-row count's bits most significant first (:data:`contract.timing.CHECK_PRODUCT_BITS`
        cycles); the comparisons take a cycle of their own.

        Sets ``run.checked``, ``run.refusal``, ``run.steps``; ``run.ends`` and ``run.spills``
        (where C and partial sums end in DRAM, and whether partial sums leave the chip), and
        ``run.depends``: the descriptor reads a byte the one in the other slot writes."""
        cfg = self._config
        d, checking = run.views["chk"], run.checking
        bits = CHECK_PRODUCT_BITS
        step = Signal(range(CHECK_CYCLES), name="check_step")
        m.d.sync += step.eq(Mux(checking, step + 1, 0))
        load = checking & equals(step, 0)
        shifting = checking & (step >= 1) & (step <= bits)

        def product(name, tiles, y, cap=None):
            return _shift_add(m, f"check_{name}", tiles, y, (load, shifting), cap)

        checks = []  # (condition, code), first true wins

        def add(cond, code):  # a GEMM's check (a vector descriptor's are its own)
            checks.append((cond & ~d.vector if cfg.vector else cond, int(code)))

        for dim in ("m", "k", "n"):
            add(~getattr(d, dim).any(), Refusal.DIMENSION)
        add(d.order >= len(LOOP_ORDERS), Refusal.ORDER)
        if cfg.requant:
            add(d.accumulate & d.requant, Refusal.MODE)
            floats = d.float_scale if cfg.requant_float else 0
            add(~d.requant & (d.bias | d.clamp | floats), Refusal.MODE)
            add(d.requant & d.clamp & (d.clamp_lo > d.clamp_hi), Refusal.CLAMP)
        g = granularity(cfg)
        for dim in ("m", "k", "n"):
            size, total = getattr(d, f"{dim}c"), getattr(d, dim)
            add(~size.any() | (size > total), Refusal.CHUNK)
            if g[dim] > 1:
                add((size != total) & remainder(size, g[dim], DIM_BITS).any(), Refusal.CHUNK)
        words, row_words = {}, {}  # a chunk's words, and a tile row's
        for k in "abc":
            tiles, row_words[k] = geo.tiles_lines(k if k != "c" else "p",
                                                  *geo.shape(k, d.mc, d.kc, d.nc))  # fmt: skip
            # a chunk's words only meet its bank's depth (and the other operand's, accepted)
            depth = getattr(cfg, f"{k}_depth")
            words[k] = product(f"{k}_words", tiles, row_words[k], cap=depth.bit_length())
            add(words[k] > getattr(cfg, f"{k}_depth"), Refusal.CHUNK)
        if cfg.requant:
            add(
                d.requant & (divide(d.n + cfg.cols - 1, cfg.cols, DIM_BITS + 1) > cfg.q_depth),
                Refusal.TABLE,
            )
        conv = self._conv_check(m, d, product, load, shifting) if cfg.stage_depth else None
        if conv is not None:
            add(conv.refused, Refusal.CONV)
        cont = containers(cfg)
        ends = {}  # kind: (used, first byte, past the last)
        spills = (d.kc < d.k) & (d.order != LOOP_ORDERS.index("nmk")) & (
            d.order != LOOP_ORDERS.index("mnk"))  # fmt: skip
        for k in "abcp":
            tiles, lines = geo.tiles_lines("p" if k == "c" else k, *geo.shape(k, d.m, d.k, d.n))
            if k == "a" and conv is not None:  # a convolution's A is its input
                tiles, lines = Mux(d.conv, conv.slices, tiles), Mux(d.conv, conv.pixels, lines)
            if k == "c" and cfg.requant:  # sizes are powers of two: the products are shifts
                size = Mux(d.requant, cont["c"], cont["p"])
                line_bytes = Mux(d.requant, lines * cont["c"], lines * cont["p"])
            else:
                size = Const(cont["p"] if k == "c" else cont[k], 16)
                line_bytes = lines * size.value
            addr, stride = getattr(d, f"{k}_addr"), getattr(d, f"{k}_stride")
            on = spills if k == "p" else Const(1)
            mask = size - 1
            add(on & (addr & mask).any(), Refusal.ALIGNMENT)
            add(on & ((stride & mask).any() | (stride < line_bytes)), Refusal.STRIDE)
            # past 2**ADDR_BITS the descriptor is refused, whatever the span's high bits
            span = product(f"{k}_span", tiles - 1, stride, cap=ADDR_BITS + 1)
            reach = addr + span + line_bytes
            ends[k] = (on, addr, reach)
            add(on & (reach > (1 << ADDR_BITS)), Refusal.RANGE)
        if cfg.requant:
            add(d.requant & (d.q_addr & (cont["q"] - 1)).any(), Refusal.ALIGNMENT)
            q_end = d.q_addr + divide(d.n + cfg.cols - 1, cfg.cols, DIM_BITS + 1) * cont["q"]
            ends["q"] = (d.requant, d.q_addr, q_end)
            add(d.requant & (q_end > (1 << ADDR_BITS)), Refusal.RANGE)
        if cfg.vector:
            checks += [(d.vector & cond, int(code)) for cond, code in self._vector_checks(d)]
        code = Signal(4, name="refusal")
        value = Const(0, 4)
        for cond, c in reversed(checks):
            value = Mux(cond, c, value)
        with m.If(checking & (step == bits + 1)):
            m.d.sync += code.eq(value)
        steps = {}
        for k in "abcp":
            tiles, _ = geo.origin(k, *geo.shape(k, d.mc, d.kc, d.nc))  # a chunk's tile rows
            # a step past the span refuses the descriptor, or is never taken (one chunk)
            stride = getattr(d, f"{k}_stride")
            steps[k] = product(f"{k}_step", tiles, stride, cap=ADDR_BITS + 1)[:ADDR_BITS]
        run.checked = checking & (step == CHECK_CYCLES - 1)
        run.refusal, run.steps, run.spills = code, steps, spills
        # the smaller chunk loads first (contract.dma.b_first); a convolution's A always
        not_conv = ~d.conv if cfg.stage_depth else 1
        run.b_first = (words["b"] < words["a"]) & not_conv
        # the split operand's first tile row before the other operand (contract.dma.split_first)
        y = SPLIT_OPERAND[cfg.dataflow]
        first, other = row_words[y], words["a" if y == "b" else "b"]
        run.split = (first < other) & not_conv
        run.conv = conv
        run.ends = {k: ends[k][2] for k in "cp"}
        run.depends = self._depends(m, run, d, ends, checking & (step == bits + 1))

    @staticmethod
    def _depends(m: Module, run: _Run, d, ends: dict, when) -> Signal:
        """Whether the checked descriptor ``d`` reads a byte (its regions ``ends``: ``(used,
        first byte, past the last)``) that the one before it, in the other slot, writes: taken
        into a register ``when`` the refusal is (the address sums and comparisons would
        otherwise sit in front of the read walker's restart)."""
        other = ~run.ptr["chk"]
        reads = [ends["a"], ends["b"], (d.accumulate, *ends["c"][1:]), ends["p"]]
        if "q" in ends:
            reads.append(ends["q"])
        writes = [(Const(1), run.slot_field(other, lambda s: s.desc.c_addr),
                   run.slot_field(other, lambda s: s.end["c"])),
                  (run.slot_field(other, lambda s: s.spills),
                   run.slot_field(other, lambda s: s.desc.p_addr),
                   run.slot_field(other, lambda s: s.end["p"]))]  # fmt: skip
        depends = Signal(name="check_depends")
        with m.If(when):
            m.d.sync += depends.eq(Cat(r_on & w_on & (r_lo < w_hi) & (w_lo < r_hi)
                                       for r_on, r_lo, r_hi in reads
                                       for w_on, w_lo, w_hi in writes).any())  # fmt: skip
        return depends
