"""One sweep point, a configuration running one workload, evaluated by the model or in RTL.

Both evaluations produce a *record* (a JSON-able dict) with the same figures, so the report does
not care which produced a point; an RTL record also carries the model's figures for the same
point and the difference.

A workload's GEMMs run one after another on one accelerator, so cycles add up; a GEMM repeated
``count`` times is evaluated once and its figures multiplied (RTL records say so:
``scaled_by_count``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import replace
from typing import NamedTuple

import numpy as np
from systolic.contract.config import ArrayConfig
from systolic.contract.conv import Conv, device_gemm, device_weights, input_matrix
from systolic.contract.dma import Descriptor, containers, place, tile_rows, word_layout
from systolic.contract.host import Host
from systolic.contract.interface import DIM_BITS
from systolic.contract.lowering import lower_conv
from systolic.contract.memory import Dram, DramEnergy, Memory
from systolic.contract.refusal import Refusal
from systolic.contract.vector import VectorDescriptor, check_vector, for_tensor
from systolic.golden.conv import conv_reference
from systolic.golden.data import DataKind
from systolic.golden.reference import reference
from systolic.models.chunking import choose_chunk
from systolic.models.device import DeviceFigures, predict_device
from systolic.models.energy import (
    Coefficients,
    EnergyReport,
    energy_terms,
    figures_energy,
    leakage_pj_per_cycle,
)
from systolic.models.inference import (
    FUSABLE_OPS,
    HOST_OP_COSTS,
    VECTOR_KINDS,
    Step,
    driver_costs,
    fused_output_pj,
    host_cost,
    placement,
    timeline,
    vector_pj,
    where_counts,
)
from systolic.models.pipeline import expanded_words, predict_pipeline
from systolic.models.technology import dram_energy
from systolic.models.toggles import estimate_toggles
from systolic.models.uncertainty import energy_range
from systolic.models.vector import predict_vector
from systolic.workloads.library import Gemm, Workload

__all__ = [
    "GemmPart",
    "driver_workload",
    "gemm_part",
    "gemm_chunk",
    "model_record",
    "point_id",
    "rtl_descriptor",
    "rtl_inputs",
    "rtl_operands",
    "summarize",
]


def driver_workload(workload: Workload, config: ArrayConfig | None = None) -> Workload:
    """The GEMMs as the driver posts them on ``config``: each convolution as
    :func:`contract.lowering.lower_conv` runs it (without a configuration, or where it stays an
    im2col GEMM, the GEMM as given; a posted GEMM's ``conv`` is the convolution descriptor it
    is, else None); a layer whose M or N exceeds a descriptor's field
    (:data:`contract.interface.DIM_BITS`) as several descriptors, equal pieces with their
    ``count`` multiplied (ResNet-50's first convolution at batch 8 has M = 100,352). A K that
    large would need its pieces accumulated; no workload has one, and it is refused."""
    workload = _rewrite(workload, lambda g: _lowered(config, g))
    return _rewrite(workload, functools.partial(_split, workload.name))


def _rewrite(workload: Workload, pieces_of) -> Workload:
    """``workload`` with each GEMM ``g`` replaced by ``pieces_of(g)``: a GEMM to take its place
    (same name and runs), or ``[(piece, times, per)]``, the piece running ``times`` times per
    ``per`` runs of ``g`` (its ``count`` already so multiplied); the schedule follows."""
    gemms = []
    renamed: dict[str, list[tuple[str, int, int]]] = {}
    for g in workload.gemms:
        pieces = pieces_of(g)
        if isinstance(pieces, list) and len(pieces) == 1 and pieces[0][1] == pieces[0][2]:
            pieces = replace(pieces[0][0], name=g.name)  # one descriptor a run: the GEMM's own
        if isinstance(pieces, Gemm):
            gemms.append(pieces)
            continue
        total = sum(times for _, times, _ in pieces)
        for piece, times, per in pieces:
            m, k, n = piece.shape
            name = f"{g.name} ({times} of {total} descriptors, {m}x{k}x{n})"
            gemms.append(replace(piece, name=name))
            renamed.setdefault(g.name, []).append((name, times, per))
    schedule = tuple((piece, runs // per * times) for name, runs in workload.schedule
                     for piece, times, per in renamed.get(name, [(name, 1, 1)]))  # fmt: skip
    return replace(workload, gemms=tuple(gemms), schedule=schedule)


def _lowered(config: ArrayConfig | None, g: Gemm) -> Gemm | list:
    """A convolution's GEMM as the driver runs it on ``config`` (none: im2col): the GEMM with
    no ``conv`` where it runs as given, else pieces whose ``conv`` is the convolution
    descriptor each is (None: a GEMM) and ``shape`` its useful work."""
    if g.conv is None or config is None:
        return replace(g, conv=None)
    pieces = lower_conv(config, g.conv, requant=config.requant)
    if len(pieces) == 1 and pieces[0].conv is None and pieces[0].gemm == g.shape:
        return replace(g, conv=None)  # im2col, or the GEMM on the input: the GEMM as given
    runs = g.count // g.conv.groups  # runs of the whole convolution
    return [(replace(g, m=p.useful[0], k=p.useful[1], n=p.useful[2], count=runs * p.times,
                     conv=p.conv, diagonal=p.diagonal), p.times, g.conv.groups)
            for p in pieces]  # fmt: skip


def _split(workload_name: str, g: Gemm) -> Gemm | list:
    """A GEMM past a descriptor's M or N field as equal pieces (itself: it fits)."""
    top = (1 << DIM_BITS) - 1
    if g.k > top:
        raise ValueError(f"{workload_name}: {g.name} has K = {g.k}, past the descriptor's "
                         f"{top}; the driver splits M and N only")  # fmt: skip
    if g.conv is not None:
        return g  # a convolution descriptor (the lowering checked its fields)
    pieces = [(g.m, g.n, 1)]
    for axis in (0, 1):
        split = []
        for m, n, times in pieces:
            size = (m, n)[axis]
            parts = -(-size // top)
            base, extra = divmod(size, parts)  # `extra` pieces one longer
            for length, count in ((base + 1, extra), (base, parts - extra)):
                if count:
                    split.append((length, n, times * count) if axis == 0 else
                                 (m, length, times * count))  # fmt: skip
        pieces = split
    if len(pieces) == 1 and pieces[0][2] == 1:
        return g
    return [(replace(g, m=m, n=n, count=g.count * times), times, 1)
            for m, n, times in pieces]  # fmt: skip


def point_id(config: ArrayConfig, workload: Workload, memory: Memory,
             host: Host | None = None) -> str:  # fmt: skip
    """A stable name for the point, the key of resumption (a host other than the default is
    part of it)."""
    parts = [config.to_dict(), workload.to_dict(), memory.to_dict()]
    if host is not None and host != Host.preset():
        parts.append(host.to_dict())
    text = json.dumps(parts, sort_keys=True)
    digest = hashlib.sha256(text.encode()).hexdigest()[:10]
    return f"{config.name}|{workload.name}|{memory.name}|{digest}"


def _add(total: dict, part: dict, times: int) -> None:
    for key, value in part.items():
        if isinstance(value, dict):
            _add(total.setdefault(key, {}), value, times)
        else:
            total[key] = total.get(key, 0) + value * times


class GemmPart(NamedTuple):
    """What a point's figures take from one of its GEMMs (:func:`gemm_part`), once per GEMM
    however many times the GEMM runs."""

    counters: dict
    offchip: dict
    components: dict
    traffic: dict
    cycles: int
    macs: int
    row: dict  # the record's entry for the GEMM, without its name, count and weights flag


def gemm_part(config: ArrayConfig, shape: tuple[int, int, int], fig, report: EnergyReport,
              dram: Dram) -> GemmPart:  # fmt: skip
    """A GEMM's :class:`GemmPart` from its :class:`contract.figures.GemmFigures` (with the
    device's counters) and energy."""
    c = fig.counters
    row = {
        "shape": list(shape),
        "macs": fig.macs,
        "cycles": fig.cycles,
        "utilization": fig.utilization,
        "energy_pj": report.total,
        "bound": _bound(config, c, dram),
        "chunk": list(fig.descriptor.chunk),
        "dram_bytes": _dram_bytes(c),
        "read_bytes": {x: c.get(f"dram_read_bytes_{x}", 0) for x in "abc"},
        "once_bytes": _once_bytes(config, *shape),
    }
    return GemmPart(c, fig.offchip_words, report.components, report.traffic, fig.cycles, fig.macs,
                    row)  # fmt: skip


def summarize(
    config: ArrayConfig,
    workload: Workload,
    memory: Memory,
    parts: list[GemmPart],
    clock_mhz: float,
    ranges: dict[str, tuple[float, float]],
    host: Host | None = None,
    coefficients: Coefficients | None = None,
) -> dict:
    """The figures of a point from its GEMMs' :class:`GemmPart`. A point is *memory-bound*
    when the DRAM's time for the bytes it moves (at the DRAM's or the AXI4 port's bandwidth,
    the lower) exceeds the array's busy cycles. ``ranges`` are the uncertain terms' ranges
    (:meth:`models.energy.Coefficients.ranges`): the record gives each term's energy, so a
    range can be taken at any corner. ``inference`` is the whole inference on ``host`` (the
    default host when None): :func:`inference_figures`."""
    counters: dict = {}
    offchip: dict = {}
    components: dict = {}
    traffic: dict = {}
    dram = memory.at(clock_mhz)
    cycles = macs = weight_words_array = weight_words_offchip = weight_bytes = 0
    gemms = []
    for gemm, part in zip(workload.gemms, parts, strict=True):
        times = gemm.count
        _add(counters, part.counters, times)
        _add(offchip, part.offchip, times)
        _add(components, part.components, times)
        _add(traffic, part.traffic, times)
        cycles += part.cycles * times
        macs += part.macs * times
        if gemm.weights:
            weight_words_array += part.counters["b_reads"] * times
            weight_words_offchip += part.offchip["b"] * times
            weight_bytes += part.counters["dram_read_bytes_b"] * times
        gemms.append({"name": gemm.name, "count": times, "weights": gemm.weights} | part.row)
    energy = sum(components.values())
    terms = energy_terms(components)
    low, high = energy_range(terms, ranges)
    seconds = cycles / (clock_mhz * 1e6)
    dram_bytes = _dram_bytes(counters)
    batch = workload.batch
    weight_macs = sum(g.macs for g in workload.gemms if g.weights)
    return {
        "config": _config_dict(config),
        "config_name": config.name,
        "dataflow": config.dataflow.value,
        "array": f"{config.rows}x{config.cols}",
        "pes": config.pes,
        "precision": config.precision,
        "workload": workload.summary(),
        "macs": macs,
        "cycles": cycles,
        "utilization": macs / (cycles * config.pes) if cycles else 0.0,
        "macs_per_cycle": macs / cycles if cycles else 0.0,
        "clock_mhz": clock_mhz,
        "latency_s": seconds,
        "throughput_inf_s": batch / seconds if seconds else 0.0,
        "energy_pj": energy,
        "energy_range_pj": [low, high],
        "energy_terms_pj": terms,
        "energy_ranges": {t: list(r) for t, r in ranges.items()},
        "energy_per_inference_pj": energy / batch,
        "pj_per_mac": energy / macs if macs else 0.0,
        "components_pj": components,
        "traffic_pj": traffic,
        "counters": counters,
        "offchip_words": offchip,
        "weight_words_array_per_inference": weight_words_array / batch,
        "weight_words_offchip_per_inference": weight_words_offchip / batch,
        "weight_reuse_array": weight_macs / weight_words_array if weight_words_array else None,
        "weight_reuse_offchip": (
            weight_macs / weight_words_offchip if weight_words_offchip else None
        ),
        "buffer_bytes": _buffer_bytes(config),
        "memory": memory.to_dict()
        | {
            "bytes_per_cycle": float(dram.bandwidth),
            "latency_cycles": dram.latency,
            "port_bytes_per_cycle": config.bus_width // 8,
        },
        "bound": _bound(config, counters, dram),
        "dram_bytes": dram_bytes,
        "dram_gb_per_s": dram_bytes / seconds / 1e9 if seconds else 0.0,
        "weight_bytes_per_inference": weight_bytes / batch,
        "operational_intensity": macs / dram_bytes if dram_bytes else None,
        "array_wait_cycles": counters.get("array_wait_cycles", 0),
        "compute_cycles": counters.get("compute_cycles", 0),
        "gemms": gemms,
        "inference": inference_figures(
            config,
            workload,
            parts,
            clock_mhz,
            host or Host.preset(),
            dram_energy(memory),
            coefficients,
            energy,
            dram,
        ),  # fmt: skip
    }


@functools.lru_cache(maxsize=1024)
def _config_items(config: ArrayConfig) -> tuple:
    return tuple(config.to_dict().items())


def _config_dict(config: ArrayConfig) -> dict:
    """``config.to_dict()``, taken once per configuration (a sweep asks for it every point)."""
    return dict(_config_items(config))


def _once_bytes(config: ArrayConfig, m: int, k: int, n: int) -> dict[str, int]:
    """DRAM bytes of A and B in the device's format: what a GEMM reads if each crosses once."""
    return dict(_once(config, m, k, n))


@functools.lru_cache(maxsize=8192)
def _once(config: ArrayConfig, m: int, k: int, n: int) -> tuple:
    cont = containers(config)
    out = {}
    for x, shape in (("a", (m, k)), ("b", (k, n))):
        tiles, lines = tile_rows(word_layout(config, x), shape)
        out[x] = tiles * lines * cont[x]
    return tuple(out.items())


def _buffer_bytes(config: ArrayConfig) -> dict[str, int]:
    """What each buffer holds (both banks), in the bytes its words take in DRAM (power-of-two
    containers, like :func:`_once_bytes`), so that the two compare word for word."""
    depth = {"a": config.a_depth, "b": config.b_depth, "c": config.c_depth}
    cont = containers(config)
    return {x: 2 * depth[x] * cont["p" if x == "c" else x] for x in "abc"}


def _dram_bytes(counters: dict) -> int:
    return sum(counters.get(f"dram_read_bytes_{b}", 0) for b in "abcq") + counters.get(
        "dram_write_bytes", 0)  # fmt: skip


def _bound(config: ArrayConfig, counters: dict, dram: Dram) -> str:
    """``memory`` when moving the bytes takes longer than the array's busy cycles, at the
    DRAM's bandwidth or the AXI4 port's (a beat a cycle), whichever is lower."""
    rate = min(float(dram.bandwidth), config.bus_width / 8)
    return "memory" if _dram_bytes(counters) / rate > counters["compute_cycles"] else "compute"


def _element_bytes(config: ArrayConfig) -> tuple[int, int]:
    """Bytes of an activation element as the host reads and writes it between layers, and of a
    GEMM's output as a device without the fused output path leaves it (an accumulator, or
    fp32)."""
    if config.number == "bf16":
        return 2, 4
    return -(-config.a_width // 8), -(-config.acc_width // 8)


#: How driver_workload names a piece of a GEMM too large for one descriptor.
_PIECE = re.compile(r"^(.*) \(\d+ of \d+ descriptors, \d+x\d+x\d+\)$")


def _layer_of(name: str) -> str:
    """The GEMM a descriptor's GEMM is a piece of (itself, if whole)."""
    match = _PIECE.match(name)
    return match.group(1) if match else name


def inference_figures(config: ArrayConfig, workload: Workload, parts: list[GemmPart],
                      clock_mhz: float, host: Host, bits: DramEnergy,
                      coefficients: Coefficients | None, device_pj: float,
                      dram: Dram) -> dict:  # fmt: skip
    """One inference end to end (:mod:`models.inference`): the schedule's GEMMs on the device
    (each part's cycles), its operators where they run, the driver around every descriptor;
    latency and energy split into array compute, memory stalls, the fused output path, the
    vector unit, host operators and the driver, and which operators ran where. A device
    without the fused output path leaves each GEMM's outputs to one host pass that converts
    them (requantizes int32, or rounds fp32 to bf16) with the bias and activation that follow.
    ``device_pj`` is the GEMMs' energy (their stall cycles' included); ``coefficients`` price
    the fused output path's and the vector unit's logic (none: unpriced); a vector descriptor's
    cycles are the exact model's (:func:`models.vector.predict_vector`) behind ``dram``."""
    ns = 1000 / clock_mhz
    fused_pj = fused_output_pj(coefficients) if coefficients is not None else 0.0
    vector_ns = vector_pj_total = 0.0
    by_name = dict(zip((g.name for g in workload.gemms), parts, strict=True))
    act_bytes, out_bytes = _element_bytes(config)
    integer = config.number != "bf16"
    steps, rows = [], []
    host_pj = fused_elements = stall_ns = 0.0
    pending = None  # [GEMM, outputs, extra ops an output]: the host's pass over its outputs

    def flush() -> None:
        nonlocal pending, host_pj
        if pending is not None:
            _, elements, extra = pending
            cost = host_cost("Requantize", elements, elements, 1, out_bytes, act_bytes, integer,
                             host, bits, extra)  # fmt: skip
            steps.append(Step(False, cost.ns, 1))
            host_pj += cost.pj
            pending = None

    after_vector = None  # the vector descriptor just before, by its operator's name
    for item, runs in workload.steps():
        previous, after_vector = after_vector, None
        if isinstance(item, Gemm):
            part = by_name[item.name]
            steps.append(Step(True, part.cycles * ns, runs))
            stall_ns += part.counters["array_wait_cycles"] * ns * runs
            outputs = item.m * item.n * runs
            rows.append(("Requantize" if integer else "Cast",
                         "fused" if config.requant else "host", runs))  # fmt: skip
            if config.requant:
                fused_elements += outputs
                continue
            layer = _layer_of(item.name)  # one pass over every descriptor of a layer
            if pending is not None and pending[0] == layer:
                pending[1] += outputs
            else:
                flush()
                pending = [layer, outputs, 0]
            continue
        if item.op in ("Relu", "Clip") and item.follows is not None and item.follows == previous:
            rows.append((item.op, "vector", runs))  # the vector descriptor's clamp
            continue
        v = _vector_descriptor(config, item)
        where = placement(item.op, config, item.gemm is not None, v is not None)
        if pending is not None and item.gemm == pending[0] and item.op in FUSABLE_OPS:
            pending[2] += HOST_OP_COSTS[item.op]  # done in the host's pass over the outputs
            rows.append((item.op, "host", runs))
            continue
        flush()
        rows.append((item.op, where, runs))
        if where == "host":
            cost = host_cost(item.op, item.elements, item.inputs, item.window, act_bytes,
                             act_bytes, integer, host, bits)  # fmt: skip
            steps.append(Step(False, cost.ns, runs))
            host_pj += cost.pj * runs
        elif where == "vector":
            counted = _vector_counters(config, v, dram)
            steps.append(Step(True, counted["cycles"] * ns, runs, vector=True))
            after_vector = item.name
            vector_ns += counted["cycles"] * ns * runs
            if coefficients is not None:  # its logic and traffic, and the device's leakage
                read = counted["dram_read_bytes_a"] + counted["dram_read_bytes_b"]
                vector_pj_total += runs * (vector_pj(
                    v.op, read, counted["dram_write_bytes"], read, counted["dram_write_bytes"],
                    coefficients, bits) + counted["cycles"] * leakage_pj_per_cycle(
                    config, coefficients))  # fmt: skip
    flush()
    line = timeline(steps, driver_costs(config, host), config.queue_depth)
    device_ns = line.device_ns
    total_cycles = line.total_ns / ns
    macs = sum(g.macs for g in workload.gemms)
    latency = {"array": (device_ns - stall_ns - vector_ns) / 1e9,
               "memory_stalls": stall_ns / 1e9, "fused": 0.0, "vector": vector_ns / 1e9,
               "host": line.host_ns / 1e9, "driver": line.exposed_ns / 1e9}  # fmt: skip
    energy = {"device": device_pj, "fused": fused_elements * fused_pj, "vector": vector_pj_total,
              "host": host_pj,
              "driver": line.driver_ns * host.active_mw}  # fmt: skip
    return {
        "host": host.to_dict(),
        "latency_s": line.total_ns / 1e9,
        "latency_split_s": latency,
        "energy_pj": sum(energy.values()),
        "energy_split_pj": energy,
        "utilization": macs / (total_cycles * config.pes) if total_cycles else 0.0,
        "descriptors": line.descriptors,
        "driver_busy_s": line.driver_ns / 1e9,
        "where": where_counts(rows),
    }


def _vector_descriptor(config: ArrayConfig, item) -> VectorDescriptor | None:
    """The vector unit's descriptor for operator ``item``, or None where the unit cannot run it
    (no unit, an operator it lacks, unknown geometry, a window past its fields)."""
    kind = VECTOR_KINDS.get(item.op)
    if not config.vector or kind is None or item.tensor is None:
        return None
    if (item.pool is None) != (kind in ("add", "max")):
        return None
    v = for_tensor(config, kind, item.tensor, item.pool)
    return v if check_vector(config, v)[0] is Refusal.NONE else None


@functools.lru_cache(maxsize=4096)  # a network's adds repeat their shapes
def _vector_counters(config: ArrayConfig, v: VectorDescriptor, dram: Dram) -> dict:
    return dict(predict_vector(config, v, dram))


def priced_by(coefficients: Coefficients, bits: DramEnergy) -> dict:
    """The figures that priced a record's energy: the technology file and the DRAM device's."""
    return {"priced_by": {"technology": coefficients.name, "logic": coefficients.logic_source,
                          "dram": bits.to_dict()}}  # fmt: skip


def model_record(
    config: ArrayConfig, workload: Workload, memory: Memory, coefficients: Coefficients,
    data: str, seed: int, clock_mhz: float | None = None, host: Host | None = None,
) -> dict:  # fmt: skip
    """The analytical model's account of a point: the device behind ``memory``
    (:func:`models.pipeline.predict_pipeline`), energy from toggles estimated for ``data``, at
    ``clock_mhz`` (default: the coefficients' clock), the whole inference beside ``host``."""
    clock_mhz = clock_mhz or coefficients.clock_mhz
    workload = driver_workload(workload, config)
    dram = memory.at(clock_mhz)
    bits = dram_energy(memory)
    parts = [_model_part(config, g.shape, g.conv, dram, coefficients, bits, data, seed,
                         g.diagonal) for g in workload.gemms]  # fmt: skip
    ranges = coefficients.ranges(bits, config)
    record = summarize(config, workload, memory, parts, clock_mhz, ranges, host, coefficients)
    return record | priced_by(coefficients, bits)


@functools.lru_cache(maxsize=8192)  # workloads share layer shapes (BERT at b1 s512 and b4 s128)
def _model_part(config: ArrayConfig, shape: tuple[int, int, int], conv: Conv | None, dram: Dram,
                coefficients: Coefficients, bits: DramEnergy, data: str, seed: int,
                diagonal: bool = False) -> GemmPart:  # fmt: skip
    """A GEMM's part, or a convolution descriptor's (``conv``; ``shape`` its useful work;
    ``diagonal``: its weights block-diagonal, toggles counted on such weights)."""
    if conv is None:
        d = place(config, *shape, chunk=gemm_chunk(config, shape, dram), requant=config.requant)
    else:  # the driver's chunks (contract.plan.conv_chunk_sizes), the array's whole GEMM
        tile = word_layout(config, "a").tile
        d = place(config, *device_gemm(conv, tile), conv=conv, requant=config.requant)
    fig = DeviceFigures(config, shape, d, dict(predict_pipeline(config, d, dram)))
    tile = word_layout(config, "a").tile
    toggles = estimate_toggles(config, d.m, d.k, d.n, data=data, seed=seed,
                               diagonal=tile if diagonal else 0)  # fmt: skip
    report = figures_energy(fig, toggles, coefficients, source="model", dram=bits,
                            expanded=expanded_words(config, d, dram))  # fmt: skip
    return gemm_part(config, shape, fig, report, dram)


def gemm_chunk(config: ArrayConfig, shape: tuple[int, int, int], dram: Dram) -> tuple:
    """The chunk sizes a sweep's driver gives a GEMM, in model and RTL points alike: those the
    pipeline model predicts fastest behind the point's DRAM (:mod:`models.chunking`), its
    outputs requantized where the configuration can (the fused output path)."""
    return choose_chunk(config, *shape, dram, requant=config.requant)


def rtl_operands(
    config: ArrayConfig, workload: Workload, data: str, seed: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The operands an RTL evaluation simulates: one pair per distinct GEMM of the posted
    ``workload`` (:func:`driver_workload`; a convolution descriptor's: its NHWC input and its
    ``O x kh x kw x C`` weights), from a generator seeded by the sweep seed, the configuration
    and the workload, so a resumed sweep simulates the same data."""
    text = json.dumps([config.to_dict(), workload.to_dict()], sort_keys=True)
    key = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
    rng = np.random.default_rng([seed, key])
    kind = DataKind(data)
    out = []
    for g in workload.gemms:
        c = g.conv
        a_shape = (g.m, g.k) if c is None else (c.batch, c.height, c.width, c.channels)
        b_shape = (g.k, g.n) if c is None else (c.out_channels, *c.kernel, c.channels)
        b = kind.matrix(rng, b_shape, config.b_width, config.b_signed)
        if g.diagonal:  # a depthwise slice: each output channel reads its own input channel
            b = b * (np.arange(c.out_channels)[:, None, None, None]
                     == np.arange(c.channels)[None, None, None, :])  # fmt: skip
        out.append((kind.matrix(rng, a_shape, config.a_width, config.a_signed), b))
    return out


def rtl_descriptor(config: ArrayConfig, g: Gemm, dram: Dram) -> Descriptor:
    """The descriptor an RTL evaluation posts for a GEMM of the posted workload: the chunks
    :func:`gemm_chunk` picks, or a convolution descriptor's (the driver's)."""
    if g.conv is None:
        return place(config, *g.shape, chunk=gemm_chunk(config, g.shape, dram))
    return place(config, *device_gemm(g.conv, word_layout(config, "a").tile), conv=g.conv)


def rtl_inputs(config: ArrayConfig, g: Gemm, a: np.ndarray, b: np.ndarray) -> tuple:
    """The operand matrices the device reads for :func:`rtl_operands`' pair: a convolution's
    input as its pixels-by-channels matrix and its weights as the device's B."""
    if g.conv is None:
        return a, b
    tile = word_layout(config, "a").tile
    return input_matrix(g.conv, a), device_weights(g.conv, b, tile)


def _golden(config: ArrayConfig, g: Gemm, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return reference(config, a, b) if g.conv is None else conv_reference(config, g.conv, a, b)


def rtl_record(
    config: ArrayConfig,
    workload: Workload,
    memory: Memory,
    operands: list[tuple[np.ndarray, np.ndarray]],
    results: list,
    coefficients: Coefficients,
    model: dict,
    host: Host | None = None,
) -> dict:
    """A point from its simulated GEMMs (:class:`sim.simulate.SimResult` with toggles), at the
    clock of its model record, the whole inference beside ``host``."""
    clock_mhz = model["clock_mhz"]
    dram = memory.at(clock_mhz)
    bits = dram_energy(memory)
    parts = []
    for g, r in zip(workload.gemms, results, strict=True):
        # a convolution descriptor's figures count its useful MACs (as the model's record)
        fig = r if g.conv is None else DeviceFigures(config, g.shape, r.descriptor, r.counters)
        report = figures_energy(fig, r.toggles, coefficients, source="toggles", dram=bits,
                                expanded=expanded_words(config, r.descriptor, dram))  # fmt: skip
        parts.append(gemm_part(config, g.shape, fig, report, dram))
    ranges = coefficients.ranges(bits, config)
    record = summarize(config, workload, memory, parts, clock_mhz, ranges, host, coefficients)
    record |= priced_by(coefficients, bits)
    exact = all(
        np.array_equal(r.c, _golden(config, g, a, b)) and r.errors == 0
        for r, (a, b), g in zip(results, operands, workload.gemms, strict=True)
    )
    record["bit_exact"] = exact
    record["scaled_by_count"] = any(g.count > 1 for g in workload.gemms)
    record["model"] = {k: model[k] for k in ("cycles", "energy_pj", "pj_per_mac")}
    # the exact device model on the same descriptors and DRAM (the model record's cycles are
    # the pipeline model's, within the bounds tests/models/test_pipeline.py states)
    record["model"]["device_cycles"] = sum(
        predict_device(config, r.descriptor, r.memory)["cycles"] * g.count
        for r, g in zip(results, workload.gemms, strict=True)
    )
    record["model_diff"] = {
        "cycles": record["cycles"] - record["model"]["device_cycles"],
        "energy_percent": 100 * (model["energy_pj"] - record["energy_pj"]) / record["energy_pj"]
        if record["energy_pj"]
        else 0.0,
    }
    return record
