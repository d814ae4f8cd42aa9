"""Analytical model of the accelerator: every performance counter, exactly, without simulating.

It reads the timing formulas of the contract (:mod:`contract.timing`: mesh latency, preload
length, release wait, drain spacing, the controllers' read latency and done delay), which the
generator implements, and the host's chunk plan (:func:`contract.plan.steps`, summed in closed
form), and predicts what the RTL counts. Cycles are counted from the first busy cycle (the one
after the command is accepted); an operand read issued in cycle ``t`` reaches the mesh in
``t + READ_LATENCY`` (one cycle).

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
    "command_counters",
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


def predict(config: ArrayConfig, m: int, k: int, n: int) -> GemmPrediction:
    """Every counter of an ``m x k x n`` GEMM run the way the host driver runs it.

    The host's chunks (:func:`contract.plan.steps`: N outermost, then M, then K) take at most two
    lengths per dimension, so the sums run over at most eight chunk shapes, not over chunks.
    Chunks after the first along K accumulate. The host rewrites A before every command unless
    the whole GEMM is one chunk along M and K (then once), B before every command unless K is one
    chunk (then once per N chunk), and reads each finished C chunk once.
    """
    size = chunk_sizes(config, m, k, n)
    pm, pk, pn = _pieces(m, size["m"]), _pieces(k, size["k"]), _pieces(n, size["n"])
    count = {d: sum(c for _, c in p) for d, p in (("m", pm), ("k", pk), ("n", pn))}
    totals = dict.fromkeys(COUNTERS, 0)
    for i, (kc, ck) in enumerate(pk):
        fresh = 1 if i == 0 else 0  # the first K chunk overwrites C; the others accumulate
        for mc, cm in pm:
            for nc, cn in pn:
                for accumulate, times in ((False, fresh), (True, ck - fresh)):
                    if times:
                        for name, value in _command_counters(config, mc, kc, nc, accumulate):
                            totals[name] += cm * times * cn * value

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
