"""LLM generation under load: prefill, then one decode step per output token against a growing
KV cache, batched per request or per iteration.

A request brings a prompt of ``length`` tokens and asks for ``output`` tokens. Its prefill (the
prompt through every block at once) makes the first token; each decode step makes one more for
every sequence in the batch, its attention over the sequence's cache. The accelerator runs one
step at a time; a step of ``b`` sequences costs what the hardware model says of the workload
``transformer(model, b, s, phase)`` (:mod:`serving.service`), with ``s`` the batch's longest
prompt (prefill) or longest cache (decode), rounded up to :data:`KV_BLOCK` tokens: caches live
in blocks, and the attention of a batch runs to its longest.

Policies (:class:`GenPolicy`):

- ``static``: ``max_batch`` requests (fewer at the stream's end) start together once the last
  of them has arrived, prefill together and decode until every one has its tokens; the next
  batch starts after (request-level batching; ``max_batch`` 1 is no batching);
- ``continuous``: iteration-level batching (Orca, vLLM). Before each step, requests that have
  arrived join, up to ``max_batch`` sequences in flight; if any joined, the step is their
  prefill, else a decode step of every sequence in flight. A finished sequence leaves at once.

Time to first token is a request's prefill end less its arrival; time per output token is the
time from its first token to its last over the tokens after the first.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from .traffic import Requests, TrafficError, check_max_batch

__all__ = [
    "GEN_POLICIES",
    "KV_BLOCK",
    "GenMetrics",
    "GenPolicy",
    "Generated",
    "generate",
    "measure_generation",
]

GEN_POLICIES = ("static", "continuous")
#: Cache and prompt lengths are rounded up to this many tokens for a step's cost.
KV_BLOCK = 64

#: ``step(kind, batch, length, phase) -> (seconds, energy_pj)``: one prefill or decode step.
Step = Callable[[int, int, int, str], tuple[float, float]]


@dataclass(frozen=True)
class GenPolicy:
    name: str
    max_batch: int = 1

    def __post_init__(self):
        if self.name not in GEN_POLICIES:
            raise TrafficError(f"generation policy must be one of {', '.join(GEN_POLICIES)}, "
                               f"not {self.name!r}")  # fmt: skip
        check_max_batch(self.max_batch)

    @property
    def label(self) -> str:
        if self.name == "static":
            return "no batching" if self.max_batch == 1 else f"static {self.max_batch}"
        return f"continuous {self.max_batch}"


@dataclass(frozen=True)
class Generated:
    """Per request: its first token's and last token's times; per step: start, end, batch,
    phase (0 prefill, 1 decode) and energy."""

    requests: Requests
    first_token: np.ndarray
    finish: np.ndarray
    step_start: np.ndarray
    step_end: np.ndarray
    step_batch: np.ndarray
    step_phase: np.ndarray
    step_energy_pj: np.ndarray
    step_clock_mhz: np.ndarray | None = None  # with a throttle: each step's clock and voltage
    step_volts: np.ndarray | None = None
    clamps: int = 0
    step_replica: np.ndarray | None = None
    replicas: int = 1

    # the names serving.power_budget.energy_split reads (a step is a batch)

    @property
    def batch_start(self) -> np.ndarray:
        return self.step_start

    @property
    def batch_finish(self) -> np.ndarray:
        return self.step_end

    @property
    def batch_energy_pj(self) -> np.ndarray:
        return self.step_energy_pj

    @property
    def batch_replica(self) -> np.ndarray:
        if self.step_replica is None:
            return np.zeros(len(self.step_start), dtype=np.int64)
        return self.step_replica

    @property
    def batch_clock_mhz(self) -> np.ndarray | None:
        return self.step_clock_mhz

    @property
    def batch_volts(self) -> np.ndarray | None:
        return self.step_volts


def _blocks(tokens: int) -> int:
    return -(-tokens // KV_BLOCK) * KV_BLOCK


def generate(requests: Requests, policy: GenPolicy, step: Step | None, throttle=None,
             replicas: int = 1, throttles: list | None = None) -> Generated:  # fmt: skip
    """Serve the generation ``requests`` (one model: kind 0 of their mix) on ``replicas``
    accelerators behind a round-robin router (request ``i`` to replica ``i % replicas``). With
    a :class:`serving.power_budget.Throttle` (``throttle`` for one replica, or ``throttles``, one
    per replica; their services are step functions) each step runs at its replica's current
    operating point (``step`` is then unused)."""
    if requests.output is None or np.any(requests.output < 1):
        raise TrafficError("generation requests need output token counts of at least 1")
    if np.any(requests.kind != requests.kind[0]):
        raise TrafficError("a generation stream serves one model; give each model its own")
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 1:
        raise TrafficError(f"replicas must be a positive integer, not {replicas!r}")
    if throttle is not None:
        throttles = [throttle]
    if throttles is not None and len(throttles) != replicas:
        raise TrafficError(f"give one throttle per replica ({replicas}), not {len(throttles)}")
    n = len(requests)
    first = np.full(n, math.nan)
    finish = np.full(n, math.nan)
    steps: list[tuple] = []
    for r in range(replicas):
        _generate_one(requests, list(range(r, n, replicas)), policy, step,
                      throttles[r] if throttles else None, r, first, finish, steps)  # fmt: skip
    steps.sort(key=lambda s: s[0])
    s = np.array(steps)
    throttled = throttles is not None
    return Generated(requests, first, finish, s[:, 0], s[:, 1], s[:, 2].astype(np.int64),
                     s[:, 3].astype(np.int64), s[:, 4], s[:, 6] if throttled else None,
                     s[:, 7] if throttled else None,
                     sum(x.clamps for x in throttles) if throttled else 0,
                     s[:, 5].astype(np.int64), replicas)  # fmt: skip


def _generate_one(requests: Requests, mine: list[int], policy: GenPolicy, step, throttle,
                  replica: int, first, finish, steps) -> None:  # fmt: skip
    """One accelerator serving the requests ``mine`` (indices in arrival order)."""
    arrivals, prompt, output = requests.arrivals, requests.length, requests.output
    kind = int(requests.kind[0])
    made = np.zeros(len(arrivals), dtype=np.int64)  # tokens made so far
    n = len(mine)

    def run(t: float, batch: list[int], phase: str) -> float:
        if phase == "prefill":
            length = _blocks(int(prompt[batch].max()))
        else:
            length = _blocks(int(max(prompt[i] + made[i] for i in batch)))
        if throttle is None:
            seconds, energy = step(kind, len(batch), length, phase)
            point = (math.nan, math.nan)
        else:
            p = throttle.point
            seconds, energy = throttle.services[throttle.level](kind, len(batch), length, phase)
            energy *= p.dynamic_scale
            point = (p.clock_mhz, p.volts)
            throttle.run(t, t + seconds, energy)
        end = t + seconds
        steps.append((t, end, len(batch), 0 if phase == "prefill" else 1, energy, replica,
                      *point))  # fmt: skip
        for i in batch:
            made[i] += 1
            if phase == "prefill":
                first[i] = end
            if made[i] == output[i]:
                finish[i] = end
        return end

    t, nxt = 0.0, 0  # nxt: the first of mine not yet admitted
    if policy.name == "static":
        while nxt < n:
            batch = mine[nxt : nxt + policy.max_batch]
            nxt += len(batch)
            t = run(max(t, arrivals[batch[-1]]), batch, "prefill")
            while live := [i for i in batch if made[i] < output[i]]:
                t = run(t, live, "decode")
    else:
        flight: list[int] = []
        while nxt < n or flight:
            if not flight and arrivals[mine[nxt]] > t:
                t = float(arrivals[mine[nxt]])  # idle until the next request
            joining = []
            while (nxt < n and arrivals[mine[nxt]] <= t
                   and len(flight) + len(joining) < policy.max_batch):  # fmt: skip
                joining.append(mine[nxt])
                nxt += 1
            if joining:
                t = run(t, joining, "prefill")
                flight += [i for i in joining if made[i] < output[i]]
            else:
                t = run(t, flight, "decode")
                flight = [i for i in flight if made[i] < output[i]]


@dataclass(frozen=True)
class GenMetrics:
    """A generation stream's figures (times in seconds)."""

    requests: int
    tokens: int
    tokens_per_s: float  # output tokens over first arrival to last completion
    ttft_p50_s: float
    ttft_p99_s: float
    tpot_p50_s: float  # time per output token after the first
    tpot_p99_s: float
    latency_p99_s: float
    utilization: float
    energy_per_token_pj: float  # busy energy of every step over the output tokens

    def to_dict(self) -> dict:
        return asdict(self)


def measure_generation(g: Generated) -> GenMetrics:
    r = g.requests
    ttft = g.first_token - r.arrivals
    later = r.output > 1
    tpot = (g.finish[later] - g.first_token[later]) / (r.output[later] - 1)
    t0, t1 = float(r.arrivals[0]), float(g.finish.max())
    tokens = int(r.output.sum())
    return GenMetrics(
        requests=len(r),
        tokens=tokens,
        tokens_per_s=tokens / (t1 - t0) if t1 > t0 else 0.0,
        ttft_p50_s=float(np.percentile(ttft, 50)),
        ttft_p99_s=float(np.percentile(ttft, 99)),
        tpot_p50_s=float(np.percentile(tpot, 50)) if len(tpot) else 0.0,
        tpot_p99_s=float(np.percentile(tpot, 99)) if len(tpot) else 0.0,
        latency_p99_s=float(np.percentile(g.finish - r.arrivals, 99)),
        utilization=float(np.sum(g.step_end - g.step_start) / (t1 - t0)) if t1 > t0 else 0.0,
        energy_per_token_pj=float(g.step_energy_pj.sum() / tokens),
    )
