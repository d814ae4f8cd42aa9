"""Power of a served stream: busy, idle and leakage energy apart; clocks and voltages to run at;
and a sustained power budget that steps the clock down when a first-order thermal model says
the package runs hot.

- **Busy** energy is each batch's dynamic energy from the hardware model (its leakage share
  taken out), scaled by ``(V / V_nominal)^2`` at an operating point's voltage.
- **Idle** energy is the clock of the registers the device keeps clocking while no batch runs
  (its clock gate stops the rest, rtl.clock_gate: :func:`models.energy.idle_pj_per_cycle`),
  scaled the same way.
- **Leakage** is a power over the whole time, the model's per-cycle figure at the coefficients'
  clock (:func:`models.energy.leakage_pj_per_cycle`), scaled by ``V / V_nominal`` (a constant
  leakage current: first order).

:data:`VF_POINTS` are the clock and voltage pairs operating points use: **assumptions** for a
45 nm process at 0.9 V nominal (the coefficients' node), with voltage falling toward 0.7 V at a
quarter of the clock, as dynamic voltage and frequency scaling tables of such processes do; a
user gives their own. The thermal model is one time constant: ``heat`` (the temperature rise
over the one the budget sustains) follows the power with ``d heat/dt = (P / budget - heat) /
tau``; the governor, between batches, steps to the next lower point when ``heat >= 1`` and back
up when ``heat <= release``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from systolic.contract.config import ArrayConfig
from systolic.models.energy import Coefficients, idle_pj_per_cycle, leakage_pj_per_cycle

__all__ = [
    "VF_POINTS",
    "EnergySplit",
    "Envelope",
    "IdlePower",
    "OperatingPoint",
    "Throttle",
    "energy_split",
    "operating_points",
]

#: (clock MHz, volts): assumptions (see module), the last the coefficients' nominal point.
VF_POINTS = ((250.0, 0.70), (500.0, 0.77), (750.0, 0.84), (1000.0, 0.90))
NOMINAL_VOLTS = 0.90


@dataclass(frozen=True)
class OperatingPoint:
    clock_mhz: float
    volts: float

    @property
    def dynamic_scale(self) -> float:
        """Dynamic energy per operation against the nominal voltage's."""
        return (self.volts / NOMINAL_VOLTS) ** 2

    @property
    def leakage_scale(self) -> float:
        return self.volts / NOMINAL_VOLTS


def operating_points(fmax_mhz: float | None = None) -> list[OperatingPoint]:
    """The :data:`VF_POINTS` up to ``fmax_mhz`` (all of them when None), fastest first."""
    points = [OperatingPoint(f, v) for f, v in VF_POINTS if fmax_mhz is None or f <= fmax_mhz]
    if not points:
        raise ValueError(f"no operating point at or below Fmax {fmax_mhz} MHz "
                         f"(the slowest is {VF_POINTS[0][0]} MHz)")  # fmt: skip
    return sorted(points, key=lambda p: -p.clock_mhz)


@dataclass(frozen=True)
class IdlePower:
    """A configuration's idle clock and leakage power at the nominal point, in watts."""

    clock_w_per_mhz: float
    leakage_w: float

    @classmethod
    def of(cls, config: ArrayConfig, coefficients: Coefficients) -> IdlePower:
        leak_pj = leakage_pj_per_cycle(config, coefficients)
        return cls(idle_pj_per_cycle(config, coefficients) * 1e-6,
                   leak_pj * coefficients.clock_mhz * 1e-6)  # fmt: skip

    def idle_w(self, point: OperatingPoint) -> float:
        return self.clock_w_per_mhz * point.clock_mhz * point.dynamic_scale

    def leak_w(self, point: OperatingPoint) -> float:
        return self.leakage_w * point.leakage_scale


@dataclass(frozen=True)
class Envelope:
    """A sustained power budget (W) and the package's thermal time constant (s)."""

    budget_w: float
    tau_s: float = 0.05
    release: float = 0.9

    def __post_init__(self):
        for name in ("budget_w", "tau_s"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0 < value < math.inf:
                raise ValueError(f"{name} must be a positive number, not {value!r}")
        if not 0 < self.release < 1:
            raise ValueError(f"release must be between 0 and 1, not {self.release!r}")


@dataclass
class Throttle:
    """One accelerator's governor: its operating points (fastest first), each with its service
    function, the idle power, the envelope; the state of the thermal model and the clamps."""

    points: list[OperatingPoint]
    services: list  # a serving.batching.Service per point
    idle: IdlePower
    envelope: Envelope | None = None
    level: int = 0
    heat: float = 0.0
    clock: float = 0.0  # the time the thermal state is at
    clamps: int = 0
    log: list[tuple[float, float]] = field(default_factory=list)  # (time, clock MHz) changes

    @property
    def point(self) -> OperatingPoint:
        return self.points[self.level]

    def _heat(self, seconds: float, watts: float) -> None:
        if self.envelope is None or seconds <= 0:
            return
        target = watts / self.envelope.budget_w
        self.heat = target + (self.heat - target) * math.exp(-seconds / self.envelope.tau_s)

    def run(self, begin: float, end: float, dynamic_pj: float) -> None:
        """Account an idle gap up to ``begin``, then a batch to ``end`` of ``dynamic_pj``
        (already scaled to the point), and choose the point of the next batch."""
        p = self.point
        leak = self.idle.leak_w(p)
        self._heat(begin - self.clock, self.idle.idle_w(p) + leak)
        busy = end - begin
        self._heat(busy, (dynamic_pj * 1e-12 / busy if busy > 0 else 0.0) + leak)
        self.clock = end
        if self.envelope is None:
            return
        if self.heat >= 1.0 and self.level < len(self.points) - 1:
            self.level += 1
            self.clamps += 1
            self.log.append((end, self.point.clock_mhz))
        elif self.heat <= self.envelope.release and self.level > 0:
            self.level -= 1
            self.log.append((end, self.point.clock_mhz))


@dataclass(frozen=True)
class EnergySplit:
    """A served stream's energy (pJ): the batches', the idle clock's and leakage."""

    busy_pj: float
    idle_pj: float
    leakage_pj: float
    requests: int

    @property
    def total_pj(self) -> float:
        return self.busy_pj + self.idle_pj + self.leakage_pj

    def per_request(self) -> dict[str, float]:
        return {"busy_pj": self.busy_pj / self.requests, "idle_pj": self.idle_pj / self.requests,
                "leakage_pj": self.leakage_pj / self.requests,
                "total_pj": self.total_pj / self.requests}  # fmt: skip


def energy_split(served, idle: IdlePower, nominal: OperatingPoint) -> EnergySplit:
    """The :class:`EnergySplit` of ``served`` (:class:`serving.batching.Served`) over its span
    (first arrival to last completion) on every replica: busy, its batches' energy; idle, the
    gaps between them at the idle power of the point in effect (the next batch's; ``nominal``
    without throttles); leakage over the whole span at each interval's point."""
    t0 = float(served.requests.arrivals[0])
    t1 = float(served.batch_finish.max())
    throttled = served.batch_clock_mhz is not None
    idle_pj = leak_pj = 0.0
    for r in range(served.replicas):
        mine = np.flatnonzero(served.batch_replica == r)
        if not len(mine):
            idle_pj += (t1 - t0) * idle.idle_w(nominal) * 1e12
            leak_pj += (t1 - t0) * idle.leak_w(nominal) * 1e12
            continue
        points = [OperatingPoint(served.batch_clock_mhz[j], served.batch_volts[j]) if throttled
                  else nominal for j in mine]  # fmt: skip
        gap_end = np.append(served.batch_start[mine], t1)
        gap_start = np.concatenate([[t0], served.batch_finish[mine]])
        for k, (a, b) in enumerate(zip(gap_start, gap_end, strict=True)):
            p = points[min(k, len(points) - 1)]
            idle_pj += (b - a) * idle.idle_w(p) * 1e12
            leak_pj += (b - a) * idle.leak_w(p) * 1e12
        for j, p in zip(mine, points, strict=True):
            leak_pj += (served.batch_finish[j] - served.batch_start[j]) * idle.leak_w(p) * 1e12
    return EnergySplit(float(served.batch_energy_pj.sum()), idle_pj, leak_pj,
                       len(served.requests))  # fmt: skip
