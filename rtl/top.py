"""The accelerator: buffers, a tiling controller and a mesh, with host streams and counters."""

from __future__ import annotations

from amaranth import Module, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .array import OutputStationaryArray, StationaryArray, operand_shape
from .buffers import AccumulatorBuffer, InputBuffer, address_shape
from .config import ArrayConfig, Dataflow
from .controller import DIM_BITS, OutputStationaryController, StationaryController

__all__ = [
    "Accelerator",
    "COUNTERS",
    "COUNTER_BITS",
    "command_layout",
    "counters_layout",
    "word_layouts",
    "write_layout",
]

#: Width of every performance counter.
COUNTER_BITS = 48

#: The performance counters, reset when a command is accepted. Every busy cycle is exactly one of
#: stream, fill, stall or drain: ``cycles = stream + fill + stall + drain``.
COUNTERS = {
    "cycles": "cycles from the command's acceptance to done (busy cycles)",
    "stream_cycles": "cycles in which the array took a streamed vector (useful work)",
    "preload_cycles": "cycles in which a stationary row shifted into the array (WS/IS)",
    "fill_cycles": "busy cycles before the first streamed vector",
    "stall_cycles": "busy cycles without a streamed vector between the first and the last one",
    "drain_cycles": "busy cycles after the last streamed vector (pipeline drain, write-back)",
    "a_reads": "words read from the A buffer by the controller",
    "b_reads": "words read from the B buffer by the controller",
    "c_reads": "words read from the C buffer to accumulate into",
    "c_writes": "words written to the C buffer",
}


def command_layout() -> data.StructLayout:
    dim = unsigned(DIM_BITS)
    addr = address_shape()
    return data.StructLayout(
        {
            "m": dim,
            "k": dim,
            "n": dim,
            "a_base": addr,
            "b_base": addr,
            "c_base": addr,
            "accumulate": 1,
        }
    )


def counters_layout() -> data.StructLayout:
    return data.StructLayout({name: unsigned(COUNTER_BITS) for name in COUNTERS})


def write_layout(word: data.ArrayLayout) -> data.StructLayout:
    """A host write: one buffer word and its address."""
    return data.StructLayout({"addr": address_shape(), "data": word})


def word_layouts(config: ArrayConfig) -> dict[str, data.ArrayLayout]:
    """Buffer words: A along K (WS) or M (OS: ``rows`` long, IS: ``cols`` long); B along N
    (WS, OS: ``cols`` long) or K (IS: ``rows`` long); C along N (WS, OS) or M (IS), ``cols``
    long, at accumulator width."""
    is_ = config.dataflow is Dataflow.IS
    return {
        "a": data.ArrayLayout(
            operand_shape(config.a_width, config.a_signed), config.cols if is_ else config.rows
        ),
        "b": data.ArrayLayout(
            operand_shape(config.b_width, config.b_signed), config.rows if is_ else config.cols
        ),
        "c": StationaryArray.result_layout(config),
    }


class Accelerator(wiring.Component):
    """A systolic-array GEMM accelerator: ``C[M,N] (+)= A[M,K] @ B[K,N]`` from on-chip buffers.

    Ports
    -----
    a_write, b_write : stream {addr, data}
        Host writes of one buffer word a cycle (always ready).
    cmd : stream {m, k, n, a_base, b_base, c_base, accumulate}
        One GEMM on the buffers' contents; taken when the accelerator is idle. A dimension of zero
        is refused: ``error`` rises and ``done`` pulses without any work. An address past the end
        of a buffer also raises ``error`` (the command still finishes).
    busy, done, error : out
        ``busy`` while a command runs; ``done`` for one cycle at its end; ``error`` from then
        until the next command.
    c_read : stream addr, c_data : stream word
        Host reads of C, with back-pressure.
    counters : out
        :data:`COUNTERS`, valid once ``done`` has pulsed.

    Buffer layouts are those of :class:`~rtl.controller.StationaryController` (WS, IS) and
    :class:`~rtl.controller.OutputStationaryController` (OS), in GEMM terms.
    """

    def __init__(self, config: ArrayConfig):
        if not isinstance(config, ArrayConfig):
            raise TypeError(f"config must be an ArrayConfig, not {config!r}")
        self._config = config
        words = word_layouts(config)
        addr = address_shape()
        super().__init__(
            {
                "a_write": In(stream.Signature(write_layout(words["a"]))),
                "b_write": In(stream.Signature(write_layout(words["b"]))),
                "cmd": In(stream.Signature(command_layout())),
                "busy": Out(1),
                "done": Out(1),
                "error": Out(1),
                "c_read": In(stream.Signature(addr)),
                "c_data": Out(stream.Signature(words["c"])),
                "counters": Out(counters_layout()),
            }
        )

    @property
    def config(self) -> ArrayConfig:
        return self._config

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        words = word_layouts(cfg)
        m.submodules.a_buffer = a_buf = InputBuffer(word=words["a"], depth=cfg.a_depth)
        m.submodules.b_buffer = b_buf = InputBuffer(word=words["b"], depth=cfg.b_depth)
        m.submodules.c_buffer = c_buf = AccumulatorBuffer(word=words["c"], depth=cfg.c_depth)
        wiring.connect(m, wiring.flipped(self.a_write), a_buf.write)
        wiring.connect(m, wiring.flipped(self.b_write), b_buf.write)
        wiring.connect(m, wiring.flipped(self.c_read), c_buf.read)
        wiring.connect(m, c_buf.read_data, wiring.flipped(self.c_data))

        # The command: registered on acceptance; a zero dimension is refused at once.
        cmd = Signal(command_layout(), name="command")
        accept = self.cmd.valid & self.cmd.ready
        dims = self.cmd.payload
        bad = ~dims.m.any() | ~dims.k.any() | ~dims.n.any()
        refused = Signal(name="refused")
        m.d.sync += refused.eq(accept & bad)
        with m.If(accept):
            m.d.sync += cmd.eq(self.cmd.payload)

        if cfg.dataflow is Dataflow.OS:
            m.submodules.array = array = OutputStationaryArray(cfg)
            m.submodules.controller = ctrl = OutputStationaryController(
                cfg, a_depth=cfg.a_depth, b_depth=cfg.b_depth, c_depth=cfg.c_depth
            )
            m.d.comb += [
                ctrl.dim_p.eq(cmd.m), ctrl.dim_q.eq(cmd.k), ctrl.dim_r.eq(cmd.n),
                ctrl.a_base.eq(cmd.a_base), ctrl.b_base.eq(cmd.b_base),
                ctrl.c_base.eq(cmd.c_base),
            ]  # fmt: skip
            reads = {"a": ctrl.a_read, "b": ctrl.b_read}
            m.d.comb += [ctrl.a_data.eq(a_buf.read_data), ctrl.b_data.eq(b_buf.read_data)]
            wiring.connect(m, ctrl.operands, array.operands)
            streamed = array.operands.valid
            preloaded = 0
        else:
            m.submodules.array = array = StationaryArray(cfg)
            # IS is WS on the transposed problem: B streams, A stays, C^T comes out.
            ws = cfg.dataflow is Dataflow.WS
            x_buf, s_buf = (a_buf, b_buf) if ws else (b_buf, a_buf)
            m.submodules.controller = ctrl = StationaryController(
                cfg, x_depth=x_buf.depth, s_depth=s_buf.depth, y_depth=cfg.c_depth
            )
            m.d.comb += [
                ctrl.dim_p.eq(cmd.m if ws else cmd.n),
                ctrl.dim_q.eq(cmd.k),
                ctrl.dim_r.eq(cmd.n if ws else cmd.m),
                ctrl.x_base.eq(cmd.a_base if ws else cmd.b_base),
                ctrl.s_base.eq(cmd.b_base if ws else cmd.a_base),
                ctrl.y_base.eq(cmd.c_base),
                ctrl.x_data.eq(x_buf.read_data),
                ctrl.s_data.eq(s_buf.read_data),
            ]
            reads = (
                {"a": ctrl.x_read, "b": ctrl.s_read} if ws else {"a": ctrl.s_read, "b": ctrl.x_read}
            )
            wiring.connect(m, ctrl.preload, array.preload)
            wiring.connect(m, ctrl.stream, array.stream)
            streamed = array.stream.valid
            preloaded = array.preload.valid
        for name, buf in (("a", a_buf), ("b", b_buf)):
            m.d.comb += [buf.read_addr.eq(reads[name].payload), buf.read_en.eq(reads[name].valid)]
        wiring.connect(m, array.result, ctrl.result)
        wiring.connect(m, ctrl.update, c_buf.update)

        start = accept & ~bad
        m.d.comb += [
            ctrl.start.eq(start),
            ctrl.accumulate.eq(cmd.accumulate),
            self.cmd.ready.eq(~ctrl.busy & ~refused),
            self.busy.eq(ctrl.busy),
            self.done.eq(ctrl.done | refused),
        ]
        bad_seen = Signal(name="bad_command")
        with m.If(accept):
            m.d.sync += bad_seen.eq(bad)
        m.d.comb += self.error.eq(bad_seen | ctrl.range_error)

        # Performance counters. A non-streaming busy cycle after the first streamed vector is a
        # stall if another vector follows and drain otherwise: count the gaps and the cycles
        # since the last vector, and take their difference.
        cnt = Signal(counters_layout(), name="counter")
        gaps = Signal(COUNTER_BITS, name="counter_gaps")
        m.d.comb += [self.counters.eq(cnt), self.counters.stall_cycles.eq(gaps - cnt.drain_cycles)]
        seen_stream = Signal(name="seen_stream")
        updates = c_buf.update
        increments = {
            "cycles": ctrl.busy,
            "stream_cycles": streamed,
            "preload_cycles": preloaded,
            "fill_cycles": ctrl.busy & ~seen_stream & ~streamed,
            "a_reads": reads["a"].valid,
            "b_reads": reads["b"].valid,
            "c_reads": updates.valid & updates.payload.accumulate,
            "c_writes": updates.valid,
        }
        with m.If(accept):
            m.d.sync += [getattr(cnt, name).eq(0) for name in COUNTERS]
            m.d.sync += [seen_stream.eq(0), gaps.eq(0)]
        with m.Else():
            for name, inc in increments.items():
                m.d.sync += getattr(cnt, name).eq(getattr(cnt, name) + inc)
            with m.If(streamed):
                m.d.sync += [seen_stream.eq(1), cnt.drain_cycles.eq(0)]
            with m.Elif(ctrl.busy & seen_stream):
                m.d.sync += [cnt.drain_cycles.eq(cnt.drain_cycles + 1), gaps.eq(gaps + 1)]
        return m
