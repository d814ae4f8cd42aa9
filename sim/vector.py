"""``run_vectors``: vector descriptors (residual adds, elementwise max, pooling) on the simulated
device, as a driver runs them: the tensors laid out in the DRAM model, one descriptor posted per
operator through AXI4-Lite, Z read back from DRAM."""

from __future__ import annotations

import json
import os
import shutil
import threading
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
from .simulate import Bench, _dram_fields, _simulate, check_waves

__all__ = ["VectorResult", "run_vectors", "tensor_image", "from_tensor_image"]


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
    run_dir = build.directory / "jobs" / f"{name}-{os.getpid()}-{threading.get_ident()}"
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    bus = config.bus_width // 8
    jobs, runs = [], []
    for i, (v, x, y) in enumerate(ops):
        hex_path = run_dir / f"image-{i}.hex"
        job = {"image": str(hex_path), "descriptor": vector_values(config, v), "dumps": [],
               "dram": _dram_fields(memory), "trace": False}  # fmt: skip
        runs.append(check_vector(config, v)[0] is Refusal.NONE)
        regions = {}
        if runs[-1]:
            regions[v.x] = tensor_image(x)
            if not v.pooling:
                regions[v.y] = tensor_image(y)
            size = tensor_bytes(out_shape(v))
            job["dumps"] = [[v.z // bus, (v.z + size - 1) // bus]]
        hex_path.write_text(image_lines(config.bus_width, regions))
        jobs.append(job)
    jobs_file = run_dir / "jobs.json"
    jobs_file.write_text(json.dumps(jobs))
    (run_dir / "activity.json").write_text("[]")

    def result(i: int, got: dict) -> VectorResult:
        v = ops[i][0]
        z = np.zeros((0,), np.int64)
        if runs[i] and got["dumps"]:
            z = from_tensor_image(read_dump(got["dumps"][0], config.bus_width), out_shape(v),
                                  config)  # fmt: skip
        return VectorResult(config, v, memory, z, got["counters"], got["error"],
                            got["measured_cycles"], got["dram"], got["driver"])  # fmt: skip

    env = {"SYSTOLIC_JOBS": str(jobs_file), "SYSTOLIC_RESULTS": str(run_dir),
           "SYSTOLIC_ACTIVITY": str(run_dir / "activity.json"), "SYSTOLIC_SLAVE": bench.slave,
           "SYSTOLIC_PAUSE": str(bench.pause),
           "SYSTOLIC_PAUSE_SEED": str(bench.pause_seed)}  # fmt: skip
    if timeout is not None:
        env["SYSTOLIC_DEADLINE"] = str(time.time() + timeout)
    return _simulate(config.name, build, run_dir, env, len(ops), result, None, bench.waves)
