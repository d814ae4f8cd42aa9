"""Gate-level energy points to calibrate the energy model's logic terms against.

Each point is one GEMM simulated on the per-net activity build of a device and priced by
OpenSTA on its synthesized netlist (OSU 0.18 um, :func:`verify.gate_energy`'s flow): the energy
of every component over the array's busy window, split into flip-flops and combinational logic,
beside the RTL's toggle groups and counters. The operands are not stored: a point names how
they were drawn (:func:`operands`), so the model's features can be computed again from them.

:data:`PLAN` lists the points: the training set (every dataflow at 2x2, 4x4 and 8x8, five kinds
of data, three shapes), the held-out set (16x16 and a non-square array) and the int16 and bf16
points. ``python -m systolic.verify.gate_points`` measures the points a data file does not hold
yet (``--only`` a part; not those OpenSTA cannot price, :data:`UNPRICEABLE`), appending each as
one JSON line as soon as it is measured, so an interrupted run resumes where it stopped.
Committed: ``models/coefficients/gate_osu018.jsonl``.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from systolic.contract.config import ArrayConfig, Dataflow
from systolic.golden.data import DataKind, random_operands
from systolic.models.technology import CELL_LIBRARY_NM
from systolic.sim.simulate import run_gemms
from systolic.synth.flow import synthesize
from systolic.synth.power import gate_power

__all__ = ["ANNOTATION", "PLAN", "POINTS_FILE", "UNPRICEABLE", "Point", "operands", "measure"]

POINTS_FILE = Path(__file__).parents[1] / "models" / "coefficients" / "gate_osu018.jsonl"
#: The synthesis and power clock: the flow's default, near the devices' Fmax (about 100 MHz).
CLOCK_NS = 10.0

#: How the activity reaches OpenSTA (synth/power.py): each mesh register's flips and duty cycle
#: bit by bit, every other net's flips (at OpenSTA's default duty of one half). A data file holds
#: points of one annotation; a file of another is refused, not mixed.
ANNOTATION = "mesh bits: flips and duty; other nets: flips"

#: Data kinds of the training set: dense, idle, two sparsities and small values.
TRAINING_DATA = ("random", "zeros", "sparse:0.5", "sparse:0.9", "narrow:3")
#: Data kinds of the held-out points: dense, sparse, and the zero-operand floor.
HELD_OUT_DATA = ("random", "sparse:0.7", "zeros")


@dataclass(frozen=True)
class Point:
    """One GEMM to measure: its device, shape, data and role (``train``, ``held-out``)."""

    config: ArrayConfig
    shape: tuple[int, int, int]
    data: str
    role: str
    label: str  # which case of the plan: "K <= rows", "K >> rows", "stalled"

    @property
    def key(self) -> str:
        m, k, n = self.shape
        return f"{self.config.name} {m}x{k}x{n} {self.data}"

    @property
    def seed(self) -> int:
        """The operands' seed, from the key: the same point draws the same operands."""
        return zlib.crc32(self.key.encode())


def operands(point: Point) -> tuple[np.ndarray, np.ndarray]:
    """The point's ``(A, B)``: drawn from its seed, of its data kind."""
    rng = np.random.default_rng(point.seed)
    ((a, b),) = random_operands(rng, point.config, [point.shape], DataKind(point.data))
    return a, b


def _shapes(config: ArrayConfig) -> dict[str, tuple[int, int, int]]:
    """A reduction within one tile, a long one, and a stream shorter than the array (the
    streamed operand: A's rows in WS and OS, B's columns in IS), which stalls WS and IS."""
    r, c = config.rows, config.cols
    short = max(1, r // 2)
    stalled = (4 * r, 4 * r, short) if config.dataflow is Dataflow.IS else (short, 4 * r, 4 * c)
    return {"K <= rows": (4 * r, r, 4 * c), "K >> rows": (4 * r, 8 * r, 4 * c), "stalled": stalled}


def _plan() -> list[Point]:
    points = []
    for n in (2, 4, 8):
        for dataflow in Dataflow:
            config = ArrayConfig(dataflow, n, n)
            for label, shape in _shapes(config).items():
                points += [Point(config, shape, data, "train", label) for data in TRAINING_DATA]
    held = [ArrayConfig(d, 16, 16) for d in Dataflow] + [ArrayConfig(Dataflow.OS, 4, 8)]
    for config in held:
        shape = _shapes(config)["K >> rows"]
        points += [Point(config, shape, d, "held-out", "K >> rows")
                   for d in HELD_OUT_DATA]  # fmt: skip
    precisions = [ArrayConfig(d, 4, 4, a_width=16, b_width=16, acc_width=48) for d in Dataflow]
    precisions += [ArrayConfig(d, 4, 4, number="bf16") for d in Dataflow]
    for config in precisions:
        for label in ("K <= rows", "K >> rows"):
            points += [Point(config, _shapes(config)[label], d, "precision", label)
                       for d in ("random", "zeros", "sparse:0.5")]  # fmt: skip
    return points


#: Every point, in the order they are measured (cheapest devices first).
PLAN = _plan()
PARTS = ("train", "held-out", "precision")

#: Points of the plan OpenSTA cannot price with the measured duty cycles: on OS bf16 4x4 its
#: propagation gives a hundred cells of PE (0, 1) a power that is not a number, from one skew
#: register bit held high 2.7% of the cycles (found by bisecting the annotation: at a duty of
#: 0.05 it prices, at 0.03 not). Of that device only the point measured first is in the file.
UNPRICEABLE = {p.key for p in PLAN if p.config.name == "os-4x4-bf16"} - {
    "os-4x4-bf16 16x4x16 random"}  # fmt: skip


def _pj(part: dict, window: int) -> dict[str, float]:
    """Energy over ``window`` cycles of each component's average power."""
    return {name: p.total_mw * window * CLOCK_NS for name, p in part.items()}


def measure(points: list[Point], on_point=None) -> list[dict]:
    """Measure ``points`` (all of one device): one simulator run, then OpenSTA per GEMM.
    ``on_point(record)`` is called as each is priced."""
    config = points[0].config
    assert all(p.config == config for p in points)
    report = synthesize(config, clock_ns=CLOCK_NS)
    results = run_gemms(config, [operands(p) for p in points], activity=True, per_net=True,
                        name="gate-points")  # fmt: skip
    records = []
    for point, r in zip(points, results, strict=True):
        power = gate_power(report, r.net_activity(), CLOCK_NS)
        window = r.activity_cycles

        record = {
            "key": point.key, "role": point.role, "label": point.label,
            "config": config.to_dict(), "shape": list(point.shape), "data": point.data,
            "seed": point.seed, "node_nm": CELL_LIBRARY_NM, "clock_ns": CLOCK_NS,
            "annotation": ANNOTATION,
            "window_cycles": window, "counters": dict(r.counters),
            "toggles": [[c, t, n] for (c, t), n in sorted(r.toggles.items())],
            "gate_pj": _pj(power.components, window), "gate_flops_pj": _pj(power.flops, window),
            "gate_leakage_pj": {name: p.leakage_mw * window * CLOCK_NS
                                for name, p in power.components.items()},
            "cells": report.cells, "flops": report.flops,
        }  # fmt: skip
        records.append(record)
        if on_point:
            on_point(record)
    return records


def read_points(path: Path = POINTS_FILE) -> list[dict]:
    """The measured points of a data file, in file order."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _write(out, record: dict, start: float) -> None:
    out.write(json.dumps(record, sort_keys=True) + "\n")
    out.flush()
    total = sum(record["gate_pj"].values()) / np.prod(record["shape"])
    print(f"  {record['key']:<44} {total:9.2f} pJ/MAC ({time.perf_counter() - start:.0f} s)",
          flush=True)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Measure the plan's points a data file does not hold yet, device by device."""
    p = argparse.ArgumentParser(prog="python -m systolic.verify.gate_points",
                                description=main.__doc__)  # fmt: skip
    p.add_argument("--file", type=Path, default=POINTS_FILE)
    p.add_argument("--only", choices=PARTS, nargs="+", default=list(PARTS))
    p.add_argument("--sizes", type=int, nargs="+", help="only devices of these row counts")
    args = p.parse_args(argv)
    records = read_points(args.file)
    stale = [r["key"] for r in records if r.get("annotation") != ANNOTATION]
    if stale:
        p.error(f"{args.file} holds {len(stale)} points not annotated with {ANNOTATION} (the "
                f"first: {stale[0]}): measure into a new file")  # fmt: skip
    done = {r["key"] for r in records}
    todo: dict[ArrayConfig, list[Point]] = {}
    for point in PLAN:
        wanted = point.role in args.only and (not args.sizes or point.config.rows in args.sizes)
        if wanted and point.key not in done | UNPRICEABLE:
            todo.setdefault(point.config, []).append(point)
    print(f"{sum(map(len, todo.values()))} points to measure on {len(todo)} devices "
          f"({len(done)} already in {args.file})", flush=True)  # fmt: skip
    with args.file.open("a") as out:
        for points in todo.values():
            start = time.perf_counter()
            measure(points, functools.partial(_write, out, start=start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
