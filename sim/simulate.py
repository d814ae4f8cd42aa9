"""``run_gemm``: one entry from Python to the simulated accelerator, for tests, tools and sweeps.

The accelerator is the device of docs/memory.md: it fetches its operands from DRAM and stores C
there itself. This is the driver's side: it lays the matrices out in the DRAM model
(:func:`contract.dma.image`), picks the chunk sizes (:func:`contract.plan.chunk_sizes`), writes
one descriptor per GEMM, and reads C back from DRAM; the device does the rest.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
from systolic.contract.activity import UNPRICED
from systolic.contract.config import ArrayConfig
from systolic.contract.conv import device_gemm, device_weights, input_matrix
from systolic.contract.dma import (
    LOOP_ORDERS,
    Descriptor,
    Refusal,
    Region,
    c_format,
    check_descriptor,
    containers,
    descriptor_values,
    from_image,
    image,
    next_base,
    offchip_words,
    place,
    q_image,
    spans,
    tile_rows,
    word_layout,
)
from systolic.contract.figures import GemmFigures
from systolic.contract.layouts import input_word
from systolic.contract.memory import DEFAULT_MEMORY, Dram
from systolic.contract.trace import parse_log
from systolic.golden.reference import check_operands, check_zero_points
from systolic.golden.requant import RequantParams

from .build import WAVE_FORMATS, build_model, run_cocotb
from .dram import DRAM_BYTES, image_lines, read_dump
from .wrapper import counter_names

__all__ = [
    "SLAVES",
    "Bench",
    "Quantization",
    "SimResult",
    "SimulationError",
    "check_waves",
    "run_conv",
    "run_convs",
    "run_gemm",
    "run_gemms",
]

#: What serves the device's AXI4 port: the DRAM model (sim/dram.py) or cocotbext-axi's AXI RAM.
SLAVES = ("dram", "axi-ram")


@dataclass
class SimResult(GemmFigures):
    """What one GEMM did on the simulated device: C as read back from DRAM, the device's
    counters (:data:`contract.interface.DEVICE_COUNTERS`), its refusal code (``error``, 0 when
    it ran), the bench monitor's own count of the cycles from the descriptor's acceptance to
    ``done`` (``measured_cycles``) and the DRAM model's own counts of what it served (``dram``:
    ``read_beats_a``, ``write_bytes_c``, ...)."""

    config: ArrayConfig
    shape: tuple[int, int, int]
    descriptor: Descriptor
    memory: Dram
    c: np.ndarray
    counters: dict[str, int]
    error: int
    measured_cycles: int
    dram: dict[str, int] = field(default_factory=dict)
    #: Bit flips per (component, traffic) group while the array computes; activity builds only.
    toggles: dict[tuple[str, str], int] | None = None
    #: ``(bit flips, bits, per bit)`` of each probed net (sim/probes.py, by path) in the same
    #: window, the memory side's and the inputs' included: what gate-level power is computed
    #: from. Per bit: its flips and the cycles it held a 1 (the mesh's registers; else None).
    net_toggles: dict[str, tuple[int, int, list[tuple[int, int]] | None]] | None = None
    trace: list | None = None  # (cycle, event, what): contract.trace, with trace=True
    wall_seconds: float = 0.0  # the whole GEMM in the simulator, DRAM load and read-back included
    compute_seconds: float = 0.0  # of which waiting for `done` (Python idle, simulator running)
    #: The bench driver's AXI4-Lite accesses for the descriptor: ``post`` writes, completion
    #: ``reads`` (IRQ_PENDING, STATUS, every counter's two words) and ``acks``, and the bus
    #: cycles of each phase (contract.host.driver_accesses counts the same).
    driver: dict[str, int] = field(default_factory=dict)
    #: A queued run's: the bench clock's cycle the device accepted the descriptor.
    posted: int | None = None

    @property
    def offchip_words(self) -> dict[str, int]:
        """Buffer words that crossed to and from DRAM (:func:`contract.dma.offchip_words`)."""
        return offchip_words(self.config, self.descriptor, self.counters)

    @property
    def errors(self) -> int:
        """The device's refusal (0 or 1), and the requests and beats that broke an AXI4 rule
        the DRAM model checks (sim/dram.py)."""
        return int(self.error != 0) + self.dram.get("protocol_errors", 0)

    @property
    def sim_speed(self) -> float:
        """Simulated device cycles per wall-clock second while the device runs."""
        return self.cycles / self.compute_seconds if self.compute_seconds else 0.0

    @property
    def activity_cycles(self) -> int:
        """The cycles the activity counters cover: the array's controller busy, every chunk."""
        return self.counters["compute_cycles"]

    def net_activity(self) -> dict[str, tuple[float, int, list[tuple[float, float]] | None]]:
        """Each probed net's bit flips per bit per cycle over :attr:`activity_cycles`, its bits
        and, where counted, each bit's own flips per cycle and duty cycle (the share of the
        cycles it held a 1): activity for gate-level power."""
        if self.net_toggles is None:
            raise ValueError(
                "net activity needs a per-net activity build "
                "(run_gemm(activity=True, per_net=True))"
            )
        cycles = max(1, self.activity_cycles)
        return {path: (flips / (bits * cycles), bits,
                       None if per_bit is None else [(f / cycles, min(1.0, h / cycles))
                                                     for f, h in per_bit])
                for path, (flips, bits, per_bit) in self.net_toggles.items()}  # fmt: skip

    def summary(self) -> dict:
        return self.figures() | {"chunks": self.counters["jobs"], "errors": self.errors,
                                 "chunk": list(self.descriptor.chunk),
                                 "memory": self.memory.to_dict()}  # fmt: skip


@dataclass(frozen=True)
class Quantization:
    """Quantized arithmetic of one GEMM: zero points of A and B (``zero_points``) and, with
    ``params`` (``requant``), requantized outputs."""

    a_zero: int = 0
    b_zero: int = 0
    params: RequantParams | None = None

    def check(self, config: ArrayConfig, channels: int) -> None:
        check_zero_points(config, self.a_zero, self.b_zero)
        if self.params is not None:
            if not config.requant:
                raise ValueError(f"{config.name} has no requantization unit (requant=False)")
            self.params.check(config, channels)


def quant_fields(config: ArrayConfig, q: Quantization | None) -> dict:
    """What :func:`contract.dma.place` takes of a GEMM's quantization (none: plain): the
    driver's descriptor fields for its zero points, requantization, bias and clamp."""
    rq = q.params if q else None
    return {"zeros": (q.a_zero, q.b_zero) if q else (0, 0), "requant": rq is not None,
            "out_zero": rq.out_zero if rq else 0, "bias": rq is not None and rq.bias is not None,
            "clamp": rq.bounds(config) if rq else None,
            "float_scale": rq is not None and rq.float_scale}  # fmt: skip


class SimulationError(RuntimeError):
    """The simulator failed (crash, timeout, a failed test) before finishing every GEMM; the
    results of those it finished are in ``finished`` and its log is at ``log``."""

    def __init__(self, message: str, log: Path | None, finished: dict[int, SimResult]):
        super().__init__(message)
        self.log = log
        self.finished = finished


def _c_bytes(config: ArrayConfig, d: Descriptor, fmt: str, region: Region | None = None) -> int:
    """Bytes from the start of C's region (or ``region``, holding C's shape) to its end."""
    tiles, lines = tile_rows(word_layout(config, fmt), (d.m, d.n))
    return (tiles - 1) * (region or d.c).stride + lines * containers(config)[fmt]


def _dram_fields(memory: Dram) -> dict[str, int]:
    bw = memory.bandwidth
    return {"bw_num": bw.numerator, "bw_den": bw.denominator, "latency": memory.latency,
            "max_requests": memory.max_requests}  # fmt: skip


def _check_fits(config: ArrayConfig, i: int, d: Descriptor) -> None:
    """Refuse a GEMM whose operands, C, partial sums or table would lie past the simulated
    DRAM's end."""
    if check_descriptor(config, d)[0] is not Refusal.NONE:
        return  # the device refuses it before touching DRAM
    ends = [hi for _, hi in spans(config, d).values()]  # every region, as the check bounds it
    if max(ends) > DRAM_BYTES:
        raise ValueError(f"GEMM {i} ({d.m}x{d.k}x{d.n}) does not fit the simulated DRAM "
                         f"({DRAM_BYTES} bytes): it needs {max(ends)}")  # fmt: skip


def _job_dir(build, name: str) -> Path:
    """A fresh folder for one batch's jobs under ``build``'s, its own per process and thread."""
    run_dir = build.directory / "jobs" / f"{name}-{os.getpid()}-{threading.get_ident()}"
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    return run_dir


def _job(config, i, a, b, d, quant, acc, memory, run_dir) -> tuple[dict, str | None]:
    """The cocotb driver's job for GEMM ``i`` (its DRAM image written beside) and the format C
    comes back in (None when the device must refuse it: nothing placed, nothing read)."""
    hex_path = run_dir / f"image-{i}.hex"
    job = {"image": str(hex_path), "descriptor": descriptor_values(config, d), "dumps": [],
           "dram": _dram_fields(memory)}  # fmt: skip
    if check_descriptor(config, d)[0] is not Refusal.NONE:
        hex_path.write_text(image_lines(config.bus_width, {}))
        return job, None
    cont = containers(config)
    a_word = word_layout(config, "a") if d.conv is None else input_word(config)  # its input
    regions = {d.a.addr: image(a, a_word, cont["a"], d.a.stride),
               d.b.addr: image(b, word_layout(config, "b"), cont["b"], d.b.stride)}  # fmt: skip
    if acc is not None:
        regions[d.c.addr] = image(acc, word_layout(config, "p"), cont["p"], d.c.stride)
    if quant is not None and quant.params is not None:
        params = quant.params
        regions[d.q_addr] = q_image(config, params.multiplier, params.shift, params.bias)
    fmt = c_format(config, d)
    c_bytes = _c_bytes(config, d, fmt)
    hex_path.write_text(image_lines(config.bus_width, regions))
    bus = config.bus_width // 8
    job["dumps"] = [[d.c.addr // bus, (d.c.addr + c_bytes - 1) // bus]]
    return job, fmt


@dataclass(frozen=True)
class Bench:
    """How a simulation runs, apart from what it computes.

    ``simulator`` is ``verilator`` or ``icarus`` (:data:`sim.build.SIMULATORS`; Icarus Verilog
    runs the same bench behind the DRAM model, without activity counting or waves).
    ``slave="axi-ram"`` serves the AXI4 port with cocotbext-axi's ``AxiRam`` instead of the
    DRAM model (a build whose port is at the wrapper's edge): an independent implementation of
    the protocol, each channel paused on a share ``pause`` of the cycles at random (seeded by
    ``pause_seed``); its timing is its own, so the memory is only the models' reference and
    ``SimResult.dram`` is empty. ``activity`` runs the separately built model that counts
    switching activity (``SimResult.toggles``); ``per_net`` counts it net by net, every
    flip-flop of the device included (``SimResult.net_toggles``, for gate-level power; a slower
    build of its own). ``trace`` logs the device's events (``SimResult.trace``). ``waves``
    writes the run's waveform there (``.fst``, or ``.vcd``; a separately built model with
    tracing: the wrapper's nets and the whole design).
    """

    simulator: str = "verilator"
    slave: str = "dram"
    pause: float = 0.3
    pause_seed: int = 0
    activity: bool = False
    per_net: bool = False
    trace: bool = False
    waves: Path | None = None

    def __post_init__(self):
        check_waves(self.waves)
        if self.slave not in SLAVES:
            raise ValueError(f"slave must be one of {', '.join(SLAVES)}, not {self.slave!r}")
        if not 0 <= self.pause < 1:
            raise ValueError(f"pause must be a share of cycles in [0, 1), not {self.pause!r}")
        if self.slave != "dram" and self.activity:
            raise ValueError("activity counting runs behind the DRAM model only (slave='dram')")


class _Gemm(NamedTuple):
    """A GEMM checked and placed: its operands, descriptor, quantization and C to add to."""

    a: np.ndarray
    b: np.ndarray
    d: Descriptor
    quant: Quantization | None
    acc: np.ndarray | None


def run_gemms(
    config: ArrayConfig,
    operands: list[tuple[np.ndarray, np.ndarray]],
    *,
    memory: Dram | None = None,
    order: str | list[str] = "nmk",
    chunk: list[tuple[int, int, int] | None] | None = None,
    quant: list[Quantization | None] | None = None,
    c_in: list[np.ndarray | None] | None = None,
    pad: int = 0,
    descriptors: list[Descriptor] | None = None,
    queued: bool = False,
    name: str = "gemms",
    on_result: Callable[[int, SimResult], None] | None = None,
    timeout: float | None = None,
    bench: Bench | None = None,
    **bench_options,
) -> list[SimResult]:
    """Run every ``(A, B)`` on one simulator process of the device for ``config``, each as one
    descriptor, behind the DRAM model ``memory`` (:data:`DEFAULT_MEMORY` when None).

    ``order`` is the chunk loop nest (:data:`contract.dma.LOOP_ORDERS`), or one per GEMM;
    ``chunk[i]`` gives GEMM ``i`` its chunk sizes ``(mc, kc, nc)`` (None: the largest that fit;
    :func:`models.chunking.choose_chunk` tunes them); ``quant[i]`` gives GEMM
    ``i`` zero points and a requantization (``SimResult.c`` then holds the requantized outputs);
    ``c_in[i]`` is a C to accumulate GEMM ``i`` into; ``pad`` leaves that many extra words
    between tile rows in DRAM. ``descriptors`` replaces the driver's placement (refusal tests:
    a descriptor the device refuses moves nothing and returns its error code). ``queued``
    posts them all at once, each placed after the one before, as a driver streaming GEMMs does
    (they overlap on the device; each result's ``posted`` is its acceptance cycle on the
    bench's clock, its ``counters`` what the registers showed at its done: the queue's running
    total, docs/memory.md, so its figures are not its own (models.device.predict_stream gives
    those); the DRAM model's counts are the whole run's, on the first; ``driver`` holds the
    posting's accesses only). How the
    simulation runs is ``bench`` (:class:`Bench`), or its fields given as keywords
    (``activity=True``). Everything is checked before anything is built.
    ``on_result(i, result)`` is called (from a watcher thread) as soon as GEMM ``i`` finishes;
    ``timeout`` bounds the simulation's wall-clock seconds. A failed simulation raises
    :class:`SimulationError`, which still carries the GEMMs that finished.
    """
    if bench is not None and bench_options:
        raise TypeError("give the bench options as bench=Bench(...) or as keywords, not both")
    bench = bench or Bench(**bench_options)
    memory = memory or DEFAULT_MEMORY
    if not isinstance(memory, Dram):
        raise TypeError(f"memory must be a contract.memory.Dram, not {type(memory).__name__}")
    if queued and (bench.activity or bench.trace or bench.waves):
        raise ValueError("a queued run counts no activity, logs no trace and writes no waves")
    checked = _check_gemms(config, operands, order, chunk, quant, c_in, pad, descriptors,
                           stacked=queued)  # fmt: skip
    build = build_model(config, "device", activity=bench.activity, per_net=bench.per_net,
                        memory="dram" if bench.slave == "dram" else "port",
                        waves=check_waves(bench.waves), simulator=bench.simulator)  # fmt: skip
    nets = json.loads((build.directory / "activity.json").read_text()) if bench.activity else []
    by_counter = {net["counter"]: net for net in nets}
    counters = [name for net in nets for name in counter_names(net)]
    run_dir = _job_dir(build, name)
    jobs, formats = [], []
    for i, g in enumerate(checked):
        job, fmt = _job(config, i, g.a, g.b, g.d, g.quant, g.acc, memory, run_dir)
        job["trace"] = bench.trace
        job["ahead"] = queued and i > 0
        jobs.append(job)
        formats.append(fmt)
    jobs_file = run_dir / "jobs.json"
    jobs_file.write_text(json.dumps(jobs))

    def result(i: int, got: dict) -> SimResult:
        g = checked[i]
        shape = (g.d.m, g.d.k, g.d.n) if g.d.conv else (g.a.shape[0], g.a.shape[1], g.b.shape[1])
        return _result(config, memory, shape, g.d, formats[i], got, by_counter)

    activity_file = run_dir / "activity.json"  # thousands of names in a per-bit build
    activity_file.write_text(json.dumps(counters))
    env = {"SYSTOLIC_JOBS": str(jobs_file), "SYSTOLIC_RESULTS": str(run_dir),
           "SYSTOLIC_ACTIVITY": str(activity_file), "SYSTOLIC_SLAVE": bench.slave,
           "SYSTOLIC_PAUSE": str(bench.pause),
           "SYSTOLIC_PAUSE_SEED": str(bench.pause_seed)}  # fmt: skip
    if timeout is not None:
        env["SYSTOLIC_DEADLINE"] = str(time.time() + timeout)
    return _simulate(config.name, build, run_dir, env, len(checked), result, on_result,
                     bench.waves)  # fmt: skip


def _check_gemms(config: ArrayConfig, operands, order, chunk, quant, c_in, pad,
                 descriptors, stacked: bool = False) -> list[_Gemm]:  # fmt: skip
    """Every GEMM checked and placed (or its descriptor taken as given), before any build;
    ``stacked``: each placed after the one before, not from address 0."""
    orders = [order] * len(operands) if isinstance(order, str) else list(order)
    for o in orders:
        if o not in LOOP_ORDERS:
            raise ValueError(f"order must be one of {', '.join(LOOP_ORDERS)}, not {o!r}")
    for what, given in (("quant", quant), ("c_in", c_in), ("descriptors", descriptors),
                        ("chunk", chunk),
                        ("order", None if isinstance(order, str) else orders)):  # fmt: skip
        if given is not None and len(given) != len(operands):
            raise ValueError(f"{what} has {len(given)} entries for {len(operands)} GEMMs")
    checked, base = [], 0
    for i, (a, b) in enumerate(operands):
        if descriptors and descriptors[i].conv is not None:  # A is the input: contract.conv
            checked.append(_check_conv(config, i, a, b, descriptors[i], quant[i] if quant else
                                       None))  # fmt: skip
            continue
        a, b = check_operands(config, a, b)
        (m, k), n = a.shape, b.shape[1]
        q = quant[i] if quant else None
        if q is not None:
            q.check(config, n)
        acc = c_in[i] if c_in else None
        if acc is not None and np.shape(acc) != (m, n):
            raise ValueError(f"c_in[{i}] must be {m}x{n} like A @ B, not {np.shape(acc)}")
        if descriptors:
            d = descriptors[i]
        else:
            d = place(config, m, k, n, order=orders[i], accumulate=acc is not None, pad=pad,
                      chunk=chunk[i] if chunk else None, base=base,
                      **quant_fields(config, q))  # fmt: skip
            if stacked:
                base = next_base(config, d)
            code, why = check_descriptor(config, d)
            if code is not Refusal.NONE:
                raise ValueError(f"GEMM {i} ({m}x{k}x{n}) cannot run on {config.name}: {why}")
        _check_fits(config, i, d)
        checked.append(_Gemm(a, b, d, q, acc))
    return checked


def _check_conv(config: ArrayConfig, i: int, x, w, d: Descriptor, q) -> _Gemm:
    """A convolution descriptor's operands: the input as pixels by channels, the device's B."""
    conv = d.conv
    pixels = conv.batch * conv.height * conv.width
    x, w = np.asarray(x, dtype=np.int64), np.asarray(w, dtype=np.int64)
    if x.shape != (pixels, conv.channels) or w.shape != (d.k, d.n):
        raise ValueError(f"convolution {i}: the input must be {pixels}x{conv.channels} and B "
                         f"{d.k}x{d.n}, not {x.shape} and {w.shape}")  # fmt: skip
    check_operands(config, x, np.zeros((x.shape[1], 1), np.int64))  # their ranges
    check_operands(config, np.zeros((1, d.k), np.int64), w)
    code, why = check_descriptor(config, d)
    if code is not Refusal.NONE:
        raise ValueError(f"convolution {i} cannot run on {config.name}: {why}")
    _check_fits(config, i, d)
    return _Gemm(x, w, d, q, None)


def run_convs(config: ArrayConfig, convs: list, *, quant: list | None = None,
              chunk: list | None = None, order: str | list[str] = "nmk",
              **kwargs) -> list[SimResult]:  # fmt: skip
    """Convolutions on one simulator process of the device, each a convolution descriptor
    (contract.conv): ``convs[i] = (conv, x, w)``, ``x`` the NHWC input, ``w`` the weights ``O
    x kh x kw x C``; ``quant[i]``'s zero points pad and offset (padding is the input's zero
    point), its requantization fuses; ``chunk[i]`` the chunk sizes (None: the driver's,
    contract.plan.conv_chunk_sizes); ``order`` the loop order, or one per convolution. Each
    ``SimResult.c`` is the ``pixels x out_channels``
    output; the rest as :func:`run_gemms` (``queued`` included)."""
    tile = word_layout(config, "a").tile
    quant = quant or [None] * len(convs)
    chunk = chunk or [None] * len(convs)
    orders = [order] * len(convs) if isinstance(order, str) else list(order)
    for what, given in (("quant", quant), ("chunk", chunk), ("order", orders)):
        if len(given) != len(convs):
            raise ValueError(f"{what} has {len(given)} entries for {len(convs)} convolutions")
    operands, descriptors, base = [], [], 0
    for (conv, x, w), q, c, o in zip(convs, quant, chunk, orders, strict=True):
        d = place(config, *device_gemm(conv, tile), conv=conv, order=o, chunk=c,
                  base=base if kwargs.get("queued") else 0, **quant_fields(config, q))  # fmt: skip
        base = next_base(config, d)
        operands.append((input_matrix(conv, x), device_weights(conv, w, tile, d.b_zero)))
        descriptors.append(d)
    return run_gemms(config, operands, descriptors=descriptors, quant=quant, **kwargs)


def run_conv(config: ArrayConfig, conv, x, w, *, quant: Quantization | None = None,
             chunk: tuple[int, int, int] | None = None, **kwargs) -> SimResult:  # fmt: skip
    """One convolution (see :func:`run_convs`)."""
    return run_convs(config, [(conv, x, w)], quant=[quant], chunk=[chunk], **kwargs)[0]


def _simulate(label: str, build, run_dir: Path, env: dict, count: int, result, on_result,
              waves: Path | None) -> list[SimResult]:  # fmt: skip
    """Run the cocotb driver on the jobs in ``run_dir``, collecting each GEMM's result as its
    file appears (a watcher thread, so that ``on_result`` hears of it at once); the results in
    order; a :class:`SimulationError` (with those that finished) when the run failed or ended
    early."""
    finished: dict[int, SimResult] = {}
    lock = threading.Lock()

    def collect() -> None:
        with lock:
            for i in range(count):
                path = run_dir / f"job-{i}.json"
                if i in finished or not path.exists():
                    continue
                finished[i] = result(i, json.loads(path.read_text()))
                if on_result:
                    on_result(i, finished[i])

    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.5):
            collect()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    failure = None
    try:
        run = run_cocotb(build, "systolic.tb.device_tb", testcase="run_jobs", env=env,
                         name=run_dir.name, waves=waves)  # fmt: skip
        if run.failed:
            failure = ("the simulation failed", run.log)
    except RuntimeError as e:
        failure = (str(e), build.directory / "runs" / run_dir.name / "sim.log")
    finally:
        stop.set()
        watcher.join()
    collect()
    if failure or len(finished) < count:
        message, log = failure or ("the simulation ended early", None)
        raise SimulationError(f"{label}: {message}; see {log}", log, finished)
    return [finished[i] for i in range(count)]


def _result(config, memory, shape, d, fmt, got: dict, by_counter: dict) -> SimResult:
    if fmt is None:  # refused: nothing came back
        c = np.zeros((0, 0), np.int64)
    else:
        bus = config.bus_width // 8
        blob = read_dump(got["dumps"][0], config.bus_width)
        offset = d.c.addr % bus
        c = from_image(blob[offset : offset + _c_bytes(config, d, fmt)], word_layout(config, fmt),
                       containers(config)[fmt], d.c.stride, (shape[0], shape[2]))  # fmt: skip
    toggles = net_toggles = None
    if by_counter:
        toggles, net_toggles = {}, {}
        for counter, entry in by_counter.items():
            flips = got["toggles"][counter]
            if "path" in entry:  # a per-net build
                per_bit = ([(got["toggles"][f], got["toggles"][h])
                            for f, h in zip(entry["bit_flips"], entry["high"], strict=True)]
                           if "high" in entry else None)  # fmt: skip
                net_toggles[entry["path"]] = (flips, entry["bits"], per_bit)
            if entry["component"] not in UNPRICED:
                group = (entry["component"], entry["traffic"])
                toggles[group] = toggles.get(group, 0) + flips
        net_toggles = net_toggles or None
    trace = parse_log(got["trace"]) if got.get("trace") is not None else None
    return SimResult(config, shape, d, memory, c, got["counters"], got["error"],
                     got["measured_cycles"], got["dram"], toggles, net_toggles, trace,
                     got["wall_seconds"], got["compute_seconds"], got["driver"],
                     got.get("posted"))  # fmt: skip


def check_waves(waves: Path | None) -> str | None:
    """The trace format a waveform path asks for (``fst`` or ``vcd``), None for no waves."""
    if waves is None:
        return None
    fmt = Path(waves).suffix.lstrip(".")
    if fmt not in WAVE_FORMATS:
        raise ValueError(f"waves must be a .fst or .vcd file, not {str(waves)!r}")
    return fmt


def run_gemm(config: ArrayConfig, a: np.ndarray, b: np.ndarray, **kwargs) -> SimResult:
    """One GEMM on the simulated device (see :func:`run_gemms`); ``quant``, ``c_in`` and
    ``chunk`` are given for this GEMM alone, not as lists."""
    for key in ("quant", "c_in", "chunk"):
        if key in kwargs:
            kwargs[key] = [kwargs[key]]
    return run_gemms(config, [(a, b)], **kwargs)[0]
