"""``run_gemm``: one entry from Python to the simulated accelerator, for tests, tools and sweeps."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import numpy as np

from golden.gemm import check_operands
from golden.model import GemmFigures
from rtl.config import ArrayConfig
from rtl.top import COUNTERS

from .sim import build_model, run_cocotb

__all__ = ["SimResult", "run_gemm", "run_gemms"]


@dataclass
class SimResult(GemmFigures):
    """What one GEMM did on the simulated accelerator.

    ``counters`` sums the hardware counters of every command the host issued (one per chunk of
    :func:`rtl.host.plan`); ``commands`` keeps them per command; ``offchip_words`` counts the
    buffer words the host wrote (A, B) and read (C).
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
    def sim_speed(self) -> float:
        """Simulated accelerator cycles per wall-clock second while the accelerator computes."""
        return self.cycles / self.compute_seconds if self.compute_seconds else 0.0

    def summary(self) -> dict:
        return self.figures() | {"commands": len(self.commands), "errors": self.errors}


def run_gemms(
    config: ArrayConfig,
    operands: list[tuple[np.ndarray, np.ndarray]],
    *,
    pause: float = 0.0,
    seed: int = 0,
    name: str = "gemms",
    activity: bool = False,
) -> list[SimResult]:
    """Run every ``(A, B)`` on one simulator process of the accelerator for ``config``.

    ``pause`` is the probability that the host holds a stream's valid or ready low in a cycle
    (0 for full speed). Operands are checked against the configuration first. ``activity``
    runs the separately built model that counts switching activity (``SimResult.toggles``).
    """
    if not 0.0 <= pause < 1.0:
        raise ValueError(f"pause must be a probability in [0, 1), not {pause!r}")
    jobs = {}
    meta = {"seed": int(seed), "jobs": []}
    for i, (a, b) in enumerate(operands):
        a, b = check_operands(config, a, b)
        jobs[f"a{i}"], jobs[f"b{i}"] = a, b
        meta["jobs"].append({"pause": pause})
    build = build_model(config, "accelerator", activity=activity)
    groups = json.loads((build.directory / "activity.json").read_text()) if activity else []
    by_counter = {g["counter"]: (g["component"], g["traffic"]) for g in groups}
    run_dir = build.directory / "jobs" / f"{name}-{os.getpid()}"
    run_dir.mkdir(parents=True, exist_ok=True)
    jobs_file, results_file = run_dir / "jobs.npz", run_dir / "results.npz"
    np.savez(jobs_file, meta=json.dumps(meta), **jobs)
    run = run_cocotb(
        build, "tb.accel_tests", testcase="run_jobs",
        env={"SYSTOLIC_JOBS": str(jobs_file), "SYSTOLIC_RESULTS": str(results_file),
             "SYSTOLIC_ACTIVITY": json.dumps(list(by_counter))},
        name=f"{name}-{os.getpid()}",
    )  # fmt: skip
    if run.failed or not results_file.exists():
        raise RuntimeError(f"the simulation of {config.name} failed; see {run.log}")
    results = np.load(results_file)
    info = json.loads(str(results["info"]))
    out = []
    for i, (a, b) in enumerate(operands):
        details = info[i]
        commands = details["commands"]
        totals = {key: sum(cmd["counters"][key] for cmd in commands) for key in COUNTERS}
        toggles = None
        if activity:
            toggles = {group: sum(cmd["toggles"][counter] for cmd in commands)
                       for counter, group in by_counter.items()}  # fmt: skip
        out.append(
            SimResult(
                config=config,
                shape=(a.shape[0], a.shape[1], b.shape[1]),
                c=results[f"c{i}"],
                counters=totals,
                commands=commands,
                offchip_words=details["offchip_words"],
                errors=sum(cmd["error"] for cmd in commands),
                toggles=toggles,
                wall_seconds=details["wall_seconds"],
                compute_seconds=details["compute_seconds"],
            )
        )
    return out


def run_gemm(config: ArrayConfig, a: np.ndarray, b: np.ndarray, **kwargs) -> SimResult:
    """One GEMM on the simulated accelerator (see :func:`run_gemms`)."""
    return run_gemms(config, [(a, b)], **kwargs)[0]
