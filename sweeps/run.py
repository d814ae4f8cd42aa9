"""Run a sweep: model every point, simulate the chosen ones, append each result as it finishes.

``results.jsonl`` in the output folder gets one line per finished evaluation, written (whole,
under a lock) the moment it finishes: ``{"id", "kind": "model" | "rtl", "status": "ok" |
"failed", ...figures}``. ``resume=True`` skips every ``(id, kind)`` already there, so an
interrupted sweep (Ctrl-C, a killed process, a crashed simulator) finishes without losing or
repeating anything. A failed point (simulator crash, mismatch, timeout, a shape the buffers
cannot hold) is recorded with its error and log, and the sweep goes on.

RTL points are grouped by configuration: one activity build and one simulator process per
configuration run all its GEMMs, configurations in parallel on a process pool.
"""

from __future__ import annotations

import os
import random
import sys
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path

from systolic.contract.config import ArrayConfig, beyond_rtl
from systolic.models.energy import Coefficients, load_coefficients
from systolic.sim.simulate import SimulationError, run_gemms

from .evaluate import gemm_chunk, model_record, point_id, rtl_operands, rtl_record
from .pareto import pareto_front
from .results import append_record, load_results
from .spec import Memory, Sweep
from .workloads import Workload

__all__ = ["SweepInterrupted", "run_sweep", "select_rtl"]

RESULTS = "results.jsonl"


class SweepInterrupted(RuntimeError):
    """The sweep stopped before every point finished; what finished is saved."""


@dataclass
class _Point:
    id: str
    config: ArrayConfig
    workload: Workload
    memory: Memory

    @property
    def simulated_macs(self) -> int:
        """MACs an RTL run simulates: each distinct GEMM once."""
        return sum(g.m * g.k * g.n for g in self.workload.gemms)


def _failed(point: _Point, kind: str, error: str, log: str | None = None) -> dict:
    return {
        "id": point.id,
        "kind": kind,
        "status": "failed",
        "error": error,
        "log": log,
        "config_name": point.config.name,
        "config": point.config.to_dict(),
        "workload": {k: v for k, v in point.workload.to_dict().items() if k != "gemms"},
        "memory": point.memory.to_dict(),
    }


#: Model points per task: enough work (tens of milliseconds) that scheduling stays cheap beside
#: it, few enough that the progress bar moves and the cores share the work evenly.
MODEL_BATCH = 16


def _model_batch(points: list[_Point], coefficients: Coefficients, data: str,
                 seed: int) -> list[dict]:  # fmt: skip
    """Worker: the model's record of each point (a failed one for a point it cannot evaluate,
    such as buffers too small for one tile of a GEMM)."""
    out = []
    for p in points:
        try:
            record = model_record(p.config, p.workload, p.memory, coefficients, data, seed)
            record.update({"id": p.id, "kind": "model", "status": "ok"})
        except ValueError as e:
            record = _failed(p, "model", str(e))
        out.append(record)
    return out


def select_rtl(sweep: Sweep, points: list[_Point], models: dict[str, dict]) -> list[_Point]:
    """The points the spec asks to simulate, among those the model evaluated at the first
    memory, whose workload is not marked ``rtl: false``, whose simulated MACs are within
    ``max_macs`` and whose configuration the RTL generator builds (larger ones stay
    model-only)."""
    eligible = [
        p for p in points
        if p.id in models and p.workload.name not in sweep.model_only
        and p.memory == sweep.memories[0]
        and p.config.precision in sweep.rtl_precision and p.simulated_macs <= sweep.max_macs
        and beyond_rtl(p.config) is None
    ]  # fmt: skip
    if sweep.rtl == "all":
        return eligible
    if sweep.rtl == "sample":
        chosen = random.Random(sweep.seed).sample(eligible, min(sweep.sample, len(eligible)))
        return sorted(chosen, key=eligible.index)
    if sweep.rtl == "pareto":
        front = {r["id"] for r in pareto_front(list(models.values()))}
        return [p for p in eligible if p.id in front]
    return []


def _rtl_group(
    config: ArrayConfig,
    points: list[_Point],
    models: dict[str, dict],
    sweep: Sweep,
    coefficients: Coefficients,
    results: Path,
) -> None:
    """Worker: simulate every point of one configuration in one simulator process."""
    dram = sweep.memories[0].at(coefficients.clock_mhz)
    operands, owner, chunks = [], [], []
    for p in points:
        ops = rtl_operands(config, p.workload, sweep.data, sweep.seed)
        operands += ops
        owner += [p] * len(ops)
        chunks += [gemm_chunk(config, g.shape, dram) for g in p.workload.gemms]
    start = {p.id: owner.index(p) for p in points}
    done: dict[int, object] = {}
    recorded: set[str] = set()

    def finish(i: int, result) -> None:
        done[i] = result
        p = owner[i]
        first, count = start[p.id], len(p.workload.gemms)
        if p.id in recorded or not all(j in done for j in range(first, first + count)):
            return
        recorded.add(p.id)
        record = rtl_record(
            config,
            p.workload,
            p.memory,
            operands[first : first + count],
            [done[j] for j in range(first, first + count)],
            coefficients,
            models[p.id],
        )
        ok = record["bit_exact"]
        record.update({"id": p.id, "kind": "rtl", "status": "ok" if ok else "failed"})
        if not ok:
            record["error"] = "C differs from the golden model"
        append_record(results, record)

    try:
        run_gemms(
            config,
            operands,
            memory=dram,
            chunk=chunks,
            name="sweep",
            activity=True,
            on_result=finish,
            timeout=sweep.timeout,
        )
    except SimulationError as e:
        for p in points:
            if p.id not in recorded:
                append_record(results, _failed(p, "rtl", str(e), str(e.log)))
    except Exception as e:  # a build failure or another error: every point left fails
        for p in points:
            if p.id not in recorded:
                append_record(results, _failed(p, "rtl", f"{type(e).__name__}: {e}"))


class _Progress:
    """``[####....] 12/40 points, 1 failed, about 3 min left`` on stderr."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.enabled = max(total, 1), enabled
        self.start = time.monotonic()
        self.tty = sys.stderr.isatty()
        self.last = -1

    def show(self, done: int, failed: int, started_at: int = 0) -> None:
        if not self.enabled or done == self.last:
            return
        if (
            not self.tty
            and done < self.total
            and done * 10 // self.total == self.last * 10 // self.total
        ):
            return  # in a log: a line per tenth, not a redraw per point
        self.last = done
        width = 30
        filled = int(width * done / self.total)
        rate_done = done - started_at
        elapsed = time.monotonic() - self.start
        if rate_done and done < self.total:
            left = elapsed / rate_done * (self.total - done)
            eta = (
                f", about {left / 60:.0f} min left" if left >= 90 else f", about {left:.0f} s left"
            )
        else:
            eta = ""
        print(
            "\r" if self.tty else "",
            f"[{'#' * filled}{'.' * (width - filled)}] {done}/{self.total} points, "
            f"{failed} failed{eta}   ",
            sep="",
            end="" if self.tty else "\n",
            file=sys.stderr,
            flush=True,
        )

    def end(self) -> None:
        if self.enabled and self.tty:
            print(file=sys.stderr)


def run_sweep(
    sweep: Sweep,
    out: Path,
    *,
    jobs: int | None = None,
    resume: bool = False,
    progress: bool = True,
) -> Path:
    """Evaluate every point of ``sweep`` into ``out/results.jsonl`` (see module); return it."""
    out.mkdir(parents=True, exist_ok=True)
    results = out / RESULTS
    existing = load_results(results)
    if existing and not resume:
        raise SweepInterrupted(
            f"{results} already holds {len(existing)} result(s): continue "
            f"with --resume, or choose another --out"
        )
    (out / "spec.yaml").write_text(sweep.path.read_text())
    coefficients = load_coefficients(sweep.coefficients)
    done = {(r["id"], r["kind"]) for r in existing}
    points = [_Point(point_id(c, w, m), c, w, m) for m in sweep.memories for c in sweep.configs
              for w in sweep.workloads]  # fmt: skip

    models = {r["id"]: r for r in existing if r["kind"] == "model" and r["status"] == "ok"}
    failed = sum(r["status"] == "failed" for r in existing)
    todo_model = [p for p in points if (p.id, "model") not in done]
    bar = _Progress(len(points), progress)
    finished = len(points) - len(todo_model)
    bar.show(finished, failed)
    batches = [todo_model[i : i + MODEL_BATCH] for i in range(0, len(todo_model), MODEL_BATCH)]
    workers = max(1, min(jobs or os.cpu_count() or 1, len(batches)))
    pool = ProcessPoolExecutor(max_workers=workers) if workers > 1 else None
    try:
        if pool is None:
            outcomes = (_model_batch(b, coefficients, sweep.data, sweep.seed) for b in batches)
        else:
            futures = [pool.submit(_model_batch, b, coefficients, sweep.data, sweep.seed)
                       for b in batches]  # fmt: skip
            outcomes = (f.result() for f in futures)  # written in the spec's order
        for batch in outcomes:
            for record in batch:  # only this process writes the results file
                if record["status"] == "ok":
                    models[record["id"]] = record
                else:
                    failed += 1
                append_record(results, record)
                finished += 1
            bar.show(finished, failed)
    except BrokenProcessPool:
        raise SweepInterrupted(
            f"a model worker died; the finished points are in {results}; rerun with --resume "
            "to finish"
        ) from None
    except KeyboardInterrupt:
        raise SweepInterrupted(
            f"interrupted; the finished points are in {results}; rerun with --resume to finish"
        ) from None
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        bar.end()

    chosen = select_rtl(sweep, points, models)
    todo = [p for p in chosen if (p.id, "rtl") not in done]
    if not todo:
        return results
    groups: dict[ArrayConfig, list[_Point]] = defaultdict(list)  # all at the first memory
    for p in todo:
        groups[p.config].append(p)
    bar = _Progress(len(chosen), progress)
    base = len(chosen) - len(todo)
    workers = max(1, min(jobs or os.cpu_count() or 1, len(groups)))
    if progress:
        print(
            f"simulating {len(todo)} point(s) in RTL: {len(groups)} configuration(s), "
            f"{workers} at a time",
            file=sys.stderr,
        )
    pool = ProcessPoolExecutor(max_workers=workers)
    try:
        futures = [
            pool.submit(
                _rtl_group,
                config,
                pts,
                {p.id: models[p.id] for p in pts},
                sweep,
                coefficients,
                results,
            )
            for config, pts in groups.items()
        ]
        while not all(f.done() for f in futures):
            time.sleep(0.5)
            rtl = [r for r in load_results(results) if r["kind"] == "rtl"]
            bar.show(len({r["id"] for r in rtl}), sum(r["status"] == "failed" for r in rtl), base)
        for f in futures:
            f.result()
    except BrokenProcessPool:
        raise SweepInterrupted(
            f"a simulation worker died; the finished points are in "
            f"{results}; rerun with --resume to finish"
        ) from None
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)
        raise SweepInterrupted(
            f"interrupted; the finished points are in {results}; rerun with --resume to finish"
        ) from None
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        bar.end()
    return results
