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
(cheap at that size) and kept only if they are faster than the largest.

Where the pipeline model is not held to bounds, it does not tune: a DRAM that holds fewer
requests than the read and write engines may issue shares them between loads and stores burst
by burst, which the model does not follow (smaller chunks there measured up to 1.6x slower on
models/device.py).
"""

from __future__ import annotations

import functools

from systolic.contract.config import ArrayConfig
from systolic.contract.dma import LOOP_ORDERS, Refusal, check_descriptor, place
from systolic.contract.memory import Dram
from systolic.contract.plan import chunk_sizes, granularity

from .device import predict_device
from .pipeline import chunk_cycles, table_words

__all__ = ["CHUNKINGS", "choose_chunk"]

#: How the driver sizes chunks: ``fit`` the largest that fits the banks, ``tuned`` the
#: pipeline model's choice.
CHUNKINGS = ("fit", "tuned")

#: Halvings tried at most (each tries every dimension once).
_STEPS = 12

#: A halving is taken only if it predicts at least this share fewer cycles: smaller gains are
#: within the pipeline model's error on small GEMMs (tests/models/test_pipeline.py) and cost
#: DRAM traffic for nothing.
MIN_GAIN = 0.01

#: GEMMs of at most this many multiply-accumulates have their tuned chunks checked on the exact
#: model (see the module).
EXACT_CHECK_MACS = 1 << 18


def choose_chunk(config: ArrayConfig, m: int, k: int, n: int, dram: Dram, *,
                 order: str = "nmk", chunking: str = "tuned", requant: bool = False,
                 accumulate: bool = False) -> tuple[int, int, int]:  # fmt: skip
    """The chunk sizes ``(mc, kc, nc)`` for an ``m x k x n`` GEMM in loop order ``order``
    behind ``dram`` (``requant``: outputs requantized, with the table to load; ``accumulate``:
    into a C read first): the largest that fit (``chunking="fit"``) or the pipeline model's
    fastest among their successive halvings (``"tuned"``; a gain under :data:`MIN_GAIN` keeps
    the larger chunk, which moves fewer bytes)."""
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
                half = max(g[dim], -(-best[i] // 2 // g[dim]) * g[dim])
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
