"""The accelerator: buffers, a tiling controller and a mesh, with host streams and counters."""

from __future__ import annotations

from amaranth import Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from systolic.contract.config import ArrayConfig
from systolic.contract.interface import (
    DIM_BITS,
)
from systolic.contract.layouts import layouts

from .array import operand_shape
from .buffers import AccumulatorBuffer, InputBuffer, address_shape
from .core import command_counters, compute_core, counters_layout, offset
from .fp import arithmetic
from .requant import QUANT_PAIR, q_word_layout, requant_word

__all__ = [
    "Accelerator",
    "QUANT_PAIR",
    "c_read_layout",
    "command_layout",
    "q_word_layout",
    "counters_layout",
    "word_layouts",
    "write_layout",
]


def command_layout(config: ArrayConfig | None = None) -> data.StructLayout:
    """A command; with ``config.zero_points`` it also carries the zero points of A and B."""
    dim = unsigned(DIM_BITS)
    addr = address_shape()
    fields = {
        "m": dim,
        "k": dim,
        "n": dim,
        "a_base": addr,
        "b_base": addr,
        "c_base": addr,
        "accumulate": 1,
    }
    if config is not None and config.zero_points:
        fields["a_zero"] = operand_shape(config.a_width, config.a_signed)
        fields["b_zero"] = operand_shape(config.b_width, config.b_signed)
    return data.StructLayout(fields)


def c_read_layout(config: ArrayConfig):
    """A host read of C: its address; with ``requant``, also how to requantize the word: the
    parameter word (``q_addr``), one lane of it for every element (``q_broadcast``, IS) or lane
    ``j`` for element ``j``, the output zero point and ReLU."""
    if not config.requant:
        return address_shape()
    return data.StructLayout({
        "addr": address_shape(),
        "requant": 1,
        "q_addr": address_shape(),
        "q_lane": range(max(config.cols, 2)),
        "q_broadcast": 1,
        "out_zero": operand_shape(config.out_width, config.out_signed),
        "relu": 1,
    })  # fmt: skip


def write_layout(word: data.ArrayLayout) -> data.StructLayout:
    """A host write: one buffer word and its address."""
    return data.StructLayout({"addr": address_shape(), "data": word})


def word_layouts(config: ArrayConfig) -> dict[str, data.ArrayLayout]:
    """The A, B and C buffer words of :func:`contract.layouts.layouts` as Amaranth layouts."""
    return {
        name: data.ArrayLayout(operand_shape(word.width, word.signed), word.tile)
        for name, word in layouts(config).items()
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
        :data:`contract.interface.COUNTERS`, valid once ``done`` has pulsed.

    Buffer layouts are those of :class:`~rtl.controller.StationaryController` (WS, IS) and
    :class:`~rtl.controller.OutputStationaryController` (OS), in GEMM terms.
    """

    def __init__(self, config: ArrayConfig):
        if not isinstance(config, ArrayConfig):
            raise TypeError(f"config must be an ArrayConfig, not {config!r}")
        self._config = config
        words = word_layouts(config)
        members = {
            "a_write": In(stream.Signature(write_layout(words["a"]))),
            "b_write": In(stream.Signature(write_layout(words["b"]))),
            "cmd": In(stream.Signature(command_layout(config))),
            "busy": Out(1),
            "done": Out(1),
            "error": Out(1),
            "c_read": In(stream.Signature(c_read_layout(config))),
            "c_data": Out(stream.Signature(words["c"])),
            "counters": Out(counters_layout()),
        }
        if config.requant:
            members["q_write"] = In(stream.Signature(write_layout(q_word_layout(config))))
        super().__init__(members)

    @property
    def config(self) -> ArrayConfig:
        return self._config

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        words = word_layouts(cfg)
        m.submodules.a_buffer = a_buf = InputBuffer(word=words["a"], depth=cfg.a_depth)
        m.submodules.b_buffer = b_buf = InputBuffer(word=words["b"], depth=cfg.b_depth)
        m.submodules.c_buffer = c_buf = AccumulatorBuffer(
            word=words["c"], depth=cfg.c_depth, arithmetic=arithmetic(cfg)
        )
        wiring.connect(m, wiring.flipped(self.a_write), a_buf.write)
        wiring.connect(m, wiring.flipped(self.b_write), b_buf.write)
        if cfg.requant:
            self._requant_read_path(m, c_buf)
        else:
            wiring.connect(m, wiring.flipped(self.c_read), c_buf.read)
            wiring.connect(m, c_buf.read_data, wiring.flipped(self.c_data))

        # The command: registered on acceptance; a zero dimension is refused at once.
        cmd = Signal(command_layout(cfg), name="command")
        accept = self.cmd.valid & self.cmd.ready
        dims = self.cmd.payload
        bad = ~dims.m.any() | ~dims.k.any() | ~dims.n.any()
        refused = Signal(name="refused")
        m.d.sync += refused.eq(accept & bad)
        with m.If(accept):
            m.d.sync += cmd.eq(self.cmd.payload)

        # The mesh and its controller see the operands minus their zero points (mesh_config).
        a_data, b_data = a_buf.read_data, b_buf.read_data
        if cfg.zero_points:
            a_data = offset(m, a_data, cmd.a_zero, "a_offset")
            b_data = offset(m, b_data, cmd.b_zero, "b_offset")
        depths = {"a": cfg.a_depth, "b": cfg.b_depth, "c": cfg.c_depth}
        ctrl, array, reads, streamed, preloaded = compute_core(m, cfg, a_data, b_data, cmd, depths)
        for name, buf in (("a", a_buf), ("b", b_buf)):
            m.d.comb += [buf.read_addr.eq(reads[name].payload), buf.read_en.eq(reads[name].valid)]
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

        m.d.comb += self.counters.eq(
            command_counters(m, ctrl, reads, streamed, preloaded, c_buf.update, accept)
        )
        return m

    def _requant_read_path(self, m: Module, c_buf) -> None:
        """Host reads of C through the requantization unit: the parameter word is read in the
        same cycle as the C word; the read's options are kept alongside."""
        cfg = self._config
        m.submodules.q_buffer = q_buf = InputBuffer(word=q_word_layout(cfg), depth=cfg.q_depth)
        wiring.connect(m, wiring.flipped(self.q_write), q_buf.write)
        req = self.c_read
        take = req.valid & req.ready
        m.d.comb += [
            c_buf.read.valid.eq(req.valid),
            c_buf.read.payload.eq(req.payload.addr),
            req.ready.eq(c_buf.read.ready),
            q_buf.read_addr.eq(req.payload.q_addr),
            q_buf.read_en.eq(take),
        ]
        opts = Signal(c_read_layout(cfg), name="read_options")
        with m.If(take):
            m.d.sync += opts.eq(req.payload)
        raw = c_buf.read_data
        m.d.comb += [self.c_data.valid.eq(raw.valid), raw.ready.eq(self.c_data.ready)]
        outs = requant_word(m, cfg, raw.payload, q_buf.read_data, opts.q_lane, opts.q_broadcast,
                            opts.out_zero, opts.relu)  # fmt: skip
        for j, out in enumerate(outs):
            m.d.comb += self.c_data.payload[j].eq(Mux(opts.requant, out, raw.payload[j]))
