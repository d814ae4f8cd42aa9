"""A regression run for one configuration (``systolic regress``): random and corner-value GEMMs
on the simulated device, each checked bit-exact against golden/ and, counter for counter,
against the device model (models/device.py).

Case ``i`` of seed ``s`` is drawn from its own generator (``default_rng([s, i])``), so any one
case replays alone (``--case i``), with a waveform if asked. What the cases cover:

- shapes: dims of 1, ragged edges (not multiples of the array), several chunks, and random;
- values: uniform random, the corner values of each operand's width (0, 1, -1 and the
  extremes), all zeros, and for bf16 the special values (infinities, NaN, subnormals);
- every loop order, the driver's chunk sizes or random valid ones;
- the modes the configuration has: zero points, requantization (random multipliers, shifts,
  output zero point, ReLU);
- convolutions, on a configuration with a staging buffer (every :data:`CONV_EVERY`-th case):
  strides 1-2, pads 0-2, dilations 1-2, 1x1 to 7x7 kernels, ragged channels, random valid
  chunks, as convolution descriptors (contract.conv) checked against golden.conv;
- the memory: the DRAM model at one of :data:`MEMORIES` (every counter must equal the model's),
  or, with ``pauses``, cocotbext-axi's AXI RAM with every channel pausing at random (the
  counters of work and traffic must; its timing is its own).
"""

from __future__ import annotations

import shlex
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from systolic.contract.config import ArrayConfig, value_range
from systolic.contract.conv import (
    Conv,
    chunk_rows,
    device_gemm,
    device_weights,
    input_matrix,
    slices,
)
from systolic.contract.dma import (
    LOOP_ORDERS,
    Descriptor,
    Refusal,
    check_descriptor,
    place,
    word_layout,
)
from systolic.contract.interface import DEVICE_COUNTERS, TIMED_COUNTERS
from systolic.contract.memory import Dram
from systolic.contract.plan import chunk_sizes, granularity
from systolic.golden.conv import conv_reference
from systolic.golden.data import DataKind, corner_matrix
from systolic.golden.reference import reference, requantized_reference
from systolic.golden.requant import RequantParams
from systolic.models.device import predict_device
from systolic.sim.simulate import Quantization, SimResult, quant_fields, run_gemms

__all__ = ["Case", "Outcome", "case", "replay_command", "run_regression", "write_junit"]


#: The DRAM settings cases run behind (a few, so that cases share simulator runs): fast and
#: near, narrow and far, one byte a cycle with few requests in flight.
MEMORIES = (Dram(16, latency=20), Dram(4, latency=60), Dram(1, latency=5, max_requests=4))
#: Shares of cycles each AXI RAM channel pauses.
PAUSES = (0.2, 0.45)

#: On a configuration with a staging buffer, case ``i`` is a convolution when ``i % CONV_EVERY
#: == CONV_EVERY - 1``.
CONV_EVERY = 3

_BF16_SPECIALS = [0x7F80, 0xFF80, 0x7FC0, 0x0001, 0x8001, 0x0000, 0x8000, 0x3F80, 0x7F7F]


@dataclass
class Case:
    """One GEMM of the regression and how it runs."""

    index: int
    values: str  # random, corners, zeros, specials
    a: np.ndarray
    b: np.ndarray
    order: str
    chunk: tuple[int, int, int]
    quant: Quantization | None
    memory: Dram | None  # None: behind the AXI RAM with pauses
    pause: float = 0.0
    conv: Conv | None = None  # a convolution: ``a`` its NHWC input, ``b`` its weights
    d: Descriptor | None = None  # a convolution's descriptor, as the driver places it

    @property
    def shape(self) -> tuple[int, int, int]:
        if self.d is not None:
            return self.d.m, self.d.k, self.d.n
        return (self.a.shape[0], self.a.shape[1], self.b.shape[1])

    def operands(self, config: ArrayConfig) -> tuple[np.ndarray, np.ndarray]:
        """What the device reads: for a convolution its input as pixels by channels and its B."""
        if self.conv is None:
            return self.a, self.b
        zb = self.quant.b_zero if self.quant else 0
        return input_matrix(self.conv, self.a), device_weights(self.conv, self.b, _tile(config), zb)

    def describe(self) -> str:
        m, k, n = self.shape
        if self.conv is not None:
            c = self.conv
            return (f"conv {c.batch}x{c.height}x{c.width}x{c.channels} -> {c.out_channels}, "
                    f"kernel {c.kernel}, stride {c.stride}, pads {c.pads}, dilation "
                    f"{c.dilation}, order {self.order}, chunks {'x'.join(map(str, self.chunk))}"
                    f"{', zero points' if self.quant else ''}")  # fmt: skip
        where = (f"DRAM {float(self.memory.bandwidth):g} B/cycle, latency {self.memory.latency}"
                 if self.memory else f"AXI RAM, {self.pause:.0%} pauses")  # fmt: skip
        quant = ""
        if self.quant:
            quant = f", zero points {self.quant.a_zero}/{self.quant.b_zero}"
            quant += ", requantized" if self.quant.params is not None else ""
        return (f"{m}x{k}x{n} {self.values}, order {self.order}, chunks "
                f"{'x'.join(map(str, self.chunk))}{quant}, {where}")  # fmt: skip


@dataclass
class Outcome:
    case: Case
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return not self.failures


def _shape(rng, config: ArrayConfig, kind: int) -> tuple[int, int, int]:
    r, c = config.rows, config.cols
    if kind == 0:  # dims of 1
        dims = [1, int(rng.integers(1, 3 * max(r, c) + 2)), int(rng.integers(1, 9))]
        rng.shuffle(dims)
        return tuple(dims)
    if kind == 1:  # ragged: one past a multiple of the array
        return (r * int(rng.integers(1, 4)) + 1, int(rng.integers(2, 4 * r + 3)),
                c * int(rng.integers(1, 4)) + 1)  # fmt: skip
    return tuple(int(x) for x in rng.integers(1, 4 * max(r, c) + 8, 3))


def _operand(rng, config: ArrayConfig, shape, which: str, values: str) -> np.ndarray:
    if values == "zeros":
        return np.zeros(shape, np.int64)
    if config.number == "bf16":
        if values == "specials":
            out = DataKind().bf16_matrix(rng, shape)
            mask = rng.random(shape) < 0.3
            out[mask] = rng.choice(_BF16_SPECIALS, size=int(mask.sum()))
            return out
        return DataKind().bf16_matrix(rng, shape)
    width, signed = getattr(config, f"{which}_width"), getattr(config, f"{which}_signed")
    if values == "corners":
        return corner_matrix(rng, shape, width, signed)
    return DataKind().matrix(rng, shape, width, signed)


def _chunk(rng, config: ArrayConfig, shape) -> tuple[int, int, int]:
    """The driver's chunks (largest that fit), or a random valid choice below them."""
    fit = chunk_sizes(config, *shape)
    if rng.random() < 0.5:
        return fit["m"], fit["k"], fit["n"]
    g = granularity(config)
    out = []
    for dim, total in zip("mkn", shape, strict=True):
        steps = max(1, fit[dim] // g[dim])
        size = g[dim] * int(rng.integers(1, steps + 1))
        out.append(total if size >= total else size)
    return tuple(out)


def _quant(rng, config: ArrayConfig, n: int) -> Quantization | None:
    if not (config.zero_points or config.requant):
        return None
    za = zb = 0
    if config.zero_points:
        za = int(rng.integers(*value_range(config.a_width, config.a_signed), endpoint=True))
        zb = int(rng.integers(*value_range(config.b_width, config.b_signed), endpoint=True))
    params = None
    if config.requant and rng.random() < 0.7:
        lo, hi = value_range(config.out_width, config.out_signed)
        out_zero = int(rng.integers(lo, hi, endpoint=True))
        if config.requant_float and rng.random() < 0.5:  # onnxruntime's float32 scales
            scales = np.float32(2.0) ** rng.uniform(-20, 4, n).astype(np.float32)
            params = RequantParams.from_float_scales(scales, out_zero, bool(rng.random() < 0.5))
        else:
            params = RequantParams(rng.integers(1 << 28, 1 << 31, n), rng.integers(-12, 4, n),
                                   out_zero, bool(rng.random() < 0.5))  # fmt: skip
    return Quantization(za, zb, params)


def case(config: ArrayConfig, seed: int, index: int, pauses: bool = True) -> Case:
    """Case ``index`` of the regression seeded ``seed`` (the same whenever it is drawn)."""
    rng = np.random.default_rng([seed, index])
    if config.stage_depth and index % CONV_EVERY == CONV_EVERY - 1:
        return _conv_case(config, rng, index, pauses)
    values = ("random", "corners", "zeros", "random")[index % 4]
    if config.number == "bf16" and values == "corners":
        values = "specials"
    for _ in range(100):  # a shape and chunks the device takes
        shape = _shape(rng, config, index % 3)
        chunk = _chunk(rng, config, shape)
        order = LOOP_ORDERS[int(rng.integers(len(LOOP_ORDERS)))]
        quant = _quant(rng, config, shape[2])
        zeros = (quant.a_zero, quant.b_zero) if quant else (0, 0)
        requant = quant is not None and quant.params is not None
        d = place(config, *shape, order=order, chunk=chunk, zeros=zeros, requant=requant)
        if check_descriptor(config, d)[0] is Refusal.NONE:
            break
    else:
        raise ValueError(f"no valid case {index} for {config.name}")
    m, k, n = shape
    a = _operand(rng, config, (m, k), "a", values)
    b = _operand(rng, config, (k, n), "b", values)
    if pauses and index % 4 == 3:
        return Case(index, values, a, b, order, chunk, quant, None, PAUSES[index // 4 % 2])
    return Case(index, values, a, b, order, chunk, quant, MEMORIES[int(rng.integers(3))])


def _conv_case(config: ArrayConfig, rng, index: int, pauses: bool) -> Case:
    """A random convolution and a random chunk of it the device takes (see the module)."""
    tile, g = _tile(config), granularity(config)
    for _ in range(200):
        kernel = int(rng.choice([1, 3, 5, 7]))
        stride, dilation = (tuple(int(v) for v in rng.integers(1, 3, 2)) for _ in range(2))
        pads = tuple(int(v) for v in rng.integers(0, 3, 4))
        size = max(dilation) * (kernel - 1) + 1 + int(rng.integers(0, 5))
        conv = Conv(int(rng.integers(1, 3)), size, size + int(rng.integers(0, 3)),
                    int(rng.integers(1, 3 * tile + 2)), int(rng.integers(1, 2 * config.cols + 2)),
                    (kernel, kernel), stride, pads, dilation)  # fmt: skip
        m, k, n = device_gemm(conv, tile)
        oh, ow = conv.out
        per_slice = kernel * kernel * tile
        rows = [r for r in range(1, m // ow + 1) if chunk_rows(conv, r * ow)
                and (r * ow % g["m"] == 0 or r * ow >= m)]  # fmt: skip
        kcs = [j * per_slice for j in range(1, slices(conv, tile) + 1)
               if j * per_slice % g["k"] == 0 or j * per_slice >= k]  # fmt: skip
        if not rows:
            continue
        chunk = (int(rng.choice(rows)) * ow, int(rng.choice(kcs)),
                 int(rng.integers(1, n + 1)))  # fmt: skip
        quant = _quant(rng, config, n)
        order = LOOP_ORDERS[int(rng.integers(len(LOOP_ORDERS)))]
        probe = Case(index, "random", None, None, order, chunk, quant, None, conv=conv)
        d = _conv_descriptor(config, probe)
        if check_descriptor(config, d)[0] is Refusal.NONE:
            break
    else:
        raise ValueError(f"no valid convolution case {index} for {config.name}")
    x = _operand(rng, config, (conv.batch, conv.height, conv.width, conv.channels), "a",
                 "random")  # fmt: skip
    w = _operand(rng, config, (conv.out_channels, kernel, kernel, conv.channels), "b", "random")
    memory, pause = MEMORIES[int(rng.integers(3))], 0.0
    if pauses and index % 2:
        memory, pause = None, PAUSES[index // 2 % 2]
    return Case(index, "random", x, w, order, d.chunk, quant, memory, pause, conv, d)


def _tile(config: ArrayConfig) -> int:
    """A convolution's slice: A's tile (channels of a pixel in the input's words)."""
    return word_layout(config, "a").tile


def _conv_descriptor(config: ArrayConfig, c: Case) -> Descriptor:
    """A convolution case's descriptor, as the driver places it (sim.simulate's placement)."""
    return place(config, *device_gemm(c.conv, _tile(config)), conv=c.conv, order=c.order,
                 chunk=c.chunk, **quant_fields(config, c.quant))  # fmt: skip


def _expected(config: ArrayConfig, c: Case) -> np.ndarray:
    if c.conv is not None:
        za, zb = (c.quant.a_zero, c.quant.b_zero) if c.quant else (0, 0)
        acc = conv_reference(config, c.conv, c.a, c.b, za, zb)
        return c.quant.params.apply(config, acc) if c.quant and c.quant.params else acc
    if c.quant is not None and c.quant.params is not None:
        return requantized_reference(config, c.a, c.b, c.quant.a_zero, c.quant.b_zero,
                                     c.quant.params)  # fmt: skip
    if c.quant is not None:
        return reference(config, c.a, c.b, c.quant.a_zero, c.quant.b_zero)
    return reference(config, c.a, c.b)


def _judge(config: ArrayConfig, c: Case, r: SimResult) -> list[str]:
    failures = []
    if r.error:
        failures.append(f"the device refused it (error {r.error})")
    if r.dram.get("protocol_errors"):
        failures.append(f"the DRAM model saw {r.dram['protocol_errors']} AXI4 protocol error(s)")
    want = _expected(config, c)
    if not np.array_equal(r.c, want):
        bad = np.argwhere(r.c != want)
        i, j = bad[0]
        failures.append(f"C differs from golden/ in {len(bad)} element(s), first at [{i}, {j}]: "
                        f"{r.c[i, j]} instead of {want[i, j]}")  # fmt: skip
    predicted = dict(predict_device(config, r.descriptor, r.memory))
    names = [k for k in DEVICE_COUNTERS if c.memory is not None or k not in TIMED_COUNTERS]
    for name in names:
        if r.counters[name] != predicted[name]:
            failures.append(f"counter {name}: RTL {r.counters[name]}, model {predicted[name]}")
    return failures


def run_regression(config: ArrayConfig, selected: list[Case], *, waves: Path | None = None,
                   timeout: float | None = None, progress=None) -> list[Outcome]:  # fmt: skip
    """Simulate every case (one simulator run per memory setting) and judge each."""
    outcomes = {c.index: Outcome(c) for c in selected}
    groups: dict[tuple, list[Case]] = {}
    for c in selected:
        key = ("dram", c.memory) if c.memory is not None else ("axi-ram", c.pause)
        groups.setdefault(key, []).append(c)
    for (slave, setting), group in groups.items():
        start = time.perf_counter()
        if slave == "dram":
            kwargs = dict(memory=setting)
        else:
            kwargs = dict(slave="axi-ram", pause=setting, pause_seed=group[0].index)
        descriptors = None
        if any(c.conv is not None for c in group):  # convolutions: every descriptor given
            descriptors = [c.d if c.conv is not None else _gemm_descriptor(config, c)
                           for c in group]  # fmt: skip
        results = run_gemms(
            config, [c.operands(config) for c in group], order=[c.order for c in group],
            chunk=None if descriptors else [c.chunk for c in group],
            quant=[c.quant for c in group] if any(c.quant for c in group) else None,
            descriptors=descriptors, name=f"regress-{group[0].index}", timeout=timeout,
            waves=waves, **kwargs,
        )  # fmt: skip
        seconds = (time.perf_counter() - start) / len(group)
        for c, r in zip(group, results, strict=True):
            out = outcomes[c.index]
            out.failures, out.seconds = _judge(config, c, r), seconds
            if progress:
                progress(out)
    return [outcomes[c.index] for c in selected]


def _gemm_descriptor(config: ArrayConfig, c: Case) -> Descriptor:
    """A GEMM case's descriptor, as the driver places it (sim.simulate's placement)."""
    m, k, n = c.shape
    return place(config, m, k, n, order=c.order, chunk=c.chunk,
                 **quant_fields(config, c.quant))  # fmt: skip


def replay_command(config_path: Path, seed: int, index: int, pauses: bool) -> str:
    """The command that runs case ``index`` alone and writes its waveform."""
    words = ["systolic", "regress", str(config_path), "--seed", str(seed), "--case", str(index),
             "--waves", f"regress-s{seed}-case{index}.fst"]  # fmt: skip
    if not pauses:
        words.append("--no-pauses")
    return " ".join(shlex.quote(w) for w in words)


def write_junit(path: Path, config: ArrayConfig, seed: int, outcomes: list[Outcome],
                replay) -> None:  # fmt: skip
    """JUnit XML (one testsuite, a testcase per GEMM) for CI systems."""
    failed = sum(not o.passed for o in outcomes)
    suite = ET.Element("testsuite", name=f"systolic-regress {config.name} seed {seed}",
                       tests=str(len(outcomes)), failures=str(failed), errors="0",
                       time=f"{sum(o.seconds for o in outcomes):.3f}")  # fmt: skip
    for o in outcomes:
        tc = ET.SubElement(suite, "testcase", classname=f"regress.{config.name}",
                           name=f"case{o.case.index}: {o.case.describe()}",
                           time=f"{o.seconds:.3f}")  # fmt: skip
        if not o.passed:
            f = ET.SubElement(tc, "failure", message=o.failures[0])
            f.text = "\n".join(o.failures) + f"\nreplay: {replay(o.case.index)}\n"
    root = ET.Element("testsuites")
    root.append(suite)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="unicode", xml_declaration=True)
