"""Request streams: when requests arrive and what each asks for, seeded and reproducible.

An arrival process gives the arrival times (seconds from 0, sorted): :class:`Poisson` at a rate,
:class:`OnOff` (a two-state Markov-modulated Poisson process: bursts at one rate, lulls at
another, exponential sojourns) or :class:`Trace` (timestamps read from a CSV file). A
:class:`Mix` says what each request is: a model, drawn by share, and for a transformer its
sequence length, drawn from a list of lengths with weights. :func:`stream` draws both from one
seed. Bad parameters raise :class:`TrafficError` naming the parameter and its allowed range.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = [
    "check_max_batch",
    "Mix",
    "OnOff",
    "Poisson",
    "Requests",
    "RequestKind",
    "Trace",
    "TrafficError",
    "stream",
]


class TrafficError(ValueError):
    """A traffic specification that cannot describe a stream; the message names the key."""


def _positive(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value <= 0:  # fmt: skip
        raise TrafficError(f"{name} must be a positive number, not {value!r}")
    return float(value)


def check_max_batch(value) -> int:
    """A batching policy's batch limit: an integer from 1 to 4096."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 4096:
        raise TrafficError(f"max_batch must be an integer from 1 to 4096, not {value!r}")
    return value


@dataclass(frozen=True)
class Poisson:
    """Independent arrivals at ``rate`` per second."""

    rate: float

    def __post_init__(self):
        _positive("rate", self.rate)

    def times(self, rng: np.random.Generator, count: int) -> np.ndarray:
        return np.cumsum(rng.exponential(1.0 / self.rate, count))

    @property
    def mean_rate(self) -> float:
        return self.rate


@dataclass(frozen=True)
class OnOff:
    """Bursts and lulls: Poisson at ``on_rate`` for an exponential time of mean ``on_s``, then
    at ``off_rate`` (0 for silence) for a mean of ``off_s``, starting on."""

    on_rate: float
    off_rate: float
    on_s: float
    off_s: float

    def __post_init__(self):
        _positive("on_rate", self.on_rate)
        if not isinstance(self.off_rate, (int, float)) or not 0 <= self.off_rate < self.on_rate:
            raise TrafficError(f"off_rate must be at least 0 and below on_rate ({self.on_rate}), "
                               f"not {self.off_rate!r}")  # fmt: skip
        _positive("on_s", self.on_s)
        _positive("off_s", self.off_s)

    @property
    def mean_rate(self) -> float:
        return (self.on_rate * self.on_s + self.off_rate * self.off_s) / (self.on_s + self.off_s)

    def times(self, rng: np.random.Generator, count: int) -> np.ndarray:
        out: list[np.ndarray] = []
        have, t, on = 0, 0.0, True
        while have < count:
            span = rng.exponential(self.on_s if on else self.off_s)
            rate = self.on_rate if on else self.off_rate
            if rate > 0:
                # a Poisson process on [t, t + span): its count, then uniform sorted times
                k = rng.poisson(rate * span)
                if k:
                    out.append(np.sort(t + span * rng.random(k)))
                    have += k
            t, on = t + span, not on
        return np.concatenate(out)[:count]


@dataclass(frozen=True)
class Trace:
    """Arrival times read from a CSV file: one timestamp in seconds per row (the first column;
    a header row is skipped), non-decreasing. The stream starts at the first timestamp."""

    path: Path
    times_s: tuple[float, ...] = field(default=(), repr=False)

    @classmethod
    def read(cls, path: str | Path) -> Trace:
        path = Path(path)
        try:
            rows = list(csv.reader(path.read_text().splitlines()))
        except OSError as e:
            raise TrafficError(f"trace {path}: cannot read: {e.strerror}") from None
        times = []
        for line, row in enumerate(rows, 1):
            if not row or not row[0].strip():
                continue
            try:
                value = float(row[0])
            except ValueError:
                if line == 1:
                    continue  # a header
                raise TrafficError(f"trace {path}:{line}: not a timestamp: {row[0]!r}") from None
            if not math.isfinite(value) or value < 0:
                raise TrafficError(f"trace {path}:{line}: timestamps must be finite and >= 0, "
                                   f"not {value}")  # fmt: skip
            if times and value < times[-1]:
                raise TrafficError(f"trace {path}:{line}: out of order ({value} after "
                                   f"{times[-1]}); timestamps must not decrease")  # fmt: skip
            times.append(value)
        if not times:
            raise TrafficError(f"trace {path}: no timestamps")
        return cls(path, tuple(times))

    @property
    def mean_rate(self) -> float:
        span = self.times_s[-1] - self.times_s[0]
        return (len(self.times_s) - 1) / span if span > 0 else math.inf

    def times(self, rng: np.random.Generator, count: int) -> np.ndarray:
        if count > len(self.times_s):
            raise TrafficError(f"trace {self.path} holds {len(self.times_s)} requests, "
                               f"not {count}")  # fmt: skip
        t = np.asarray(self.times_s[:count])
        return t - t[0]


@dataclass(frozen=True)
class RequestKind:
    """What a request asks for: a ``model`` (a workload name of workloads.library); for a
    transformer, the sequence (prompt) ``lengths`` it may have with their ``weights``; for
    generation, the ``outputs`` (tokens to generate) it may ask for with ``output_weights``."""

    model: str
    share: float = 1.0
    lengths: tuple[int, ...] = ()
    weights: tuple[float, ...] = ()
    outputs: tuple[int, ...] = ()
    output_weights: tuple[float, ...] = ()

    def __post_init__(self):
        _positive(f"{self.model}: share", self.share)
        for values, weights, what in ((self.lengths, self.weights, "length"),
                                      (self.outputs, self.output_weights, "output")):  # fmt: skip
            if weights and len(weights) != len(values):
                raise TrafficError(f"{self.model}: {what} weights must give one weight per "
                                   f"{what} ({len(values)}), not {len(weights)}")  # fmt: skip
            for n in values:
                if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                    raise TrafficError(f"{self.model}: {what}s must be positive integers, "
                                       f"not {n!r}")  # fmt: skip
            for w in weights:
                _positive(f"{self.model}: {what} weight", w)


@dataclass(frozen=True)
class Mix:
    """The kinds of request of a stream, drawn by share."""

    kinds: tuple[RequestKind, ...]

    def __post_init__(self):
        if not self.kinds:
            raise TrafficError("mix must name at least one request kind")
        names = [k.model for k in self.kinds]
        if len(set(names)) < len(names):
            raise TrafficError(f"mix names a model twice: {names}")


@dataclass(frozen=True)
class Requests:
    """A drawn stream: arrival times (s, sorted), the kind of each request (an index into
    ``mix.kinds``), its sequence length and its output tokens (0 where the kind has none)."""

    arrivals: np.ndarray
    kind: np.ndarray
    length: np.ndarray
    mix: Mix
    output: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.arrivals)


def stream(process, mix: Mix, count: int, seed: int) -> Requests:
    """``count`` requests of ``process`` and ``mix``, from ``seed`` (the same seed, the same
    stream)."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise TrafficError(f"count must be a positive integer, not {count!r}")
    rng = np.random.default_rng(seed)
    arrivals = process.times(rng, count)
    shares = np.array([k.share for k in mix.kinds])
    kind = rng.choice(len(mix.kinds), size=count, p=shares / shares.sum())
    length = np.zeros(count, dtype=np.int64)
    output = np.zeros(count, dtype=np.int64)
    for i, k in enumerate(mix.kinds):
        mine = np.flatnonzero(kind == i)
        for values, weights, into in ((k.lengths, k.weights, length),
                                      (k.outputs, k.output_weights, output)):  # fmt: skip
            if values and len(mine):
                w = np.array(weights or [1.0] * len(values))
                into[mine] = rng.choice(np.array(values), size=len(mine), p=w / w.sum())
    return Requests(arrivals, kind, length, mix, output)
