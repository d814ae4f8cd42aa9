"""The vector unit: residual adds, elementwise max and pooling on quantized NHWC tensors in DRAM,
run by vector descriptors from the device's queue (:mod:`contract.vector` has the walk).

A run reads its passes back to back over the AXI4 port (at most ``max_reads`` bursts in
flight), folding each beat into the run buffer as it arrives, a byte lane per element: the
first pass sets a lane, the later ones add to it (a residual add's second input, an average's
window) or keep the larger (max). Once the last beat is in (and, for an average, the window's
reciprocal), the run's output leaves beat by beat through the output stage (the add's output
scaling, the average's division, the zero point and the clamp) in bursts of its own; the next
run starts after its last beat. One scaling unit per lane serves both the inputs' and the
output's scaling, which never happen in the same cycle.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

from amaranth import Cat, Module, Mux, Signal, signed, unsigned
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out
from systolic.contract.axi import ADDR_BITS, AXI_ID, BURST_INCR, OPERANDS
from systolic.contract.config import ArrayConfig, value_range
from systolic.contract.interface import DIM_BITS
from systolic.contract.vector import (
    ADD_LEFT_SHIFT,
    AVERAGE_BITS,
    DIVIDE_CYCLES,
    RUN_BEATS,
    VECTOR_OPS,
)

from .arith import equals
from .array import Flow
from .axi import AxiMaster
from .control import descriptor_layout
from .requant import clamp, scale

__all__ = ["VectorUnit"]

ADD, MAX, MAX_POOL, AVERAGE_POOL = (VECTOR_OPS.index(o) for o in VECTOR_OPS)
# the unit's states
IDLE, SETUP, READ, WAIT, WRITE, DRAIN = range(6)
_ADDR = unsigned(ADDR_BITS)
_LANE = signed(32)


class VectorUnit(wiring.Component):
    """Runs one vector descriptor from ``start`` to ``idle``.

    Ports
    -----
    start : in, the descriptor in ``desc`` begins (it stays there until the unit is idle).
    desc : in, the device's descriptor register (:func:`rtl.control.descriptor_layout`).
    mem : the AXI4 master (the device gives it the port while a vector descriptor runs).
    taken : Flow, each R beat with its operand code (X reads as ``a``, Y as ``b``).
    run_done : out, a run's last beat left this cycle.
    idle : out, no descriptor is running and no write awaits its response.
    """

    def __init__(self, config: ArrayConfig):
        if not config.vector:
            raise ValueError("a VectorUnit needs a configuration with vector=True")
        self._config = config
        super().__init__({
            "start": In(1),
            "desc": In(descriptor_layout(config)),
            "mem": Out(AxiMaster(config.bus_width)),
            "taken": Out(Flow(unsigned(2))),
            "run_done": Out(1),
            "idle": Out(1),
        })  # fmt: skip

    def elaborate(self, platform):
        m = Module()
        u = self._walk(m)
        self._requests(m, u)
        self._lanes(m, u)
        u.div_left = self._divider(m, u.count, u.magic, u.magic_shift, u.state)
        self._writes(m, u)
        self._states(m, u)
        return m

    def _walk(self, m: Module) -> SimpleNamespace:
        """The unit's state, the walk's place (the next run's) and the run's window."""
        cfg, d = self._config, self.desc
        u = SimpleNamespace(bus=cfg.bus_width // 8, pooling=d.op[1])
        u.log_bus = int(math.log2(u.bus))
        u.span = cfg.max_burst * u.bus
        u.state = Signal(range(6), name="vec_state")
        m.d.comb += [self.idle.eq(equals(u.state, IDLE)), self.run_done.eq(0)]
        u.row_bytes = Signal(_ADDR, name="vec_row_bytes")  # an input row: W pixels of C bytes
        u.pixel_beats = Signal(DIM_BITS, name="vec_pixel_beats")
        u.left = Signal(ADDR_BITS + 1, name="vec_left")  # beats left: of the tensor, or pixel
        u.img = Signal(DIM_BITS, name="vec_img")
        u.oy = Signal(DIM_BITS, name="vec_oy")
        u.ox = Signal(DIM_BITS, name="vec_ox")
        u.offset = Signal(_ADDR, name="vec_offset")  # elementwise: of the tensor; pooling: pixel
        u.out_addr = Signal(_ADDR, name="vec_out_addr")
        u.beats = Signal(range(RUN_BEATS + 1), name="vec_beats")  # of the current run
        m.d.comb += u.beats.eq(Mux(u.left > RUN_BEATS, RUN_BEATS, u.left))
        u.run_bytes = u.beats << u.log_bus
        # the run's passes (set in SETUP)
        u.rows = Signal(9, name="vec_rows")
        u.cols = Signal(9, name="vec_cols")
        u.col_step = Signal(_ADDR, name="vec_col_step")
        u.row_addr = Signal(_ADDR, name="vec_row_addr")  # the first pass of the window's row
        u.pass_addr = Signal(_ADDR, name="vec_pass_addr")  # the current pass's first byte
        u.count = Signal(17, name="vec_count")
        start_y = Signal(signed(DIM_BITS + 10), name="vec_start_y")
        start_x = Signal(signed(DIM_BITS + 10), name="vec_start_x")
        m.d.comb += [start_y.eq(u.oy * d.stride_h - d.pad_top),
                     start_x.eq(u.ox * d.stride_w - d.pad_left)]  # fmt: skip
        iy0, u.ny = self._window(m, start_y, d.pool_h, d.height, "y")
        ix0, u.nx = self._window(m, start_x, d.pool_w, d.width, "x")
        u.window_addr = Signal(64, name="vec_window_addr")
        pixel = (u.img * d.height + iy0) * d.width + ix0
        m.d.comb += u.window_addr.eq(d.a_addr + pixel * d.channels + u.offset)
        return u

    def _requests(self, m: Module, u: SimpleNamespace) -> None:
        """The AR channel: each pass's bursts, one after another, ``max_reads`` in flight."""
        cfg = self._config
        u.req = Signal(name="vec_requesting")
        u.addr = Signal(_ADDR, name="vec_rd_addr")
        u.end = Signal(ADDR_BITS + 1, name="vec_rd_end")
        u.p_row = Signal(9, name="vec_p_row")
        u.p_col = Signal(9, name="vec_p_col")
        inflight = Signal(range(cfg.max_reads + 1), name="vec_inflight")
        ar, r = self.mem.ar, self.mem.r
        stop, nbeats = self._burst(m, u.addr, u.end, u.span, u.log_bus, "vec_rd")
        last_col = u.p_col + 1 == u.cols
        last_pass = last_col & (u.p_row + 1 == u.rows)
        m.d.comb += [
            ar.valid.eq((u.state == READ) & u.req & (inflight < cfg.max_reads)),
            ar.payload.addr.eq(u.addr),
            ar.payload.len.eq(nbeats - 1),
            ar.payload.size.eq(u.log_bus),
            ar.payload.burst.eq(BURST_INCR),
            ar.payload.id.eq(AXI_ID),
            ar.payload.user.eq(Mux(~u.pooling & u.p_col.any(), OPERANDS["b"], OPERANDS["a"])),
        ]
        ar_sent = ar.valid & ar.ready
        with m.If(ar_sent):
            with m.If(stop == u.end):  # the pass's last burst
                with m.If(last_pass):
                    m.d.sync += u.req.eq(0)
                with m.Elif(last_col):
                    nxt = (u.row_addr + u.row_bytes)[:ADDR_BITS]
                    m.d.sync += [u.row_addr.eq(nxt), u.pass_addr.eq(nxt), u.addr.eq(nxt),
                                 u.end.eq(nxt + u.run_bytes), u.p_row.eq(u.p_row + 1),
                                 u.p_col.eq(0)]  # fmt: skip
                with m.Else():
                    nxt = (u.pass_addr + u.col_step)[:ADDR_BITS]
                    m.d.sync += [u.pass_addr.eq(nxt), u.addr.eq(nxt),
                                 u.end.eq(nxt + u.run_bytes), u.p_col.eq(u.p_col + 1)]  # fmt: skip
            with m.Else():
                m.d.sync += u.addr.eq(stop)
        r_last = r.valid & r.ready & r.payload.last
        m.d.sync += inflight.eq(inflight + ar_sent - r_last)

    def _lanes(self, m: Module, u: SimpleNamespace) -> None:
        """The data side: each R beat folded into the run buffer, a byte lane per element;
        the output stage's bytes of the word being written."""
        cfg, d, r = self._config, self.desc, self.mem.r
        m.submodules.acc = acc = memory.Memory(shape=unsigned(32 * u.bus), depth=RUN_BEATS,
                                               init=[])  # fmt: skip
        rd_port = acc.read_port(domain="comb")
        wr_port = acc.write_port()
        u.d_beat = Signal(range(RUN_BEATS), name="vec_d_beat")
        u.d_pass = Signal(17, name="vec_d_pass")
        d_op = Signal(2, name="vec_d_operand")
        m.d.comb += r.ready.eq(1)
        take = r.valid & (u.state == READ)
        m.d.comb += d_op.eq(Mux(~u.pooling & u.d_pass[0], OPERANDS["b"], OPERANDS["a"]))
        m.d.comb += [self.taken.valid.eq(take), self.taken.payload.eq(d_op)]
        u.w_beat = Signal(range(RUN_BEATS + 1), name="vec_w_beat")
        u.writing = u.state == WRITE
        m.d.comb += rd_port.addr.eq(Mux(u.writing, u.w_beat, u.d_beat))
        u.magic = Signal(AVERAGE_BITS + 3, name="vec_magic")
        u.magic_shift = Signal(range(AVERAGE_BITS + 18), name="vec_magic_shift")
        folded, u.outs = [], []
        lo, hi = value_range(cfg.out_width, cfg.out_signed)
        bounds = (Mux(d.clamp, d.clamp_lo, lo), Mux(d.clamp, d.clamp_hi, hi))
        first, second = ~u.d_pass.any(), u.d_pass[0]
        for j in range(u.bus):
            raw = r.payload.data[8 * j : 8 * j + cfg.out_width]
            v = Signal(signed(10), name=f"vec_in{j}")
            m.d.comb += v.eq(raw.as_signed() if cfg.out_signed else raw)
            held = Signal(_LANE, name=f"vec_held{j}")
            m.d.comb += held.eq(rd_port.data[32 * j : 32 * (j + 1)])
            # the lane's scaling unit: an input (x or y, shifted) while reading, the sum after
            operand = Signal(signed(32), name=f"vec_operand{j}")
            zero = Mux(second, d.y_zero, d.x_zero)
            m.d.comb += operand.eq(Mux(u.writing, held, (v - zero) << ADD_LEFT_SHIFT))
            mult = Mux(u.writing, d.z_multiplier, Mux(second, d.y_multiplier, d.x_multiplier))
            shift = Mux(u.writing, d.z_shift, Mux(second, d.y_shift, d.x_shift))
            scaled = scale(m, operand, mult, shift, f"vec_scale{j}")
            new = Signal(_LANE, name=f"vec_fold{j}")
            with m.Switch(d.op):
                with m.Case(ADD):
                    m.d.comb += new.eq(Mux(first, scaled, held + scaled))
                with m.Case(AVERAGE_POOL):
                    m.d.comb += new.eq(Mux(first, v, held + v))
                with m.Default():  # max, max_pool
                    m.d.comb += new.eq(Mux(first | (v > held), v, held))
            folded.append(new)
            u.outs.append(self._output(m, held, scaled, u, bounds, j))
        m.d.comb += [wr_port.addr.eq(u.d_beat), wr_port.en.eq(take),
                     wr_port.data.eq(Cat(*folded))]  # fmt: skip
        u.reads_done = Signal(name="vec_reads_done")
        with m.If(take):
            with m.If(u.d_beat + 1 == u.beats):
                m.d.sync += [u.d_beat.eq(0), u.d_pass.eq(u.d_pass + 1)]
                with m.If(u.d_pass + 1 == u.count):
                    m.d.sync += u.reads_done.eq(1)
            with m.Else():
                m.d.sync += u.d_beat.eq(u.d_beat + 1)

    def _writes(self, m: Module, u: SimpleNamespace) -> None:
        """The AW, W and B channels: the run's output in bursts, ``max_writes`` unanswered."""
        cfg = self._config
        aw, w, b = self.mem.aw, self.mem.w, self.mem.b
        u.aw_addr = Signal(_ADDR, name="vec_aw_addr")
        u.aw_end = Signal(ADDR_BITS + 1, name="vec_aw_end")
        u.aw_on = Signal(name="vec_aw_on")
        u.outstanding = Signal(range(cfg.max_writes + 1), name="vec_outstanding")
        u.aw_stop, aw_beats = self._burst(m, u.aw_addr, u.aw_end, u.span, u.log_bus, "vec_wr")
        m.d.comb += [
            aw.valid.eq(u.writing & u.aw_on & (u.outstanding < cfg.max_writes)),
            aw.payload.addr.eq(u.aw_addr),
            aw.payload.len.eq(aw_beats - 1),
            aw.payload.size.eq(u.log_bus),
            aw.payload.burst.eq(BURST_INCR),
            aw.payload.id.eq(AXI_ID),
            aw.payload.user.eq(OPERANDS["c"]),
        ]
        u.aw_sent = aw.valid & aw.ready
        with m.If(u.aw_sent):
            m.d.sync += u.aw_addr.eq(u.aw_stop)
            with m.If(u.aw_stop == u.aw_end):
                m.d.sync += u.aw_on.eq(0)
        u.w_addr = Signal(_ADDR, name="vec_w_addr")
        w_next = (u.w_addr + u.bus)[:ADDR_BITS]
        u.last_w = u.w_beat + 1 == u.beats
        m.d.comb += [
            w.valid.eq(u.writing & (u.w_beat < u.beats)),
            w.payload.data.eq(Cat(*[o[:8] for o in u.outs])),
            w.payload.strb.eq((1 << u.bus) - 1),
            w.payload.last.eq(u.last_w | ~(w_next & (u.span - 1)).any()),
        ]
        u.w_sent = w.valid & w.ready
        with m.If(u.w_sent):
            m.d.sync += [u.w_beat.eq(u.w_beat + 1), u.w_addr.eq(w_next)]
        m.d.comb += b.ready.eq(1)
        m.d.sync += u.outstanding.eq(u.outstanding + u.aw_sent - (b.valid & b.ready))

    def _states(self, m: Module, u: SimpleNamespace) -> None:
        """Idle, a run's setup, reads, a wait cycle, writes, and the last responses' drain."""
        d = self.desc
        # an if-chain, not a switch: Amaranth's Verilog would leave a case per signal without
        # the states that do not assign it (Verilator's CASEINCOMPLETE)
        state = u.state
        with m.If(equals(state, IDLE)), m.If(self.start):
            pixel = d.channels >> u.log_bus
            total = Signal(64, name="vec_total_beats")
            m.d.comb += total.eq((d.batch * d.height * d.width * d.channels) >> u.log_bus)
            m.d.sync += [
                u.state.eq(SETUP),
                u.row_bytes.eq(d.width * d.channels),
                u.pixel_beats.eq(pixel),
                u.left.eq(Mux(u.pooling, pixel, total)),
                u.img.eq(0), u.oy.eq(0), u.ox.eq(0), u.offset.eq(0),
                u.out_addr.eq(d.c_addr),
            ]  # fmt: skip
        with m.Elif(state == SETUP):
            m.d.sync += [u.state.eq(READ), u.req.eq(1), u.p_row.eq(0), u.p_col.eq(0),
                         u.d_beat.eq(0), u.d_pass.eq(0), u.reads_done.eq(0)]  # fmt: skip
            first = Mux(u.pooling, u.window_addr[:ADDR_BITS], (d.a_addr + u.offset)[:ADDR_BITS])
            with m.If(u.pooling):
                m.d.sync += [u.rows.eq(u.ny), u.cols.eq(u.nx), u.count.eq(u.ny * u.nx),
                             u.col_step.eq(d.channels)]  # fmt: skip
            with m.Else():
                m.d.sync += [u.rows.eq(1), u.cols.eq(2), u.count.eq(2),
                             u.col_step.eq((d.b_addr - d.a_addr)[:ADDR_BITS])]  # fmt: skip
            m.d.sync += [u.row_addr.eq(first), u.pass_addr.eq(first), u.addr.eq(first),
                         u.end.eq(first + u.run_bytes)]  # fmt: skip
        with m.Elif(state == READ), m.If(u.reads_done & ~u.div_left.any()):
            m.d.sync += u.state.eq(WAIT)
        with m.Elif(state == WAIT):
            m.d.sync += [u.state.eq(WRITE), u.aw_on.eq(1), u.aw_addr.eq(u.out_addr),
                         u.aw_end.eq(u.out_addr + u.run_bytes), u.w_addr.eq(u.out_addr),
                         u.w_beat.eq(0)]  # fmt: skip
        with m.Elif(state == WRITE):
            w_done = (u.w_beat == u.beats) | (u.w_sent & u.last_w)
            aw_done = ~u.aw_on | (u.aw_sent & (u.aw_stop == u.aw_end))
            with m.If(w_done & aw_done):
                m.d.comb += self.run_done.eq(1)
                m.d.sync += u.out_addr.eq(u.out_addr + u.run_bytes)
                more = self._advance(m, u)
                m.d.sync += u.state.eq(Mux(more, SETUP, DRAIN))
        with m.Elif(state == DRAIN), m.If(~u.outstanding.any()):
            m.d.sync += u.state.eq(IDLE)

    @staticmethod
    def _window(m: Module, start, size, plane, axis: str):
        """The first input row (column) a window starting at ``start`` covers, and how many."""
        first = Signal(DIM_BITS, name=f"vec_i{axis}0")
        stop = Signal(signed(DIM_BITS + 11), name=f"vec_{axis}_stop")
        n = Signal(9, name=f"vec_n{axis}")
        m.d.comb += [
            first.eq(Mux(start < 0, 0, start)),
            stop.eq(start + size),
            n.eq(Mux(stop > plane, plane, stop) - first),
        ]
        return first, n

    @staticmethod
    def _burst(m: Module, addr, end, span: int, log_bus: int, name: str):
        """The burst from ``addr``: its end (at the run's end or a ``span`` boundary) and beats."""
        boundary = Signal(ADDR_BITS + 1, name=f"{name}_boundary")
        stop = Signal(ADDR_BITS + 1, name=f"{name}_stop")
        beats = Signal(ADDR_BITS + 1, name=f"{name}_beats")
        m.d.comb += [
            boundary.eq((addr | (span - 1)) + 1),
            stop.eq(Mux(boundary < end, boundary, end)),
            beats.eq((stop - addr) >> log_bus),
        ]
        return stop, beats

    def _output(self, m: Module, held, scaled, u: SimpleNamespace, bounds, j: int):
        """Lane ``j``'s output byte of the run buffer's word being written."""
        d = self.desc
        avg = Signal(signed(27), name=f"vec_avg{j}")
        magnitude = Signal(AVERAGE_BITS, name=f"vec_mag{j}")
        product = Signal(2 * AVERAGE_BITS + 3, name=f"vec_prod{j}")
        quotient = Signal(AVERAGE_BITS + 1, name=f"vec_quot{j}")
        m.d.comb += [
            magnitude.eq(Mux(held < 0, -held, held) + (u.count >> 1)),
            product.eq(magnitude * u.magic),
            quotient.eq(product >> u.magic_shift),
            avg.eq(Mux(held < 0, -quotient, quotient)),
        ]
        value = Signal(signed(36), name=f"vec_value{j}")
        with m.Switch(d.op):
            with m.Case(ADD):
                m.d.comb += value.eq(scaled + d.out_zero)
            with m.Case(AVERAGE_POOL):
                m.d.comb += value.eq(avg)
            with m.Default():
                m.d.comb += value.eq(held)
        return clamp(m, value, *bounds, f"vec_out{j}")

    def _divider(self, m: Module, count, magic, magic_shift, state):
        """``magic = ceil(2**(AVERAGE_BITS + l) / count)`` with ``l = ceil(log2(count))``,
        a quotient bit a cycle from the run's setup on (:data:`contract.vector.DIVIDE_CYCLES`
        cycles for an average; none otherwise): ``u * magic >> (AVERAGE_BITS + l)`` is then
        ``u // count`` for every ``u < 2**AVERAGE_BITS``."""
        d = self.desc
        left = Signal(range(DIVIDE_CYCLES + 1), name="vec_div_left")
        rem = Signal(18, name="vec_div_rem")
        quo = Signal(AVERAGE_BITS + 20, name="vec_div_quo")
        dividend_bits = Signal(range(AVERAGE_BITS + 18), name="vec_div_bits")
        with m.If((state == SETUP) & (d.op == AVERAGE_POOL)):
            # the count is known once SETUP registers it: start the cycle after
            m.d.sync += left.eq(DIVIDE_CYCLES)
        with m.Elif(left == DIVIDE_CYCLES):
            log = Signal(range(18), name="vec_div_log")
            below = count - 1
            m.d.comb += log.eq(0)
            for i in range(17):
                with m.If(below[i]):
                    m.d.comb += log.eq(i + 1)
            m.d.sync += [left.eq(left - 1), rem.eq(0), quo.eq(0),
                         dividend_bits.eq(AVERAGE_BITS + log),
                         magic_shift.eq(AVERAGE_BITS + log)]  # fmt: skip
        with m.Elif(left > 1):
            # the quotient bit at position (left - 2) of 2**bits - 1: ones below ``bits``
            bit = Signal(name="vec_div_bit")
            m.d.comb += bit.eq((left - 2) < dividend_bits)
            trial = Cat(bit, rem)
            fits = trial >= count
            m.d.sync += [rem.eq(Mux(fits, trial - count, trial)), quo.eq(Cat(fits, quo)),
                         left.eq(left - 1)]  # fmt: skip
        with m.Elif(left == 1):
            m.d.sync += [magic.eq(quo + 1), left.eq(0)]
        return left

    def _advance(self, m: Module, u: SimpleNamespace):
        """After a run: the next one's place; whether there is one."""
        d = self.desc
        more = Signal(name="vec_more")
        rest = u.left - u.beats
        with m.If(~u.pooling):
            m.d.comb += more.eq(rest.any())
            m.d.sync += [u.left.eq(rest), u.offset.eq(u.offset + u.run_bytes)]
        with m.Elif(rest.any()):  # the pixel's next slice
            m.d.comb += more.eq(1)
            m.d.sync += [u.left.eq(rest), u.offset.eq(u.offset + u.run_bytes)]
        with m.Else():  # the next output pixel
            last_x = u.ox + 1 == d.out_w
            last_y = u.oy + 1 == d.out_h
            m.d.comb += more.eq(~(last_x & last_y & (u.img + 1 == d.batch)))
            m.d.sync += [u.left.eq(u.pixel_beats), u.offset.eq(0),
                         u.ox.eq(Mux(last_x, 0, u.ox + 1))]  # fmt: skip
            with m.If(last_x):
                m.d.sync += u.oy.eq(Mux(last_y, 0, u.oy + 1))
                with m.If(last_y):
                    m.d.sync += u.img.eq(u.img + 1)
        return more
