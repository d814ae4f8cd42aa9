"""``make seeds``: every seeded test that needs no simulator build, over many seeds.

A bound on a sampled statistic that a good build can miss refuses good work on an unlucky CI
seed. This runner measures how often each randomized test fails and how close its statistics
come to their bounds: it runs every test that takes the ``seed`` fixture once per seed of a range
(``pytest --seeds FIRST-LAST``, tests/conftest.py) and prints, per test, the seeds run, the
failures with the seed of the first, and for each statistic checked with ``tests/helpers.py``'s
``at_most``/``at_least`` the worst value against its bound, with the mean and standard deviation
the bound is set from.

Tests that build a Verilator or Icarus model are left out: a first pass runs each seeded test
once with the build folder pointing below a file, so that any build fails at once naming that
path; those tests are listed and not repeated. It is a benchmark, not a test: it exits 1 when a
test failed on any seed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

__all__ = ["main", "run_seeds"]

REPO = Path(__file__).resolve().parent.parent
#: A regular file: a build folder below it cannot be created, so a build fails naming it.
_NOT_A_FOLDER = "not-a-folder"


def _pytest(args: list[str], env: dict, xml: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--rootdir={REPO}",
         f"--junitxml={xml}", *args],
        cwd=REPO, env=env, capture_output=True, text=True,
    )  # fmt: skip


def _outcomes(xml: Path) -> dict[str, str | None]:
    """Test id -> None when it passed, else its failure text (skips are dropped)."""
    out = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        path = case.get("classname", "").replace(".", "/")
        nodeid = f"{path}.py::{case.get('name')}"
        if case.find("skipped") is not None:
            continue
        bad = case.find("failure")
        bad = bad if bad is not None else case.find("error")
        out[nodeid] = None if bad is None else (bad.get("message", "") + "\n" + (bad.text or ""))
    return out


def _base(nodeid: str) -> tuple[str, int]:
    sys.path.insert(0, str(REPO / "tests"))
    from conftest import base_nodeid

    sys.path.pop(0)
    seed = nodeid.rsplit("seed", 1)[1].split("-")[0].rstrip("]")
    return base_nodeid(nodeid), int(seed)


def run_seeds(seeds: str, jobs: int, select: list[str]) -> int:
    start = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="systolic-seeds-"))
    (work / _NOT_A_FOLDER).write_text("")
    env = {k: v for k, v in os.environ.items() if k != "SYSTOLIC_SEED"}
    env["SYSTOLIC_BUILD_DIR"] = str(work / _NOT_A_FOLDER / "build")
    print("first pass: each seeded test on one seed, with builds impossible ...", flush=True)
    _pytest(["--seeds=1-1", *select], env, work / "first.xml")
    first = _outcomes(work / "first.xml")
    builds = sorted(_base(t)[0] for t, why in first.items() if why and _NOT_A_FOLDER in why)
    (work / "exclude.txt").write_text("\n".join(builds) + "\n")
    runs = len(first) - len(builds)
    print(f"{runs} seeded test(s) need no build; {len(builds)} build a model (left out)")
    stats = work / "statistics"
    stats.mkdir()
    env["SYSTOLIC_STATISTICS"] = str(stats)
    print(f"seeds {seeds} on {jobs} worker(s) ...", flush=True)
    run = _pytest([f"--seeds={seeds}", f"--seeds-exclude={work / 'exclude.txt'}", "-n",
                   str(jobs), *select], env, work / "seeds.xml")  # fmt: skip
    if not (work / "seeds.xml").is_file():
        print(run.stdout[-3000:] + run.stderr[-3000:])
        return 2
    outcomes = _outcomes(work / "seeds.xml")
    by_test: dict[str, dict] = defaultdict(lambda: {"runs": 0, "failed": []})
    for nodeid, why in outcomes.items():
        base, seed = _base(nodeid)
        by_test[base]["runs"] += 1
        if why is not None:
            by_test[base]["failed"].append((seed, why.strip().splitlines()[0][:100]))
    values: dict[tuple[str, str], list] = defaultdict(list)
    for file in stats.glob("*.jsonl"):
        for line in file.read_text().splitlines():
            r = json.loads(line)
            values[(_base(r["test"])[0], r["what"])].append(r)
    failed_tests = 0
    print(f"\n{'test':86} {'runs':>5} {'failed':>6}")
    for base in sorted(by_test):
        t = by_test[base]
        failed_tests += bool(t["failed"])
        first_bad = f"  first: seed {min(t['failed'])[0]}: {min(t['failed'])[1]}" if t[
            "failed"] else ""  # fmt: skip
        print(f"{base:86} {t['runs']:>5} {len(t['failed']):>6}{first_bad}")
        for (test, what), rs in sorted(values.items()):
            if test != base:
                continue
            v = [r["value"] for r in rs]
            sense = rs[0]["sense"]
            worst = max(v) if sense == "<=" else min(v)
            sd = statistics.pstdev(v)
            print(
                f"    {what}: worst {worst:.4g} {sense} bound {rs[0]['bound']:.4g} "
                f"(mean {statistics.fmean(v):.4g}, sd {sd:.3g}, {len(v)} values)"
            )
    if builds:
        print("\nleft out (they build a simulator model):")
        for b in builds:
            print(f"  {b}")
    print(
        f"\n{failed_tests} of {len(by_test)} test(s) failed on some seed; "
        f"{sum(t['runs'] for t in by_test.values())} runs in {time.monotonic() - start:.0f} s "
        f"(work folder {work})"
    )
    return 1 if failed_tests else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m systolic.experiments.seeds",
                                     description=__doc__.splitlines()[0])  # fmt: skip
    parser.add_argument("--seeds", default="1-200", metavar="FIRST-LAST",
                        help="the seeds, inclusive (default: 1-200)")  # fmt: skip
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2,
                        help="pytest-xdist workers (default: the cores)")  # fmt: skip
    parser.add_argument("select", nargs="*", default=["tests"],
                        help="pytest selections (default: tests)")  # fmt: skip
    args = parser.parse_args(argv)
    return run_seeds(args.seeds, args.jobs, args.select)


if __name__ == "__main__":
    sys.exit(main())
