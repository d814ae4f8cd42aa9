"""Tiling controllers: the loop nest over array-sized tiles of a GEMM held in the buffers.

Both controllers read their operands from the buffers with one cycle of latency
(:data:`contract.timing.READ_LATENCY`: ``valid`` is registered beside the SRAM's read), feed the
mesh, send each result vector to the accumulator buffer with its address, and hold ``busy`` one
past the last update's write (:data:`contract.timing.DONE_DELAY`, the ``finishing`` registers).
Loop bounds are compared against the command's dimensions as the loops run, so a ragged last
tile (a dimension that is not a multiple of the array) costs no division hardware.

A command may start while its operand banks are still loading: each read buffer has a pair of
inputs, ``*_open`` (the bank is full) and ``*_landed`` (how many of its words have landed, in
address order), and a read waits until its word has landed. Every mesh input is a valid flow,
so a wait is a gap in the flow (models.cycles.gated_counters follows it). The comparison reads
a registered copy of each read address, stepped beside the loop counters, so that no adder
stands between the registers and the sequencers' ``go`` (the clock's critical path otherwise).
"""

from __future__ import annotations

from amaranth import Module, Mux, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from systolic.contract import timing
from systolic.contract.config import ArrayConfig
from systolic.contract.interface import ADDR_BITS, DIM_BITS

from .array import Flow, OutputStationaryArray, StationaryArray
from .buffers import address_shape

__all__ = ["StationaryController", "OutputStationaryController"]

# Internal address arithmetic is wider than a buffer address, so that an address past the end of a
# buffer is seen (and flagged) instead of wrapping around silently.
_WIDE = unsigned(ADDR_BITS + DIM_BITS + 1)


def _update_layout(config: ArrayConfig) -> data.StructLayout:
    return data.StructLayout(
        {
            "addr": address_shape(),
            "data": StationaryArray.result_layout(config),
            "accumulate": 1,
        }
    )


class _Controller(wiring.Component):
    """Common ports: the problem (latched by the top when ``start`` is high), status, C updates."""

    def __init__(self, config: ArrayConfig, members: dict):
        self._config = config
        dim = unsigned(DIM_BITS)
        members |= {
            "start": In(1),
            "accumulate": In(1),  # add to C's old contents instead of overwriting them
            "busy": Out(1),
            "done": Out(1),  # one cycle, after the last result's update was issued
            "range_error": Out(1),  # some address fell outside its buffer (sticky until start)
            "update": Out(Flow(_update_layout(config))),
            "dim_p": In(dim),
            "dim_q": In(dim),
            "dim_r": In(dim),
        }
        super().__init__(members)

    def _check(self, m, enable, address, depth):
        with m.If(enable & (address >= depth)):
            m.d.sync += self.range_error.eq(1)

    def _landed(self, buffer: str, address):
        """Whether the word at ``address`` of ``buffer``'s bank may be read this cycle."""
        return getattr(self, f"{buffer}_open") | (address < getattr(self, f"{buffer}_landed"))


def _gates(*buffers: str) -> dict:
    """The ports that hold a read back until its word has landed: open by default (a command
    on banks loaded whole)."""
    out = {}
    for b in buffers:
        out[f"{b}_open"] = In(1, init=1)
        out[f"{b}_landed"] = In(unsigned(ADDR_BITS + 1))
    return out


class StationaryController(_Controller):
    """Controller of the WS and IS arrays, on the abstract problem ``Y[P,R] = X[P,Q] @ S[Q,R]``.

    WS: ``X = A`` (P = M), ``S = B`` (R = N), ``Y = C``. IS: ``X = B^T`` (P = N), ``S = A^T``
    (R = M), ``Y = C^T``. Buffer layouts (word = one edge vector, zero-padded by the host):
    ``S`` word ``(rt, q) = S[q, rt*cols:+cols]`` at ``s_base + rt*Q + q``; ``X`` word
    ``(qt, p) = X[p, qt*rows:+rows]`` at ``x_base + qt*P + p``; ``Y`` word ``(rt, p)`` at
    ``y_base + rt*P + p``.

    Tiles run ``rt`` outer, ``qt`` inner (the partial sums of one ``rt`` accumulate in Y). Three
    sequencers work at once:

    - preload: pushes tile ``i`` into bank ``i % 2`` (``rows`` cycles, last row first; rows past Q
      are zeros and read nothing), as soon as that bank holds no unconsumed tile and the tile that
      last used it released it (:attr:`StationaryArray.bank_release` cycles after its last vector:
      the cycle after, as the preload trails that vector through the mesh);
    - stream: streams the ``P`` vectors of tile ``i`` from the cycle after its preload ended;
    - write-back: sends result ``(rt, qt, p)`` to ``Y[rt, p]``, accumulating for ``qt > 0``.
    """

    def __init__(self, config: ArrayConfig, *, x_depth: int, s_depth: int, y_depth: int):
        self._depths = (x_depth, s_depth, y_depth)
        addr = address_shape()
        super().__init__(
            config,
            {
                "x_base": In(addr),
                "s_base": In(addr),
                "y_base": In(addr),
                "x_read": Out(Flow(addr)),
                "x_data": In(StationaryArray.stream_layout(config)["data"].shape),
                "s_read": Out(Flow(addr)),
                "s_data": In(StationaryArray.preload_layout(config)["data"].shape),
                "preload": Out(Flow(StationaryArray.preload_layout(config))),
                "stream": Out(Flow(StationaryArray.stream_layout(config))),
                "result": In(Flow(StationaryArray.result_layout(config))),
                **_gates("x", "s"),
            },
        )

    @property
    def release_wait(self) -> int:
        """``max(bank_release, 1)`` (:func:`contract.timing.release_wait`)."""
        return timing.release_wait(self._config)

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        rows, cols = cfg.rows, cfg.cols
        x_depth, s_depth, y_depth = self._depths
        P, Q, R = self.dim_p, self.dim_q, self.dim_r  # noqa: N806 (the problem's names)
        running = self.busy

        loaded = Signal(2, name="bank_loaded")  # bank holds a tile not yet fully streamed
        timers = [Signal(range(self.release_wait + 1), name=f"bank{b}_release") for b in (0, 1)]
        for t in timers:
            with m.If(t.any()):
                m.d.sync += t.eq(t - 1)
        set_loaded = Signal(2)
        clear_loaded = Signal(2)
        m.d.sync += loaded.eq((loaded | set_loaded) & ~clear_loaded)

        # -- preload sequencer ------------------------------------------------------------------
        pl_bank = Signal(name="pl_bank")
        pl_row = Signal(range(max(rows, 2)), name="pl_row")  # 1 bit even for one row
        pl_q0 = Signal(_WIDE, name="pl_q0")  # first K row of the tile
        pl_r0 = Signal(_WIDE, name="pl_r0")  # first output column of the tile
        pl_s_tile = Signal(_WIDE, name="pl_s_tile")  # rt * Q
        pl_finished = Signal(name="pl_finished")
        bank_free = ~Mux(pl_bank, loaded[1], loaded[0]) & ~Mux(pl_bank, timers[1], timers[0]).any()
        q = pl_q0 + (rows - 1) - pl_row
        s_addr = self.s_base + pl_s_tile + q
        # registered copies of q and s_addr for the landed comparison (see the module)
        pl_q = Signal(_WIDE, name="pl_q")
        pl_at = Signal(_WIDE, name="pl_at")
        s_in = (pl_q >= Q) | self._landed("s", pl_at)
        pl_go = running & ~pl_finished & (pl_row.any() | bank_free) & s_in
        pl_reads = pl_go & (q < Q)
        m.d.comb += [self.s_read.valid.eq(pl_reads), self.s_read.payload.eq(s_addr)]
        self._check(m, pl_reads, s_addr, s_depth)
        pl_zero = Signal(name="pl_zero")
        m.d.sync += [
            self.preload.valid.eq(pl_go),
            self.preload.payload.bank.eq(pl_bank),
            self.preload.payload.row.eq(pl_row),
            pl_zero.eq(~pl_reads),
        ]
        m.d.comb += self.preload.payload.data.eq(Mux(pl_zero, 0, self.s_data))
        with m.If(pl_go):
            with m.If(pl_row == rows - 1):
                m.d.sync += [pl_row.eq(0), pl_bank.eq(~pl_bank)]
                m.d.comb += set_loaded.eq(Mux(pl_bank, 0b10, 0b01))
                with m.If(pl_q0 + rows < Q):
                    m.d.sync += [
                        pl_q0.eq(pl_q0 + rows),
                        pl_q.eq(pl_q0 + 2 * rows - 1),
                        pl_at.eq(self.s_base + pl_s_tile + pl_q0 + 2 * rows - 1),
                    ]
                with m.Else():
                    m.d.sync += [
                        pl_q0.eq(0),
                        pl_r0.eq(pl_r0 + cols),
                        pl_s_tile.eq(pl_s_tile + Q),
                        pl_q.eq(rows - 1),
                        pl_at.eq(self.s_base + pl_s_tile + Q + rows - 1),
                    ]
                    with m.If(pl_r0 + cols >= R):
                        m.d.sync += pl_finished.eq(1)
            with m.Else():
                m.d.sync += [pl_row.eq(pl_row + 1), pl_q.eq(pl_q - 1), pl_at.eq(pl_at - 1)]

        # -- stream sequencer -------------------------------------------------------------------
        st_bank = Signal(name="st_bank")
        st_p = Signal(_WIDE, name="st_p")
        st_q0 = Signal(_WIDE, name="st_q0")
        st_r0 = Signal(_WIDE, name="st_r0")
        st_x_tile = Signal(_WIDE, name="st_x_tile")  # qt * P
        st_finished = Signal(name="st_finished")
        x_addr = self.x_base + st_x_tile + st_p
        st_at = Signal(_WIDE, name="st_at")  # x_addr, registered (see the module)
        st_go = (running & ~st_finished & (st_p.any() | Mux(st_bank, loaded[1], loaded[0]))
                 & self._landed("x", st_at))  # fmt: skip
        m.d.comb += [self.x_read.valid.eq(st_go), self.x_read.payload.eq(x_addr)]
        self._check(m, st_go, x_addr, x_depth)
        m.d.sync += [self.stream.valid.eq(st_go), self.stream.payload.bank.eq(st_bank)]
        m.d.comb += self.stream.payload.data.eq(self.x_data)
        with m.If(st_go):
            m.d.sync += st_at.eq(st_at + 1)  # the next vector, or the next tile's first
            with m.If(st_p == P - 1):
                m.d.sync += [st_p.eq(0), st_bank.eq(~st_bank)]
                m.d.comb += clear_loaded.eq(Mux(st_bank, 0b10, 0b01))
                for b, timer in enumerate(timers):
                    with m.If(st_bank == b):
                        m.d.sync += timer.eq(self.release_wait - 1)
                with m.If(st_q0 + rows < Q):
                    m.d.sync += [st_q0.eq(st_q0 + rows), st_x_tile.eq(st_x_tile + P)]
                with m.Else():
                    m.d.sync += [
                        st_q0.eq(0),
                        st_x_tile.eq(0),
                        st_r0.eq(st_r0 + cols),
                        st_at.eq(self.x_base),
                    ]
                    with m.If(st_r0 + cols >= R):
                        m.d.sync += st_finished.eq(1)
            with m.Else():
                m.d.sync += st_p.eq(st_p + 1)

        # -- write-back sequencer ---------------------------------------------------------------
        last_result = self._write_back(m, y_depth)

        _run_control(m, self, last_result)
        with m.If(self.start):
            m.d.sync += [
                pl_bank.eq(0), pl_row.eq(0), pl_q0.eq(0), pl_r0.eq(0), pl_s_tile.eq(0),
                pl_finished.eq(0), st_bank.eq(0), st_p.eq(0), st_q0.eq(0), st_r0.eq(0),
                st_x_tile.eq(0), st_finished.eq(0), loaded.eq(0), timers[0].eq(0),
                timers[1].eq(0), pl_q.eq(rows - 1), pl_at.eq(self.s_base + rows - 1),
                st_at.eq(self.x_base),
            ]  # fmt: skip
        return m

    def _write_back(self, m: Module, y_depth: int):
        """The write-back sequencer: result ``(rt, qt, p)`` to ``Y[rt, p]``, accumulating for
        ``qt > 0``; returns the strobe of the last result's update."""
        rows, cols = self._config.rows, self._config.cols
        P, Q, R = self.dim_p, self.dim_q, self.dim_r  # noqa: N806 (the problem's names)
        running = self.busy
        wb_p = Signal(_WIDE, name="wb_p")
        wb_q0 = Signal(_WIDE, name="wb_q0")
        wb_r0 = Signal(_WIDE, name="wb_r0")
        wb_y_tile = Signal(_WIDE, name="wb_y_tile")  # rt * P
        y_addr = self.y_base + wb_y_tile + wb_p
        got = self.result.valid & running
        m.d.comb += [
            self.update.valid.eq(got),
            self.update.payload.addr.eq(y_addr),
            self.update.payload.data.eq(self.result.payload),
            self.update.payload.accumulate.eq(self.accumulate | wb_q0.any()),
        ]
        self._check(m, got, y_addr, y_depth)
        last_result = Signal()
        with m.If(got):
            with m.If(wb_p == P - 1):
                m.d.sync += wb_p.eq(0)
                with m.If(wb_q0 + rows < Q):
                    m.d.sync += wb_q0.eq(wb_q0 + rows)
                with m.Else():
                    m.d.sync += [wb_q0.eq(0), wb_y_tile.eq(wb_y_tile + P), wb_r0.eq(wb_r0 + cols)]
                    m.d.comb += last_result.eq(wb_r0 + cols >= R)
            with m.Else():
                m.d.sync += wb_p.eq(wb_p + 1)
        with m.If(self.start):
            m.d.sync += [wb_p.eq(0), wb_q0.eq(0), wb_r0.eq(0), wb_y_tile.eq(0)]
        return last_result


def _run_control(m: Module, ctrl: _Controller, last_result) -> None:
    """``busy`` from ``start`` until :data:`contract.timing.DONE_DELAY` cycles after the last
    update (its write); ``done`` for the cycle after."""
    finishing = [Signal(name=f"finishing_{i}") for i in range(timing.DONE_DELAY)]
    m.d.sync += [s.eq(before) for s, before in zip(finishing, [last_result, *finishing[:-1]],
                                                    strict=True)]  # fmt: skip
    m.d.sync += ctrl.done.eq(0)
    with m.If(ctrl.start):
        m.d.sync += [ctrl.busy.eq(1), ctrl.range_error.eq(0), *[s.eq(0) for s in finishing]]
    with m.Elif(finishing[-1]):
        m.d.sync += [ctrl.busy.eq(0), ctrl.done.eq(1)]


class OutputStationaryController(_Controller):
    """Controller of the OS array, on ``C[M,N] = A[M,K] @ B[K,N]`` (P = M, Q = K, R = N).

    Buffer layouts (word = one edge vector, zero-padded by the host): A word
    ``(mt, k) = A[mt*rows:+rows, k]`` at ``a_base + mt*K + k``; B word ``(nt, k) = B[k,
    nt*cols:+cols]`` at ``b_base + nt*K + k``; C word ``(nt, m) = C[m, nt*cols:+cols]`` at
    ``c_base + nt*M + m``.

    Tiles run ``mt`` outer, ``nt`` inner, each streaming its K steps back to back. When
    ``K < rows`` the mesh's drain spacing needs ``rows - K`` idle cycles between tiles. Result
    row ``r`` of tile ``(mt, nt)`` goes to C word ``(nt, mt*rows + r)``; rows past M are dropped.
    """

    def __init__(self, config: ArrayConfig, *, a_depth: int, b_depth: int, c_depth: int):
        self._depths = (a_depth, b_depth, c_depth)
        addr = address_shape()
        layout = OutputStationaryArray.operands_layout(config)
        super().__init__(
            config,
            {
                "a_base": In(addr),
                "b_base": In(addr),
                "c_base": In(addr),
                "a_read": Out(Flow(addr)),
                "a_data": In(layout["a"].shape),
                "b_read": Out(Flow(addr)),
                "b_data": In(layout["b"].shape),
                "operands": Out(Flow(layout)),
                "result": In(Flow(OutputStationaryArray.result_layout(config))),
                **_gates("a", "b"),
            },
        )

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        rows, cols = cfg.rows, cfg.cols
        a_depth, b_depth, c_depth = self._depths
        M, K, N = self.dim_p, self.dim_q, self.dim_r  # noqa: N806 (the problem's names)
        running = self.busy

        # -- operand sequencer ------------------------------------------------------------------
        k = Signal(_WIDE, name="os_k")
        gap = Signal(range(rows + 1), name="os_gap")  # idle cycles owed before the next tile
        m0 = Signal(_WIDE, name="os_m0")
        n0 = Signal(_WIDE, name="os_n0")
        a_tile = Signal(_WIDE, name="os_a_tile")  # mt * K
        b_tile = Signal(_WIDE, name="os_b_tile")  # nt * K
        finished = Signal(name="os_finished")
        a_addr = self.a_base + a_tile + k
        b_addr = self.b_base + b_tile + k
        a_at = Signal(_WIDE, name="os_a_at")  # a_addr and b_addr, registered (see the module)
        b_at = Signal(_WIDE, name="os_b_at")
        go = (running & ~finished & ~gap.any() & self._landed("a", a_at)
              & self._landed("b", b_at))  # fmt: skip
        m.d.comb += [
            self.a_read.valid.eq(go),
            self.a_read.payload.eq(a_addr),
            self.b_read.valid.eq(go),
            self.b_read.payload.eq(b_addr),
        ]
        self._check(m, go, a_addr, a_depth)
        self._check(m, go, b_addr, b_depth)
        last = k == K - 1
        m.d.sync += [self.operands.valid.eq(go), self.operands.payload.last.eq(go & last)]
        m.d.comb += [
            self.operands.payload.a.eq(self.a_data),
            self.operands.payload.b.eq(self.b_data),
        ]
        with m.If(gap.any()):
            m.d.sync += gap.eq(gap - 1)
        with m.If(go):
            m.d.sync += [a_at.eq(a_at + 1), b_at.eq(b_at + 1)]  # the next step's words
            with m.If(last):
                m.d.sync += k.eq(0)
                with m.If(rows > K):
                    m.d.sync += gap.eq(rows - K)
                with m.If(n0 + cols < N):  # the next B tile, the same A tile again
                    m.d.sync += [
                        n0.eq(n0 + cols),
                        b_tile.eq(b_tile + K),
                        a_at.eq(self.a_base + a_tile),
                    ]
                with m.Else():  # the next A tile, B from its first tile
                    m.d.sync += [
                        n0.eq(0),
                        b_tile.eq(0),
                        m0.eq(m0 + rows),
                        a_tile.eq(a_tile + K),
                        b_at.eq(self.b_base),
                    ]
                    with m.If(m0 + rows >= M):
                        m.d.sync += finished.eq(1)
            with m.Else():
                m.d.sync += k.eq(k + 1)

        # -- write-back sequencer ---------------------------------------------------------------
        wb_r = Signal(range(max(rows, 2)), name="wb_r")  # 1 bit even for one row
        wb_m0 = Signal(_WIDE, name="wb_m0")
        wb_n0 = Signal(_WIDE, name="wb_n0")
        wb_c_tile = Signal(_WIDE, name="wb_c_tile")  # nt * M
        row = wb_m0 + wb_r
        c_addr = self.c_base + wb_c_tile + row
        got = self.result.valid & running
        keep = got & (row < M)
        m.d.comb += [
            self.update.valid.eq(keep),
            self.update.payload.addr.eq(c_addr),
            self.update.payload.data.eq(self.result.payload),
            self.update.payload.accumulate.eq(self.accumulate),
        ]
        self._check(m, keep, c_addr, c_depth)
        last_result = Signal()
        with m.If(got):
            with m.If(wb_r == rows - 1):
                m.d.sync += wb_r.eq(0)
                with m.If(wb_n0 + cols < N):
                    m.d.sync += [wb_n0.eq(wb_n0 + cols), wb_c_tile.eq(wb_c_tile + M)]
                with m.Else():
                    m.d.sync += [wb_n0.eq(0), wb_c_tile.eq(0), wb_m0.eq(wb_m0 + rows)]
                    m.d.comb += last_result.eq(wb_m0 + rows >= M)
            with m.Else():
                m.d.sync += wb_r.eq(wb_r + 1)

        _run_control(m, self, last_result)
        with m.If(self.start):
            m.d.sync += [
                k.eq(0), gap.eq(0), m0.eq(0), n0.eq(0), a_tile.eq(0), b_tile.eq(0),
                finished.eq(0), wb_r.eq(0), wb_m0.eq(0), wb_n0.eq(0), wb_c_tile.eq(0),
                a_at.eq(self.a_base), b_at.eq(self.b_base),
            ]  # fmt: skip
        return m
