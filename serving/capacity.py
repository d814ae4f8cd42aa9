"""Latency against offered load, and the highest rate a configuration sustains at an SLA.

Load is varied by scaling one drawn stream's time axis: the stream at ``f`` times its rate is
the same requests with arrival times divided by ``f`` (for Poisson and on/off streams, exactly
a stream of the scaled rates; for a trace, the trace replayed faster). Every load level thus
sees the same requests in the same order (common random numbers), so P99 rises smoothly with
load and the search for the SLA's rate is a bisection, not a fight with sampling noise.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .batching import Policy, Service, serve
from .metrics import Metrics, measure
from .traffic import Requests, TrafficError

__all__ = ["GRID", "Capacity", "latency_curve", "max_sustainable_rate", "scaled", "search_rate"]

#: Loads the search tries first, as fractions of the saturation rate (the stream all at once).
GRID = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0)


def scaled(requests: Requests, factor: float) -> Requests:
    """``requests`` at ``factor`` times their rate."""
    return replace(requests, arrivals=requests.arrivals / factor)


def latency_curve(requests: Requests, policy: Policy, service: Service, rates: list[float],
                  replicas: int = 1) -> list[Metrics]:  # fmt: skip
    """The metrics of ``requests`` replayed at each offered rate of ``rates`` (requests/s)."""
    base = _rate(requests)
    return [measure(serve(scaled(requests, r / base), policy, service, replicas)) for r in rates]


@dataclass(frozen=True)
class Capacity:
    """The highest offered rate whose P99 meets the SLA, and the metrics there."""

    rate_rps: float
    metrics: object  # the Metrics (or GenMetrics) at that rate
    unloaded_p99_s: float
    sla_p99_s: float


def max_sustainable_rate(requests: Requests, policy: Policy, service: Service, sla_p99_s: float,
                         replicas: int = 1, tolerance: float = 0.01) -> Capacity:  # fmt: skip
    """The highest rate (within ``tolerance``, relative) at which ``requests`` meet a P99 latency
    of ``sla_p99_s`` under ``policy`` (see :func:`search_rate`)."""

    def at(r: Requests):
        m = measure(serve(r, policy, service, replicas))
        return m.p99_s, m.throughput_rps, m

    return search_rate(requests, at, sla_p99_s, policy.label, tolerance)


def search_rate(requests: Requests, at, sla_p99_s: float, label: str,
                tolerance: float = 0.01) -> Capacity:  # fmt: skip
    """The highest rate at which ``at(requests at that rate) -> (p99_s, completions_per_s,
    metrics)`` keeps its P99 within ``sla_p99_s``.

    The saturation rate is what the accelerators complete with the whole stream waiting at once;
    the search tries :data:`GRID` fractions of it, then bisects between the highest that meets
    the SLA and the next. (P99 need not fall as load falls: a static batch waits longer to fill
    at a low rate.) An SLA that no load meets raises :class:`TrafficError` with the lowest P99
    seen, the unloaded one where the policy batches nothing at a low rate."""
    if not isinstance(sla_p99_s, (int, float)) or not sla_p99_s > 0:
        raise TrafficError(f"sla_p99_s must be a positive number of seconds, not {sla_p99_s!r}")
    base = _rate(requests)

    def run(rate: float):
        return at(scaled(requests, rate / base))

    saturation = run(base * 1e6)[1]
    tried = [(f * saturation, run(f * saturation)) for f in GRID]
    meeting = [i for i, (_, m) in enumerate(tried) if m[0] <= sla_p99_s]
    unloaded = tried[0][1][0]
    if not meeting:
        lowest = min(m[0] for _, m in tried)
        raise TrafficError(f"sla_p99_s = {sla_p99_s * 1e3:g} ms is below the unloaded P99 "
                           f"latency under {label} (the lowest P99 at any load is "
                           f"{lowest * 1e3:.4g} ms): no rate meets it")  # fmt: skip
    i = meeting[-1]
    lo, best = tried[i][0], tried[i][1][2]
    if i < len(tried) - 1:
        hi = tried[i + 1][0]
        while hi / lo > 1 + tolerance:
            mid = (lo * hi) ** 0.5
            p99, _, m = run(mid)
            if p99 <= sla_p99_s:
                lo, best = mid, m
            else:
                hi = mid
    return Capacity(lo, best, unloaded, sla_p99_s)


def _rate(requests: Requests) -> float:
    span = float(requests.arrivals[-1] - requests.arrivals[0])
    if len(requests) < 2 or span <= 0:
        raise TrafficError("a load curve needs at least two requests at distinct times")
    return (len(requests) - 1) / span
