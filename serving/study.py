"""Run a serving study (serving/study_spec.py): every configuration at every clock serves every
stream under every policy; each operating point becomes a record with its latency distribution,
sustained throughput, energy per inference (or token) split into busy, idle and leakage, the
highest rate meeting each SLA, its clamps under the power budget, and whether it is feasible.

Each record also holds the latency distribution at the offered rate (percentiles 0 to 100; time to
first token for generation) and P99 against offered load (:data:`CURVE`).

A point is *feasible* at an SLA when, at the stream's offered rate, its P99 (generation: P99 time
to first token) meets it and its average power stays within the budget; ``meets_sla_ms`` lists
those SLAs, and ``broken`` what keeps a point from meeting even the loosest.
"""

from __future__ import annotations

import math

import numpy as np
from systolic.models.energy import load_coefficients
from systolic.models.technology import CELL_LIBRARY_NM, COEFFICIENTS_NM, factor
from systolic.models.uncertainty import energy_range
from systolic.synth.flow import synthesize
from systolic.workloads.spec_reader import SpecError

from .batching import serve
from .capacity import scaled, search_rate
from .generation import _blocks, generate, measure_generation
from .metrics import measure, queue_depth
from .power_budget import (
    Envelope,
    IdlePower,
    OperatingPoint,
    Throttle,
    energy_split,
    operating_points,
)
from .service import ModelService
from .study_spec import ServingSpec, Stream
from .traffic import Mix, TrafficError, stream

__all__ = ["CURVE", "run_study"]

#: The loads of a point's latency-against-load curve, as fractions of its saturation rate.
CURVE = (0.05, 0.2, 0.4, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0)


def _fmax(spec: ServingSpec, coefficients, progress) -> dict[str, float]:
    """Each configuration's Fmax from synthesis (0.18 um), scaled to the coefficients' node
    (45 nm) by Stillmaker and Baas' delay factor: an estimate."""
    out = {}
    for config in spec.configs:
        if progress:
            progress(f"synthesizing {config.name}")
        report = synthesize(config)
        out[config.name] = report.fmax_mhz / factor("delay", CELL_LIBRARY_NM, COEFFICIENTS_NM)
    return out


def _points(spec: ServingSpec, nominal_mhz: float,
            fmax_mhz: float | None = None) -> list[OperatingPoint]:  # fmt: skip
    """The operating points of the study's clocks at or below ``fmax_mhz``, fastest first
    (voltages from the V-f table: a clock between two of its points takes the higher one's
    voltage); with no clock under Fmax, Fmax itself."""
    table = operating_points()
    clocks = spec.clocks_mhz or [nominal_mhz]
    if fmax_mhz is not None:
        clocks = [f for f in clocks if f <= fmax_mhz] or [fmax_mhz]
    out = []
    for f in sorted(set(clocks), reverse=True):
        above = [p for p in table if p.clock_mhz >= f]
        volts = min(above, key=lambda p: p.clock_mhz).volts if above else table[0].volts
        out.append(OperatingPoint(f, volts))
    return out


def check_slas(spec: ServingSpec, fmax: dict | None = None) -> None:
    """Refuse a stream's SLA below its unloaded latency everywhere: one request of its shortest
    length alone (generation: its prefill) on the fastest configuration at its fastest clock.
    :class:`SpecError` names the key."""
    coefficients = load_coefficients(spec.coefficients)
    for i, s in enumerate(spec.streams):
        mix = Mix((s.kind,))
        length = min(s.kind.lengths) if s.kind.lengths else 0
        best = math.inf
        for config in spec.configs:
            clock = _points(spec, coefficients.clock_mhz, (fmax or {}).get(config.name))[0]
            service = ModelService(config, mix, spec.memory, coefficients, clock.clock_mhz)
            seconds = (service.step(0, 1, _blocks(length), "prefill")[0] if s.generation
                       else service(0, 1, length)[0])  # fmt: skip
            best = min(best, seconds)
        for sla in s.sla_p99_s:
            if sla < best:
                raise SpecError(
                    f"{spec.path}: streams.{i}.sla_p99_ms: {sla * 1e3:g} ms is below the "
                    f"unloaded latency ({best * 1e3:.4g} ms: one request alone on the fastest "
                    f"configuration and clock); no load meets it")  # fmt: skip


def _busy_range(services) -> tuple[float, float]:
    """The range of the busy energy the services tallied in one run, as factors of it (they
    share one configuration and memory, so one set of ranges)."""
    tally: dict[str, float] = {}
    for service in services:
        for term, pj in service.tally.items():
            tally[term] = tally.get(term, 0.0) + pj
    total = sum(tally.values())
    if not total:
        return 1.0, 1.0
    low, high = energy_range(tally, services[0].ranges)
    return low / total, high / total


def run_study(spec: ServingSpec, progress=None) -> list[dict]:
    """Every operating point's record (see module), in the spec's order."""
    coefficients = load_coefficients(spec.coefficients)
    fmax = _fmax(spec, coefficients, progress) if spec.synth else {}
    check_slas(spec, fmax)
    envelope = Envelope(spec.power_budget_w, spec.thermal_tau_s) if spec.power_budget_w else None
    records = []
    for config in spec.configs:
        idle = IdlePower.of(config, coefficients)
        points = _points(spec, coefficients.clock_mhz, fmax.get(config.name))
        for index, s in enumerate(spec.streams):
            mix = Mix((s.kind,))
            services = [ModelService(config, mix, spec.memory, coefficients, p.clock_mhz)
                        for p in points]  # fmt: skip
            requests = stream(s.process, mix, s.requests, spec.seed + index)
            for start in range(len(points)):  # each clock as the starting (fastest) point
                for replicas in spec.replicas:
                    for policy in s.policies:
                        if progress:
                            progress(f"{config.name} {points[start].clock_mhz:g} MHz {s.name} "
                                     f"{policy.label} x{replicas}")  # fmt: skip
                        records.append(_point(config, s, requests, policy, points[start:],
                                              services[start:], idle, envelope,
                                              replicas))  # fmt: skip
    return records


def _point(config, s: Stream, requests, policy, points, services, idle: IdlePower,
           envelope: Envelope | None, replicas: int = 1) -> dict:  # fmt: skip
    def throttle() -> Throttle:
        fns = [sv.step if s.generation else sv for sv in services]
        return Throttle(points, fns, idle, envelope)

    def run(r):
        throttles = [throttle() for _ in range(replicas)]
        if s.generation:
            g = generate(r, policy, None, replicas=replicas, throttles=throttles)
            m = measure_generation(g)
            return g, m, m.ttft_p99_s, m.tokens_per_s / max(1.0, float(np.mean(r.output)))
        served = serve(r, policy, None, replicas, throttles)
        m = measure(served)
        return served, m, m.p99_s, m.throughput_rps

    for service in services:
        service.tally.clear()
    served, m, p99, _ = run(requests)
    busy_range = _busy_range(services)
    latency = (served.first_token if s.generation else served.finish) - requests.arrivals
    clamp_cost = 0.0
    if envelope is not None and served.clamps:  # the same stream with no budget
        free = _point_free(s, requests, policy, services[0], replicas)
        clamp_cost = p99 - free
    if s.generation:
        depth_max = depth_mean = None  # requests wait for a batch slot, not a queue position
    else:
        times, depth = queue_depth(served)
        depth_max = int(depth.max())
        depth_mean = m.mean_waiting
    split = energy_split(served, idle, points[0])
    base = (len(requests) - 1) / float(requests.arrivals[-1] - requests.arrivals[0])
    saturation = _at(run, scaled(requests, 1e6))[1]
    curve = []
    for f in CURVE:  # P99 against offered load: the same requests, faster
        rate = f * saturation
        p99_at, done, _ = _at(run, scaled(requests, rate / base))
        curve.append({"offered_rps": rate, "p99_s": p99_at, "completed_rps": done})
    span = float(served.batch_finish.max() - requests.arrivals[0])
    units = int(requests.output.sum()) if s.generation else len(requests)
    capacity = []
    for sla in s.sla_p99_s:
        try:
            cap = search_rate(requests, lambda r: _at(run, r), sla, policy.label)
            capacity.append({"sla_p99_ms": sla * 1e3, "max_rate_rps": cap.rate_rps})
        except TrafficError as e:
            capacity.append({"sla_p99_ms": sla * 1e3, "max_rate_rps": None, "why": str(e)})
    power_w = split.total_pj * 1e-12 / span / replicas if span > 0 else 0.0  # per accelerator
    over_budget = envelope is not None and power_w > envelope.budget_w
    meets = [] if over_budget else [sla * 1e3 for sla in s.sla_p99_s if p99 <= sla]
    broken = []
    if p99 > max(s.sla_p99_s):
        broken.append(f"P99 {p99 * 1e3:.3g} ms > SLA {max(s.sla_p99_s) * 1e3:g} ms")
    if over_budget:
        broken.append(f"power {power_w:.3g} W > budget {envelope.budget_w:g} W")
    per = split.per_request() if not s.generation else {
        k: v * split.requests / units for k, v in split.per_request().items()}  # fmt: skip
    # idle and leakage: logic, at its ends (the node scaling's times the fit's)
    rest = energy_range({"logic": per["idle_pj"] + per["leakage_pj"]}, services[0].ranges)
    return {
        "config_name": config.name,
        "config": config.to_dict(),
        "clock_mhz": points[0].clock_mhz,
        "volts": points[0].volts,
        "stream": s.name,
        "model": s.kind.model,
        "generation": s.generation,
        "policy": policy.label,
        "replicas": replicas,
        "offered_rps": m.requests / span if span > 0 else 0.0,
        "metrics": m.to_dict(),
        "p99_s": p99,
        "energy_per_unit_pj": per,  # per inference, or per output token for generation
        # its range: the busy energy's terms at their ends, idle and leakage at the logic's
        "energy_per_unit_range_pj": [
            per["busy_pj"] * busy_range[i] + rest[i] for i in (0, 1)
        ],  # fmt: skip
        "unit": "token" if s.generation else "inference",
        "power_w": power_w,
        "clamps": served.clamps,
        "clamp_cost_p99_s": clamp_cost,  # P99 with the budget less P99 without it
        "queue_max": depth_max,
        "queue_mean": depth_mean,
        "capacity": capacity,
        "latency_quantiles_s": [float(q) for q in np.percentile(latency, np.arange(101))],
        "load_curve": curve,
        "meets_sla_ms": meets,
        "feasible": bool(meets),
        "broken": broken,
    }


def _point_free(s: Stream, requests, policy, service, replicas: int) -> float:
    """P99 (generation: of time to first token) at the starting clock with no power budget."""
    if s.generation:
        return measure_generation(generate(requests, policy, service.step,
                                           replicas=replicas)).ttft_p99_s  # fmt: skip
    return measure(serve(requests, policy, service, replicas)).p99_s


def _at(run, r):
    _, m, p99, rate = run(r)
    return p99, rate, m
