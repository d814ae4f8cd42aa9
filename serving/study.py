"""Run a serving study (serving/spec.py): every configuration at every clock serves every stream
under every policy; each operating point becomes a record with its latency distribution,
sustained throughput, energy per inference (or token) split into busy, idle and leakage, the
highest rate meeting each SLA, its clamps under the power budget, and whether it is feasible.

Each record also holds the latency distribution at the offered rate (percentiles 0 to 100; time to
first token for generation) and P99 against offered load (:data:`CURVE`).

A point is *feasible* at an SLA when, at the stream's offered rate, its P99 (generation: P99 time
to first token) meets it and its average power stays within the budget; ``meets_sla_ms`` lists
those SLAs, and ``broken`` what keeps a point from meeting even the loosest.
"""

from __future__ import annotations

import numpy as np
from systolic.models.energy import load_coefficients

from .capacity import scaled, search_rate
from .generation import generate, measure_generation
from .metrics import measure
from .power import Envelope, IdlePower, OperatingPoint, Throttle, energy_split, operating_points
from .service import ModelService
from .simulate import serve
from .spec import ServingSpec, Stream
from .traffic import Mix, TrafficError, stream

__all__ = ["CURVE", "run_study"]

#: The loads of a point's latency-against-load curve, as fractions of its saturation rate.
CURVE = (0.05, 0.2, 0.4, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0)


def _points(spec: ServingSpec, nominal_mhz: float) -> list[OperatingPoint]:
    """The operating points of the study's clocks, fastest first (voltages from the V-f table:
    a clock between two of its points takes the higher one's voltage)."""
    table = operating_points()
    clocks = spec.clocks_mhz or [nominal_mhz]
    out = []
    for f in sorted(set(clocks), reverse=True):
        above = [p for p in table if p.clock_mhz >= f]
        volts = min(above, key=lambda p: p.clock_mhz).volts if above else table[0].volts
        out.append(OperatingPoint(f, volts))
    return out


def run_study(spec: ServingSpec, progress=None) -> list[dict]:
    """Every operating point's record (see module), in the spec's order."""
    coefficients = load_coefficients(spec.coefficients)
    points = _points(spec, coefficients.clock_mhz)
    envelope = Envelope(spec.power_budget_w, spec.thermal_tau_s) if spec.power_budget_w else None
    records = []
    for config in spec.configs:
        idle = IdlePower.of(config, coefficients)
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

    served, m, p99, _ = run(requests)
    latency = (served.first_token if s.generation else served.finish) - requests.arrivals
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
        "unit": "token" if s.generation else "inference",
        "power_w": power_w,
        "clamps": served.clamps,
        "capacity": capacity,
        "latency_quantiles_s": [float(q) for q in np.percentile(latency, np.arange(101))],
        "load_curve": curve,
        "meets_sla_ms": meets,
        "feasible": bool(meets),
        "broken": broken,
    }


def _at(run, r):
    _, m, p99, rate = run(r)
    return p99, rate, m
