"""``systolic regress``: a regression of random and corner-case GEMMs on one configuration's
simulated device, for an RTL engineer's own config.json and for CI (JUnit XML)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from systolic.contract.config import ArrayConfig, check_buildable

from .options import (
    UsageError,
    add_json_option,
    add_seed_option,
    file_problem,
    human,
    output_file,
    positive,
    seed_of,
)


def add_parser(sub) -> None:
    p = sub.add_parser(
        "regress",
        help="random and corner-case GEMMs on a configuration's device, bit-exact and "
        "against the model; JUnit XML",
        description="Simulate --count GEMMs on the device of CONFIG (a config.json, as "
        "`systolic generate` writes): dims of 1, ragged and multi-chunk shapes, random, corner "
        "and zero values (bf16 specials), every loop order, random chunk sizes, the "
        "configuration's zero points and requantization, the DRAM model at random bandwidths "
        "and latencies, and cocotbext-axi's AXI RAM with random pauses on every channel. Each "
        "is checked bit-exact against golden/ and counter by counter against the device model. "
        "Prints a summary, writes JUnit XML, and for every failure the command that replays it "
        "alone with a waveform. Exit status 1 if any case fails.",
    )
    p.add_argument("config", type=Path, metavar="CONFIG", help="the configuration's JSON file")
    p.add_argument("--count", type=positive, default=24, help="GEMMs to run (default 24)")
    add_seed_option(p, "the cases")
    add_json_option(p, "every case's outcome")
    p.add_argument("--case", type=int, action="append", metavar="I",
                   help="run case I of the seed alone (repeatable), as a replay")  # fmt: skip
    p.add_argument("--junit", type=output_file, metavar="FILE",
                   help="JUnit XML report (default regress-<config>-s<seed>.xml)")  # fmt: skip
    p.add_argument("--waves", type=output_file, metavar="FILE",
                   help="with one --case: its waveform (.fst, or .vcd)")  # fmt: skip
    p.add_argument("--no-pauses", action="store_true",
                   help="no cases behind the AXI RAM (which needs a second build)")  # fmt: skip
    p.add_argument("--timeout", type=float, metavar="SECONDS",
                   help="wall-clock limit of each simulator run")  # fmt: skip
    p.set_defaults(func=run)


def _config(path: Path) -> ArrayConfig:
    try:
        text = path.read_text()
    except OSError as e:
        raise UsageError(f"systolic regress: cannot read {path}: {e.strerror}") from None
    try:
        config = ArrayConfig.from_json(text)
    except ValueError as e:
        raise UsageError(f"systolic regress: {path}: {e}") from None
    check_buildable(config)
    return config


def run(args: argparse.Namespace) -> int:
    from systolic.verify.regress import case, replay_command, run_regression, write_junit

    config = _config(args.config)
    seed = seed_of(args)
    pauses = not args.no_pauses
    indices = args.case if args.case else list(range(args.count))
    if any(i < 0 for i in indices):
        raise UsageError("systolic regress: --case must be 0 or more")
    if args.waves is not None and len(indices) != 1:
        raise UsageError("systolic regress: --waves needs exactly one --case (one GEMM's waveform)")
    if args.waves is not None and args.waves.suffix not in (".fst", ".vcd"):
        raise UsageError(f"systolic regress: --waves must end in .fst or .vcd, not {args.waves}")
    junit = args.junit or Path(f"regress-{config.name}-s{seed}.xml")
    if file_problem(junit):  # the default name, checked before any case runs
        raise UsageError(f"systolic regress: {file_problem(junit)} (choose another with --junit)")
    selected = [case(config, seed, i, pauses) for i in indices]
    out = human(args)
    case_note = f", case {indices[0]}" if args.case and len(indices) == 1 else ""
    print(f"{config.name}: {len(selected)} GEMM(s), seed {seed}{case_note}", file=out)

    def replay(index: int) -> str:
        return replay_command(args.config, seed, index, pauses)

    def show(outcome) -> None:
        status = "passed" if outcome.passed else "FAILED"
        print(f"  case {outcome.case.index:3d}  {status}  {outcome.case.describe()}", file=out)
        for failure in outcome.failures:
            print(f"      {failure}", file=out)
        if not outcome.passed:
            print(f"      replay: {replay(outcome.case.index)}", file=out)
        out.flush()

    outcomes = run_regression(config, selected, waves=args.waves, timeout=args.timeout,
                              progress=show)  # fmt: skip
    write_junit(junit, config, seed, outcomes, replay)
    failed = [o for o in outcomes if not o.passed]
    print(f"{len(outcomes) - len(failed)} of {len(outcomes)} passed; JUnit XML: {junit}",
          file=out)  # fmt: skip
    if args.waves is not None:
        print(f"waveform: {args.waves} (open it with gtkwave or surfer)", file=out)
    if args.json:
        cases = [{"index": o.case.index, "case": o.case.describe(), "passed": o.passed,
                  "failures": o.failures, "seconds": o.seconds,
                  "replay": None if o.passed else replay(o.case.index)}
                 for o in outcomes]  # fmt: skip
        summary = {"config": config.name, "seed": seed, "passed": len(outcomes) - len(failed),
                   "failed": len(failed), "junit": str(junit), "cases": cases}  # fmt: skip
        print(json.dumps(summary, indent=2))
    return 1 if failed else 0
