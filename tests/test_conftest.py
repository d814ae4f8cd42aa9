"""tests/conftest.py: one seed for a whole xdist run, printed in the header and in every failure,
and a run replayed with it sees the same seed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from .helpers import computed_once

INNER = """
import os

from conftest import SEED


def _record(name):
    with open(os.environ["SEEN"], "a") as f:
        f.write(f"{name} {os.getpid()} {SEED} {os.environ['SYSTOLIC_RUN_DIR']}\\n")


def test_a():
    _record("a")


def test_b():
    _record("b")


def test_c():
    _record("c")


def test_d():
    _record("d")


def test_fails():
    _record("fails")
    assert False
"""


def _run(tmp_path: Path, seed: str | None) -> tuple[str, list[list[str]]]:
    shutil.copy(Path(__file__).with_name("conftest.py"), tmp_path / "conftest.py")
    (tmp_path / "test_inner.py").write_text(INNER)
    seen = tmp_path / f"seen-{seed}.txt"
    env = {k: v for k, v in os.environ.items() if k != "SYSTOLIC_SEED"} | {"SEEN": str(seen)}
    if seed is not None:
        env["SYSTOLIC_SEED"] = seed
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "-p", "no:cacheprovider", "--rootdir",
         str(tmp_path), str(tmp_path / "test_inner.py")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert "1 failed, 4 passed" in run.stdout, run.stdout + run.stderr
    return run.stdout, [line.split() for line in seen.read_text().splitlines()]


def test_every_worker_sees_the_seed_of_the_header(tmp_path):
    out, seen = _run(tmp_path, None)
    header = re.search(r"systolic seed: (\d+) \(replay with SYSTOLIC_SEED=(\d+) make test\)", out)
    assert header and header.group(1) == header.group(2), out
    seed = header.group(1)
    assert len({pid for _, pid, _, _ in seen}) == 2, seen  # two workers ran the tests
    assert {s for _, _, s, _ in seen} == {seed}, seen
    # one folder for the run's shared values, in every worker, removed when the run ends
    (folder,) = {f for *_, f in seen}
    assert not Path(folder).exists() and folder != os.environ["SYSTOLIC_RUN_DIR"], folder
    # the failure names the seed and the command that replays that test alone
    assert f"replay: SYSTOLIC_SEED={seed} make test PYTEST_ARGS='test_inner.py::test_fails'" in out
    # and a replay with that seed gives every worker the same seed again
    _, again = _run(tmp_path, seed)
    assert {s for _, _, s, _ in again} == {seed}, again


def test_a_value_is_computed_once_a_run():
    calls = []
    name = f"once-{os.getpid()}"
    for _ in range(2):
        assert computed_once(name, lambda: calls.append(1) or {"x": 7}) == {"x": 7}
    assert calls == [1]


SEEDED = """
def test_seeded(seed):
    assert seed != 3


def test_plain():
    pass
"""


def test_seeds_runs_each_seeded_test_once_per_seed_and_replays_a_failure(tmp_path):
    """``--seeds 2-4`` (make seeds): the seeded test once per seed, the others deselected, and
    a failure names its seed and the plain run that replays it; the statistic helpers record."""
    shutil.copy(Path(__file__).with_name("conftest.py"), tmp_path / "conftest.py")
    (tmp_path / "test_inner.py").write_text(SEEDED)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
         "--seeds=2-4", "-v", str(tmp_path / "test_inner.py")],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    out = run.stdout
    assert "1 failed, 2 passed, 1 deselected" in out, out
    assert "test_seeded[seed2] PASSED" in out and "test_seeded[seed4] PASSED" in out, out
    assert "replay: SYSTOLIC_SEED=3 make test PYTEST_ARGS='test_inner.py::test_seeded'" in out
