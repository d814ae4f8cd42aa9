"""`make bench`: cycles, PE utilization and simulation speed of every dataflow on large GEMMs.

Not part of `make test`: it prints figures and asserts nothing about wall-clock time. Each point
runs the GEMM through the cocotb testbench (checked bit-exact against golden/) and once more
through a bare C++ Verilator harness of the same Verilog (sim/bare.py), timing in both only the
compute phase, from the command's acceptance to ``done``.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from systolic.contract.config import ArrayConfig, Dataflow
from systolic.golden.data import random_operands
from systolic.golden.reference import reference
from systolic.sim.bare import run_bare
from systolic.sim.simulate import run_gemm

#: Array size -> GEMM edge: at least 8x the array in every dimension.
POINTS = [(8, 128), (16, 128), (8, 256), (16, 256)]
DEPTH = 8192  # buffers large enough that every point is one command


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m systolic.experiments.bench", description=__doc__
    )
    parser.add_argument("--quick", action="store_true", help="only the 8x8 array at 128^3")
    args = parser.parse_args(argv)
    points = POINTS[:1] if args.quick else POINTS
    header = (f"{'dataflow':8} {'array':>6} {'GEMM':>12} {'cycles':>9} {'util':>7} "
              f"{'cocotb cyc/s':>13} {'bare cyc/s':>11} {'bare/cocotb':>11}  check")  # fmt: skip
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
            bare = run_bare(config, edge, edge, edge)
            worst = min(worst, res.utilization)
            print(
                f"{dataflow.value:8} {f'{size}x{size}':>6} {f'{edge}^3':>12} {res.cycles:>9} "
                f"{100 * res.utilization:>6.2f}% {res.sim_speed:>13,.0f} {bare.speed:>11,.0f} "
                f"{bare.speed / res.sim_speed:>10.2f}x  {'bit-exact' if exact else 'MISMATCH'}",
                flush=True,
            )
            if not exact:
                return 1
    print(f"\nlowest PE utilization: {100 * worst:.2f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
