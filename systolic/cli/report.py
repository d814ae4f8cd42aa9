"""``systolic report``: the markdown and HTML report of a sweep's results."""

from __future__ import annotations

import argparse
from pathlib import Path

from systolic.sweeps.report import write_report

from .options import UsageError


def add_parser(sub) -> None:
    p = sub.add_parser(
        "report",
        help="write the markdown and HTML report (with plots) of a sweep's results",
        description="Read RESULTS (a sweep's results.jsonl) and write report.md, report.html "
        "and the PNG plots into its folder (or --out).",
    )
    p.add_argument("results", type=Path, help="a results.jsonl written by systolic sweep")
    p.add_argument("--out", type=Path, metavar="DIR", help="where to write the report")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not args.results.is_file():
        raise UsageError(f"systolic report: no results file {args.results}")
    paths = write_report(args.results, args.out)
    print(f"report: {paths['html']} (and {paths['markdown'].name}, "
          f"{len(paths) - 2} plot(s))")  # fmt: skip
    return 0
