"""The systolic meshes: PEs wired edge to edge, with input skew and output de-skew at the borders.

Both meshes take whole edge vectors in one cycle and return whole output vectors in one cycle; the
triangular skew and de-skew shift registers inside turn them into and out of the diagonal wavefront
the PEs need. Neither mesh can stall: its input and output are valid/payload flows with no ready.
"""

from __future__ import annotations

from amaranth import Module, Shape, Signal, signed, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from systolic.contract import timing
from systolic.contract.config import ArrayConfig, Dataflow

from .fp import arithmetic
from .pe import OutputStationaryPE, StationaryPE

__all__ = ["Flow", "StationaryArray", "OutputStationaryArray"]


class Flow(wiring.Signature):
    """A ``valid`` strobe and a ``payload``; no back-pressure: the receiver is always ready."""

    def __init__(self, payload_shape):
        super().__init__({"valid": Out(1), "payload": Out(payload_shape)})


def operand_shape(width: int, is_signed: bool) -> Shape:
    return signed(width) if is_signed else unsigned(width)


def _delay(m: Module, value, cycles: int, name: str):
    """``value`` (a signal or a view) delayed by ``cycles`` registers named ``{name}_{i}``."""
    for i in range(cycles):
        reg = Signal(value.shape(), name=f"{name}_{i}")
        m.d.sync += reg.eq(value)
        value = reg
    return value


def _tree_or(values):
    """OR-reduce as a balanced tree (a linear chain recurses too deeply in Amaranth)."""
    if len(values) == 1:
        return values[0]
    half = len(values) // 2
    return _tree_or(values[:half]) | _tree_or(values[half:])


def _grid(m: Module, config: ArrayConfig, make_pe) -> list[list]:
    """``rows x cols`` PEs from ``make_pe()``, added to ``m`` as ``pe_<r>_<c>``."""
    pes = [[make_pe() for _ in range(config.cols)] for _ in range(config.rows)]
    for r, row in enumerate(pes):
        for c, pe in enumerate(row):
            m.submodules[f"pe_{r}_{c}"] = pe
    return pes


def _feed_rows(m: Module, pes: list[list], lane_fields) -> None:
    """Feed each row's eastbound lane (``lane_fields(r)``) through ``r`` skew registers into its
    first PE, and chain every PE's ``east`` to its neighbour's ``west``."""
    for r, row in enumerate(pes):
        lane = Signal(row[0].west.shape(), name=f"skew_row{r}_in")
        m.d.comb += [getattr(lane, name).eq(value) for name, value in lane_fields(r).items()]
        m.d.comb += row[0].west.eq(_delay(m, lane, r, f"skew_row{r}"))
        for west, pe in zip(row, row[1:], strict=False):
            m.d.comb += pe.west.eq(west.east)


class _Array(wiring.Component):
    """Common parts: the configuration and the result flow."""

    def __init__(self, config: ArrayConfig, members: dict):
        if not isinstance(config, ArrayConfig):
            raise TypeError(f"config must be an ArrayConfig, not {config!r}")
        self._config = config
        members["result"] = Out(Flow(self.result_layout(config)))
        super().__init__(members)

    @property
    def config(self) -> ArrayConfig:
        return self._config

    @staticmethod
    def acc_shape(config: ArrayConfig) -> Shape:
        return operand_shape(config.acc_width, config.c_signed)

    @classmethod
    def result_layout(cls, config: ArrayConfig) -> data.ArrayLayout:
        """One output per column."""
        return data.ArrayLayout(cls.acc_shape(config), config.cols)


class StationaryArray(_Array):
    """Weight- or input-stationary mesh: ``rows x cols`` :class:`StationaryPE`.

    WS computes ``C[m, n0:n0+cols] = A[m, k0:k0+rows] @ B[k0:k0+rows, n0:n0+cols]``: B stays, A
    streams. IS is the same mesh on the transposed problem, ``C^T = B^T A^T``: A stays (PE
    ``(r, c)`` holds ``A[m0+c, k0+r]``), B streams one column ``B[k0:k0+rows, n]`` a cycle, and
    each result is a column ``C[m0:m0+cols, n]``.

    Ports
    -----
    preload : Flow({data: cols x stationary, bank, row})
        While ``valid``, shifts one row of the stationary tile into bank ``bank`` from the north.
        A tile takes :attr:`preload_cycles` cycles, **last row first** (row ``rows-1`` is
        pushed first and ends at the bottom); ``row`` counts them, ``0 .. rows-1``. The preload
        follows the stream's wavefront: column ``c`` takes it ``c`` cycles late (as the stream
        reaches column ``c``), and PE row ``r`` shifts only from the tile's ``r``-th row on, when
        the tile's data reaches it. So PE ``(r, c)`` is first overwritten ``r + c`` cycles after
        the tile's first row entered: a bank may be preloaded right after the last vector that
        uses it (:attr:`bank_release` is 0).
    stream : Flow({data: rows x streaming, bank})
        One streaming vector a cycle, multiplied with the tile in bank ``bank``.
    result : Flow(cols x accumulator)
        The vector product, :attr:`latency` cycles after its input vector entered ``stream``.

    Bank hazards, which the feeder must respect: a stream vector may use a bank from the cycle
    after the last preload cycle of that bank; a bank may be preloaded again from
    :attr:`bank_release` cycles after the last stream vector using it entered (0: in the same
    cycle, the preload then trails that vector through the mesh).
    """

    def __init__(self, config: ArrayConfig):
        if config.dataflow is Dataflow.OS:
            raise ValueError(
                "StationaryArray builds the 'ws' and 'is' dataflows; use "
                "OutputStationaryArray for 'os'"
            )
        super().__init__(
            config,
            {
                "preload": In(Flow(self.preload_layout(config))),
                "stream": In(Flow(self.stream_layout(config))),
            },
        )

    @staticmethod
    def stationary_shape(config: ArrayConfig) -> Shape:
        """B (weights) for WS, A (inputs) for IS."""
        if config.dataflow is Dataflow.WS:
            return operand_shape(config.b_width, config.b_signed)
        return operand_shape(config.a_width, config.a_signed)

    @staticmethod
    def streaming_shape(config: ArrayConfig) -> Shape:
        """A for WS, B for IS."""
        if config.dataflow is Dataflow.WS:
            return operand_shape(config.a_width, config.a_signed)
        return operand_shape(config.b_width, config.b_signed)

    @classmethod
    def preload_layout(cls, config: ArrayConfig) -> data.StructLayout:
        return data.StructLayout({
            "data": data.ArrayLayout(cls.stationary_shape(config), config.cols),
            "bank": 1,
            "row": range(max(config.rows, 2)),
        })  # fmt: skip

    @classmethod
    def stream_layout(cls, config: ArrayConfig) -> data.StructLayout:
        return data.StructLayout(
            {"data": data.ArrayLayout(cls.streaming_shape(config), config.rows), "bank": 1}
        )

    @property
    def latency(self) -> int:
        """``rows + cols - 1`` (:func:`contract.timing.latency`)."""
        return timing.latency(self._config)

    @property
    def preload_cycles(self) -> int:
        """``rows`` (:func:`contract.timing.preload_cycles`)."""
        return timing.preload_cycles(self._config)

    @property
    def bank_release(self) -> int:
        """``0`` (:func:`contract.timing.bank_release`)."""
        return timing.bank_release(self._config)

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        pes = _grid(
            m,
            cfg,
            lambda: StationaryPE(
                stream_shape=self.streaming_shape(cfg),
                stationary_shape=self.stationary_shape(cfg),
                acc_shape=self.acc_shape(cfg),
                arithmetic=arithmetic(cfg),
            ),
        )
        stream = self.stream
        _feed_rows(m, pes, lambda r: {"x": stream.payload.data[r], "valid": stream.valid,
                                      "bank": stream.payload.bank})  # fmt: skip
        # The preload, skewed by column like the stream: its flags through one shared chain, each
        # column's data through its own triangle of registers.
        preload = self.preload
        flag_layout = {"valid": 1, "bank": 1, "row": preload.payload.row.shape()}
        flags = Signal(data.StructLayout(flag_layout), name="pskew_ctl_in")
        m.d.comb += [flags.valid.eq(preload.valid), flags.bank.eq(preload.payload.bank),
                     flags.row.eq(preload.payload.row)]  # fmt: skip
        column_flags = [flags]
        for c in range(1, cfg.cols):
            column_flags.append(_delay(m, column_flags[-1], 1, f"pskew_ctl{c}"))
        for r, row in enumerate(pes):
            for c, pe in enumerate(row):
                f = column_flags[c]
                # row r shifts once the tile's first row (bound for the bottom) reaches it
                reached = f.valid if r == 0 else f.valid & (f.row >= r)
                m.d.comb += [pe.load.eq(reached), pe.load_bank.eq(f.bank)]
                if r == 0:
                    skewed = _delay(m, preload.payload.data[c], c, f"pskew_col{c}")
                    m.d.comb += [pe.psum_in.eq(0), pe.w_in.eq(skewed)]
                else:
                    north = pes[r - 1][c]
                    m.d.comb += [pe.psum_in.eq(north.psum_out), pe.w_in.eq(north.w_out)]
        for c, bottom in enumerate(pes[-1]):
            deskewed = _delay(m, bottom.psum_out, cfg.cols - 1 - c, f"deskew_col{c}")
            m.d.comb += self.result.payload[c].eq(deskewed)
        m.d.comb += self.result.valid.eq(pes[-1][-1].east.valid)
        return m


class OutputStationaryArray(_Array):
    """Output-stationary mesh: ``rows x cols`` :class:`OutputStationaryPE`.

    Computes the tile ``C[m0:m0+rows, n0:n0+cols] = A[m0:m0+rows, :] @ B[:, n0:n0+cols]`` over any
    reduction length K: PE ``(r, c)`` accumulates ``C[m0+r, n0+c]``.

    Ports
    -----
    operands : Flow({a: rows x A, b: cols x B, last})
        One reduction step a cycle: the column ``A[m0:m0+rows, k]`` and the row
        ``B[k, n0:n0+cols]``. ``last`` marks the step that finishes the tile; the next tile may
        start the very next cycle.
    result : Flow(cols x accumulator)
        The finished tile, one row per cycle in order ``0 .. rows-1``: row ``r`` leaves
        ``latency + r`` cycles after the ``last`` step entered.

    Each column reads its finished accumulators over one shared output path, one row per cycle,
    so the ``last`` steps of consecutive tiles must be at least :attr:`drain_cycles` cycles apart
    (tiles with ``K >= rows`` stream back to back; shorter ones need idle steps between them).
    """

    def __init__(self, config: ArrayConfig):
        if config.dataflow is not Dataflow.OS:
            raise ValueError(
                "OutputStationaryArray builds the 'os' dataflow; use "
                "StationaryArray for 'ws' and 'is'"
            )
        super().__init__(config, {"operands": In(Flow(self.operands_layout(config)))})

    @staticmethod
    def operands_layout(config: ArrayConfig) -> data.StructLayout:
        return data.StructLayout(
            {
                "a": data.ArrayLayout(operand_shape(config.a_width, config.a_signed), config.rows),
                "b": data.ArrayLayout(operand_shape(config.b_width, config.b_signed), config.cols),
                "last": 1,
            }
        )

    @property
    def latency(self) -> int:
        """``cols`` to result row 0, ``cols + r`` to row ``r`` (:func:`contract.timing.latency`)."""
        return timing.latency(self._config)

    @property
    def drain_cycles(self) -> int:
        """``rows`` (:func:`contract.timing.drain_cycles`)."""
        return timing.drain_cycles(self._config)

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        acc_shape = self.acc_shape(cfg)
        layout = self.operands_layout(cfg)
        pes = _grid(
            m,
            cfg,
            lambda: OutputStationaryPE(
                a_shape=layout["a"].shape.elem_shape,
                b_shape=layout["b"].shape.elem_shape,
                acc_shape=acc_shape,
                arithmetic=arithmetic(cfg),
            ),
        )
        ops = self.operands
        _feed_rows(m, pes, lambda r: {"a": ops.payload.a[r], "valid": ops.valid,
                                      "last": ops.payload.last})  # fmt: skip
        for r, row in enumerate(pes):
            for c, pe in enumerate(row):
                if r == 0:
                    m.d.comb += pe.b_in.eq(_delay(m, ops.payload.b[c], c, f"skew_col{c}"))
                else:
                    m.d.comb += pe.b_in.eq(pes[r - 1][c].b_out)
        for c in range(cfg.cols):
            column = [row[c] for row in pes]
            finished = Signal(acc_shape, name=f"drain_col{c}")
            m.d.comb += finished.eq(_tree_or([_gate(pe.acc, pe.east.last) for pe in column]))
            deskewed = _delay(m, finished, cfg.cols - 1 - c, f"deskew_col{c}")
            m.d.comb += self.result.payload[c].eq(deskewed)
        m.d.comb += self.result.valid.eq(_tree_or([row[-1].east.last for row in pes]))
        return m


def _gate(value, enable):
    """``value`` where ``enable`` is high, else all zeros (an AND gate per bit, for an OR bus)."""
    return value.as_unsigned() & enable.replicate(len(value))
