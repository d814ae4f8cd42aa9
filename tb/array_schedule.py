"""Cycle-by-cycle stimulus for the bare meshes, and the outputs they must produce, when.

A schedule turns GEMM tiles into the mesh's input flows, as early as the documented port rules and
bank hazards allow (so back-to-back tiles and overlapped preloads are exercised), and predicts
every output vector with the exact cycle it must appear in. Expected values come from golden/.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from systolic.contract.config import ArrayConfig, Dataflow
from systolic.golden.reference import reference
from systolic.rtl.generate import design, design_ports

from .packing import pack

__all__ = ["Tile", "Schedule", "schedule_tiles", "input_ports"]


@dataclass(frozen=True)
class Tile:
    """``C = A @ B`` for one array-sized tile, in GEMM terms.

    WS: A is ``M x rows``, B is ``rows x cols`` (any M >= 1). IS: A is ``cols x rows``, B is
    ``rows x N``. OS: A is ``rows x K``, B is ``K x cols``.
    """

    a: np.ndarray
    b: np.ndarray


@dataclass
class Schedule:
    """Packed inputs ``{port: (valid, payload)}`` per cycle, expected ``(cycle, vector)``s."""

    config: ArrayConfig
    inputs: list[dict[str, tuple[int, int]]] = field(default_factory=list)
    expected: list[tuple[int, list[int]]] = field(default_factory=list)
    first_input: int | None = None  # cycle of the first streamed (WS/IS) or last (OS) vector

    def at(self, cycle: int) -> dict[str, tuple[int, int]]:
        while len(self.inputs) <= cycle:
            self.inputs.append({})
        return self.inputs[cycle]

    @property
    def cycles(self) -> int:
        """Cycles to play so that every expected output has appeared."""
        last_out = max((c for c, _ in self.expected), default=-1)
        return max(len(self.inputs), last_out + 1)


def _check_tile(config: ArrayConfig, tile: Tile) -> None:
    r, c = config.rows, config.cols
    (am, ak), (bk, bn) = tile.a.shape, tile.b.shape
    if ak != bk:
        raise ValueError(f"tile A is {am}x{ak} but B is {bk}x{bn}")
    want = {
        Dataflow.WS: (None, r, c),  # M free
        Dataflow.IS: (c, r, None),  # N free
        Dataflow.OS: (r, None, c),  # K free
    }[config.dataflow]
    for got, need, name in zip((am, ak, bn), want, "MKN", strict=True):
        if need is not None and got != need:
            raise ValueError(f"a {config.dataflow.value} tile needs {name} = {need}, got {got}")
        if got < 1:
            raise ValueError(f"tile dimension {name} must be at least 1, got {got}")


def schedule_tiles(
    config: ArrayConfig,
    tiles: list[Tile],
    rng: np.random.Generator | None = None,
    bubble_rate: float = 0.0,
) -> Schedule:
    """Schedule ``tiles`` back to back; ``bubble_rate`` inserts random idle stream cycles."""
    for tile in tiles:
        _check_tile(config, tile)
    if config.dataflow is Dataflow.OS:
        return _schedule_os(config, tiles, rng, bubble_rate)
    return _schedule_stationary(config, tiles, rng, bubble_rate)


def _bubbles(rng, rate: float) -> int:
    n = 0
    while rng is not None and rate > 0 and rng.random() < rate:
        n += 1
    return n


def _schedule_stationary(config, tiles, rng, bubble_rate) -> Schedule:
    array = design(config, "array")
    preload_layout = array.preload_layout(config)
    stream_layout = array.stream_layout(config)
    sched = Schedule(config)
    preload_free = 0  # first cycle the preload port is free
    stream_free = 0  # first cycle the stream port is free
    last_use = {0: None, 1: None}  # cycle of the last stream vector that used each bank
    for i, tile in enumerate(tiles):
        bank = i % 2
        expected = reference(config, tile.a, tile.b)
        if config.dataflow is Dataflow.WS:
            stationary, streamed, outputs = tile.b, tile.a, expected  # rows x cols, M x rows
        else:
            stationary, streamed, outputs = tile.a.T, tile.b.T, expected.T  # rows x cols, N x rows
        start = preload_free
        if last_use[bank] is not None:
            start = max(start, last_use[bank] + array.bank_release)
        for j in range(array.preload_cycles):  # last row first: it ends at the bottom
            row = stationary[config.rows - 1 - j]
            payload = pack(preload_layout, {"data": row, "bank": bank, "row": j})
            sched.at(start + j)["preload"] = (1, payload)
        preload_free = start + array.preload_cycles
        t = max(stream_free, preload_free)
        for vector, out in zip(streamed, outputs, strict=True):
            t += _bubbles(rng, bubble_rate)
            sched.at(t)["stream"] = (1, pack(stream_layout, {"data": vector, "bank": bank}))
            sched.expected.append((t + array.latency, [int(v) for v in out]))
            if sched.first_input is None:
                sched.first_input = t
            t += 1
        stream_free = t
        last_use[bank] = t - 1
    return sched


def _schedule_os(config, tiles, rng, bubble_rate) -> Schedule:
    array = design(config, "array")
    layout = array.operands_layout(config)
    sched = Schedule(config)
    t = 0
    prev_last = None
    for tile in tiles:
        expected = reference(config, tile.a, tile.b)
        k = tile.a.shape[1]
        steps = [_bubbles(rng, bubble_rate) for _ in range(k)]
        # The last step must come at least drain_cycles after the previous tile's last step.
        if prev_last is not None:
            earliest_last = prev_last + array.drain_cycles
            natural_last = t + k - 1 + sum(steps)
            if natural_last < earliest_last:
                steps[0] += earliest_last - natural_last
        for step in range(k):
            t += steps[step]
            last = step == k - 1
            payload = pack(layout, {"a": tile.a[:, step], "b": tile.b[step, :], "last": int(last)})
            sched.at(t)["operands"] = (1, payload)
            if last:
                prev_last = t
                if sched.first_input is None:
                    sched.first_input = t
                for r in range(config.rows):
                    sched.expected.append((t + array.latency + r, [int(v) for v in expected[r]]))
            t += 1
    return sched


def input_ports(config: ArrayConfig) -> list[str]:
    """Names of the mesh's input flows (Verilog ports ``<name>__valid`` / ``<name>__payload``)."""
    return [
        name.removesuffix("__valid")
        for name, direction, _ in design_ports(config, "array")
        if direction == "in" and name.endswith("__valid")
    ]
