"""Predicted switching activity of the mesh, from the operand data itself.

A systolic array moves known data in a known order, so the bit flips of its registers follow
from the operands: each PE of row ``i`` passes on the same sequence of streamed values, a
stationary register sees the values shifting past it during preload, a partial-sum register
holds the running dot products. :func:`predict_toggles` replays that order per command of the
host's plan (:func:`contract.plan.steps`) and returns flips per ``(component, traffic)`` group, the
keys an activity build of the RTL measures (:mod:`contract.activity`).

Approximations, which ``systolic compare --energy`` measures against the RTL:

- stalls: when the model's counters show stall cycles, every tile is taken to stream alone
  (``valid`` falls and partial sums drop to zero between tiles); otherwise tiles run back to back;
- the multiplier's stationary operand is taken to see the first tile's preload shift and then
  one value per tile (loads into the bank not in use are invisible to it);
- operand registers start each command from the values the previous one left, the mesh starts
  each GEMM from zero (its reset);
- controller and buffer-port registers are estimated from the counters: a binary counter flips
  two bits per increment on average, and each counted event advances one counter and one address
  (a read also the address's registered copy, rtl/controller.py).
"""

from __future__ import annotations

import functools
from dataclasses import replace

import numpy as np
from systolic.contract.activity import stream_traffic
from systolic.contract.config import ArrayConfig, Dataflow
from systolic.contract.dma import Descriptor
from systolic.contract.layouts import footprint
from systolic.contract.plan import chunk_sizes, steps
from systolic.contract.timing import UPDATE_LATENCY, release_wait
from systolic.golden.bf16 import fp32_running_sums, product
from systolic.golden.data import DataKind, random_operands

from . import psums
from .cycles import chunked_counters, command_counters, predict, stationary_schedule

__all__ = ["estimate_toggles", "flag_flips", "predict_toggles"]


def _bits(values: np.ndarray, width: int) -> np.ndarray:
    """Two's-complement bit patterns of ``values`` in ``width`` bits."""
    return np.asarray(values, dtype=np.int64).astype(np.uint64) & np.uint64((1 << width) - 1)


def _flips(seq: np.ndarray, prev) -> np.ndarray:
    """Bit flips along axis 0 of ``seq``, starting from ``prev``; summed over that axis."""
    first = np.bitwise_count(seq[0] ^ prev).astype(np.int64)
    return first + np.bitwise_count(seq[1:] ^ seq[:-1]).astype(np.int64).sum(axis=0)


def _ones(bits: np.ndarray) -> np.ndarray:
    return np.bitwise_count(bits).astype(np.int64)


def _pair_flips(x0, w0, x1, w1) -> np.ndarray:
    """Partial-product bit flips of a multiplier whose operands go from ``(x0, w0)`` to
    ``(x1, w1)`` (bit patterns, broadcast): partial product ``(i, j)`` is ``x_i w_j``, so the ones
    of the plane are the pairs of ones, and the flips its symmetric difference."""
    both = _ones(x0 & x1) * _ones(w0 & w1)
    return _ones(x1) * _ones(w1) + _ones(x0) * _ones(w0) - 2 * both


def _pad(mat: np.ndarray, rows: int, cols: int) -> np.ndarray:
    out = np.zeros((rows, cols), dtype=np.int64)
    out[: mat.shape[0], : mat.shape[1]] = mat
    return out


def _tile_psums(config, x, w, prev, stationary: bool) -> tuple[np.ndarray, np.ndarray]:
    """Each PE's partial-sum flips over one tile, from ``prev``, and its last sum's bits: WS/IS
    (``stationary``) ``sum_{i' <= i} x[t, i'] w[i', c]`` per streamed ``t``, OS ``sum_{k' <= k}
    x[i, k'] w[k', c]`` per step ``k``; wrapped integers (:mod:`models.psums`), or for bf16
    the fp32 sums in the hardware's order (golden/bf16.py)."""
    if config.number != "bf16":
        acc = config.acc_width
        mask = (1 << acc) - 1 if acc < 64 else -1
        run = psums.stationary_flips if stationary else psums.output_stationary_flips
        flips, last = run(x, w, prev.view(np.int64), mask)
        return flips, last.view(np.uint64)
    terms = product(x[:, :, None], w[None, :, :]) if stationary else \
        product(x.T[:, :, None], w[:, None, :])  # fmt: skip
    bits = fp32_running_sums(terms, 1 if stationary else 0).astype(np.uint64)
    return _flips(bits, prev), bits[-1]


class _Counts(dict):
    def add(self, component: str, traffic: str, flips) -> None:
        key = (component, traffic)
        self[key] = self.get(key, 0) + int(flips)


def _stationary(config, x, s, counts, state, separate):
    """One WS/IS command ``Y[P,R] = X[P,Q] @ S[Q,R]`` (X streams, S stays)."""
    rows, cols = config.rows, config.cols
    ws = config.dataflow is Dataflow.WS
    xw, sw = (config.a_width, config.b_width) if ws else (config.b_width, config.a_width)
    streaming, stationary = stream_traffic(config)
    p, q = x.shape
    r = s.shape[1]
    qt, rt = -(-q // rows), -(-r // cols)
    xp = _pad(x, p, qt * rows)
    sp = _pad(s, qt * rows, rt * cols)
    tiles = [(ri, qi) for ri in range(rt) for qi in range(qt)]
    n_tiles = len(tiles)
    # Lanes: row i streams X[:, q0 + i] tile after tile; every PE of the row and its skew
    # registers see the same sequence.
    lane_seq = np.concatenate([_bits(xp[:, qi * rows : qi * rows + rows], xw) for _, qi in tiles])
    x_before = state.get("lane", np.zeros(rows, np.uint64))
    lane = _flips(lane_seq, x_before)  # per row
    state["lane"] = lane_seq[-1]
    per_row = lane + _flags(Dataflow.WS, n_tiles, separate, q)
    counts.add("pipeline", streaming, cols * per_row.sum())
    counts.add("edge", streaming, (np.arange(rows) * per_row).sum())
    counts.add("multiplier", "compute", cols * lane.sum())
    # Stationary registers: tile t shifts into bank t % 2, last row first; row i shifts only
    # once the tile reaches it, so it sees the new rows rows-1 .. i.
    banks = state.get("banks", [np.zeros((rows, cols), np.uint64) for _ in range(2)])
    selected = state.get("selected", banks[0])  # what the multipliers saw last
    stat = sel = products = 0
    # The preload's column skew (column c: c registers) carries each tile's rows, and zeros
    # whenever the preload port idles; every command ends with it idle.
    starts, _ = stationary_schedule(rows, p, n_tiles, release_wait(config))
    skew_seq = [np.zeros(cols, np.uint64)]
    for t, (ri, qi) in enumerate(tiles):
        new = _bits(sp[qi * rows : qi * rows + rows, ri * cols : ri * cols + cols], sw)
        old = banks[t % 2]
        feed = new[::-1]  # pushed last row first
        if t and starts[t] > starts[t - 1] + rows:
            skew_seq.append(np.zeros(cols, np.uint64))
        skew_seq.extend(feed)
        for i in range(rows):
            flips = _flips(feed[: rows - i], old[i]).sum()
            stat += flips
            if t == 0:  # bank 0 is selected while it loads: its multiplier sees the shift
                seen = flips + np.bitwise_count(old[i] ^ selected[i]).sum()
                sel += seen
                products += _ones(x_before[i]) * seen  # the lane holds its value meanwhile
        if t > 0:
            sel += np.bitwise_count(new ^ selected).sum()
        # the tile's first vector meets its weights (the bank flag travels with it); then the
        # weights stay while the lane streams
        seg = lane_seq[t * p : (t + 1) * p]
        first = seg[0][:, None]
        x_last = (lane_seq[t * p - 1] if t else x_before)[:, None]
        w_last = new if t == 0 else selected  # the first tile's weights arrived by preload
        products += _pair_flips(x_last, w_last, first, new).sum()
        products += (_flips(seg[1:], seg[0]) * _ones(new).sum(axis=1)).sum() if p > 1 else 0
        selected = new
        banks[t % 2] = new
    other = banks[n_tiles % 2]  # after the last tile the lanes' bank flag moves on
    sel += np.bitwise_count(other ^ selected).sum()
    products += (_ones(lane_seq[-1]) * np.bitwise_count(other ^ selected).sum(axis=1)).sum()
    state["banks"], state["selected"] = banks, other
    skew_seq.append(np.zeros(cols, np.uint64))
    skew = np.stack(skew_seq)
    counts.add("edge", stationary, (np.arange(cols) * _flips(skew[1:], skew[0])).sum())
    counts.add("stationary", stationary, stat)
    counts.add("multiplier", "compute", sel)
    counts.add("multiplier", "products", products)
    # Partial sums: PE (i, c) holds sum_{i' <= i} X[p, q0+i'] S[q0+i', c] for each streamed p.
    prev = np.zeros((rows, cols), np.uint64)
    psum = np.zeros((rows, cols), np.int64)
    results = np.zeros(cols, np.int64)
    zero = np.zeros((rows, cols), np.uint64)
    for ri, qi in tiles:
        xt = np.ascontiguousarray(xp[:, qi * rows : qi * rows + rows])
        st = np.ascontiguousarray(sp[qi * rows : qi * rows + rows, ri * cols : ri * cols + cols])
        flips, prev = _tile_psums(config, xt, st, prev, stationary=True)
        psum += flips
        results += flips[rows - 1]  # the last row's sums leave the mesh
        if separate:
            psum += np.bitwise_count(prev).astype(np.int64)
            results += np.bitwise_count(prev[rows - 1]).astype(np.int64)
            prev = zero
    psum += np.bitwise_count(prev).astype(np.int64)  # back to zero after the last vector
    results += np.bitwise_count(prev[rows - 1]).astype(np.int64)
    counts.add("accumulator", "psum", psum.sum())
    counts.add("edge", "output", (np.arange(cols)[::-1] * results).sum())
    # each result passes the C buffer's update registers, one a cycle of its read-modify-write
    counts.add("buffer", "psum", UPDATE_LATENCY * results.sum())


def _output_stationary(config, a, b, counts, state, separate):
    """One OS command ``C[M,N] = A[M,K] @ B[K,N]``: tiles M outer, N inner, K steps each."""
    rows, cols = config.rows, config.cols
    m, k = a.shape
    n = b.shape[1]
    mt, nt = -(-m // rows), -(-n // cols)
    ap = _pad(a, mt * rows, k)
    bp = _pad(b, k, nt * cols)
    tiles = [(mi, ni) for mi in range(mt) for ni in range(nt)]
    n_tiles = len(tiles)
    lane_seq = np.concatenate([_bits(ap[mi * rows : mi * rows + rows].T, config.a_width)
                               for mi, _ in tiles])  # fmt: skip
    lane_prev = state.get("lane", np.zeros(rows, np.uint64))
    lane = _flips(lane_seq, lane_prev)
    state["lane"] = lane_seq[-1]
    col_seq = np.concatenate([_bits(bp[:, ni * cols : ni * cols + cols], config.b_width)
                              for _, ni in tiles])  # fmt: skip
    col_prev = state.get("column", np.zeros(cols, np.uint64))
    column = _flips(col_seq, col_prev)
    state["column"] = col_seq[-1]
    # PE (i, j) meets lane i's and column j's values in step: summed over the PEs, the
    # partial-product flips factor into the lanes' sums times the columns'
    xs = np.concatenate([lane_prev[None], lane_seq])
    ys = np.concatenate([col_prev[None], col_seq])
    cx, cy = _ones(xs).sum(axis=1), _ones(ys).sum(axis=1)
    kept = _ones(xs[1:] & xs[:-1]).sum(axis=1) * _ones(ys[1:] & ys[:-1]).sum(axis=1)
    counts.add("multiplier", "products", (cx[1:] * cy[1:] + cx[:-1] * cy[:-1] - 2 * kept).sum())
    per_row = lane + _flags(Dataflow.OS, n_tiles, separate, k)
    counts.add("pipeline", "activation", cols * per_row.sum())
    counts.add("pipeline", "weight", rows * column.sum())
    counts.add("edge", "activation", (np.arange(rows) * per_row).sum())
    counts.add("edge", "weight", (np.arange(cols) * column).sum())
    counts.add("multiplier", "compute", cols * lane.sum() + rows * column.sum())
    prev = np.zeros((rows, cols), np.uint64)
    flips = np.zeros((rows, cols), np.int64)
    drained = np.zeros(cols, np.int64)
    out_prev = np.zeros(cols, np.uint64)
    for mi, ni in tiles:
        at = np.ascontiguousarray(ap[mi * rows : mi * rows + rows])
        bt = np.ascontiguousarray(bp[:, ni * cols : ni * cols + cols])
        tile, out = _tile_psums(config, at, bt, prev, stationary=False)
        flips += tile
        prev = out
        if separate:
            flips += np.bitwise_count(prev).astype(np.int64)
            prev = np.zeros_like(prev)
        # A column drains its finished rows one per cycle, zeros between tiles when K > rows.
        drained += _flips(out, out_prev)
        out_prev = out[-1]
        if k > rows:
            drained += np.bitwise_count(out_prev).astype(np.int64)
            out_prev = np.zeros(cols, np.uint64)
    flips += np.bitwise_count(prev).astype(np.int64)
    drained += np.bitwise_count(out_prev).astype(np.int64)
    counts.add("accumulator", "output", flips.sum())
    counts.add("edge", "output", (np.arange(cols)[::-1] * drained).sum())
    counts.add("buffer", "psum", UPDATE_LATENCY * drained.sum())  # as in _stationary


def _flags(dataflow: Dataflow, n_tiles: int, separate: bool, k: int) -> int:
    """Flips of one lane's flags over a command of ``n_tiles`` tiles: ``valid`` rises and falls
    once, or around every tile when tiles stream ``separate`` (stalls); WS/IS's ``bank`` moves
    on every tile; OS's ``last`` rises and falls every tile (once when ``k`` is 1)."""
    valid = 2 * (n_tiles if separate else 1)
    if dataflow is Dataflow.OS:
        return valid + (2 * n_tiles if k > 1 else 2)
    return valid + n_tiles


def _pieces(total: int, size: int) -> list[tuple[int, int, int]]:
    """``(length, count, first)`` of the chunks a dimension of ``total`` splits into at
    ``size``: the full ones and the remainder; ``first`` counts those that start at 0."""
    full, rest = divmod(total, size)
    out = [(size, full, 1)] if full else []
    if rest:
        out.append((rest, 1, 0 if full else 1))
    return out


def flag_flips(config: ArrayConfig, m: int, k: int, n: int) -> int:
    """Flips of the PEs' flag registers (``valid``, ``bank``, ``last``) over an ``m x k x n``
    GEMM run as the host runs it (:func:`contract.plan.plan`'s chunks): every PE of a row sees
    its lane's flags. Part of the ``pipeline`` group's flips; apart, because a flag drives the
    PE's muxes, not one bit of data. They follow from the plan alone, whatever the data: summed
    over the distinct chunk shapes (full chunks and remainders, first along K or not), each
    once."""
    rows, cols = config.rows, config.cols
    size = chunk_sizes(config, m, k, n)
    total = 0
    for mc, m_count, _ in _pieces(m, size["m"]):
        for nc, n_count, _ in _pieces(n, size["n"]):
            for kc, k_count, k_first in _pieces(k, size["k"]):
                for accumulate, count in ((False, k_first), (True, k_count - k_first)):
                    if not count:
                        continue
                    counters = command_counters(config, mc, kc, nc, accumulate)
                    separate = counters["stall_cycles"] > 0
                    if config.dataflow is Dataflow.OS:
                        n_tiles = -(-mc // rows) * -(-nc // cols)
                    else:
                        wide = nc if config.dataflow is Dataflow.WS else mc
                        n_tiles = -(-kc // rows) * -(-wide // cols)
                    flips = rows * cols * _flags(config.dataflow, n_tiles, separate, kc)
                    total += flips * count * m_count * n_count
    return total


def _control(counts: _Counts, c: dict) -> None:
    events = (2 * c["cycles"] + c["preload_cycles"] + c["a_reads"] + c["b_reads"]
              + c["c_reads"] + c["c_writes"])  # fmt: skip
    addresses = c["a_reads"] + c["b_reads"] + c["c_reads"] + c["c_writes"]
    # the registered copies of the read addresses the landed comparison reads (rtl/controller):
    # one step a read, and a preload row's row count beside its address
    copies = c["a_reads"] + c["b_reads"] + c["preload_cycles"]
    counts.add("control", "control", 2 * (events + addresses + copies))


def waiting_flips(config: ArrayConfig, d: Descriptor, compute_cycles: int) -> int:
    """Control flips of the busy cycles descriptor ``d``'s chunks spend waiting for words to
    land (a device's ``compute_cycles`` past the chunks' closed forms, which the predictions
    here count): each advances the cycle counter and a fill or stall counter, two flips each,
    as :func:`_control` prices a busy cycle."""
    closed = chunked_counters(config, (d.m, d.k, d.n), d.chunk, bool(d.accumulate))["cycles"]
    return 4 * max(0, compute_cycles - closed)


def predict_toggles(
    config: ArrayConfig, a: np.ndarray, b: np.ndarray, a_zero: int = 0, b_zero: int = 0
) -> dict[tuple[str, str], int]:
    """Bit flips per ``(component, traffic)`` of ``(A - a_zero) @ (B - b_zero)`` run as the
    host runs it (the mesh sees the operands minus their zero points)."""
    (m, k), n = a.shape, b.shape[1]
    mesh = config.mesh_config()
    a = np.asarray(a, dtype=np.int64) - a_zero
    b = np.asarray(b, dtype=np.int64) - b_zero
    counts = _Counts()
    state: dict = {}
    for step in steps(config, m, k, n):
        ch = step.chunk
        a_part = np.asarray(a[ch.m0 : ch.m1, ch.k0 : ch.k1], dtype=np.int64)
        b_part = np.asarray(b[ch.k0 : ch.k1, ch.n0 : ch.n1], dtype=np.int64)
        mc, kc, nc = ch.shape
        counters = command_counters(config, mc, kc, nc, ch.accumulate)
        separate = counters["stall_cycles"] > 0
        if config.dataflow is Dataflow.OS:
            _output_stationary(mesh, a_part, b_part, counts, state, separate)
        elif config.dataflow is Dataflow.WS:
            _stationary(mesh, a_part, b_part, counts, state, separate)
        else:
            _stationary(mesh, b_part.T, a_part.T, counts, state, separate)
        _control(counts, counters)
    return dict(counts)


# -- large GEMMs: a sample, scaled by event counts ---------------------------------------------

#: The counter each group's bit flips scale with when a sample stands for a larger GEMM.
_EVENT = {"stationary": "preload_cycles", "buffer": "c_writes", "edge.output": "c_writes"}


#: Element steps (PEs x streamed values x tiles) a sample may take. Past it, on meshes larger than
#: the RTL builds (OS from 128 x 128, WS and IS at 256 x 256), the sample keeps fewer tiles,
#: then a shorter stream (no shorter than :data:`_SHORTEST`): a 256 x 256 bf16 OS sample of
#: the usual four tiles took 45 s. Measured against the whole prediction on 16x16 and 32x32,
#: int8 and bf16 (activity energy): one OS tile instead of four moves it by 0.1% at most, and a
#: 256-long reduction instead of 1024 leaves it within +1.0% to +3.4%; WS and IS with one
#: column tile, two K tiles and a 64-long stream, within +1.4% to +5.9% (from +0.1% to +1.4%).
SAMPLE_BUDGET = 1 << 24
_SHORTEST = {Dataflow.OS: 256, Dataflow.WS: 64, Dataflow.IS: 64}


def _sample_shape(config: ArrayConfig, m: int, k: int, n: int) -> tuple[int, int, int]:
    """A few tiles of the GEMM, with the streamed length and (OS) the reduction intact enough
    that values and stalls look like the whole one's (within :data:`SAMPLE_BUDGET`)."""
    rows, cols = config.rows, config.cols
    pes = rows * cols
    if config.dataflow is Dataflow.OS:
        mm, kk, nn = min(m, 2 * rows), min(k, 1024), min(n, 2 * cols)
        if pes * kk * -(-mm // rows) * -(-nn // cols) > SAMPLE_BUDGET:
            mm, nn = min(m, rows), min(n, cols)
            kk = min(kk, max(_SHORTEST[Dataflow.OS], SAMPLE_BUDGET // pes))
        return mm, kk, nn
    ws = config.dataflow is Dataflow.WS
    stream, kk, wide = (m, min(k, 4 * rows), n) if ws else (n, min(k, 4 * rows), m)
    stream, wide = min(stream, 128), min(wide, 2 * cols)
    if pes * stream * -(-kk // rows) * -(-wide // cols) > SAMPLE_BUDGET:
        wide, kk = min(wide, cols), min(kk, 2 * rows)
        stream = min(stream, max(_SHORTEST[config.dataflow],
                                 SAMPLE_BUDGET // (pes * -(-kk // rows))))  # fmt: skip
    return (stream, kk, wide) if ws else (wide, kk, stream)


def estimate_toggles(
    config: ArrayConfig,
    m: int,
    k: int,
    n: int,
    data: str = "random",
    seed: int = 0,
    diagonal: int = 0,
) -> dict[tuple[str, str], int]:
    """Bit flips of an ``m x k x n`` GEMM on operands of kind ``data`` (``random``, ``zeros``,
    ``sparse:P``), B block-diagonal with period ``diagonal`` where nonzero (``B[k, o]`` is 0
    unless ``k % diagonal == o``: a depthwise convolution's slice, whose device GEMM's K runs
    over kernel positions of a slice of channels), without the operands: :func:`predict_toggles`
    on a sample of a few tiles (:func:`_sample_shape`) of such data, each group scaled by the
    ratio of its events (streamed vectors, preload cycles, C writes) in the whole GEMM to those
    in the sample; the control estimate comes from the whole GEMM's counters. Exact prediction
    when the sample is the GEMM."""
    return dict(_estimate(config, m, k, n, data, seed, diagonal))


@functools.lru_cache(maxsize=8192)  # a sweep asks again for each memory behind a configuration
def _estimate(config: ArrayConfig, m: int, k: int, n: int, data: str, seed: int,
              diagonal: int = 0):  # fmt: skip
    sample = _sample_shape(config, m, k, n)
    toggles, part = _sample_toggles(_one_chunk_depths(config, sample), sample, data, seed,
                                    diagonal)  # fmt: skip
    if sample == (m, k, n):
        return toggles
    whole = predict(config, m, k, n).counters
    out = _Counts()
    for (component, traffic), flips in toggles:
        if component == "control":
            continue
        event = _EVENT.get(f"{component}.{traffic}") or _EVENT.get(component, "stream_cycles")
        if part[event]:
            out.add(component, traffic, round(flips * whole[event] / part[event]))
    _control(out, whole)
    return tuple(out.items())


@functools.lru_cache(maxsize=4096)
def _one_chunk_depths(config: ArrayConfig, sample: tuple[int, int, int]) -> ArrayConfig:
    """``config`` with the buffers' depths a sample takes, when one chunk of them holds it."""
    need = footprint(config, *sample)
    if all(need[b] <= getattr(config, f"{b}_depth") for b in "abc"):
        return replace(config, a_depth=need["a"], b_depth=need["b"], c_depth=need["c"])
    return config


@functools.lru_cache(maxsize=4096)  # large GEMMs share their samples
def _sample_toggles(config: ArrayConfig, sample: tuple[int, int, int], data: str, seed: int,
                    diagonal: int = 0):  # fmt: skip
    """The predicted flips of a sample of ``data`` and the sample's counters. (A sample that
    one chunk holds runs the same whatever the buffers' depths, so :func:`estimate_toggles`
    asks for it at one depth: configurations that differ in their buffers share it.)"""
    rng = np.random.default_rng(seed)
    ((a, b),) = random_operands(rng, config, [sample], DataKind(data))
    if diagonal:  # the sample is the GEMM's first rows and columns: the same pattern
        b = b * (np.arange(sample[1])[:, None] % diagonal == np.arange(sample[2])[None, :])
    return tuple(predict_toggles(config, a, b).items()), predict(config, *sample).counters
