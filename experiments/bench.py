"""`make bench`: cycles, PE utilization and simulation speed of every dataflow on large GEMMs.

Not part of `make test`: it prints figures and asserts nothing about wall-clock time. Each point
runs the GEMM on the device behind the default DRAM model (checked bit-exact against golden/,
every counter against models/device.py) and times the simulation from the descriptor's
acceptance to ``done``. Utilization is given over the whole descriptor (DRAM loads and stores
included) and over the array's busy cycles alone.

Then small batches: WS and IS on 16x16 with the streamed dimension P in {1, 4, 16, 32, 64, 256}
and the other two at 256, against the preload bound ``min(1, P / rows)`` (a stationary tile
takes ``rows`` cycles to load and serves P vectors). Steady-state utilization leaves out the
fill and drain: streamed cycles over streamed plus stalled ones.

Then memory: on 16x16, a GPT-2 FFN GEMV behind an LPDDR4X x16 channel (memory-bound: the DRAM
bandwidth it attains) and a BERT-base FFN GEMM behind the default DRAM (compute-bound: the
utilization it loses to memory), every dataflow, RTL and both models.

Then the roofline (``--roofline``, issue 34's table): every dataflow on 16x16 with K = N = 256
and P in SMALL_BATCHES behind a memory that is not the limit (64 B/cycle, 1 cycle), the exact
model's cycles from acceptance to done (equal to the RTL's, tests/sim/test_device.py) against
the larger of the compute bound (MACs over PEs) and the port's (the compulsory bytes, A and B
read once and C written once, over the bus's bytes a cycle: one data bus serves both), for one
descriptor alone (the driver's ``exact`` chunks) and for a queue of 16 posted at once, each
placed after the one before (they overlap on the device: docs/memory.md), with the driver's
``stream`` chunks (models/chunking.py).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from systolic.contract.config import ArrayConfig, Dataflow
from systolic.contract.dma import containers, next_base, place, word_layout
from systolic.contract.memory import DEFAULT_MEMORY, Dram
from systolic.golden.data import random_operands
from systolic.golden.reference import reference
from systolic.models.chunking import choose_chunk
from systolic.models.device import predict_device, predict_stream
from systolic.models.pipeline import predict_pipeline
from systolic.sim.simulate import run_gemm, run_gemms

#: Streamed vectors per stationary tile in the small-batch table (decode to prefill).
SMALL_BATCHES = (1, 4, 16, 32, 64, 256)

#: Array size -> GEMM edge: at least 8x the array in every dimension.
POINTS = [(8, 128), (16, 128), (8, 256), (16, 256)]
DEPTH = 8192  # buffers large enough that the first tables' points are one chunk


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m systolic.experiments.bench", description=__doc__
    )
    parser.add_argument("--quick", action="store_true", help="only the 8x8 array at 128^3")
    parser.add_argument("--memory", action="store_true",
                        help="only the memory-bound and compute-bound table")  # fmt: skip
    parser.add_argument("--roofline", action="store_true",
                        help="only the small-GEMM roofline table (the exact model)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.memory:
        return memory_bound_and_compute_bound(16)
    if args.roofline:
        return roofline(16, 256)
    points = POINTS[:1] if args.quick else POINTS
    header = (f"{'dataflow':8} {'array':>6} {'GEMM':>12} {'cycles':>9} {'util':>7} "
              f"{'compute':>9} {'compute util':>12} {'sim cyc/s':>11}  check")  # fmt: skip
    print(header)
    print("-" * len(header))
    worst = 1.0
    for size, edge in points:
        for dataflow in Dataflow:
            config = ArrayConfig(dataflow, size, size, a_depth=DEPTH, b_depth=DEPTH, c_depth=DEPTH)
            rng = np.random.default_rng(edge)
            ((a, b),) = random_operands(rng, config, [(edge, edge, edge)])
            res = run_gemm(config, a, b, name="bench")
            exact = np.array_equal(res.c, reference(config, a, b))
            agrees = dict(predict_device(config, res.descriptor, res.memory)) == res.counters
            compute = res.counters["compute_cycles"]
            busy = res.macs / (compute * config.pes)
            worst = min(worst, busy)
            print(
                f"{dataflow.value:8} {f'{size}x{size}':>6} {f'{edge}^3':>12} {res.cycles:>9} "
                f"{100 * res.utilization:>6.2f}% {compute:>9} {100 * busy:>11.2f}% "
                f"{res.sim_speed:>11,.0f}  {'bit-exact' if exact else 'MISMATCH'}"
                f"{', model == RTL' if agrees else ', MODEL DIFFERS'}",
                flush=True,
            )
            if not (exact and agrees):
                return 1
    print(f"\nlowest PE utilization while the array computes: {100 * worst:.2f}%\n")
    status = small_batches(16, 256)
    print()
    status = status or memory_bound_and_compute_bound(16)
    print()
    return status or roofline(16, 256)


def small_batches(size: int, edge: int) -> int:
    """WS and IS utilization at small P against ``min(1, P / rows)``, measured on the RTL."""
    header = (f"{'dataflow':8} {'array':>6} {'P':>4} {'GEMM':>13} {'cycles':>8} {'util':>7} "
              f"{'steady':>7} {'bound':>7} {'steady/bound':>12}  check")  # fmt: skip
    print(header)
    print("-" * len(header))
    worst = 1.0
    for dataflow in (Dataflow.WS, Dataflow.IS):
        config = ArrayConfig(dataflow, size, size, a_depth=DEPTH, b_depth=DEPTH, c_depth=DEPTH)
        # WS streams rows of A (P = M); IS streams columns of B (P = N)
        shapes = [(p, edge, edge) if dataflow is Dataflow.WS else (edge, edge, p)
                  for p in SMALL_BATCHES]  # fmt: skip
        rng = np.random.default_rng(size)
        operands = random_operands(rng, config, shapes)
        for p, (a, b), res in zip(SMALL_BATCHES, operands, run_gemms(config, operands,
                                  name="bench-small"), strict=True):  # fmt: skip
            c = res.counters
            steady = c["stream_cycles"] / (c["stream_cycles"] + c["stall_cycles"])
            bound = min(1.0, p / config.rows)
            exact = np.array_equal(res.c, reference(config, a, b))
            agrees = dict(predict_device(config, res.descriptor, res.memory)) == c
            worst = min(worst, steady / bound)
            gemm = "x".join(map(str, res.shape))
            print(
                f"{dataflow.value:8} {f'{size}x{size}':>6} {p:>4} {gemm:>13} {res.cycles:>8} "
                f"{100 * res.utilization:>6.2f}% {100 * steady:>6.2f}% {100 * bound:>6.2f}% "
                f"{100 * steady / bound:>11.2f}%  {'bit-exact' if exact else 'MISMATCH'}"
                f"{', model == RTL' if agrees else ', MODEL DIFFERS'}",
                flush=True,
            )
            if not (exact and agrees):
                return 1
    print(f"\nlowest steady-state utilization against the preload bound: {100 * worst:.2f}%")
    return 0


#: The memory bench's GEMMs: a GPT-2 small FFN GEMV (decode at batch 1, memory-bound behind an
#: LPDDR4X x16 channel at 1 GHz) and a BERT-base FFN GEMM at sequence 128 (compute-bound behind
#: the default DRAM).
MEMORY_POINTS = (("GPT-2 FFN GEMV", (1, 768, 3072), Dram.preset("lpddr4x-4266-x16")),
                 ("BERT FFN GEMM", (128, 768, 3072), DEFAULT_MEMORY))  # fmt: skip


def memory_bound_and_compute_bound(size: int) -> int:
    """Measured on the RTL behind the DRAM model: the GEMV's DRAM bandwidth attained (bytes
    moved over the cycles, against the DRAM's), and the GEMM's utilization lost to memory (the
    cycles beyond the array's busy ones), with the largest chunks that fit and with the chunks
    the pipeline model tunes (:mod:`models.chunking`); the pipeline model's cycles beside."""
    header = (f"{'dataflow':8} {'GEMM':14} {'shape':>12} {'chunks':>20} {'DRAM B/cyc':>10} "
              f"{'cycles':>9} {'array busy':>10} {'attained':>9} {'of DRAM':>8} {'lost':>6} "
              f"{'pipeline':>9}  check")  # fmt: skip
    print(header)
    print("-" * len(header))
    for dataflow in Dataflow:
        config = ArrayConfig(dataflow, size, size, a_depth=DEPTH, b_depth=DEPTH, c_depth=DEPTH)
        rng = np.random.default_rng(size)
        for name, shape, memory in MEMORY_POINTS:
            ((a, b),) = random_operands(rng, config, [shape])
            chunks = [choose_chunk(config, *shape, memory, chunking=c) for c in ONE_AT_A_TIME]
            for how, res in zip(ONE_AT_A_TIME, run_gemms(config, [(a, b)] * 2, memory=memory,
                                chunk=chunks, name="bench-memory"), strict=True):  # fmt: skip
                c = res.counters
                moved = sum(c[f"dram_read_bytes_{x}"] for x in "abcq") + c["dram_write_bytes"]
                rate = moved / res.cycles
                exact = np.array_equal(res.c, reference(config, a, b))
                agrees = dict(predict_device(config, res.descriptor, memory)) == c
                fast = predict_pipeline(config, res.descriptor, memory)["cycles"]
                chunk = f"{c['jobs']} x {'x'.join(map(str, res.descriptor.chunk))} {how}"
                print(
                    f"{dataflow.value:8} {name:14} {'x'.join(map(str, shape)):>12} {chunk:>20} "
                    f"{float(memory.bandwidth):>10.3f} {res.cycles:>9} {c['compute_cycles']:>10} "
                    f"{rate:>9.3f} {100 * rate / float(memory.bandwidth):>7.2f}% "
                    f"{100 * (1 - c['compute_cycles'] / res.cycles):>5.2f}% {fast:>9}  "
                    f"{'bit-exact' if exact else 'MISMATCH'}"
                    f"{', model == RTL' if agrees else ', MODEL DIFFERS'}",
                    flush=True,
                )
                if not (exact and agrees):
                    return 1
    return 0


#: The chunkings for a GEMM alone on the device (``stream`` is for queues: the roofline).
ONE_AT_A_TIME = ("fit", "tuned")

#: A memory that is not the limit: 64 bytes a cycle, one cycle of latency.
FAST_MEMORY = Dram(64, 1, 64)
#: Descriptors in the roofline table's stream.
STREAM = 16


def compulsory_bytes(config: ArrayConfig, shape: tuple[int, int, int]) -> int:
    """Bytes a GEMM of ``shape`` moves at the least: A and B read once, C written once, as the
    driver lays them out (buffer words in their DRAM containers)."""
    m, k, n = shape
    cont = containers(config)
    return sum(word_layout(config, kind).words(dims) * cont[kind]
               for kind, dims in (("a", (m, k)), ("b", (k, n)), ("c", (m, n))))  # fmt: skip


def roofline(size: int, edge: int) -> int:
    """Small GEMMs against their bound (see module): the exact model's cycles from acceptance
    to done, one descriptor alone and a queue of 16, over max(compute, port)."""
    header = (f"{'dataflow':8} {'P':>4} {'GEMM':>12} {'compute':>8} {'port':>7} {'chunk':>13} "
              f"{'one':>7} {'one/bound':>9} {'queued chunk':>13} {'queue of 16':>11} "
              f"{'queue/bound':>11}")  # fmt: skip
    print(header)
    print("-" * len(header))
    worst = {"one, P >= 16": 0.0, "queue": 0.0}
    for dataflow in Dataflow:
        config = ArrayConfig(dataflow, size, size)
        bus = config.bus_width // 8
        for p in SMALL_BATCHES:
            shape = (edge, edge, p) if dataflow is Dataflow.IS else (p, edge, edge)
            chunk = choose_chunk(config, *shape, FAST_MEMORY, chunking="exact")
            queued = choose_chunk(config, *shape, FAST_MEMORY, chunking="stream")
            queue = [place(config, *shape, chunk=queued)]
            while len(queue) < STREAM:
                queue.append(place(config, *shape, chunk=queued,
                                   base=next_base(config, queue[-1])))  # fmt: skip
            one = predict_device(config, place(config, *shape, chunk=chunk), FAST_MEMORY)
            compute = -(-shape[0] * shape[1] * shape[2] // config.pes)
            port = -(-compulsory_bytes(config, shape) // bus)
            bound = max(compute, port)
            last = predict_stream(config, [(d, 0) for d in queue], FAST_MEMORY)[-1]
            wall = last.accepted + last.measured_cycles  # the first accepted at 0
            if p >= 16:
                worst["one, P >= 16"] = max(worst["one, P >= 16"], one.measured_cycles / bound)
            worst["queue"] = max(worst["queue"], wall / (STREAM * bound))
            print(f"{dataflow.value:8} {p:>4} {'x'.join(map(str, shape)):>12} {compute:>8} "
                  f"{port:>7} {'x'.join(map(str, chunk)):>13} {one.measured_cycles:>7} "
                  f"{one.measured_cycles / bound:>8.3f}x {'x'.join(map(str, queued)):>13} "
                  f"{wall:>11} {wall / (STREAM * bound):>10.3f}x", flush=True)  # fmt: skip
    print("\nworst over the bound: " + ", ".join(f"{k} {v:.3f}x" for k, v in worst.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
