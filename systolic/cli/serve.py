"""``systolic serve``: a serving study (request streams, batching, SLAs, a power budget) on the
device model, ending in a report with the feasible Pareto frontier."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .options import check_output_folder, output_folder


def add_parser(sub) -> None:
    p = sub.add_parser(
        "serve",
        help="serve request streams under batching policies: P99, sustainable rate at an SLA, "
        "energy per inference or token",
        description="Serve every stream of SPEC on every configuration and clock under every "
        "batching policy, in a discrete-event simulation whose service times and energy come "
        "from the device model: latency percentiles, the highest rate meeting each P99 SLA, "
        "energy per inference (per output token for generation) split into busy, idle and "
        "leakage, clock clamps under the power budget; then report.md, report.html, "
        "serving.json and plots in OUT. See serving/study_spec.py for the format.",
    )
    p.add_argument("spec", type=Path, help="the serving study (YAML)")
    p.add_argument("--out", type=output_folder, metavar="DIR",
                   help="report folder (default: results/<spec name>-serving)")  # fmt: skip
    p.add_argument("--json", action="store_true", help="print the records as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from systolic.serving.study import run_study
    from systolic.serving.study_report import frontier, write_serving_report
    from systolic.serving.study_spec import load_serving_spec

    spec = load_serving_spec(args.spec)  # SpecError names file, line and key: exit 2
    out = args.out if args.out is not None else Path("results") / f"{spec.name}-serving"
    check_output_folder(out, "serve")

    def progress(text: str) -> None:
        if not args.quiet:
            print(f"serving {text}", file=sys.stderr, flush=True)

    records = run_study(spec, progress)
    paths = write_serving_report(spec.name, records, out, spec.power_budget_w, spec.notes)
    if args.json:
        print(json.dumps(records, indent=1))
        return 0
    front = frontier(records)
    print(f"{len(records)} operating points, {sum(r['feasible'] for r in records)} feasible, "
          f"{len(front)} on the frontier; report: {paths['html']}")  # fmt: skip
    for r in front:
        print(f"  {r['stream']}, P99 <= {r['sla_p99_ms']:g} ms: {r['config_name']} at "
              f"{r['clock_mhz']:g} MHz, {r['policy']}: {r['capacity_rps']:.3g} req/s, "
              f"{r['energy_per_unit_pj']['total_pj'] / 1e6:.4g} uJ per {r['unit']} "
              f"({r['energy_per_unit_range_pj'][0] / 1e6:.3g} to "
              f"{r['energy_per_unit_range_pj'][1] / 1e6:.3g})")  # fmt: skip
    return 0
