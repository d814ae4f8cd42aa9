"""GEMMs on the simulated device: operands laid out in the DRAM model, one descriptor each, C read
back from DRAM (docs/memory.md). The driver's side of the DMA path: it places the matrices
(:func:`contract.dma.image`), picks the chunk sizes (:func:`contract.plan.chunk_sizes`) and
writes the descriptor; the device does the rest.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from dataclasses import dataclass, field

import numpy as np
from systolic.contract.config import ArrayConfig
from systolic.contract.dma import (
    Descriptor,
    Refusal,
    Region,
    c_format,
    check_descriptor,
    containers,
    descriptor_values,
    from_image,
    image,
    q_image,
    tile_rows,
    word_layout,
)
from systolic.contract.memory import Dram
from systolic.contract.plan import chunk_sizes
from systolic.golden.reference import check_operands, check_zero_points
from systolic.golden.requant import RequantParams

from .build import build_model, run_cocotb
from .dram import DRAM_BYTES, image_lines, read_dump

__all__ = ["DEFAULT_MEMORY", "DeviceResult", "place", "run_device_gemms"]

_ALIGN = 4096

#: The DRAM of a run that names none: 16 bytes a cycle, 20 cycles of latency, 64 requests.
DEFAULT_MEMORY = Dram(16, 20, 64)


@dataclass
class DeviceResult:
    """What one GEMM did on the simulated device: C as read back from DRAM, the device's
    counters, its refusal code, the bench monitor's cycles and the DRAM model's own counts."""

    config: ArrayConfig
    shape: tuple[int, int, int]
    descriptor: Descriptor
    c: np.ndarray
    counters: dict[str, int]
    error: int
    measured_cycles: int
    dram: dict[str, int] = field(default_factory=dict)
    compute_seconds: float = 0.0


def _up(x: int, align: int = _ALIGN) -> int:
    return -(-x // align) * align


def place(config: ArrayConfig, m: int, k: int, n: int, *, order: str = "nmk",
          accumulate: bool = False, pad: int = 0, zeros: tuple[int, int] = (0, 0),
          requant: RequantParams | None = None, chunk=None) -> Descriptor:  # fmt: skip
    """A descriptor for an ``m x k x n`` GEMM with A, B, C, partial sums and the requantization
    table one after another from address 0 (4 KB apart); ``pad`` extra words between tile
    rows."""
    cont = containers(config)
    size = chunk_sizes(config, m, k, n) if chunk is None else dict(zip("mkn", chunk, strict=True))
    regions, base = {}, 0
    fmt = {"a": "a", "b": "b", "c": "c" if (config.requant and requant) else "p", "p": "p"}
    for kind, shape in (("a", (m, k)), ("b", (k, n)), ("c", (m, n)), ("p", (m, n))):
        tiles, lines = tile_rows(word_layout(config, fmt[kind]), shape)
        stride = (lines + pad) * cont[fmt[kind]]
        regions[kind] = Region(base, stride)
        base = _up(base + tiles * stride)
    q_addr = base
    out_zero, relu = (requant.out_zero, requant.relu) if requant is not None else (0, False)
    return Descriptor(m, k, n, (size["m"], size["k"], size["n"]), regions["a"], regions["b"],
                      regions["c"], regions["p"], q_addr, accumulate, order, zeros[0], zeros[1],
                      requant is not None, out_zero, relu)  # fmt: skip


def run_device_gemms(
    config: ArrayConfig,
    operands: list[tuple[np.ndarray, np.ndarray]],
    *,
    memory: Dram | None = None,
    order: str = "nmk",
    pad: int = 0,
    zeros: list[tuple[int, int]] | None = None,
    requant: list[RequantParams | None] | None = None,
    c_in: list[np.ndarray | None] | None = None,
    descriptors: list[Descriptor] | None = None,
    name: str = "device",
    timeout: float | None = None,
) -> list[DeviceResult]:
    """Run every ``(A, B)`` on one simulator process of the device, each as one descriptor
    (``descriptors`` overrides the placement, for refusal tests). ``c_in[i]`` accumulates
    GEMM ``i`` into that C; ``zeros[i]`` and ``requant[i]`` quantize it."""
    memory = memory or DEFAULT_MEMORY
    bus = config.bus_width // 8
    build = build_model(config, "device")
    run_dir = build.directory / "jobs" / f"{name}-{os.getpid()}-{threading.get_ident()}"
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    jobs, plans = [], []
    cont = containers(config)
    for i, (a, b) in enumerate(operands):
        a, b = check_operands(config, a, b)
        (m, k), n = a.shape, b.shape[1]
        za, zb = zeros[i] if zeros else (0, 0)
        check_zero_points(config, za, zb)
        rq = requant[i] if requant else None
        if rq is not None:
            rq.check(config, n)
        acc = c_in[i] if c_in else None
        d = (descriptors[i] if descriptors else
             place(config, m, k, n, order=order, accumulate=acc is not None, pad=pad,
                   zeros=(za, zb), requant=rq))  # fmt: skip
        refused = check_descriptor(config, d)[0] is not Refusal.NONE
        if refused:  # the device must refuse it before any traffic: nothing to place or read
            hex_path = run_dir / f"image-{i}.hex"
            hex_path.write_text(image_lines(config.bus_width, {}))
            jobs.append({"image": str(hex_path), "descriptor": descriptor_values(config, d),
                         "dumps": [], "dram": _dram_fields(memory)})  # fmt: skip
            plans.append((d, None, (m, k, n)))
            continue
        regions = {d.a.addr: image(a, word_layout(config, "a"), cont["a"], d.a.stride),
                   d.b.addr: image(b, word_layout(config, "b"), cont["b"], d.b.stride)}  # fmt: skip
        if acc is not None:
            regions[d.c.addr] = image(acc, word_layout(config, "p"), cont["p"], d.c.stride)
        if rq is not None:
            regions[d.q_addr] = q_image(config, rq.multiplier, rq.shift)
        fmt = c_format(config, d)
        c_bytes = _c_bytes(config, d, fmt)
        ends = [d.c.addr + c_bytes] + [address + len(blob) for address, blob in regions.items()]
        if d.chunk[1] < d.k and d.order[-1] != "k":  # partial sums go to DRAM too
            ends.append(d.p.addr + _c_bytes(config, d, "p", d.p))
        if max(ends) > DRAM_BYTES:
            raise ValueError(f"{m}x{k}x{n} does not fit the simulated DRAM ({DRAM_BYTES} bytes): "
                             f"it needs {max(ends)}")  # fmt: skip
        hex_path = run_dir / f"image-{i}.hex"
        hex_path.write_text(image_lines(config.bus_width, regions))
        first = d.c.addr // bus
        last = (d.c.addr + c_bytes - 1) // bus
        jobs.append({"image": str(hex_path), "descriptor": descriptor_values(config, d),
                     "dumps": [[first, last]], "dram": _dram_fields(memory)})  # fmt: skip
        plans.append((d, fmt, (m, k, n)))
    jobs_file = run_dir / "jobs.json"
    jobs_file.write_text(json.dumps(jobs))
    env = {"SYSTOLIC_JOBS": str(jobs_file), "SYSTOLIC_RESULTS": str(run_dir)}
    if timeout is not None:
        env["SYSTOLIC_DEADLINE"] = str(time.time() + timeout)
    run = run_cocotb(build, "systolic.tb.device_tb", testcase="run_jobs", env=env,
                     name=run_dir.name)  # fmt: skip
    out = []
    for i, (d, fmt, shape) in enumerate(plans):
        path = run_dir / f"job-{i}.json"
        if not path.exists():
            raise RuntimeError(f"{config.name}: the device simulation ended before GEMM {i}; "
                               f"see {run.log}")  # fmt: skip
        got = json.loads(path.read_text())
        if fmt is None:  # refused
            out.append(DeviceResult(config, shape, d, np.zeros((0, 0), np.int64), got["counters"],
                                    got["error"], got["measured_cycles"], got["dram"],
                                    got["compute_seconds"]))  # fmt: skip
            continue
        blob = read_dump(got["dumps"][0], config.bus_width)
        offset = d.c.addr % bus
        c = from_image(blob[offset : offset + _c_bytes(config, d, fmt)], word_layout(config, fmt),
                       cont[fmt], d.c.stride, (shape[0], shape[2]))  # fmt: skip
        out.append(
            DeviceResult(
                config,
                shape,
                d,
                c,
                got["counters"],
                got["error"],
                got["measured_cycles"],
                got["dram"],
                got["compute_seconds"],
            )
        )
    if run.failed:
        raise RuntimeError(f"{config.name}: the device simulation failed; see {run.log}")
    return out


def _dram_fields(memory: Dram) -> dict[str, int]:
    bw = memory.bandwidth
    return {"bw_num": bw.numerator, "bw_den": bw.denominator, "latency": memory.latency,
            "max_requests": memory.max_requests}  # fmt: skip


def _c_bytes(config: ArrayConfig, d: Descriptor, fmt: str, region: Region | None = None) -> int:
    """Bytes from the start of C's region (or ``region``, holding C's shape) to its end."""
    tiles, lines = tile_rows(word_layout(config, fmt), (d.m, d.n))
    return (tiles - 1) * (region or d.c).stride + lines * containers(config)[fmt]
