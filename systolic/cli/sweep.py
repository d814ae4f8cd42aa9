"""``systolic sweep``: configurations x workloads from a YAML spec, ending in a report."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .options import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_UNAVAILABLE,
    UsageError,
    add_json_option,
    check_output_folder,
    output_folder,
    positive,
)


def add_parser(sub) -> None:
    p = sub.add_parser(
        "sweep",
        help="evaluate configurations x workloads from a YAML spec and write a report",
        description="Evaluate every configuration of SPEC on every workload with the analytical "
        "model, simulate the points the spec chooses in RTL (cycles, counters, toggle energy, "
        "bit-exact check), append each result to RESULTS/results.jsonl as it finishes, and "
        "write report.md, report.html and PNG plots there. See sweeps/sweep_spec.py for the format "
        "and sweeps/specs/default.yaml for an example.",
    )
    p.add_argument("spec", type=Path, help="the sweep specification (YAML)")
    p.add_argument("--out", type=output_folder, metavar="DIR",
                    help="results folder (default: results/<spec name>)")  # fmt: skip
    p.add_argument("--jobs", type=positive, metavar="N",
                    help="worker processes: batches of model points, then configurations "
                    "simulated in RTL (default: all cores)")  # fmt: skip
    p.add_argument("--resume", action="store_true",
                    help="continue an interrupted sweep: skip every point already in the "
                    "results file")  # fmt: skip
    p.add_argument("--scheduler", metavar="ADDRESS",
                    help="run the tasks on the Dask cluster whose scheduler is at ADDRESS "
                    "(tcp://HOST:PORT; default: $SYSTOLIC_SCHEDULER, else a local pool of "
                    "--jobs workers); see docs/sweeps.md")  # fmt: skip
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_json_option(p, "the points, failures and files written")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from systolic.serving.study import run_study
    from systolic.serving.study_report import write_serving_report
    from systolic.serving.study_spec import load_serving_spec
    from systolic.sweeps.engines import check_address
    from systolic.sweeps.report import SERVING_FOLDER, points_of, write_report
    from systolic.sweeps.results import load_results
    from systolic.sweeps.run import EngineUnavailable, SweepInterrupted, run_sweep
    from systolic.sweeps.sweep_spec import load_spec

    sweep = load_spec(args.spec)  # SpecError (a ValueError) names file, line and key: exit 2
    study = load_serving_spec(sweep.serving) if sweep.serving else None  # checked before any work
    out = args.out if args.out is not None else Path("results") / sweep.name
    check_output_folder(out, "sweep")
    print(f"sweep {sweep.name}: {len(sweep.configs)} configuration(s) x {len(sweep.workloads)} "
          f"workload(s) = {sweep.points} points; RTL: {sweep.rtl}; results in {out}",
          file=sys.stderr)  # fmt: skip
    scheduler = args.scheduler or os.environ.get("SYSTOLIC_SCHEDULER") or None
    if scheduler:
        try:
            check_address(scheduler)
        except ValueError as e:
            where = "" if args.scheduler else " (from $SYSTOLIC_SCHEDULER)"
            raise UsageError(f"systolic sweep: {e}{where}") from None
    try:
        results = run_sweep(sweep, out, jobs=args.jobs, resume=args.resume,
                            progress=not args.quiet, scheduler=scheduler)  # fmt: skip
    except EngineUnavailable as e:
        print(f"systolic sweep: {e}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except SweepInterrupted as e:
        print(f"systolic sweep: {e}", file=sys.stderr)
        return EXIT_INTERRUPTED
    if study is not None:
        if not args.quiet:
            print(f"serving study {study.name}: {len(study.streams)} stream(s)", file=sys.stderr)
        records = run_study(study)
        write_serving_report(study.name, records, out / SERVING_FOLDER, study.power_budget_w,
                             study.notes)  # fmt: skip
    paths = write_report(results)
    points, failures = points_of(load_results(results))
    print(f"{len(points)} points, {len(failures)} failed evaluation(s); report: {paths['html']} "
          f"(and {paths['markdown'].name}, plots in {paths['html'].parent})",
          file=sys.stderr if args.json else sys.stdout)  # fmt: skip
    if args.json:
        print(json.dumps({"name": sweep.name, "points": len(points), "failed": len(failures),
                          "results": str(results),
                          "files": {k: str(v) for k, v in paths.items()}}, indent=2))  # fmt: skip
    return EXIT_FAILED if failures else EXIT_OK
