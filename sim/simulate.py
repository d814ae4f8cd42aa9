"""``run_gemm``: one entry from Python to the simulated accelerator, for tests, tools and sweeps."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from systolic.contract.config import ArrayConfig
from systolic.contract.figures import GemmFigures
from systolic.contract.interface import COUNTERS
from systolic.golden.reference import check_operands, check_zero_points
from systolic.golden.requant import RequantParams
from systolic.sim.build import build_model, run_cocotb

__all__ = ["Quantization", "SimResult", "SimulationError", "run_gemm", "run_gemms"]


@dataclass
class SimResult(GemmFigures):
    """What one GEMM did on the simulated accelerator.

    ``counters`` sums the hardware counters of every command the host issued (one per chunk of
    :func:`contract.plan.plan`); ``commands`` keeps them per command, with the bench monitor's
    own cycle count (``measured_cycles``); ``offchip_words`` counts the buffer words that crossed
    the host streams, in (A, B) and out (C), as the monitor saw them.
    """

    config: ArrayConfig
    shape: tuple[int, int, int]
    c: np.ndarray
    counters: dict[str, int]
    commands: list[dict] = field(default_factory=list)
    offchip_words: dict[str, int] = field(default_factory=dict)
    errors: int = 0
    #: Bit flips per (component, traffic) group while busy; only from an activity build.
    toggles: dict[tuple[str, str], int] | None = None
    wall_seconds: float = 0.0  # the whole GEMM in the simulator, host transfers included
    compute_seconds: float = 0.0  # of which waiting for `done` (Python idle, simulator running)

    @property
    def measured_cycles(self) -> int:
        """Cycles from each command's acceptance to its ``done``, summed, as the simulation's
        bench monitor counted them (not the hardware's counter)."""
        return sum(cmd["measured_cycles"] for cmd in self.commands)

    @property
    def sim_speed(self) -> float:
        """Simulated accelerator cycles per wall-clock second while the accelerator computes."""
        return self.cycles / self.compute_seconds if self.compute_seconds else 0.0

    def summary(self) -> dict:
        return self.figures() | {"commands": len(self.commands), "errors": self.errors}


@dataclass(frozen=True)
class Quantization:
    """Quantized arithmetic of one GEMM: zero points of A and B (``zero_points``) and, with
    ``params`` (``requant``), requantized outputs."""

    a_zero: int = 0
    b_zero: int = 0
    params: RequantParams | None = None

    def job(self, config: ArrayConfig, channels: int) -> dict:
        """The job fields the cocotb driver reads, after checking them against ``config``."""
        check_zero_points(config, self.a_zero, self.b_zero)
        job = {"a_zero": int(self.a_zero), "b_zero": int(self.b_zero)}
        if self.params is not None:
            if not config.requant:
                raise ValueError(f"{config.name} has no requantization unit (requant=False)")
            self.params.check(config, channels)
            p = self.params
            job["requant"] = {"multiplier": np.asarray(p.multiplier).tolist(),
                              "shift": np.asarray(p.shift).tolist(),
                              "out_zero": int(p.out_zero), "relu": bool(p.relu)}  # fmt: skip
        return job


class SimulationError(RuntimeError):
    """The simulator failed (crash, timeout, a failed test) before finishing every GEMM; the
    results of those it finished are in ``finished`` and its log is at ``log``."""

    def __init__(self, message: str, log: Path, finished: dict[int, SimResult]):
        super().__init__(message)
        self.log = log
        self.finished = finished


def run_gemms(
    config: ArrayConfig,
    operands: list[tuple[np.ndarray, np.ndarray]],
    *,
    pause: float = 0.0,
    seed: int = 0,
    name: str = "gemms",
    activity: bool = False,
    on_result: Callable[[int, SimResult], None] | None = None,
    timeout: float | None = None,
    quant: list[Quantization | None] | None = None,
    backdoor: bool = False,
) -> list[SimResult]:
    """Run every ``(A, B)`` on one simulator process of the accelerator for ``config``.

    ``pause`` is the probability that the host holds a stream's valid or ready low in a cycle
    (0 for full speed). Operands are checked against the configuration first. ``activity``
    runs the separately built model that counts switching activity (``SimResult.toggles``).
    ``on_result(i, result)`` is called (from a watcher thread) as soon as GEMM ``i`` finishes;
    ``timeout`` bounds the simulation's wall-clock seconds. A failed simulation raises
    :class:`SimulationError`, which still carries the GEMMs that finished. ``quant[i]`` gives
    GEMM ``i`` zero points and a requantization (``SimResult.c`` then holds the requantized
    outputs). ``backdoor`` loads A and B words straight into the buffer memories instead of
    through the write streams (same words, same off-chip counts; for long sweeps).
    """
    if not 0.0 <= pause < 1.0:
        raise ValueError(f"pause must be a probability in [0, 1), not {pause!r}")
    jobs = {}
    meta = {"seed": int(seed), "jobs": []}
    for i, (a, b) in enumerate(operands):
        a, b = check_operands(config, a, b)
        jobs[f"a{i}"], jobs[f"b{i}"] = a, b
        job = {"pause": pause}
        q = quant[i] if quant else None
        if q is not None:
            job |= q.job(config, b.shape[1])
        meta["jobs"].append(job)
    build = build_model(config, "accelerator", activity=activity)
    groups = json.loads((build.directory / "activity.json").read_text()) if activity else []
    by_counter = {g["counter"]: (g["component"], g["traffic"]) for g in groups}
    run_dir = build.directory / "jobs" / f"{name}-{os.getpid()}-{threading.get_ident()}"
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    jobs_file = run_dir / "jobs.npz"
    np.savez(jobs_file, meta=json.dumps(meta), **jobs)

    finished: dict[int, SimResult] = {}

    def collect() -> None:
        for i in range(len(operands)):
            path = run_dir / f"job-{i}.npz"
            if i in finished or not path.exists():
                continue
            finished[i] = _result(config, operands[i], path, by_counter, activity)
            if on_result:
                on_result(i, finished[i])

    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.5):
            collect()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    env = {"SYSTOLIC_JOBS": str(jobs_file), "SYSTOLIC_RESULTS": str(run_dir),
           "SYSTOLIC_ACTIVITY": json.dumps(list(by_counter)),
           "SYSTOLIC_BACKDOOR": "1" if backdoor else "0"}  # fmt: skip
    if timeout is not None:
        env["SYSTOLIC_DEADLINE"] = str(time.time() + timeout)
    failure = None
    try:
        run = run_cocotb(build, "systolic.tb.accelerator_tb", testcase="run_jobs", env=env,
                         name=run_dir.name)  # fmt: skip
        if run.failed:
            failure = ("the simulation failed", run.log)
    except RuntimeError as e:
        failure = (str(e), build.directory / "runs" / run_dir.name / "sim.log")
    finally:
        stop.set()
        watcher.join()
    collect()
    if failure or len(finished) < len(operands):
        message, log = failure or ("the simulation ended early", None)
        raise SimulationError(f"{config.name}: {message}; see {log}", log, finished)
    return [finished[i] for i in range(len(operands))]


def _result(config, operands, path: Path, by_counter: dict, activity: bool) -> SimResult:
    a, b = operands
    with np.load(path) as data:
        details = json.loads(str(data["info"]))
        c = data["c"]
    commands = details["commands"]
    totals = {key: sum(cmd["counters"][key] for cmd in commands) for key in COUNTERS}
    toggles = None
    if activity:
        toggles = {group: sum(cmd["toggles"][counter] for cmd in commands)
                   for counter, group in by_counter.items()}  # fmt: skip
    return SimResult(
        config=config,
        shape=(a.shape[0], a.shape[1], b.shape[1]),
        c=c,
        counters=totals,
        commands=commands,
        offchip_words=details["offchip_words"],
        errors=sum(cmd["error"] for cmd in commands),
        toggles=toggles,
        wall_seconds=details["wall_seconds"],
        compute_seconds=details["compute_seconds"],
    )


def run_gemm(config: ArrayConfig, a: np.ndarray, b: np.ndarray, **kwargs) -> SimResult:
    """One GEMM on the simulated accelerator (see :func:`run_gemms`)."""
    return run_gemms(config, [(a, b)], **kwargs)[0]
