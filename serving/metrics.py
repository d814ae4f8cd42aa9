"""What a served stream measured: the latency distribution, sustained throughput, utilization,
how many requests were in the system and waiting over time, and energy per request."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from .batching import Served

__all__ = ["Metrics", "in_system", "measure", "queue_depth"]


@dataclass(frozen=True)
class Metrics:
    """One served stream's figures (times in seconds)."""

    requests: int
    span_s: float  # first arrival to last completion
    throughput_rps: float  # completions per second over the span
    offered_rps: float  # arrivals per second (count over the arrival span)
    p50_s: float
    p90_s: float
    p99_s: float
    max_s: float
    mean_s: float
    mean_wait_s: float
    utilization: float  # busy time over span x replicas
    mean_batch: float
    mean_in_system: float  # time average of requests arrived and not finished
    mean_waiting: float  # time average of requests arrived and not started
    energy_per_request_pj: float  # the batches' energy (busy only) per request

    def to_dict(self) -> dict:
        return asdict(self)


def _time_average(ups: np.ndarray, downs: np.ndarray, t0: float, t1: float) -> float:
    """The time average over ``[t0, t1]`` of a count that rises at ``ups`` and falls at
    ``downs``: integrated step by step over the sorted events."""
    times = np.concatenate([ups, downs])
    steps = np.concatenate([np.ones(len(ups)), -np.ones(len(downs))])
    order = np.lexsort((-steps, times))  # at a tie, rises first: the count never dips below 0
    times, steps = times[order], steps[order]
    level = np.cumsum(steps)
    widths = np.diff(np.append(times, t1))
    return float(np.sum(level * widths) / (t1 - t0)) if t1 > t0 else 0.0


def in_system(served: Served) -> float:
    """The time-average number of requests in the system (arrived, not finished)."""
    arrivals = served.requests.arrivals
    return _time_average(arrivals, served.finish, float(arrivals[0]), float(served.finish.max()))


def queue_depth(served: Served) -> tuple[np.ndarray, np.ndarray]:
    """Requests waiting (arrived, not started) over time: the times at which it changes and
    its value from each of them on."""
    arrivals = served.requests.arrivals
    times = np.concatenate([arrivals, served.start])
    steps = np.concatenate([np.ones(len(arrivals)), -np.ones(len(served.start))])
    order = np.lexsort((-steps, times))
    return times[order], np.cumsum(steps[order])


def measure(served: Served) -> Metrics:
    """The :class:`Metrics` of ``served``."""
    r = served.requests
    latency = served.latency
    t0, t1 = float(r.arrivals[0]), float(served.finish.max())
    span = t1 - t0
    busy = float(np.sum(served.batch_finish - served.batch_start))
    arrival_span = float(r.arrivals[-1] - r.arrivals[0])
    p50, p90, p99 = np.percentile(latency, [50, 90, 99])
    return Metrics(
        requests=len(r),
        span_s=span,
        throughput_rps=len(r) / span if span > 0 else 0.0,
        offered_rps=(len(r) - 1) / arrival_span if arrival_span > 0 else 0.0,
        p50_s=float(p50),
        p90_s=float(p90),
        p99_s=float(p99),
        max_s=float(latency.max()),
        mean_s=float(latency.mean()),
        mean_wait_s=float(served.wait.mean()),
        utilization=busy / (span * served.replicas) if span > 0 else 0.0,
        mean_batch=float(served.batch_size.mean()),
        mean_in_system=in_system(served),
        mean_waiting=_time_average(r.arrivals, served.start, t0, t1),
        energy_per_request_pj=float(served.batch_energy_pj.sum() / len(r)),
    )
