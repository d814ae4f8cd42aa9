"""``run_vectors``: vector descriptors (residual adds, elementwise max, pooling) on the simulated
device, as a driver runs them: the tensors laid out in the DRAM model, one descriptor posted per
operator through AXI4-Lite, Z read back from DRAM."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import numpy as np
from systolic.contract.config import ArrayConfig, value_range
from systolic.contract.dma import Refusal
from systolic.contract.memory import DEFAULT_MEMORY, Dram
from systolic.contract.vector import (
    VECTOR_OPS,
    VectorDescriptor,
    check_params,
    check_vector,
    out_shape,
    tensor_bytes,
    vector_values,
)

from .build import build_model
from .dram import DRAM_BYTES, image_lines, read_dump
from .simulate import (
    Bench,
    _check_gemms,
    _dram_fields,
    _job,
    _job_dir,
    _result,
    _simulate,
    check_waves,
)

__all__ = ["VectorResult", "from_tensor_image", "run_stream", "run_vectors", "tensor_image"]


@dataclass
class VectorResult:
    """What one vector descriptor did: Z as read back (empty when refused), the device's
    counters, its refusal code, the bench's cycles from acceptance to ``done``, the DRAM model's
    own counts and the driver's AXI4-Lite accesses."""

    config: ArrayConfig
    descriptor: VectorDescriptor
    memory: Dram
    z: np.ndarray
    counters: dict[str, int]
    error: int
    measured_cycles: int
    dram: dict[str, int] = field(default_factory=dict)
    driver: dict[str, int] = field(default_factory=dict)

    @property
    def cycles(self) -> int:
        return self.counters["cycles"]


def tensor_image(x: np.ndarray) -> bytes:
    """A tensor's bytes in DRAM: NHWC, an element a byte (two's complement when negative)."""
    return (np.asarray(x, dtype=np.int64) & 0xFF).astype(np.uint8).tobytes()


def from_tensor_image(blob: bytes, shape, config: ArrayConfig) -> np.ndarray:
    """Inverse of :func:`tensor_image`: the output's integers (the low ``out_width`` bits)."""
    raw = np.frombuffer(blob[: tensor_bytes(shape)], dtype=np.uint8).astype(np.int64)
    width = config.out_width
    raw &= (1 << width) - 1
    if config.out_signed:
        raw = np.where(raw >= 1 << (width - 1), raw - (1 << width), raw)
    return raw.reshape(shape)


def _check(config: ArrayConfig, i: int, v: VectorDescriptor, x, y) -> None:
    """Refuse, before anything is built, what no descriptor could carry or DRAM could hold."""
    if not config.vector:
        raise ValueError(f"{config.name} has no vector unit (vector=True)")
    if not isinstance(v, VectorDescriptor):
        raise TypeError(f"operator {i} must be a contract.vector.VectorDescriptor, not {v!r}")
    if v.op not in VECTOR_OPS:
        raise ValueError(f"operator {i}: op must be one of {', '.join(VECTOR_OPS)}, not {v.op!r}")
    check_params(v, config)
    vector_values(config, v)  # the clamp's bounds
    lo, hi = value_range(config.out_width, config.out_signed)
    for name, t in (("x", x), ("y", y)):
        if name == "y" and v.pooling:
            continue
        t = np.asarray(t)
        if t.shape != tuple(v.shape):
            raise ValueError(f"operator {i}: {name} must have shape {tuple(v.shape)}, "
                             f"not {t.shape}")  # fmt: skip
        if t.size and (t.min() < lo or t.max() > hi):
            raise ValueError(f"operator {i}: {name}'s elements must be in {lo}..{hi} (the "
                             f"outputs' range)")  # fmt: skip
    if check_vector(config, v)[0] is Refusal.NONE:
        ends = [v.x + tensor_bytes(v.shape), v.z + tensor_bytes(out_shape(v))]
        if not v.pooling:
            ends.append(v.y + tensor_bytes(v.shape))
        if max(ends) > DRAM_BYTES:
            raise ValueError(f"operator {i} does not fit the simulated DRAM ({DRAM_BYTES} "
                             f"bytes): it needs {max(ends)}")  # fmt: skip


def run_vectors(config: ArrayConfig, ops: list[tuple[VectorDescriptor, np.ndarray, object]], *,
                memory: Dram | None = None, bench: Bench | None = None, name: str = "vectors",
                timeout: float | None = None, **bench_options) -> list[VectorResult]:  # fmt: skip
    """Run each ``(descriptor, X, Y)`` (Y None for pooling) as one vector descriptor on one
    simulator process of ``config``'s device behind ``memory`` (:data:`DEFAULT_MEMORY`), the
    simulation as ``bench`` (or its fields as keywords) says; a descriptor the device refuses
    returns its code and an empty Z."""
    if bench is not None and bench_options:
        raise TypeError("give the bench options as bench=Bench(...) or as keywords, not both")
    bench = bench or Bench(**bench_options)
    if bench.activity or bench.trace:
        raise ValueError("vector descriptors run without activity counting or a trace")
    memory = memory or DEFAULT_MEMORY
    for i, (v, x, y) in enumerate(ops):
        _check(config, i, v, x, y)
    build = build_model(config, "device", memory="dram" if bench.slave == "dram" else "port",
                        waves=check_waves(bench.waves), simulator=bench.simulator)  # fmt: skip
    run_dir = _job_dir(build, name)
    jobs = [_vector_job(config, i, v, x, y, memory, run_dir) for i, (v, x, y) in enumerate(ops)]

    def result(i: int, got: dict) -> VectorResult:
        return _vector_result(config, ops[i][0], memory, got)

    return _run_jobs(config, build, run_dir, jobs, result, bench, timeout)


def _vector_job(config: ArrayConfig, i: int, v: VectorDescriptor, x, y, memory: Dram,
                run_dir) -> dict:  # fmt: skip
    """The bench's job for vector descriptor ``i``: its tensors' DRAM image, its registers,
    and Z's words to read back (none when the device refuses it)."""
    bus = config.bus_width // 8
    hex_path = run_dir / f"image-{i}.hex"
    job = {"image": str(hex_path), "descriptor": vector_values(config, v), "dumps": [],
           "dram": _dram_fields(memory), "trace": False}  # fmt: skip
    regions = {}
    if check_vector(config, v)[0] is Refusal.NONE:
        regions[v.x] = tensor_image(x)
        if not v.pooling:
            regions[v.y] = tensor_image(y)
        size = tensor_bytes(out_shape(v))
        job["dumps"] = [[v.z // bus, (v.z + size - 1) // bus]]
    hex_path.write_text(image_lines(config.bus_width, regions))
    return job


def _vector_result(config: ArrayConfig, v: VectorDescriptor, memory: Dram, got: dict):
    z = np.zeros((0,), np.int64)
    if got["dumps"]:
        z = from_tensor_image(read_dump(got["dumps"][0], config.bus_width), out_shape(v), config)
    return VectorResult(config, v, memory, z, got["counters"], got["error"],
                        got["measured_cycles"], got["dram"], got["driver"])  # fmt: skip


def _run_jobs(config, build, run_dir, jobs: list, result, bench: Bench, timeout) -> list:
    """Run the bench's ``jobs`` on one simulator process; each result as ``result`` makes it."""
    jobs_file = run_dir / "jobs.json"
    jobs_file.write_text(json.dumps(jobs))
    (run_dir / "activity.json").write_text("[]")
    env = {"SYSTOLIC_JOBS": str(jobs_file), "SYSTOLIC_RESULTS": str(run_dir),
           "SYSTOLIC_ACTIVITY": str(run_dir / "activity.json"), "SYSTOLIC_SLAVE": bench.slave,
           "SYSTOLIC_PAUSE": str(bench.pause),
           "SYSTOLIC_PAUSE_SEED": str(bench.pause_seed)}  # fmt: skip
    if timeout is not None:
        env["SYSTOLIC_DEADLINE"] = str(time.time() + timeout)
    return _simulate(config.name, build, run_dir, env, len(jobs), result, None, bench.waves)


def run_stream(config: ArrayConfig, items: list, *, memory: Dram | None = None,
               name: str = "stream", timeout: float | None = None,
               queued: bool = False) -> list:  # fmt: skip
    """A driver's stream of GEMM and vector descriptors on one device, one after another with
    no reset between them (each one's operands placed in DRAM before it is posted, as a driver
    does): ``items`` are ``("gemm", A, B, Quantization or None)`` and ``("vector", descriptor,
    X, Y)``; the results are :class:`sim.simulate.SimResult` and :class:`VectorResult` in
    order (the DRAM model's counts are each descriptor's own). ``queued`` posts them all at
    once, the GEMMs placed one after another from address 0 (the vectors' tensors must lie
    past them): the counters then add up over the queue (docs/memory.md), and the DRAM model's
    counts are the whole queue's, on the first."""
    memory = memory or DEFAULT_MEMORY
    kinds = [item[0] for item in items]
    if any(k not in ("gemm", "vector") for k in kinds):
        raise ValueError(f"stream items are ('gemm', ...) or ('vector', ...), not {kinds}")
    gemms = [item[1:] for item in items if item[0] == "gemm"]
    checked = iter(_check_gemms(config, [(a, b) for a, b, _ in gemms], "nmk", None,
                                [q for _, _, q in gemms], None, 0, None,
                                stacked=queued))  # fmt: skip
    for i, item in enumerate(items):
        if item[0] == "vector":
            _check(config, i, *item[1:])
    build = build_model(config, "device")
    run_dir = _job_dir(build, name)
    jobs, makers = [], []
    for i, item in enumerate(items):
        if item[0] == "gemm":
            g = next(checked)
            job, fmt = _job(config, i, g.a, g.b, g.d, g.quant, g.acc, memory, run_dir)
            shape = (g.a.shape[0], g.a.shape[1], g.b.shape[1])
            makers.append(lambda got, g=g, fmt=fmt, shape=shape: _result(
                config, memory, shape, g.d, fmt, got, {}))  # fmt: skip
        else:
            job = _vector_job(config, i, *item[1:], memory, run_dir)
            makers.append(lambda got, v=item[1]: _vector_result(config, v, memory, got))
        job["reset"] = i == 0
        job["trace"] = False
        job["ahead"] = queued and i > 0
        jobs.append(job)
    return _run_jobs(config, build, run_dir, jobs, lambda i, got: makers[i](got), Bench(),
                     timeout)  # fmt: skip
