"""``make bench-model``: the analytical model over a design space of 100,800 points (a benchmark,
not a test; ``sweeps/specs/design-space.yaml``).

It prints the model's time per point (median and mean, in one process, over every point of a
few configurations drawn at random, in the order a sweep's worker takes them), points per
second of the whole sweep on the local pool and on a local two-worker Dask cluster (the same
records, checked line for line), and how long ``systolic report`` takes on the result.
``--points N`` runs the first N points only.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from systolic.models.energy import load_coefficients
from systolic.workloads.evaluate import model_record

from .report import write_report
from .run import run_sweep
from .sweep_spec import Sweep, load_spec

SPEC = Path(__file__).resolve().parent / "specs" / "design-space.yaml"


def _trimmed(sweep: Sweep, points: int | None) -> Sweep:
    """The sweep, or its first workloads: about ``points`` points."""
    if points is None:
        return sweep
    per_workload = len(sweep.configs) * len(sweep.memories)
    return replace(sweep, workloads=sweep.workloads[: max(1, -(-points // per_workload))])


def _per_point(sweep: Sweep, configs: int, seed: int) -> list[float]:
    """Seconds per point, in this process, of every point of ``configs`` configurations drawn
    at random (``seed``) from the sweep's, in the order a sweep's worker takes them (one
    configuration's points together: they share the models' caches)."""
    co = load_coefficients(sweep.coefficients)
    chosen = random.Random(seed).sample(list(sweep.configs), min(configs, len(sweep.configs)))
    model_record(chosen[0], sweep.workloads[0], sweep.memories[0], co, sweep.data, sweep.seed)
    times = []
    for c in chosen:
        for m in sweep.memories:
            for w in sweep.workloads:
                start = time.perf_counter()
                model_record(c, w, m, co, sweep.data, sweep.seed)
                times.append(time.perf_counter() - start)
    return times


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, help="only about this many points")
    parser.add_argument("--jobs", type=int, default=2, help="local workers (default 2)")
    parser.add_argument("--out", type=Path, help="keep the results here (default: a temp dir)")
    parser.add_argument(
        "--timing-configs",
        type=int,
        default=12,
        metavar="N",
        help="time the points of N random configurations one by one (default 12)",
    )
    parser.add_argument("--timing-seed", type=int, default=0, help="which ones (default 0)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        out = args.out or Path(scratch)
        out.mkdir(parents=True, exist_ok=True)
        sweep = _trimmed(load_spec(SPEC), args.points)
        n = sweep.points
        print(f"design space: {len(sweep.configs)} configurations x {len(sweep.workloads)} "
              f"workloads x {len(sweep.memories)} memories = {n:,} points")  # fmt: skip
        times = _per_point(sweep, args.timing_configs, args.timing_seed)
        print(
            f"model, one process: median {statistics.median(times) * 1e3:.2f} ms a point, "
            f"mean {statistics.mean(times) * 1e3:.2f} ms ({len(times):,} points of "
            f"{args.timing_configs} random configurations, seed {args.timing_seed})"
        )
        runs = {}
        start = time.perf_counter()
        runs["local"] = run_sweep(sweep, out / "local", jobs=args.jobs, progress=False)
        local = time.perf_counter() - start
        print(
            f"local pool, {args.jobs} workers: {n:,} points in {local:.1f} s, "
            f"{n / local:,.0f} points/s"
        )

        from distributed import LocalCluster

        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster:  # fmt: skip
            start = time.perf_counter()
            runs["dask"] = run_sweep(sweep, out / "dask", progress=False,
                                     scheduler=cluster.scheduler_address)  # fmt: skip
            dask = time.perf_counter() - start
        same = runs["local"].read_bytes() == runs["dask"].read_bytes()
        print(
            f"Dask, local cluster of 2 workers: {n:,} points in {dask:.1f} s, "
            f"{n / dask:,.0f} points/s; results identical to the local pool's: {same}"
        )
        size = runs["local"].stat().st_size
        start = time.perf_counter()
        paths = write_report(runs["local"])
        report = time.perf_counter() - start
        print(
            f"systolic report on {n:,} points ({size / 1e6:,.0f} MB of results): {report:.1f} s; "
            f"report.html {paths['html'].stat().st_size / 1e6:.1f} MB, "
            f"points.csv {paths['csv'].stat().st_size / 1e6:.1f} MB"
        )


if __name__ == "__main__":
    main()
