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
        cfg, d = self._config, self.desc
        bus = cfg.bus_width // 8
        log_bus = int(math.log2(bus))
        span = cfg.max_burst * bus
        state = Signal(range(6), name="vec_state")
        m.d.comb += self.idle.eq(state == IDLE)
        pooling = d.op[1]
        # -- the walk: the next run's place ---------------------------------------------------
        row_bytes = Signal(_ADDR, name="vec_row_bytes")  # an input row: W pixels of C bytes
        pixel_beats = Signal(DIM_BITS, name="vec_pixel_beats")
        left = Signal(ADDR_BITS + 1, name="vec_left")  # beats left: of the tensor, or the pixel
        img = Signal(DIM_BITS, name="vec_img")
        oy = Signal(DIM_BITS, name="vec_oy")
        ox = Signal(DIM_BITS, name="vec_ox")
        offset = Signal(_ADDR, name="vec_offset")  # elementwise: of the tensor; pooling: pixel
        out_addr = Signal(_ADDR, name="vec_out_addr")
        beats = Signal(range(RUN_BEATS + 1), name="vec_beats")  # of the current run
        m.d.comb += beats.eq(Mux(left > RUN_BEATS, RUN_BEATS, left))
        # -- the run's passes (set in SETUP) ------------------------------------------------------
        rows = Signal(9, name="vec_rows")
        cols = Signal(9, name="vec_cols")
        col_step = Signal(_ADDR, name="vec_col_step")
        row_addr = Signal(_ADDR, name="vec_row_addr")  # the first pass of the window's row
        pass_addr = Signal(_ADDR, name="vec_pass_addr")  # the current pass's first byte
        count = Signal(17, name="vec_count")
        start_y = Signal(signed(DIM_BITS + 10), name="vec_start_y")
        start_x = Signal(signed(DIM_BITS + 10), name="vec_start_x")
        m.d.comb += [start_y.eq(oy * d.stride_h - d.pad_top),
                     start_x.eq(ox * d.stride_w - d.pad_left)]  # fmt: skip
        iy0, ny = self._window(m, start_y, d.pool_h, d.height, "y")
        ix0, nx = self._window(m, start_x, d.pool_w, d.width, "x")
        window_addr = Signal(64, name="vec_window_addr")
        m.d.comb += window_addr.eq(d.a_addr + ((img * d.height + iy0) * d.width + ix0) * d.channels
                                   + offset)  # fmt: skip
        m.d.comb += self.run_done.eq(0)
        # -- the request side: the passes' bursts -----------------------------------------------
        req = Signal(name="vec_requesting")
        addr = Signal(_ADDR, name="vec_rd_addr")
        end = Signal(ADDR_BITS + 1, name="vec_rd_end")
        p_row = Signal(9, name="vec_p_row")
        p_col = Signal(9, name="vec_p_col")
        inflight = Signal(range(cfg.max_reads + 1), name="vec_inflight")
        ar, r = self.mem.ar, self.mem.r
        stop, nbeats = self._burst(m, addr, end, span, log_bus, "vec_rd")
        last_col = p_col + 1 == cols
        last_pass = last_col & (p_row + 1 == rows)
        m.d.comb += [
            ar.valid.eq((state == READ) & req & (inflight < cfg.max_reads)),
            ar.payload.addr.eq(addr),
            ar.payload.len.eq(nbeats - 1),
            ar.payload.size.eq(log_bus),
            ar.payload.burst.eq(BURST_INCR),
            ar.payload.id.eq(AXI_ID),
            ar.payload.user.eq(Mux(~pooling & p_col.any(), OPERANDS["b"], OPERANDS["a"])),
        ]
        ar_sent = ar.valid & ar.ready
        run_bytes = beats << log_bus
        with m.If(ar_sent):
            with m.If(stop == end):  # the pass's last burst
                with m.If(last_pass):
                    m.d.sync += req.eq(0)
                with m.Elif(last_col):
                    nxt = (row_addr + row_bytes)[:ADDR_BITS]
                    m.d.sync += [row_addr.eq(nxt), pass_addr.eq(nxt), addr.eq(nxt),
                                 end.eq(nxt + run_bytes), p_row.eq(p_row + 1),
                                 p_col.eq(0)]  # fmt: skip
                with m.Else():
                    nxt = (pass_addr + col_step)[:ADDR_BITS]
                    m.d.sync += [pass_addr.eq(nxt), addr.eq(nxt), end.eq(nxt + run_bytes),
                                 p_col.eq(p_col + 1)]  # fmt: skip
            with m.Else():
                m.d.sync += addr.eq(stop)
        r_last = r.valid & r.ready & r.payload.last
        m.d.sync += inflight.eq(inflight + ar_sent - r_last)
        # -- the data side: beats folded into the run buffer ------------------------------------
        m.submodules.acc = acc = memory.Memory(shape=unsigned(32 * bus), depth=RUN_BEATS, init=[])
        rd_port = acc.read_port(domain="comb")
        wr_port = acc.write_port()
        d_beat = Signal(range(RUN_BEATS), name="vec_d_beat")
        d_pass = Signal(17, name="vec_d_pass")
        d_op = Signal(2, name="vec_d_operand")
        m.d.comb += r.ready.eq(1)
        take = r.valid & (state == READ)
        m.d.comb += d_op.eq(Mux(~pooling & d_pass[0], OPERANDS["b"], OPERANDS["a"]))
        m.d.comb += [self.taken.valid.eq(take), self.taken.payload.eq(d_op)]
        w_beat = Signal(range(RUN_BEATS + 1), name="vec_w_beat")
        writing = state == WRITE
        m.d.comb += rd_port.addr.eq(Mux(writing, w_beat, d_beat))
        magic = Signal(AVERAGE_BITS + 3, name="vec_magic")
        magic_shift = Signal(range(AVERAGE_BITS + 18), name="vec_magic_shift")
        folded, outs = [], []
        lo, hi = value_range(cfg.out_width, cfg.out_signed)
        floor = Mux(d.clamp, d.clamp_lo, lo)
        ceiling = Mux(d.clamp, d.clamp_hi, hi)
        for j in range(bus):
            raw = r.payload.data[8 * j : 8 * j + cfg.out_width]
            v = Signal(signed(10), name=f"vec_in{j}")
            m.d.comb += v.eq(raw.as_signed() if cfg.out_signed else raw)
            held = Signal(_LANE, name=f"vec_held{j}")
            m.d.comb += held.eq(rd_port.data[32 * j : 32 * (j + 1)])
            # the lane's scaling unit: an input (x or y, shifted) while reading, the sum after
            second = d_pass[0]
            operand = Signal(signed(32), name=f"vec_operand{j}")
            zero = Mux(second, d.y_zero, d.x_zero)
            m.d.comb += operand.eq(Mux(writing, held, (v - zero) << ADD_LEFT_SHIFT))
            mult = Mux(writing, d.z_multiplier, Mux(second, d.y_multiplier, d.x_multiplier))
            shift = Mux(writing, d.z_shift, Mux(second, d.y_shift, d.x_shift))
            scaled = scale(m, operand, mult, shift, f"vec_scale{j}")
            first = ~d_pass.any()
            new = Signal(_LANE, name=f"vec_fold{j}")
            with m.Switch(d.op):
                with m.Case(ADD):
                    m.d.comb += new.eq(Mux(first, scaled, held + scaled))
                with m.Case(AVERAGE_POOL):
                    m.d.comb += new.eq(Mux(first, v, held + v))
                with m.Default():  # max, max_pool
                    m.d.comb += new.eq(Mux(first | (v > held), v, held))
            folded.append(new)
            outs.append(self._output(m, held, scaled, count, magic, magic_shift, floor, ceiling,
                                     j))  # fmt: skip
        m.d.comb += [
            wr_port.addr.eq(d_beat),
            wr_port.en.eq(take),
            wr_port.data.eq(Cat(*folded)),
        ]
        reads_done = Signal(name="vec_reads_done")
        with m.If(take):
            with m.If(d_beat + 1 == beats):
                m.d.sync += [d_beat.eq(0), d_pass.eq(d_pass + 1)]
                with m.If(d_pass + 1 == count):
                    m.d.sync += reads_done.eq(1)
            with m.Else():
                m.d.sync += d_beat.eq(d_beat + 1)
        # -- the reciprocal of an average's count -------------------------------------------------
        div_left = self._divider(m, count, magic, magic_shift, state)
        # -- the write side -----------------------------------------------------------------------
        aw, w, b = self.mem.aw, self.mem.w, self.mem.b
        aw_addr = Signal(_ADDR, name="vec_aw_addr")
        aw_end = Signal(ADDR_BITS + 1, name="vec_aw_end")
        aw_on = Signal(name="vec_aw_on")
        outstanding = Signal(range(cfg.max_writes + 1), name="vec_outstanding")
        aw_stop, aw_beats = self._burst(m, aw_addr, aw_end, span, log_bus, "vec_wr")
        m.d.comb += [
            aw.valid.eq(writing & aw_on & (outstanding < cfg.max_writes)),
            aw.payload.addr.eq(aw_addr),
            aw.payload.len.eq(aw_beats - 1),
            aw.payload.size.eq(log_bus),
            aw.payload.burst.eq(BURST_INCR),
            aw.payload.id.eq(AXI_ID),
            aw.payload.user.eq(OPERANDS["c"]),
        ]
        aw_sent = aw.valid & aw.ready
        with m.If(aw_sent):
            m.d.sync += aw_addr.eq(aw_stop)
            with m.If(aw_stop == aw_end):
                m.d.sync += aw_on.eq(0)
        w_addr = Signal(_ADDR, name="vec_w_addr")
        w_next = (w_addr + bus)[:ADDR_BITS]
        last_w = w_beat + 1 == beats
        m.d.comb += [
            w.valid.eq(writing & (w_beat < beats)),
            w.payload.data.eq(Cat(*[o[:8] for o in outs])),
            w.payload.strb.eq((1 << bus) - 1),
            w.payload.last.eq(last_w | ~(w_next & (span - 1)).any()),
        ]
        w_sent = w.valid & w.ready
        with m.If(w_sent):
            m.d.sync += [w_beat.eq(w_beat + 1), w_addr.eq(w_next)]
        m.d.comb += b.ready.eq(1)
        m.d.sync += outstanding.eq(outstanding + aw_sent - (b.valid & b.ready))
        # -- the states ---------------------------------------------------------------------------
        with m.Switch(state):
            with m.Case(IDLE), m.If(self.start):
                pixel = d.channels >> log_bus
                total = Signal(64, name="vec_total_beats")
                m.d.comb += total.eq((d.batch * d.height * d.width * d.channels) >> log_bus)
                m.d.sync += [
                    state.eq(SETUP),
                    row_bytes.eq(d.width * d.channels),
                    pixel_beats.eq(pixel),
                    left.eq(Mux(pooling, pixel, total)),
                    img.eq(0), oy.eq(0), ox.eq(0), offset.eq(0),
                    out_addr.eq(d.c_addr),
                ]  # fmt: skip
            with m.Case(SETUP):
                m.d.sync += [state.eq(READ), req.eq(1), p_row.eq(0), p_col.eq(0),
                             d_beat.eq(0), d_pass.eq(0), reads_done.eq(0)]  # fmt: skip
                with m.If(pooling):
                    first = window_addr[:ADDR_BITS]
                    m.d.sync += [rows.eq(ny), cols.eq(nx), count.eq(ny * nx),
                                 col_step.eq(d.channels), row_addr.eq(first),
                                 pass_addr.eq(first), addr.eq(first),
                                 end.eq(first + run_bytes)]  # fmt: skip
                with m.Else():
                    first = (d.a_addr + offset)[:ADDR_BITS]
                    m.d.sync += [rows.eq(1), cols.eq(2), count.eq(2),
                                     col_step.eq((d.b_addr - d.a_addr)[:ADDR_BITS]),
                                 row_addr.eq(first), pass_addr.eq(first), addr.eq(first),
                                 end.eq(first + run_bytes)]  # fmt: skip
            with m.Case(READ), m.If(reads_done & ~div_left.any()):
                m.d.sync += [state.eq(WAIT)]
            with m.Case(WAIT):
                m.d.sync += [state.eq(WRITE), aw_on.eq(1), aw_addr.eq(out_addr),
                             aw_end.eq(out_addr + run_bytes), w_addr.eq(out_addr),
                             w_beat.eq(0)]  # fmt: skip
            with m.Case(WRITE):
                w_done = (w_beat == beats) | (w_sent & last_w)
                aw_done = ~aw_on | (aw_sent & (aw_stop == aw_end))
                with m.If(w_done & aw_done):
                    m.d.comb += self.run_done.eq(1)
                    m.d.sync += out_addr.eq(out_addr + run_bytes)
                    more = self._advance(m, d, left, beats, offset, pixel_beats, img, oy, ox,
                                         pooling, run_bytes)  # fmt: skip
                    m.d.sync += state.eq(Mux(more, SETUP, DRAIN))
            with m.Case(DRAIN), m.If(~outstanding.any()):
                m.d.sync += state.eq(IDLE)
        return m

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

    def _output(self, m: Module, held, scaled, count, magic, magic_shift, floor, ceiling, j):
        """Lane ``j``'s output byte of the run buffer's word being written."""
        d = self.desc
        avg = Signal(signed(27), name=f"vec_avg{j}")
        magnitude = Signal(AVERAGE_BITS, name=f"vec_mag{j}")
        product = Signal(2 * AVERAGE_BITS + 3, name=f"vec_prod{j}")
        quotient = Signal(AVERAGE_BITS + 1, name=f"vec_quot{j}")
        m.d.comb += [
            magnitude.eq(Mux(held < 0, -held, held) + (count >> 1)),
            product.eq(magnitude * magic),
            quotient.eq(product >> magic_shift),
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
        return clamp(m, value, floor, ceiling, f"vec_out{j}")

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

    @staticmethod
    def _advance(m: Module, d, left, beats, offset, pixel_beats, img, oy, ox, pooling, run_bytes):
        """After a run: the next one's place; whether there is one."""
        more = Signal(name="vec_more")
        rest = left - beats
        with m.If(~pooling):
            m.d.comb += more.eq(rest.any())
            m.d.sync += [left.eq(rest), offset.eq(offset + run_bytes)]
        with m.Elif(rest.any()):  # the pixel's next slice
            m.d.comb += more.eq(1)
            m.d.sync += [left.eq(rest), offset.eq(offset + run_bytes)]
        with m.Else():  # the next output pixel
            last_x = ox + 1 == d.out_w
            last_y = oy + 1 == d.out_h
            m.d.comb += more.eq(~(last_x & last_y & (img + 1 == d.batch)))
            m.d.sync += [left.eq(pixel_beats), offset.eq(0), ox.eq(Mux(last_x, 0, ox + 1))]
            with m.If(last_x):
                m.d.sync += oy.eq(Mux(last_y, 0, oy + 1))
                with m.If(last_y):
                    m.d.sync += img.eq(img + 1)
        return more
