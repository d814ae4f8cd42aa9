"""sweeps/engines.py through `systolic sweep`: a real Dask scheduler and two workers, started here
as separate processes on 127.0.0.1, run a sweep of model and RTL points while one worker dies
in the middle of its task, and the records equal a local run's; the local pool survives a dead
worker the same way; a scheduler that does not answer is a clear error, soon."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from systolic.sweeps.results import load_results

from ..helpers import TINY, run_cli, run_faulty, write_spec

ROOT = Path(__file__).resolve().parents[2]
DASK = Path(sys.executable).parent / "dask"
FAULTS = ROOT / "tests" / "faults.py"


def _records(path: Path) -> dict:
    """Every record by (id, kind); every line must be a whole record, each point once."""
    lines = path.read_text().splitlines()
    records = [json.loads(line) for line in lines]  # a torn line fails here
    keys = Counter((r["id"], r["kind"]) for r in records)
    assert set(keys.values()) == {1}, keys
    return {(r["id"], r["kind"]): r for r in records}


def _wait(condition, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"{what} within {seconds} s")


@pytest.fixture
def cluster(tmp_path):
    """A scheduler and two single-threaded workers without nannies (a killed worker stays
    dead), whose first RTL point kills its worker (tests/faults.py, preloaded)."""
    info = tmp_path / "scheduler.json"
    marker = tmp_path / "died"
    env = {**os.environ, "SYSTOLIC_SWEEP_DIE_IN_TASK": str(marker)}
    logs = []

    def start(*args) -> subprocess.Popen:
        log = open(tmp_path / f"dask-{len(logs)}.log", "w")  # noqa: SIM115 (closed at teardown)
        logs.append(log)
        return subprocess.Popen([str(DASK), *args], cwd=ROOT, env=env, stdout=log, stderr=log,
                                start_new_session=True)  # fmt: skip

    procs = [start("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                   "--scheduler-file", str(info))]  # fmt: skip
    try:
        address = _wait(lambda: info.exists() and json.loads(info.read_text() or "{}").get(
            "address"), 60, "the scheduler wrote its address")  # fmt: skip
        for _ in range(2):
            procs.append(start("worker", address, "--nthreads", "1", "--no-nanny",
                               "--no-dashboard", "--preload", str(FAULTS)))  # fmt: skip
        yield address, marker, procs[1:]
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:  # a worker mid-task can take 20 s to leave on SIGTERM: 5 s, then KILL
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        for log in logs:
            log.close()


@pytest.mark.long
def test_a_dask_sweep_survives_a_killed_worker_and_equals_the_local_run(tmp_path, cluster):
    address, marker, workers = cluster
    spec = write_spec(tmp_path, TINY)
    local = run_cli("sweep", str(spec), "--out", str(tmp_path / "local"), "--jobs", "2",
                    "--quiet")  # fmt: skip
    assert local.returncode == 0, local.stderr
    r = run_cli("sweep", str(spec), "--out", str(tmp_path / "dask"), "--scheduler", address)
    assert r.returncode == 0, r.stderr
    assert "on the Dask cluster" in r.stderr
    assert marker.exists()  # a worker died in the middle of an RTL group ...
    assert sorted(p.poll() is None for p in workers) == [False, True]  # one dead, one alive
    assert -signal.SIGKILL in [p.poll() for p in workers]
    dask, reference = _records(tmp_path / "dask" / "results.jsonl"), _records(
        tmp_path / "local" / "results.jsonl")  # fmt: skip
    assert Counter(kind for _, kind in dask) == {"model": 4, "rtl": 4}  # ... and it was rerun
    assert dask == reference  # number for number
    # the model points come back in order, whichever worker ran them
    lines = (tmp_path / "dask" / "results.jsonl").read_text().splitlines()
    assert lines[:4] == (tmp_path / "local" / "results.jsonl").read_text().splitlines()[:4]
    # --resume on the local pool takes the cluster's results as its own: nothing left to do
    again = run_cli("sweep", str(spec), "--out", str(tmp_path / "dask"), "--resume", "--quiet")
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "dask" / "results.jsonl").read_text().splitlines() == lines


def test_the_local_pool_reruns_the_task_of_a_killed_worker(tmp_path):
    marker = tmp_path / "died"
    out = tmp_path / "out"
    r = run_faulty("sweep", str(write_spec(tmp_path, TINY)), "--out", str(out), "--jobs", "2",
                   "--quiet", env={"SYSTOLIC_SWEEP_DIE_IN_TASK": str(marker)})  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert marker.exists()
    records = _records(out / "results.jsonl")
    assert Counter(kind for _, kind in records) == {"model": 4, "rtl": 4}
    assert all(rec["status"] == "ok" for rec in records.values())


def test_a_scheduler_that_does_not_answer_is_a_clear_error(tmp_path):
    spec = str(write_spec(tmp_path, TINY))
    start = time.monotonic()
    r = run_cli("sweep", spec, "--out", str(tmp_path / "out"), "--scheduler",
                "tcp://127.0.0.1:9", env={"SYSTOLIC_SCHEDULER_TIMEOUT": "2"})  # fmt: skip
    assert time.monotonic() - start < 30
    assert r.returncode == 4  # a service that did not answer: not an interruption
    assert "no Dask scheduler answered at tcp://127.0.0.1:9 within 2 s" in r.stderr
    assert "Traceback" not in r.stderr
    bad = run_cli("sweep", spec, "--out", str(tmp_path / "out"), "--scheduler", "somewhere")
    assert bad.returncode == 2 and "--scheduler must be tcp://HOST:PORT" in bad.stderr
    assert not load_results(tmp_path / "out" / "results.jsonl")  # nothing half-written
