"""Analytical model of the accelerator: every performance counter, exactly, without simulating.

It reads the timing formulas of the contract (:mod:`contract.timing`: mesh latency, preload
length, release wait, drain spacing, the controllers' read latency and done delay), which the
generator implements, and the host's chunk plan (:func:`contract.plan.steps`, summed in closed
form), and predicts what the RTL counts. Cycles are counted from the first busy cycle (the one
after the command is accepted); an operand read issued in cycle ``t`` reaches the mesh in
``t + READ_LATENCY`` (two cycles: the SRAM's, then the mesh's edge register).

WS and IS (one controller on ``Y[P,R] = X[P,Q] @ S[Q,R]``, see rtl.controller): ``T = QT * RT``
tiles, each preloaded in ``rows`` cycles and streamed in ``P``. With ``PS_i``/``SS_i`` the issue
cycles at which tile ``i``'s preload and stream start, and ``W`` the controller's release wait:

- ``PS_0 = 0``, ``PS_1 = rows``, ``PS_i = max(PS_{i-1} + rows, SS_{i-2} + P + W - 1)``: the
  preload port is sequential, and tile ``i`` reuses the bank of tile ``i-2`` once that tile's last
  read is ``W`` cycles old;
- ``SS_i = max(PS_i + rows, SS_{i-1} + P)``: a tile streams from the cycle after its preload, and
  the stream port is sequential.

The last result reaches the C buffer in cycle ``U = SS_{T-1} + P - 1 + READ_LATENCY + latency``;
``busy`` holds ``DONE_DELAY`` more cycles, so ``cycles = U + 1 + DONE_DELAY``. In steady state
``SS_i - SS_{i-2} = max(2P, P + W - 1 + rows, 2 rows)``: the recurrence is evaluated for a few
tiles and extended by that period.

OS: ``T = MT * NT`` tiles of ``K`` steps, ``g = max(drain_cycles - K, 0)`` idle cycles after
each; the last step reaches the mesh in cycle ``L = (T-1)(K+g) + K - 1 + READ_LATENCY``, the last
result row leaves ``latency + rows - 1`` cycles later, so
``cycles = L + latency + rows - 1 + 1 + DONE_DELAY``.

A chunk may start while its A and B banks are still loading (rtl/device.py): the controllers read
a word only from the cycle after it lands, and wait for it otherwise. :func:`gated_counters`
follows each preload row, stream vector and OS step through those waits, given the cycle each
word may be read; the closed forms above are the case where every word is in from the start.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

from systolic.contract.config import ArrayConfig, Dataflow
from systolic.contract.figures import GemmFigures
from systolic.contract.interface import COUNTERS
from systolic.contract.layouts import footprint
from systolic.contract.plan import chunk_sizes
from systolic.contract.timing import DONE_DELAY, READ_LATENCY, mesh_timing

__all__ = [
    "GemmPrediction",
    "chunked_counters",
    "command_counters",
    "gated_counters",
    "landing_tails",
    "predict",
    "stationary_schedule",
    "stationary_stream_start",
]

_PREFIX = 8  # tiles evaluated by the recurrence before extending by the steady-state period


def stationary_schedule(rows: int, p: int, tiles: int, release_wait: int) -> tuple[list, list]:
    """``(PS, SS)``: the issue cycles at which each tile's preload and stream start, by the
    recurrence of the module docstring (one entry per tile)."""
    wait = release_wait - 1
    ps, ss = [0] * tiles, [0] * tiles
    for i in range(tiles):
        if i == 1:
            ps[i] = rows
        elif i > 1:
            ps[i] = max(ps[i - 1] + rows, ss[i - 2] + p + wait)
        ss[i] = ps[i] + rows if i == 0 else max(ps[i] + rows, ss[i - 1] + p)
    return ps, ss


def stationary_stream_start(rows: int, p: int, tiles: int, release_wait: int) -> int:
    """``SS_{tiles-1}``: the issue cycle at which the last tile starts streaming (see module)."""
    n = min(tiles, _PREFIX)
    _, ss = stationary_schedule(rows, p, n, release_wait)
    last = tiles - 1
    if last < n:
        return ss[last]
    j = n - 1 if (n - 1) % 2 == last % 2 else n - 2  # same parity as the last tile
    period = max(2 * p, p + release_wait - 1 + rows, 2 * rows)
    return ss[j] + (last - j) // 2 * period


def command_counters(
    config: ArrayConfig, m: int, k: int, n: int, accumulate: bool = False
) -> dict[str, int]:
    """The counters of one command on an ``m x k x n`` GEMM held in the buffers."""
    return dict(_command_counters(config, m, k, n, bool(accumulate)))


@functools.lru_cache(maxsize=4096)  # the chunks of a GEMM mostly share one shape
def _command_counters(config: ArrayConfig, m: int, k: int, n: int, accumulate: bool):
    rows, cols = config.rows, config.cols
    array = mesh_timing(config)
    if config.dataflow is Dataflow.OS:
        tiles = math.ceil(m / rows) * math.ceil(n / cols)
        gap = max(array.drain_cycles - k, 0)
        last_step = (tiles - 1) * (k + gap) + k - 1 + READ_LATENCY  # mesh cycle of the final step
        cycles = last_step + array.latency + rows + DONE_DELAY
        writes = math.ceil(n / cols) * m  # rows past M are dropped
        c = {
            "cycles": cycles,
            "stream_cycles": tiles * k,
            "preload_cycles": 0,
            "fill_cycles": READ_LATENCY,
            "drain_cycles": cycles - 1 - last_step,  # busy cycles are 0 .. cycles - 1
            "a_reads": tiles * k,
            "b_reads": tiles * k,
            "c_reads": writes if accumulate else 0,
            "c_writes": writes,
        }
    else:
        ws = config.dataflow is Dataflow.WS
        p, q, r = (m, k, n) if ws else (n, k, m)
        q_tiles, r_tiles = math.ceil(q / rows), math.ceil(r / cols)
        tiles = q_tiles * r_tiles
        wait = array.release_wait
        last_stream = stationary_stream_start(rows, p, tiles, wait)
        last_result = last_stream + p - 1 + READ_LATENCY + array.latency  # cycle U
        cycles = last_result + 1 + DONE_DELAY
        stationary_reads = r_tiles * q  # preload rows past Q are zeros, not reads
        streamed = tiles * p
        c = {
            "cycles": cycles,
            "stream_cycles": streamed,
            "preload_cycles": tiles * array.preload_cycles,
            "fill_cycles": array.preload_cycles + READ_LATENCY,
            "drain_cycles": array.latency + DONE_DELAY,
            "a_reads": streamed if ws else stationary_reads,
            "b_reads": stationary_reads if ws else streamed,
            "c_reads": streamed if accumulate else (q_tiles - 1) * r_tiles * p,
            "c_writes": streamed,
        }
    c["stall_cycles"] = c["cycles"] - c["stream_cycles"] - c["fill_cycles"] - c["drain_cycles"]
    return tuple((name, c[name]) for name in COUNTERS)


def gated_counters(config: ArrayConfig, m: int, k: int, n: int, accumulate: bool,
                   ready: dict) -> dict[str, int]:  # fmt: skip
    """:func:`command_counters` of a command whose operands are still arriving: ``ready[b]``
    (``b`` in ``"ab"``) gives, for each address of buffer ``b``'s bank, the first busy cycle in
    which the controller may read it (None: every word is in). A controller that cannot read
    its next word waits, in the cycle-exact order of rtl/controller.py; the counters that count
    reads and vectors do not change, the cycles and their split into fill and stall do."""
    closed = command_counters(config, m, k, n, accumulate)
    ready = {b: r for b, r in ready.items() if r is not None and len(r) and max(r) > 0}
    if not ready:
        return closed
    array = mesh_timing(config)
    if config.dataflow is Dataflow.OS:
        first, last = _os_steps(config.rows, m, k, n, config.cols, array.drain_cycles, ready)
        last_step = last + READ_LATENCY
        cycles = last_step + array.latency + config.rows + DONE_DELAY
        drain = cycles - 1 - last_step
    else:
        ws = config.dataflow is Dataflow.WS
        p, q, r = (m, k, n) if ws else (n, k, m)
        x, s = (ready.get("a"), ready.get("b")) if ws else (ready.get("b"), ready.get("a"))
        first, last = _stationary_reads(config.rows, config.cols, p, q, r, array.release_wait,
                                        x, s)  # fmt: skip
        cycles = last + READ_LATENCY + array.latency + 1 + DONE_DELAY
        drain = array.latency + DONE_DELAY
    out = dict(closed, cycles=cycles, fill_cycles=first + READ_LATENCY, drain_cycles=drain)
    out["stall_cycles"] = cycles - out["stream_cycles"] - out["fill_cycles"] - drain
    return out


def landing_tails(config: ArrayConfig, m: int, k: int, n: int,
                  accumulate: bool = False) -> tuple[int, int]:  # fmt: skip
    """Per operand (A, B): the busy cycles of a command from the first read of its bank's last
    word to its end, with every other word in; a chunk whose last word of an operand lands
    late ends about that long after it (what models.pipeline prices a started chunk by)."""
    cycles = command_counters(config, m, k, n, accumulate)["cycles"]
    rows, cols = config.rows, config.cols
    array = mesh_timing(config)
    if config.dataflow is Dataflow.OS:
        step = k + max(array.drain_cycles - k, 0)
        n_tiles = math.ceil(n / cols)
        a_read = (math.ceil(m / rows) - 1) * n_tiles * step + k - 1  # tile (MT-1, 0)'s last step
        b_read = (n_tiles - 1) * step + k - 1  # tile (0, NT-1)'s
        return cycles - a_read, cycles - b_read
    ws = config.dataflow is Dataflow.WS
    p, q = (m, k) if ws else (n, k)
    q_tiles = math.ceil(q / rows)
    # X's last word: the last vector of tile (0, QT-1)
    x_read = stationary_stream_start(rows, p, q_tiles, array.release_wait) + p - 1
    # S's: row Q-1 of the last tile, its preload's row QT*rows - Q; the rest of the preload,
    # the tile's stream and the mesh follow it
    s_after = rows - 1 - (q_tiles * rows - q) + p + READ_LATENCY + array.latency + 1 + DONE_DELAY
    x_after = cycles - x_read
    return (x_after, s_after) if ws else (s_after, x_after)


def _stationary_reads(rows: int, cols: int, p: int, q: int, r: int, wait: int, x, s) -> tuple:
    """The first and the last stream read's busy cycle of the WS/IS controller when word ``a``
    of X may be read from cycle ``x[a]`` and of S from ``s[a]`` (None: from the start): tile
    ``i = (rt, qt)``, rt outer, preloads its rows last first (rows past Q read nothing) once
    its bank is free, then streams its P vectors, each read waiting for its word."""
    q_tiles, r_tiles = math.ceil(q / rows), math.ceil(r / cols)
    tiles = q_tiles * r_tiles
    stream_end = [0] * tiles
    preload_end = stream_last = -1
    first = None
    for i in range(tiles):
        rt, qt = divmod(i, q_tiles)
        c = preload_end + 1
        if i >= 2:  # its bank, once the tile two before has streamed and released it
            c = max(c, stream_end[i - 2] + wait)
        for j in range(rows):
            c += j > 0
            row = qt * rows + rows - 1 - j
            if s is not None and row < q:
                c = max(c, s[rt * q + row])
        preload_end = c
        c = max(stream_last + 1, preload_end + 1)
        for v in range(p):
            c += v > 0
            if x is not None:
                c = max(c, x[qt * p + v])
            if first is None:
                first = c
        stream_end[i] = stream_last = c
    return first, stream_last


def _os_steps(rows: int, m: int, k: int, n: int, cols: int, drain: int, ready: dict) -> tuple:
    """The first and the last step's busy cycle of the OS controller when A's word ``w`` may be
    read from ``ready["a"][w]`` and B's from ``ready["b"][w]``: tiles ``(mt, nt)``, mt outer,
    each its K steps, ``max(drain - K, 0)`` idle cycles after each."""
    a, b = ready.get("a"), ready.get("b")
    gap = max(drain - k, 0)
    n_tiles = math.ceil(n / cols)
    c, first = -1 - gap, None
    for i in range(math.ceil(m / rows) * n_tiles):
        mt, nt = divmod(i, n_tiles)
        c += 1 + gap
        for step in range(k):
            c += step > 0
            if a is not None:
                c = max(c, a[mt * k + step])
            if b is not None:
                c = max(c, b[nt * k + step])
            if first is None:
                first = c
    return first, c


@dataclass
class GemmPrediction(GemmFigures):
    """The model's account of one GEMM, host tiling included."""

    config: ArrayConfig
    shape: tuple[int, int, int]
    counters: dict[str, int]
    commands: int
    offchip_words: dict[str, int] = field(default_factory=dict)

    def summary(self) -> dict:
        return self.figures() | {"commands": self.commands}


def _pieces(total: int, size: int) -> list[tuple[int, int]]:
    """Chunk lengths along one dimension and how many chunks have each: the full ones first."""
    full, rest = divmod(total, size)
    return [(size, full)] + ([(rest, 1)] if rest else [])


def chunked_counters(
    config: ArrayConfig,
    shape: tuple[int, int, int],
    chunk: tuple[int, int, int],
    accumulate: bool = False,
) -> dict[str, int]:
    """:func:`command_counters` summed over the chunks of a GEMM of ``shape`` cut into chunks
    of ``chunk``: the first K chunk accumulates only with ``accumulate``, the later ones always.
    Chunks take at most two lengths per dimension, so the sum runs over at most eight chunk
    shapes (twelve with the first K chunk apart), not over chunks."""
    pm, pk, pn = (_pieces(t, min(c, t)) for t, c in zip(shape, chunk, strict=True))
    totals = dict.fromkeys(COUNTERS, 0)
    for i, (kc, ck) in enumerate(pk):
        first = 1 if i == 0 else 0  # the first K chunk: onto C as loaded, or overwriting it
        for mc, cm in pm:
            for nc, cn in pn:
                for acc, times in ((accumulate, first), (True, ck - first)):
                    if times:
                        for name, value in _command_counters(config, mc, kc, nc, acc):
                            totals[name] += cm * times * cn * value
    return totals


def predict(config: ArrayConfig, m: int, k: int, n: int) -> GemmPrediction:
    """Every counter of an ``m x k x n`` GEMM run the way the host driver runs it.

    The host's chunks (:func:`contract.plan.steps`: N outermost, then M, then K) are summed by
    :func:`chunked_counters`. The host rewrites A before every command unless the whole GEMM is
    one chunk along M and K (then once), B before every command unless K is one chunk (then
    once per N chunk), and reads each finished C chunk once.
    """
    size = chunk_sizes(config, m, k, n)
    pm, pk, pn = _pieces(m, size["m"]), _pieces(k, size["k"]), _pieces(n, size["n"])
    count = {d: sum(c for _, c in p) for d, p in (("m", pm), ("k", pk), ("n", pn))}
    totals = chunked_counters(config, (m, k, n), (size["m"], size["k"], size["n"]))

    def words(buf: str, mc: int, kc: int, nc: int) -> int:
        return footprint(config, mc, kc, nc)[buf]

    offchip = {
        "a": (
            count["n"] * sum(cm * ck * words("a", mc, kc, 1) for mc, cm in pm for kc, ck in pk)
            if count["m"] > 1 or count["k"] > 1
            else words("a", m, k, 1)
        ),
        "b": (
            count["m"] * sum(ck * cn * words("b", 1, kc, nc) for kc, ck in pk for nc, cn in pn)
            if count["k"] > 1
            else sum(cn * words("b", 1, k, nc) for nc, cn in pn)
        ),
        "c": sum(cm * cn * words("c", mc, 1, nc) for mc, cm in pm for nc, cn in pn),
    }
    return GemmPrediction(config, (m, k, n), totals, count["m"] * count["k"] * count["n"], offchip)
