"""``systolic report``: the markdown and HTML report of a sweep's results."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .options import UsageError, add_json_option, human, output_file, output_folder


def add_parser(sub) -> None:
    p = sub.add_parser(
        "report",
        help="write the markdown and HTML report (with plots) of a sweep's results",
        description="Read RESULTS (a sweep's results.jsonl) and write report.md, report.html "
        "and the PNG plots into its folder (or --out).",
    )
    p.add_argument("results", type=Path, help="a results.jsonl written by systolic sweep")
    p.add_argument("--out", type=output_folder, metavar="DIR", help="where to write the report")
    p.add_argument("--screenshot", type=output_file, metavar="PNG",
                   help="also open report.html in headless Chromium and save its first screen "
                   "(1280x800) as PNG; exit 1 if the page logs an error")  # fmt: skip
    add_json_option(p, "the files written (and the browser's problems with --screenshot)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from systolic.sweeps.report import write_report
    from systolic.sweeps.report.browser import Browser

    if not args.results.is_file():
        raise UsageError(f"systolic report: no results file {args.results}")
    paths = write_report(args.results, args.out)
    out = human(args)
    print(f"report: {paths['html']} (and {paths['markdown'].name}, "
          f"{len(paths) - 2} plot(s))", file=out)  # fmt: skip
    written = {k: str(v) for k, v in paths.items()}
    if args.screenshot is None:
        if args.json:
            print(json.dumps({"files": written}, indent=2))
        return 0
    with Browser() as browser:
        browser.open(paths["html"])
        browser.settle("document.querySelectorAll('.js-plotly-plot .main-svg').length > 0", 5)
        browser.screenshot(args.screenshot)
        problems = browser.problems()
    for line in problems:
        print(f"report.html: {line}", file=out)
    print(f"first screen: {args.screenshot}", file=out)
    if args.json:
        print(json.dumps({"files": written, "screenshot": str(args.screenshot),
                          "problems": problems}, indent=2))  # fmt: skip
    return 1 if problems else 0
