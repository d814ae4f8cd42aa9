"""Run a sweep: model every point, simulate the chosen ones, append each result as it finishes.

``results.jsonl`` in the output folder gets one line per finished evaluation, written whole by
this process alone as each task's results come back: ``{"id", "kind": "model" | "rtl",
"status": "ok" | "failed", ...figures}``. ``resume=True`` skips every ``(id, kind)`` already
there, so an interrupted sweep (Ctrl-C, a killed process, a crashed simulator) finishes without
losing or repeating anything, whichever engine ran its first part. A failed point (simulator
crash, mismatch, timeout, a shape the buffers cannot hold) is recorded with its error and log,
and the sweep goes on.

The work travels as tasks on an engine (:mod:`sweeps.engines`: a local process pool, or a Dask
cluster): model points in batches of one configuration's points (:data:`MODEL_BATCH` at most),
their records written configuration by configuration (the file is the same whichever engine and
however many workers ran it); RTL points grouped by configuration, one activity build and one
simulator process per group.
"""

from __future__ import annotations

import random
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from systolic.contract.config import ArrayConfig, beyond_rtl
from systolic.contract.host import Host
from systolic.contract.memory import Memory
from systolic.models.energy import Coefficients, load_coefficients
from systolic.sim.simulate import SimulationError, run_gemms
from systolic.workloads.evaluate import (
    driver_workload,
    model_record,
    point_id,
    rtl_descriptor,
    rtl_inputs,
    rtl_operands,
    rtl_record,
)
from systolic.workloads.library import Workload
from systolic.workloads.pareto import objectives_of, pareto_front

from .engines import EngineError, open_engine
from .results import SPEC_COPY, append_records, load_results
from .sweep_spec import Sweep
from .synthesis import point_clock, point_fields, synth_id, synth_record

__all__ = ["EngineUnavailable", "ResultsConflict", "SweepInterrupted", "run_sweep", "select_rtl"]

RESULTS = "results.jsonl"


class SweepInterrupted(RuntimeError):
    """The sweep stopped before every point finished; what finished is saved."""


class EngineUnavailable(RuntimeError):
    """No engine could be had for the sweep's tasks (a Dask scheduler that did not answer, or
    has no workers); what finished before is saved."""


class ResultsConflict(ValueError):
    """The results folder holds another run's results: without ``resume``, or from a spec
    that differs from this one (named by what differs); nothing was run or written."""


def _differences(old, new, path: str = "") -> list[str]:
    """The dotted paths where two parsed YAML documents differ."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in list(old) + [k for k in new if k not in old]:
            here = f"{path}.{key}" if path else str(key)
            out += ([here] if (key in old) != (key in new)
                    else _differences(old[key], new[key], here))  # fmt: skip
        return out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [d for i, (a, b) in enumerate(zip(old, new, strict=True))
                for d in _differences(a, b, f"{path}[{i}]")]  # fmt: skip
    return [] if old == new else [path or "(the whole file)"]


def _check_resumable(sweep: Sweep, out: Path, existing: list[dict], ids: set[str]) -> None:
    """Refuse to mix this sweep's results with another's in ``out`` (see ResultsConflict)."""
    import yaml

    results = out / RESULTS
    copy = out / SPEC_COPY
    if copy.is_file():
        try:
            before = yaml.safe_load(copy.read_text())
        except yaml.YAMLError:
            before = None
        differ = _differences(before, yaml.safe_load(sweep.path.read_text()))
        if differ:
            shown = ", ".join(differ[:6]) + (f" and {len(differ) - 6} more" if len(differ) > 6
                                             else "")  # fmt: skip
            raise ResultsConflict(
                f"{results} holds the results of another spec: {sweep.path} differs from "
                f"{copy} in {shown}; choose another --out (nothing was run)"
            )
    strangers = sorted({r["id"] for r in existing if r["kind"] != "synth"} - ids)
    if strangers:
        raise ResultsConflict(
            f"{results} holds {len(strangers)} point(s) that {sweep.path} does not make (such "
            f"as {strangers[0]}); choose another --out (nothing was run)"
        )


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
        "workload": point.workload.summary(),
        "memory": point.memory.to_dict(),
    }


#: Model points per task at most. A task holds the points of one configuration (or a share of
#: them, for a configuration with more): they share layer shapes, chunk choices and toggle
#: samples, which the models cache in the worker, so a configuration split between workers
#: pays for them twice. A task is then a few hundred milliseconds to a few seconds of work.
MODEL_BATCH = 512


def _model_batch(points: list[_Point], coefficients: Coefficients, data: str, seed: int,
                 clock_mhz: float | None = None, synth: dict | None = None,
                 host: Host | None = None) -> list[dict]:  # fmt: skip
    """Worker: the model's record of each point (a failed one for a point it cannot evaluate,
    such as buffers too small for one tile of a GEMM) at ``clock_mhz``; with ``synth`` (the
    synthesis record of the points' configuration, :mod:`sweeps.synthesis`), at the clock it
    allows, with its figures."""
    out = []
    for p in points:
        if synth is not None and synth["status"] != "ok":
            out.append(_failed(p, "model", synth["error"]))
            continue
        clock = clock_mhz if synth is None else point_clock(synth, clock_mhz)
        try:
            record = model_record(p.config, p.workload, p.memory, coefficients, data, seed, clock,
                                  host)  # fmt: skip
            record.update({"id": p.id, "kind": "model", "status": "ok"})
            if synth is not None:
                record.update(point_fields(synth, record))
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
        candidates = list(models.values())
        front = {r["id"] for r in pareto_front(candidates, objectives_of(candidates))}
        return [p for p in eligible if p.id in front]
    return []


def _rtl_group(
    config: ArrayConfig,
    points: list[_Point],
    models: dict[str, dict],
    sweep: Sweep,
    coefficients: Coefficients,
    synth: dict | None = None,
) -> list[dict]:
    """Worker: simulate every point of one configuration in one simulator process, at the clock
    of their model records; their records (a failed one for each point the simulation could not
    finish)."""
    dram = sweep.memories[0].at(next(iter(models.values()))["clock_mhz"])
    try:  # as the driver posts them: convolutions lowered as in the model's record
        posted = {p.id: driver_workload(p.workload, config) for p in points}
        operands, owner, inputs, descriptors = [], [], [], []
        for p in points:
            ops = rtl_operands(config, posted[p.id], sweep.data, sweep.seed)
            operands += ops
            owner += [p] * len(ops)
            for g, (a, b) in zip(posted[p.id].gemms, ops, strict=True):
                inputs.append(rtl_inputs(config, g, a, b))
                descriptors.append(rtl_descriptor(config, g, dram))
    except ValueError as e:  # a point the driver cannot post: every point fails, with why
        return [_failed(p, "rtl", f"{type(e).__name__}: {e}") for p in points]
    start = {p.id: owner.index(p) for p in points}
    done: dict[int, object] = {}
    recorded: dict[str, dict] = {}

    def finish(i: int, result) -> None:
        done[i] = result
        p = owner[i]
        first, count = start[p.id], len(posted[p.id].gemms)
        if p.id in recorded or not all(j in done for j in range(first, first + count)):
            return
        record = rtl_record(
            config,
            posted[p.id],
            p.memory,
            operands[first : first + count],
            [done[j] for j in range(first, first + count)],
            coefficients,
            models[p.id],
            sweep.host,
        )
        ok = record["bit_exact"]
        record.update({"id": p.id, "kind": "rtl", "status": "ok" if ok else "failed"})
        if synth is not None:
            record.update(point_fields(synth, record))
        if not ok:
            record["error"] = "C differs from the golden model"
        recorded[p.id] = record

    try:
        run_gemms(
            config,
            inputs,
            memory=dram,
            descriptors=descriptors,
            name="sweep",
            activity=True,
            on_result=finish,
            timeout=sweep.timeout,
        )
    except SimulationError as e:
        for p in points:
            if p.id not in recorded:
                recorded[p.id] = _failed(p, "rtl", str(e), str(e.log))
    except Exception as e:  # a build failure or another error: every point left fails
        for p in points:
            if p.id not in recorded:
                recorded[p.id] = _failed(p, "rtl", f"{type(e).__name__}: {e}")
    return [recorded[p.id] for p in points]


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
    scheduler: str | None = None,
) -> Path:
    """Evaluate every point of ``sweep`` into ``out/results.jsonl`` (see module) on a local pool
    of ``jobs`` workers, or on the Dask cluster whose scheduler is at ``scheduler``; return the
    file."""
    results = out / RESULTS
    existing = load_results(results)
    if existing and not resume:
        raise ResultsConflict(
            f"{results} already holds {len(existing)} result(s): continue "
            f"with --resume, or choose another --out (nothing was run)"
        )
    points = [_Point(point_id(c, w, m, sweep.host), c, w, m) for m in sweep.memories
              for c in sweep.configs
              for w in sweep.workloads]  # fmt: skip
    if existing:  # nothing to mix with otherwise
        _check_resumable(sweep, out, existing, {p.id for p in points})
    out.mkdir(parents=True, exist_ok=True)
    (out / SPEC_COPY).write_text(sweep.path.read_text())
    coefficients = load_coefficients(sweep.coefficients)
    done = {(r["id"], r["kind"]) for r in existing}

    models = {r["id"]: r for r in existing if r["kind"] == "model" and r["status"] == "ok"}
    failed = sum(r["status"] == "failed" for r in existing if r["kind"] != "synth")
    synths = _synthesize(sweep, existing, done, scheduler, jobs, results, progress)
    # configuration by configuration (every memory and workload of one before the next): the
    # points of a configuration share layer shapes, chunk choices and toggle samples, which
    # the models cache
    order = {c: i for i, c in enumerate(sweep.configs)}
    todo_model = sorted((p for p in points if (p.id, "model") not in done),
                        key=lambda p: order[p.config])  # fmt: skip
    bar = _Progress(len(points), progress)
    finished = len(points) - len(todo_model)
    bar.show(finished, failed)
    by_config: dict[ArrayConfig, list[_Point]] = {}
    for p in todo_model:
        by_config.setdefault(p.config, []).append(p)
    batches = [share[i : i + MODEL_BATCH] for share in by_config.values()
               for i in range(0, len(share), MODEL_BATCH)]  # fmt: skip
    calls = [(_model_batch, (b, coefficients, sweep.data, sweep.seed, sweep.clock_mhz,
                             synths.get(b[0].config.name), sweep.host))
             for b in batches]  # fmt: skip
    waiting: dict[int, list[dict]] = {}  # batches back early: written in order
    written = 0
    with _engine(scheduler, jobs, len(calls), results) as engine:
        for i, batch in engine.run(calls):
            waiting[i] = batch
            while written in waiting:
                records = waiting.pop(written)
                written += 1
                for record in records:
                    if record["status"] == "ok":
                        models[record["id"]] = record
                    else:
                        failed += 1
                append_records(results, records)  # only this process writes the results file
                finished += len(records)
                bar.show(finished, failed)
    bar.end()

    chosen = select_rtl(sweep, points, models)
    todo = [p for p in chosen if (p.id, "rtl") not in done]
    if not todo:
        return results
    groups: dict[ArrayConfig, list[_Point]] = defaultdict(list)  # all at the first memory
    for p in todo:
        groups[p.config].append(p)
    bar = _Progress(len(chosen), progress)
    simulated = base = len(chosen) - len(todo)
    rtl_failed = 0
    calls = [(_rtl_group, (config, pts, {p.id: models[p.id] for p in pts}, sweep, coefficients,
                           synths.get(config.name))) for config, pts in groups.items()]  # fmt: skip
    with _engine(scheduler, jobs, len(calls), results) as engine:
        if progress:
            where = "on the Dask cluster" if engine.name == "dask" else "at a time"
            print(
                f"simulating {len(todo)} point(s) in RTL: {len(groups)} configuration(s), "
                f"{engine.workers} {where}",
                file=sys.stderr,
            )
        for _, records in engine.run(calls):
            append_records(results, records)
            simulated += len(records)
            rtl_failed += sum(r["status"] == "failed" for r in records)
            bar.show(simulated, rtl_failed, base)
    bar.end()
    return results


def _synthesize(sweep: Sweep, existing: list[dict], done: set, scheduler: str | None,
                jobs: int | None, results: Path, progress: bool) -> dict[str, dict]:  # fmt: skip
    """With ``synth: true``, the synthesis record of every configuration by its name: those
    already in the results file, and the others synthesized now, one task each, and written
    there."""
    if not sweep.synth:
        return {}
    synths = {r["config_name"]: r for r in existing if r["kind"] == "synth"}
    todo = [c for c in sweep.configs if (synth_id(c), "synth") not in done]
    if todo:
        if progress:
            print(f"synthesizing {len(todo)} configuration(s) (cached by their Verilog)",
                  file=sys.stderr)  # fmt: skip
        with _engine(scheduler, jobs, len(todo), results) as engine:
            for _, record in engine.run([(synth_record, (c,)) for c in todo]):
                append_records(results, [record])
                synths[record["config_name"]] = record
    return synths


class _engine:
    """An engine for the sweep's tasks, closed on the way out; its failures and Ctrl-C become
    :class:`SweepInterrupted` (what finished is saved)."""

    def __init__(self, scheduler: str | None, jobs: int | None, tasks: int, results: Path):
        self.args, self.results = (scheduler, jobs, tasks), results

    def __enter__(self):
        try:
            self.engine = open_engine(*self.args)
        except EngineError as e:
            raise EngineUnavailable(str(e)) from None
        return self.engine

    def __exit__(self, kind, error, trace):
        self.engine.close()
        hint = f"the finished points are in {self.results}; rerun with --resume to finish"
        if isinstance(error, EngineError):
            raise SweepInterrupted(f"{error}; {hint}") from None
        if isinstance(error, KeyboardInterrupt):
            raise SweepInterrupted(f"interrupted; {hint}") from None
        return False
