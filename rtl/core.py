"""The compute core: the mesh of the configuration's dataflow and its tiling controller, wired to
the buffers' read ports, and the per-command performance counters."""

from __future__ import annotations

from amaranth import Module, Mux, Signal, Value, signed, unsigned
from amaranth.lib import data, wiring
from systolic.contract.config import ArrayConfig, Dataflow
from systolic.contract.interface import COUNTER_BITS, COUNTERS
from systolic.contract.layouts import layouts
from systolic.contract.timing import EDGE_REGISTERS

from .array import OutputStationaryArray, StationaryArray, operand_shape
from .controller import OutputStationaryController, StationaryController

__all__ = [
    "command_counters",
    "count_up",
    "compute_core",
    "counters_layout",
    "offset",
    "read_gates",
    "word_layouts",
]


def word_layouts(config: ArrayConfig) -> dict[str, data.ArrayLayout]:
    """The A, B and C buffer words of :func:`contract.layouts.layouts` as Amaranth layouts."""
    return {
        name: data.ArrayLayout(operand_shape(word.width, word.signed), word.tile)
        for name, word in layouts(config).items()
    }


def counters_layout() -> data.StructLayout:
    return data.StructLayout({name: unsigned(COUNTER_BITS) for name in COUNTERS})


def offset(m: Module, word, zero, name: str):
    """Every element of a buffer word minus the zero point, one bit wider and signed: the zero
    point is subtracted once at the array's edge, not in every PE."""
    width = len(word[0]) + 1
    out = Signal(data.ArrayLayout(signed(width), word.shape().length), name=name)
    for i in range(word.shape().length):
        m.d.comb += out[i].eq(word[i] - zero)
    return out


def compute_core(m: Module, cfg: ArrayConfig, a_data, b_data, cmd, depths: dict):
    """Add the mesh and its controller to ``m``, on operands ``a_data``/``b_data`` (as the mesh
    sees them) and the command ``cmd`` (``m, k, n, a_base, b_base, c_base``); ``depths`` bound
    the addresses. Returns ``(controller, mesh, reads, streamed, preloaded)``: the A and B read
    flows, and the strobes of a streamed vector and a preload row."""
    mcfg = cfg.mesh_config()
    if cfg.dataflow is Dataflow.OS:
        m.submodules.array = array = OutputStationaryArray(mcfg)
        m.submodules.controller = ctrl = OutputStationaryController(
            mcfg, a_depth=depths["a"], b_depth=depths["b"], c_depth=depths["c"]
        )
        m.d.comb += [
            ctrl.dim_p.eq(cmd.m), ctrl.dim_q.eq(cmd.k), ctrl.dim_r.eq(cmd.n),
            ctrl.a_base.eq(cmd.a_base), ctrl.b_base.eq(cmd.b_base),
            ctrl.c_base.eq(cmd.c_base),
        ]  # fmt: skip
        reads = {"a": ctrl.a_read, "b": ctrl.b_read}
        m.d.comb += [ctrl.a_data.eq(a_data), ctrl.b_data.eq(b_data)]
        _edge(m, ctrl.operands, array.operands)
        streamed = array.operands.valid
        preloaded = 0
    else:
        m.submodules.array = array = StationaryArray(mcfg)
        # IS is WS on the transposed problem: B streams, A stays, C^T comes out.
        ws = cfg.dataflow is Dataflow.WS
        x_depth, s_depth = (depths["a"], depths["b"]) if ws else (depths["b"], depths["a"])
        x_data, s_data = (a_data, b_data) if ws else (b_data, a_data)
        m.submodules.controller = ctrl = StationaryController(
            mcfg, x_depth=x_depth, s_depth=s_depth, y_depth=depths["c"]
        )
        m.d.comb += [
            ctrl.dim_p.eq(cmd.m if ws else cmd.n),
            ctrl.dim_q.eq(cmd.k),
            ctrl.dim_r.eq(cmd.n if ws else cmd.m),
            ctrl.x_base.eq(cmd.a_base if ws else cmd.b_base),
            ctrl.s_base.eq(cmd.b_base if ws else cmd.a_base),
            ctrl.y_base.eq(cmd.c_base),
            ctrl.x_data.eq(x_data),
            ctrl.s_data.eq(s_data),
        ]
        reads = {"a": ctrl.x_read, "b": ctrl.s_read} if ws else {"a": ctrl.s_read, "b": ctrl.x_read}
        _edge(m, ctrl.preload, array.preload)
        _edge(m, ctrl.stream, array.stream)
        streamed = array.stream.valid
        preloaded = array.preload.valid
    wiring.connect(m, array.result, ctrl.result)
    return ctrl, array, reads, streamed, preloaded


def _edge(m: Module, source, sink) -> None:
    """``source``'s flow into ``sink`` through :data:`contract.timing.EDGE_REGISTERS` registers
    (valid and payload together): the buffers' words reach the mesh from a register, not
    through the SRAM's access time."""
    valid, payload = source.valid, source.payload
    for _ in range(EDGE_REGISTERS):
        v, p = Signal.like(valid), Signal.like(payload)
        m.d.sync += [v.eq(valid), p.eq(payload)]
        valid, payload = v, p
    m.d.comb += [sink.valid.eq(valid), sink.payload.eq(payload)]


def read_gates(cfg: ArrayConfig, ctrl) -> dict:
    """Per buffer (``"a"``, ``"b"``): the controller's ``(open, landed)`` inputs that hold its
    reads of that buffer's bank back until their words have landed."""
    names = {Dataflow.OS: "ab", Dataflow.WS: "xs", Dataflow.IS: "sx"}[cfg.dataflow]
    return {k: (getattr(ctrl, f"{v}_open"), getattr(ctrl, f"{v}_landed"))
            for k, v in zip("ab", names, strict=True)}  # fmt: skip


def count_up(counter, event) -> Value:
    """``counter`` plus one where the one-bit ``event`` happens: the sum is taken from the
    register alone and the event only selects it, the structure that keeps a late event (an
    update's flag, a handshake) off the carry chain. The mapper sees each module apart and may
    still move an event that comes from another module's logic into the chain, so such events
    are registered first (:func:`command_counters`' reads)."""
    return Mux(event, counter + 1, counter)


def command_counters(m: Module, ctrl, reads, streamed, preloaded, updates, start):
    """:data:`contract.interface.COUNTERS` of the command running on ``ctrl``, reset by
    ``start``. A non-streaming busy cycle after the first streamed vector is a stall if another
    vector follows and drain otherwise: count the gaps and the cycles since the last vector,
    and take their difference."""
    cnt = Signal(counters_layout(), name="counter")
    out = Signal(counters_layout(), name="counters")
    gaps = Signal(COUNTER_BITS, name="counter_gaps")
    m.d.comb += [out.eq(cnt), out.stall_cycles.eq(gaps - cnt.drain_cycles)]
    seen_stream = Signal(name="seen_stream")
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
    # reads count a cycle late, from registers: synthesis maps this module apart from the
    # controller, blind to how late its read enables come, and may put them at the head of the
    # counters' carry chains; a command's last read comes cycles before it finishes (the mesh's
    # latency and the update between), so its counts are whole by then
    for name in ("a_reads", "b_reads"):
        late = Signal(name=f"{name}_inc")
        m.d.sync += late.eq(increments[name])
        increments[name] = late
    with m.If(start):
        m.d.sync += [getattr(cnt, name).eq(0) for name in COUNTERS]
        m.d.sync += [seen_stream.eq(0), gaps.eq(0)]
    with m.Else():
        for name, inc in increments.items():
            m.d.sync += getattr(cnt, name).eq(count_up(getattr(cnt, name), inc))
        with m.If(streamed):
            m.d.sync += [seen_stream.eq(1), cnt.drain_cycles.eq(0)]
        with m.Elif(ctrl.busy & seen_stream):
            m.d.sync += [cnt.drain_cycles.eq(cnt.drain_cycles + 1), gaps.eq(gaps + 1)]
    return out
