"""`make bench`, energy part: each dataflow on one transformer layer, energy from RTL toggles.

Prints per dataflow: pJ/MAC from the RTL's toggles and from the model (toggles predicted from
the operands), the split by component and by traffic class, and the cost of counting activity
(compute-phase simulation speed of the activity build against the plain one). Figures only; no
assertion on time.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from systolic.contract.config import ArrayConfig, Dataflow
from systolic.golden.data import random_operands
from systolic.golden.reference import reference
from systolic.models.energy import (
    DEFAULT_COEFFICIENTS,
    ENERGY_COMPONENTS,
    figures_energy,
    model_energy,
)
from systolic.sim.simulate import run_gemm

#: BERT-base attention output projection at sequence length 128 (hidden size 768; Devlin et
#: al. 2019): C[128, 768] = A[128, 768] @ W[768, 768].
LAYER = ("BERT-base attention output projection, seq 128", (128, 768, 768))
QUICK = ("a 64 x 256 x 256 GEMM", (64, 256, 256))
ARRAY = 16
DEPTH = 4096


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m systolic.experiments.energy_bench", description=__doc__
    )
    parser.add_argument("--quick", action="store_true", help="a smaller GEMM on an 8x8 array")
    args = parser.parse_args(argv)
    (title, shape), size = (QUICK, 8) if args.quick else (LAYER, ARRAY)
    print(
        f"\nEnergy: {title}, M x K x N = {' x '.join(map(str, shape))}, {size}x{size} int8 arrays"
    )
    rows = []
    for dataflow in Dataflow:
        config = ArrayConfig(dataflow, size, size, a_depth=DEPTH, b_depth=DEPTH, c_depth=DEPTH)
        ((a, b),) = random_operands(np.random.default_rng(1), config, [shape])
        plain = run_gemm(config, a, b, name="energy-bench")
        measured = run_gemm(config, a, b, name="energy-bench", activity=True)
        if not np.array_equal(measured.c, reference(config, a, b)):
            print(f"{config.name}: C MISMATCH")
            return 1
        start = time.perf_counter()
        model = model_energy(config, a, b)
        model_seconds = time.perf_counter() - start
        rtl = figures_energy(measured, measured.toggles, source="toggles")
        rows.append((config, plain, measured, rtl, model, model_seconds))

    header = (f"{'dataflow':8} {'cycles':>9} {'util':>6} {'pJ/MAC':>8} {'model':>8} "
              f"{'act.diff':>8} {'total diff':>10} {'plain cyc/s':>12} {'energy cyc/s':>12} "
              f"{'slowdown':>8} {'model s':>7}")  # fmt: skip
    print(header)
    print("-" * len(header))
    for config, plain, measured, rtl, model, model_seconds in rows:
        act = 100 * (model.activity - rtl.activity) / rtl.activity
        tot = 100 * (model.total - rtl.total) / rtl.total
        print(
            f"{config.dataflow.value:8} {measured.cycles:>9} {100 * measured.utilization:>5.1f}% "
            f"{rtl.pj_per_mac:>8.3f} {model.pj_per_mac:>8.3f} {act:>+7.2f}% {tot:>+9.3f}% "
            f"{plain.sim_speed:>12,.0f} {measured.sim_speed:>12,.0f} "
            f"{plain.sim_speed / measured.sim_speed:>7.2f}x {model_seconds:>7.2f}"
        )

    print("\nSplit by component (% of the toggle-based total):")
    shown = [c for c in ENERGY_COMPONENTS if any(r[3].components[c] for r in rows)]
    print(f"{'dataflow':8} " + " ".join(f"{c[:10]:>10}" for c in shown))
    for config, _, _, rtl, _, _ in rows:
        cells = " ".join(f"{100 * rtl.components[c] / rtl.total:>9.2f}%" for c in shown)
        print(f"{config.dataflow.value:8} {cells}")

    print("\nSplit by traffic class, pJ/MAC (array registers / on-chip buffer / off-chip):")
    classes = list(rows[0][3].traffic)
    print(f"{'dataflow':8} " + " ".join(f"{k:>22}" for k in classes))
    for config, _, _, rtl, _, _ in rows:
        cells = []
        for klass in classes:
            levels = rtl.traffic[klass]
            parts = [levels.get(x, 0.0) / rtl.macs for x in ("array", "buffer", "offchip")]
            cell = "/".join(f"{p:.3f}" for p in parts) if len(levels) > 1 else f"{parts[0]:.3f}"
            cells.append(f"{cell:>22}")
        print(f"{config.dataflow.value:8} " + " ".join(cells))
    print(f"\n(coefficients: {DEFAULT_COEFFICIENTS}; act.diff compares the energy "
          "priced from bit flips, total diff the whole)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
