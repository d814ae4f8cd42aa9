"""A discrete-event simulation of accelerators serving a request stream in batches.

Each accelerator serves one batch at a time, in arrival order. When it is free and requests wait,
the batching :class:`Policy` says when the next batch starts and how many requests it takes:

- ``none``: every request alone, as soon as the accelerator is free;
- ``static``: ``max_batch`` requests, however long the last of them takes to arrive (the stream's
  last, partial batch starts with its last request);
- ``dynamic``: as many as wait (up to ``max_batch``) once ``max_batch`` wait or the oldest has
  waited ``max_wait_s``, whichever comes first (Triton's and TorchServe's rule).

A batch holds requests of one kind (model): the one at the head of the queue and those of the
same kind behind it. Its service time and energy come from the ``service`` function (the
hardware model: :mod:`serving.service`), with the batch padded to its longest sequence. With
``replicas`` accelerators behind a round-robin router, request ``i`` goes to replica
``i % replicas``.

Why not SimPy: one FIFO server with batching is a recurrence over the requests in arrival order
(the next batch's start is the later of the server being free and the policy's condition, both
known from the sorted arrivals), exact and linear in the requests; SimPy's processes and events
would express the same at many times the cost per request and add nothing a single queue needs.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .traffic import Requests, TrafficError, check_max_batch

__all__ = ["POLICIES", "Policy", "Served", "serve"]

POLICIES = ("none", "static", "dynamic")

#: ``service(kind, batch, length) -> (seconds, energy_pj)`` of a batch of ``batch`` requests of
#: kind ``kind`` (an index into the stream's mix) padded to sequence length ``length``.
Service = Callable[[int, int, int], tuple[float, float]]


@dataclass(frozen=True)
class Policy:
    """A batching policy (see module)."""

    name: str
    max_batch: int = 1
    max_wait_s: float = 0.0

    def __post_init__(self):
        if self.name not in POLICIES:
            raise TrafficError(f"policy must be one of {', '.join(POLICIES)}, not {self.name!r}")
        check_max_batch(self.max_batch)
        if self.name == "none" and self.max_batch != 1:
            raise TrafficError("policy none serves one request at a time: max_batch must be 1")
        if not isinstance(self.max_wait_s, (int, float)) or not 0 <= self.max_wait_s < math.inf:
            raise TrafficError(f"max_wait_s must be a finite number of seconds >= 0, not "
                               f"{self.max_wait_s!r}")  # fmt: skip

    @property
    def label(self) -> str:
        if self.name == "none":
            return "no batching"
        if self.name == "static":
            return f"static {self.max_batch}"
        return f"dynamic {self.max_batch}, {self.max_wait_s * 1e3:g} ms"


@dataclass(frozen=True)
class Served:
    """What happened to every request (arrays in the stream's order) and every batch."""

    requests: Requests
    start: np.ndarray  # when its batch started (s)
    finish: np.ndarray  # when its batch finished (s)
    batch: np.ndarray  # the index of its batch
    batch_start: np.ndarray
    batch_finish: np.ndarray
    batch_size: np.ndarray
    batch_energy_pj: np.ndarray
    batch_replica: np.ndarray
    replicas: int
    batch_clock_mhz: np.ndarray | None = None  # with throttles: each batch's clock and voltage
    batch_volts: np.ndarray | None = None
    clamps: int = 0  # times a throttle stepped the clock down

    @property
    def latency(self) -> np.ndarray:
        return self.finish - self.requests.arrivals

    @property
    def wait(self) -> np.ndarray:
        return self.start - self.requests.arrivals


def serve(requests: Requests, policy: Policy, service: Service, replicas: int = 1,
          throttles: list | None = None) -> Served:  # fmt: skip
    """Serve ``requests`` on ``replicas`` accelerators under ``policy`` (see module). With
    ``throttles`` (a :class:`serving.power_budget.Throttle` per replica), each batch runs at its
    replica's current operating point, with that point's service function, and the throttle's
    thermal model may change the point between batches; ``service`` is then unused."""
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 1:
        raise TrafficError(f"replicas must be a positive integer, not {replicas!r}")
    if throttles is not None and len(throttles) != replicas:
        raise TrafficError(f"give one throttle per replica ({replicas}), not {len(throttles)}")
    n = len(requests)
    start, finish = np.empty(n), np.empty(n)
    batch_of = np.empty(n, dtype=np.int64)
    batches: list[tuple] = []
    for r in range(replicas):
        mine = np.arange(r, n, replicas)
        throttle = throttles[r] if throttles is not None else None
        _serve_one(requests, mine, policy, service, r, start, finish, batch_of, batches,
                   throttle)  # fmt: skip
    order = np.argsort([b[0] for b in batches], kind="stable")
    renumber = np.empty(len(batches), dtype=np.int64)
    renumber[order] = np.arange(len(batches))
    b = [batches[i] for i in order]
    column = lambda j, dtype=float: np.array([x[j] for x in b], dtype=dtype)  # noqa: E731
    return Served(requests, start, finish, renumber[batch_of], column(0), column(1),
                  column(2, np.int64), column(3), column(4, np.int64), replicas,
                  column(5) if throttles else None, column(6) if throttles else None,
                  sum(t.clamps for t in throttles) if throttles else 0)  # fmt: skip


def _serve_one(requests: Requests, mine: np.ndarray, policy: Policy, service: Service,
               replica: int, start, finish, batch_of, batches, throttle=None) -> None:  # fmt: skip
    """One accelerator's recurrence over its requests ``mine`` (indices, in arrival order).
    Python lists, not numpy scalars, in the loop: it runs once per batch (a million times in a
    capacity search), and indexing a list is several times faster."""
    arrivals = requests.arrivals[mine].tolist()
    kinds = requests.kind[mine].tolist()
    lengths = requests.length[mine].tolist()
    rows = mine.tolist()
    n, cap = len(mine), policy.max_batch
    free, i = 0.0, 0
    while i < n:
        # the head and the requests of its kind right behind it, up to a full batch
        run = i + 1
        while run < n and run - i < cap and kinds[run] == kinds[i]:
            run += 1
        ready = max(free, arrivals[i])  # the earliest the head could start
        if policy.name == "none":
            begin, count = ready, 1
        elif policy.name == "static":
            begin, count = max(ready, arrivals[run - 1]), run - i
        else:
            full = arrivals[i + cap - 1] if run - i == cap else math.inf
            begin = max(ready, min(arrivals[i] + policy.max_wait_s, full))
            count = bisect.bisect_right(arrivals, begin, i, run) - i
        shape = (int(kinds[i]), count, int(max(lengths[i : i + count])))
        if throttle is None:
            seconds, energy = service(*shape)
            point = (math.nan, math.nan)
        else:
            p = throttle.point
            seconds, energy = throttle.services[throttle.level](*shape)
            energy *= p.dynamic_scale
            point = (p.clock_mhz, p.volts)
            throttle.run(begin, begin + seconds, energy)
        end = begin + seconds
        if count == 1:
            row = rows[i]
            start[row], finish[row], batch_of[row] = begin, end, len(batches)
        else:
            index = mine[i : i + count]
            start[index], finish[index] = begin, end
            batch_of[index] = len(batches)
        batches.append((begin, end, count, energy, replica, *point))
        free, i = end, i + count
