"""Chunk sizes chosen for the pipeline, not only for the buffers.

The largest chunk that fits (:func:`contract.plan.chunk_sizes`) gives the most reuse, but the
ping-pong pipeline hides neither the first chunk's loads nor the last chunk's store, and with a
few large chunks those cost percents of a GEMM (BERT-base FFN, 128x768x3072, on OS 16x16 behind
the default DRAM: 2.5% of its cycles). The driver therefore asks the pipeline model: from the
largest chunk, it halves one dimension at a time (the halving predicted fastest) while that
predicts fewer cycles, as a compiler's autotuner would. The device runs whatever chunk sizes
the descriptor carries, so RTL and models see the same descriptor.

On small GEMMs the pipeline model errs by up to tens of percents (tests/models/test_pipeline.py),
more than the gains it finds, so there the tuned chunks are checked on the exact device model
(cheap at that size) and kept only if they are faster than the largest. A driver with a GEMM alone
to run and the time to choose (``chunking="exact"``) goes further, on GEMMs of up to
:data:`EXACT_PICK_MACS`: of every chunk that fits whose sizes halve the GEMM's (not only the
largest chunk's: one that holds the whole of K and little of N can be the fastest), and of every
one whose sizes are other multiples of the tiles (a small last chunk is a small last store), it
times the pipeline model's few fastest of each kind, its tuned chunk and the largest on the
exact model, and keeps the fastest there (OS 16x16, 64x256x256 behind a memory that is not the
limit: the tuned 32x64x128 takes 18,125 cycles, 64x256x16 17,485). Sweeps keep ``tuned``:
timing candidates exactly made a sweep's points 12 times slower on average
(``sweeps/bench_model.py``'s per-point timing, 4 configurations: 12 ms to 149 ms a point).

A driver that queues a batch of GEMMs back to back (``chunking="stream"``) wants another chunk:
the queue hides one descriptor's first loads and last store behind its neighbours'
(contract.timing.DESCRIPTOR_SLOTS), so what counts is the steady rate, the larger of the compute
and the traffic the chunking moves. The tuner ranks the halvings of the largest chunk by that
rate and times the closest few on the exact model, three descriptors queued (a GEMM of at most
:data:`STREAM_EXACT_MACS`; a larger one takes the ``tuned`` chunk, whose head and tail are a
small share of it).

Where the pipeline model is not held to bounds, it does not tune: a DRAM that holds fewer
requests than the read and write engines may issue shares them between loads and stores burst
by burst, which the model does not follow (smaller chunks there measured up to 1.6x slower on
models/device.py).
"""

from __future__ import annotations

import functools
import itertools

from systolic.contract.config import ArrayConfig
from systolic.contract.dma import (
    LOOP_ORDERS,
    Refusal,
    check_descriptor,
    containers,
    jobs,
    next_base,
    place,
    transfers,
)
from systolic.contract.layouts import footprint
from systolic.contract.memory import Dram
from systolic.contract.plan import chunk_sizes, granularity

from .cycles import chunked_counters
from .device import predict_device, predict_stream
from .pipeline import chunk_cycles, table_words

__all__ = ["CHUNKINGS", "choose_chunk"]

#: How the driver sizes chunks: ``fit`` the largest that fits the banks, ``tuned`` the
#: pipeline model's choice, ``exact`` the exact model's among the pipeline model's best,
#: ``stream`` the fastest for identical GEMMs queued back to back.
CHUNKINGS = ("fit", "tuned", "exact", "stream")

#: GEMMs of at most this many multiply-accumulates have their ``stream`` chunks timed on the
#: exact model (a queue of three); larger ones take the ``tuned`` chunk.
STREAM_EXACT_MACS = 1 << 22

#: Candidates timed on the exact model for ``stream``: at most this many, the best by their
#: steady rate, within :data:`STREAM_SLACK` of the best rate.
STREAM_CANDIDATES = 8
STREAM_SLACK = 0.1

#: Halvings tried at most (each tries every dimension once).
_STEPS = 12

#: A halving is taken only if it predicts at least this share fewer cycles: smaller gains are
#: within the pipeline model's error on small GEMMs (tests/models/test_pipeline.py) and cost
#: DRAM traffic for nothing.
MIN_GAIN = 0.01

#: GEMMs of at most this many multiply-accumulates have their tuned chunks checked on the exact
#: model (see the module).
EXACT_CHECK_MACS = 1 << 18

#: ``exact``: GEMMs of at most this many multiply-accumulates have the pipeline model's
#: :data:`EXACT_CANDIDATES` fastest chunks that fit (sizes halving the GEMM's), the tuned chunk
#: and the largest timed on the exact model; larger ones take the ``tuned`` chunk.
EXACT_PICK_MACS = 1 << 22
EXACT_CANDIDATES = 4
#: ``exact``: chunk sizes tried along each dimension, at most (:func:`_multiples`).
MULTIPLES = 24


def choose_chunk(config: ArrayConfig, m: int, k: int, n: int, dram: Dram, *,
                 order: str = "nmk", chunking: str = "tuned", requant: bool = False,
                 accumulate: bool = False) -> tuple[int, int, int]:  # fmt: skip
    """The chunk sizes ``(mc, kc, nc)`` for an ``m x k x n`` GEMM in loop order ``order``
    behind ``dram`` (``requant``: outputs requantized, with the table to load; ``accumulate``:
    into a C read first): the largest that fit (``chunking="fit"``) or the pipeline model's
    fastest among their successive halvings (``"tuned"``; a gain under :data:`MIN_GAIN` keeps
    the larger chunk, which moves fewer bytes), or the exact model's fastest of the pipeline
    model's best (``"exact"``), or the fastest for a queue of such GEMMs (``"stream"``, see the
    module)."""
    if not isinstance(config, ArrayConfig):
        raise TypeError(f"config must be a contract.config.ArrayConfig, not "
                        f"{type(config).__name__}")  # fmt: skip
    if not isinstance(dram, Dram):
        raise TypeError(f"dram must be a contract.memory.Dram, not {type(dram).__name__}")
    if chunking not in CHUNKINGS:
        raise ValueError(f"chunking must be one of {', '.join(CHUNKINGS)}, not {chunking!r}")
    if order not in LOOP_ORDERS:
        raise ValueError(f"order must be one of {', '.join(LOOP_ORDERS)}, not {order!r}")
    return _choose(config, m, k, n, dram, order, chunking, bool(requant), bool(accumulate))


@functools.lru_cache(maxsize=4096)  # sweeps ask for the same layer shapes again and again
def _choose(config: ArrayConfig, m: int, k: int, n: int, dram: Dram, order: str, chunking: str,
            requant: bool, accumulate: bool) -> tuple[int, int, int]:  # fmt: skip
    size = chunk_sizes(config, m, k, n)
    best = (size["m"], size["k"], size["n"])
    if chunking == "stream":
        few = dram.max_requests < config.max_reads + config.max_writes  # see the module
        if m * k * n > STREAM_EXACT_MACS or few:
            chunking = "tuned"
        else:
            tuned = _choose(config, m, k, n, dram, order, "tuned", requant, accumulate)
            return _stream(config, (m, k, n), dram, order, requant, accumulate, best, tuned)
    if chunking == "exact":
        tuned = _choose(config, m, k, n, dram, order, "tuned", requant, accumulate)
        if m * k * n > EXACT_PICK_MACS:
            return tuned
        return _exact_pick(config, (m, k, n), dram, order, requant, accumulate, best, tuned)
    if chunking == "fit" or dram.max_requests < config.max_reads + config.max_writes:
        return best  # a DRAM that holds fewer requests than the engines issue: see the module

    d = place(config, m, k, n, order=order, chunk=best, requant=requant, accumulate=accumulate)
    if check_descriptor(config, d)[0] is not Refusal.NONE:
        return best  # refused whatever its chunks (they fit): nothing to tune
    # the halvings of a chunk that fits are all valid
    cycles = chunk_cycles(config, (m, k, n), order, accumulate, table_words(config, d), dram)

    g = granularity(config)
    fastest = cycles(best)
    for _ in range(_STEPS):
        tries = []
        for i, dim in enumerate("mkn"):
            if best[i] > g[dim]:
                half = _halved(best[i], g[dim])[1]
                tries.append(best[:i] + (half,) + best[i + 1 :])
        scored = sorted((cycles(t), t) for t in tries)
        if not scored or scored[0][0] > fastest * (1 - MIN_GAIN):
            break
        fastest, best = scored[0]
    largest = (size["m"], size["k"], size["n"])
    if best != largest and m * k * n <= EXACT_CHECK_MACS:
        exact = [predict_device(config, place(config, m, k, n, order=order, chunk=c,
                                              requant=requant, accumulate=accumulate),
                                dram)["cycles"] for c in (best, largest)]  # fmt: skip
        if exact[0] >= exact[1]:
            return largest
    return best


def _halved(top: int, grain: int) -> list[int]:
    """``top`` and its successive halvings, each a multiple of ``grain``, down to ``grain``."""
    options = [top]
    while options[-1] > grain:
        options.append(max(grain, -(-options[-1] // 2 // grain) * grain))
    return options


def _halvings(config: ArrayConfig, largest: tuple) -> list[tuple[int, int, int]]:
    """Every chunk whose sizes are successive halvings of ``largest``'s (down to the tiles'
    granularity), the largest first."""
    g = granularity(config)
    return list(
        itertools.product(*(_halved(top, g[d]) for d, top in zip("mkn", largest, strict=True)))
    )


def _multiples(config: ArrayConfig, shape: tuple) -> list[tuple[int, int, int]]:
    """Every chunk whose sizes are multiples of the tiles' granularity (or a whole dimension),
    at most :data:`MULTIPLES` of them along each dimension (past that, a grid of
    :data:`MULTIPLES` equal steps and the halvings): a chunk need not halve the GEMM, and one
    that leaves a small last chunk leaves a small last store (WS 16x16, 32x256x256: 32x256x48
    against the best halving's 32x256x32, 2.5% fewer cycles)."""
    g = granularity(config)
    sizes = []
    for dim, top in zip("mkn", shape, strict=True):
        step = g[dim] * max(1, -(-top // g[dim] // MULTIPLES))
        options = {*range(step, top + 1, step), *_halved(top, g[dim])}
        sizes.append(sorted(options, reverse=True))
    return list(itertools.product(*sizes))


def _exact_pick(config: ArrayConfig, shape: tuple, dram: Dram, order: str, requant: bool,
                accumulate: bool, largest: tuple, tuned: tuple) -> tuple:  # fmt: skip
    """The ``exact`` chunk: of the pipeline model's :data:`EXACT_CANDIDATES` fastest chunks that
    fit with sizes halving the GEMM's, as many with other sizes (:func:`_multiples`; the
    pipeline model ranks the two kinds apart, so neither crowds out the other), the tuned chunk
    and the largest, the fastest on the exact model; of those within :data:`MIN_GAIN` of it,
    the one holding the most (fewer bytes moved), then the faster."""
    d = place(config, *shape, order=order, chunk=largest, requant=requant, accumulate=accumulate)
    if check_descriptor(config, d)[0] is not Refusal.NONE:
        return tuned  # refused whatever its chunks (they fit): nothing to time
    cycles = chunk_cycles(config, shape, order, accumulate, table_words(config, d), dram)
    depth = {"a": config.a_depth, "b": config.b_depth, "c": config.c_depth}
    halving = set(_halvings(config, shape))
    fitting = [c for c in _multiples(config, shape)
               if all(w <= depth[b] for b, w in footprint(config, *c).items())]  # fmt: skip
    ranked = sorted(fitting, key=lambda c: (cycles(c), tuple(-x for x in c)))
    best = [c for c in ranked if c in halving][:EXACT_CANDIDATES]
    best += [c for c in ranked if c not in halving][:EXACT_CANDIDATES]
    timed = []
    for chunk in dict.fromkeys([*best, tuned, largest]):
        d = place(config, *shape, order=order, chunk=chunk, requant=requant,
                  accumulate=accumulate)  # fmt: skip
        timed.append((predict_device(config, d, dram)["cycles"], chunk))
    fastest = min(t for t, _ in timed)
    near = [(c[0] * c[1] * c[2], -t, c) for t, c in timed if t * (1 - MIN_GAIN) <= fastest]
    return max(near)[2]


def _stream(config: ArrayConfig, shape: tuple, dram: Dram, order: str, requant: bool,
            accumulate: bool, largest: tuple, tuned: tuple) -> tuple[int, int, int]:  # fmt: skip
    """The ``stream`` chunk: among the halvings of ``largest`` along each dimension, the best
    :data:`STREAM_CANDIDATES` by steady rate (compute, or the traffic over the port and the
    DRAM, whichever is larger; fewer bytes first on a tie) within :data:`STREAM_SLACK` of the
    best, and the ``tuned`` chunk: the one fastest as a queue of three."""
    bus = config.bus_width // 8
    cont = containers(config)
    ranked = []
    for chunk in _halvings(config, largest):
        d = place(config, *shape, order=order, chunk=chunk, requant=requant,
                  accumulate=accumulate)  # fmt: skip
        if check_descriptor(config, d)[0] is not Refusal.NONE:
            return largest  # refused whatever its chunks: nothing to tune
        compute = chunked_counters(config, shape, chunk, accumulate)["cycles"]
        moved = sum(t.words * cont[t.fmt] for j in jobs(config, d)
                    for side in transfers(config, d, j) for t in side)  # fmt: skip
        rate = max(compute, moved / bus, moved / dram.bandwidth)
        ranked.append((rate, moved, tuple(-c for c in chunk), chunk, d))
    ranked.sort()
    timed = []
    tuned_d = place(config, *shape, order=order, chunk=tuned, requant=requant,
                    accumulate=accumulate)  # fmt: skip
    close = [r for r in ranked if r[0] <= ranked[0][0] * (1 + STREAM_SLACK)]
    candidates = {r[3]: r[4] for r in close[:STREAM_CANDIDATES]} | {tuned: tuned_d}
    for chunk, d in candidates.items():
        queue = [d]
        while len(queue) < 3:
            base = next_base(config, queue[-1])
            queue.append(place(config, *shape, order=order, chunk=chunk, requant=requant,
                               accumulate=accumulate, base=base))  # fmt: skip
        last = predict_stream(config, [(q, 0) for q in queue], dram)[-1]
        timed.append((last.accepted + last.measured_cycles, tuple(-c for c in chunk), chunk))
    return min(timed)[2]
