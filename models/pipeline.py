"""The device on DRAM at sweep scale: every counter of a descriptor from its chunk pipeline, in
time proportional to the chunks (tens of microseconds for a transformer GEMM), not the cycles.

:mod:`models.device` follows the device cycle by cycle and is exact on every counter; it is
what the RTL is held to, and at the sweeps' scales it would take seconds a layer. This model
gives the same descriptor's counters:

- **exactly**: the chunks, every compute counter that counts work (the chunks' classes of
  :func:`models.cycles.command_counters`, summed: vectors, preloads, reads and writes) and the
  DRAM beats and bytes per operand (the loads and stores of :func:`contract.dma.jobs`, found by
  walking the loop order);
- **approximately**: the counters the memory's timing moves
  (:data:`contract.interface.TIMED_COUNTERS`), from a timeline of the chunks' transfers rather
  than of their beats. The ping-pong banks let chunk ``j`` compute while the read engine loads
  chunk ``j + 2`` into the bank chunk ``j`` frees and the write engine stores chunk ``j``; a chunk
  starts once its loads are issued, computes past its closed form while the rest land (the cycles
  it waits count as fill and stalls, :func:`models.cycles.landing_tails`); a transfer takes a
  latency and its beats (``max(1, beat / bandwidth)`` cycles each) or, when too few requests may
  be in flight to cover the latency, its bursts' round trips; reads and writes share one bus;
  partial sums wait for every write's answer. What it leaves out is the order in which the DRAM
  serves reads and writes burst by burst: a store interleaved with reads that each wait a latency
  takes longer than its beats. ``tests/models/test_pipeline.py`` bounds the difference against
  :mod:`models.device` on random configurations, shapes, memories and loop orders, and
  docs/memory.md gives the figures.

The walk over the chunks is compiled (:mod:`models.timeline`); this module gives it the
descriptor's numbers and turns its sums into counters.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable

import numpy as np
from systolic.contract.axi import MAX_BURST_BYTES
from systolic.contract.config import ArrayConfig, Dataflow
from systolic.contract.conv import Conv, stage
from systolic.contract.dma import (
    SPLIT_OPERAND,
    Descriptor,
    Refusal,
    b_first,
    beat_bytes,
    check_descriptor,
    containers,
    q_transfer,
    split_first,
    word_layout,
)
from systolic.contract.interface import COUNTERS, DEVICE_COUNTERS
from systolic.contract.memory import Dram
from systolic.contract.timing import CONV_SETUP_CYCLES, expansion_cycles

from . import timeline
from .cycles import command_counters, landing_tails
from .device import DevicePrediction

__all__ = ["chunk_cycles", "expanded_words", "pipeline_counters", "predict_pipeline", "table_words"]


@functools.lru_cache(maxsize=1024)
def _formats(config: ArrayConfig, fmt: str) -> np.ndarray:
    """Per transfer of :mod:`models.timeline` (``fmt``: how finished C is stored):
    ``(rowwise, tile, container / beat, beat, window)``."""
    out = []
    for f, window in (("a", config.max_reads), ("b", config.max_reads), ("p", config.max_reads),
                      (fmt, config.max_writes), ("p", config.max_writes)):  # fmt: skip
        word, beat = word_layout(config, f), beat_bytes(config, f)
        out.append((int(word.rowwise), word.tile, containers(config)[f] // beat, beat, window))
    return np.array(out, np.int64)


def predict_pipeline(config: ArrayConfig, d: Descriptor, dram: Dram) -> DevicePrediction:
    """Every counter of descriptor ``d`` on the device of ``config`` behind ``dram`` (see the
    module for which are exact); a refused descriptor counts nothing."""
    return DevicePrediction(_predict(config, d, dram))


@functools.lru_cache(maxsize=4096)  # the chunk tuner's choice is asked for again by the sweep
def _predict(config: ArrayConfig, d: Descriptor, dram: Dram) -> tuple[tuple[str, int], ...]:
    if check_descriptor(config, d)[0] is not Refusal.NONE:
        return tuple(dict.fromkeys(DEVICE_COUNTERS, 0).items())
    return pipeline_counters(config, (d.m, d.k, d.n), d.chunk, d.order, bool(d.accumulate),
                             table_words(config, d), dram, d.conv)  # fmt: skip


def expanded_words(config: ArrayConfig, d: Descriptor, dram: Dram) -> int:
    """The A words a convolution descriptor's expander writes into the A buffer (0 for a GEMM):
    the A words its GEMM twin (the same chunks, A a matrix in DRAM) loads."""
    if d.conv is None or check_descriptor(config, d)[0] is not Refusal.NONE:
        return 0
    twin = dict(pipeline_counters(config, (d.m, d.k, d.n), d.chunk, d.order, bool(d.accumulate),
                                  table_words(config, d), dram))  # fmt: skip
    return twin["dram_read_bytes_a"] // containers(config)["a"]


def table_words(config: ArrayConfig, d: Descriptor) -> int:
    """Words of the requantization table ``d`` loads first (0 when its outputs are not
    requantized): :func:`pipeline_counters`'s ``q_words``."""
    return q_transfer(config, d).words if d.requant and config.requant else 0


@functools.lru_cache(maxsize=4096)
def _classes(config: ArrayConfig, chunk: tuple, last: tuple, accumulating: tuple):
    """Per chunk class (bit 0: M ragged, 1: K ragged, 2: N ragged, 3: accumulating): its
    compute cycles, a row of its :data:`contract.interface.COUNTERS`, and what it computes
    after the last word of its A and of its B (:func:`models.cycles.landing_tails`). (A class
    that never occurs counts 0 times.)"""
    compute = np.zeros(16, np.int64)
    table = np.zeros((16, len(COUNTERS)), np.int64)
    after = np.zeros((2, 16), np.int64)
    options = [[(0, c), (1, x)] if x != c else [(0, c)] for c, x in zip(chunk, last, strict=True)]
    for (rm, m), (rk, k), (rn, n) in itertools.product(*options):
        for acc in accumulating:
            cls = rm + 2 * rk + 4 * rn + 8 * acc
            counters = command_counters(config, m, k, n, acc)
            compute[cls] = counters["cycles"]
            table[cls] = [counters[name] for name in COUNTERS]
            after[:, cls] = landing_tails(config, m, k, n, acc)
    return compute, table, after


@functools.lru_cache(maxsize=4096)
def _bus(config: ArrayConfig, dram: Dram, q_words: int) -> tuple[np.ndarray, float, float]:
    """:func:`models.timeline.walk`'s ``bus``, the cycles to load the requantization table
    first, and the read window (cycles of reads a store may wait behind)."""
    bw = float(dram.bandwidth)
    bus = np.array([bw, dram.latency, config.max_burst, dram.max_requests, MAX_BURST_BYTES], float)
    table = 0.0
    if q_words:
        beat = beat_bytes(config, "q")
        ratio = containers(config)["q"] // beat
        table = timeline.transfer_time(1, q_words * ratio, beat, config.max_reads, *bus)[1]
    window = (min(config.max_reads, dram.max_requests) * config.max_burst
              * max(1.0, config.bus_width / 8 / bw))  # fmt: skip
    return bus, table, window


#: What :func:`models.timeline.walk` takes for a GEMM's A loads: no staging.
_PLAIN = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(4, np.int64),
          np.zeros(2, np.int64))  # fmt: skip


@functools.lru_cache(maxsize=1024)
def _staging(config: ArrayConfig, conv: Conv | None, total: tuple, chunk: tuple) -> tuple:
    """:func:`models.timeline.walk`'s ``staged, slices, expand, expander`` for a convolution's
    A loads (:func:`contract.dma.staging`): per M chunk the words each slice stages, per K chunk
    its slices, the expansion's cycles per raggedness (:func:`contract.timing.expansion_cycles`)."""
    if conv is None:
        return _PLAIN
    word = word_layout(config, "a")
    (m, k, _), (mc, kc, _) = total, chunk
    staged = [(lambda s: s[3] - s[2])(stage(conv, word.tile, m0, min(m, m0 + mc), 0, kc))
              for m0 in range(0, m, mc)]  # fmt: skip
    slices = [(lambda s: s[1] - s[0])(stage(conv, word.tile, 0, mc, k0, min(k, k0 + kc)))
              for k0 in range(0, k, kc)]  # fmt: skip
    last_m, last_k = m - (len(staged) - 1) * mc, k - (len(slices) - 1) * kc
    transposed = config.dataflow is not Dataflow.WS
    expand = []
    for r in range(4):  # cycles from the last staged word to the bank full, per raggedness
        pixels = last_m if r & 1 else mc
        words = word.words((pixels, last_k if r & 2 else kc))
        expand.append(expansion_cycles(transposed, word.tile, pixels, words))
    return (np.array(staged, np.int64), np.array(slices, np.int64), np.array(expand, np.int64),
            np.array([CONV_SETUP_CYCLES, 0], np.int64))  # fmt: skip


def _shape(total: tuple, chunk: tuple, accumulate: bool) -> tuple[list, tuple, tuple]:
    """Chunks per dimension, the last chunk's sizes, and the accumulate flags chunks take."""
    per_dim = [-(-t // c) for t, c in zip(total, chunk, strict=True)]
    last = tuple(t - (p - 1) * c for t, c, p in zip(total, chunk, per_dim, strict=True))
    accumulating = (True,) if accumulate else (False, True) if per_dim[1] > 1 else (False,)
    return per_dim, last, accumulating


def chunk_cycles(config: ArrayConfig, total: tuple[int, int, int], order: str, accumulate: bool,
                 q_words: int, dram: Dram) -> Callable[[tuple[int, int, int]], int]:  # fmt: skip
    """A function of a chunk's sizes: :func:`pipeline_counters`'s ``cycles`` for a descriptor
    of ``total`` in chunks of that size, without the other counters (what the chunk tuner
    compares; the arguments are :func:`pipeline_counters`'s)."""
    formats = _formats(config, "c" if q_words else "p")
    bus, table, window = _bus(config, dram, q_words)
    loops = ["mkn".index(x) for x in order]
    dims, size = np.array(loops, np.int64), np.array(total, np.int64)

    def cycles(chunk: tuple[int, int, int]) -> int:
        per_dim, last, accumulating = _shape(total, chunk, accumulate)
        compute, _, after = _classes(config, chunk, last, accumulating)
        counts = np.array([per_dim[x] for x in loops], np.int64)
        out = timeline.walk(counts, dims, np.array(chunk, np.int64), size, accumulate, compute,
                            after, _load_order(config, chunk), formats, bus, table, window,
                            *_PLAIN)  # fmt: skip
        return int(math.ceil(out[2]))

    return cycles


def _load_order(config: ArrayConfig, chunk: tuple[int, int, int], conv: Conv | None = None) -> int:
    """How the chunks that load A and B load them (:data:`models.timeline.A_FIRST` ...)."""
    if split_first(config, chunk, conv):
        return timeline.SPLIT_A if SPLIT_OPERAND[config.dataflow] == "a" else timeline.SPLIT_B
    return timeline.B_FIRST if b_first(config, chunk, conv) else timeline.A_FIRST


@functools.lru_cache(maxsize=8192)
def pipeline_counters(config: ArrayConfig, total: tuple[int, int, int], chunk: tuple[int, int, int],
                      order: str, accumulate: bool, q_words: int, dram: Dram,
                      conv: Conv | None = None) -> tuple[tuple[str, int], ...]:  # fmt: skip
    """:func:`predict_pipeline`'s counters, as ``(name, value)`` pairs, of a descriptor the
    device accepts, from the numbers they depend on (``q_words``: the requantization table's
    words, 0 when the outputs are not requantized; ``conv``: the convolution whose A it stages
    and expands, None for a GEMM). The chunk tuner calls it directly: its candidates are all
    valid once the largest is."""
    out = dict.fromkeys(DEVICE_COUNTERS, 0)
    per_dim, last, accumulating = _shape(total, chunk, accumulate)
    compute, table_of, after = _classes(config, chunk, last, accumulating)
    fmt = "c" if q_words else "p"  # finished C requantized, or at accumulator width
    bus, table, window = _bus(config, dram, q_words)
    cont = containers(config)
    words, classes, cycles, waiting, dma_wait, filled, stalled = timeline.walk(
        np.array([per_dim["mkn".index(x)] for x in order], np.int64),
        np.array(["mkn".index(x) for x in order], np.int64),
        np.array(chunk, np.int64), np.array(total, np.int64), accumulate, compute, after,
        _load_order(config, chunk, conv), _formats(config, fmt), bus, table, window,
        *_staging(config, conv, total, chunk))  # fmt: skip
    out["jobs"] = int(classes.sum())
    for name, value in zip(COUNTERS, (classes @ table_of).tolist(), strict=True):
        out["compute_cycles" if name == "cycles" else name] = value
    # the array waits for words to land: the first ones in its fill, the rest in stalls
    out["fill_cycles"] += int(round(filled))
    out["stall_cycles"] += int(round(stalled))
    out["compute_cycles"] += int(round(filled)) + int(round(stalled))
    words = words.tolist()
    for op, t, f in (("a", timeline.A, "a"), ("b", timeline.B, "b"), ("c", timeline.C_IN, "p")):
        out[f"dram_read_bytes_{op}"] = words[t] * cont[f]
        out[f"dram_read_beats_{op}"] = words[t] * cont[f] // beat_bytes(config, f)
    if q_words:
        out["dram_read_bytes_q"] = q_words * cont["q"]
        out["dram_read_beats_q"] = q_words * cont["q"] // beat_bytes(config, "q")
    for t, f in ((timeline.FINAL, fmt), (timeline.PARTIAL, "p")):
        out["dram_write_bytes"] += words[t] * cont[f]
        out["dram_write_beats"] += words[t] * cont[f] // beat_bytes(config, f)
    out["cycles"] = int(math.ceil(cycles))
    out["array_wait_cycles"], out["dma_wait_cycles"] = int(round(waiting)), int(round(dma_wait))
    return tuple(out.items())
