"""The DRAM the accelerator streams from: its parameters, named presets, and the rule by which
it serves beats (docs/memory.md).

The simulation's DRAM model (Verilog in the simulation wrapper) implements :class:`BeatClock`'s
rule beat by beat; the analytical model evaluates it in closed form over runs of beats. Both read
the parameters from :class:`Dram`, so the two cannot disagree on what a bandwidth means.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from .checks import check_integer, is_number

__all__ = [
    "DEFAULT_MEMORY",
    "DEFAULT_MEMORY_PRESET",
    "DRAM_PRESETS",
    "BeatClock",
    "Dram",
    "DramEnergy",
    "Memory",
    "container_bytes",
]

#: Largest denominator of a bandwidth in bytes per cycle (the DRAM model counts in integers).
BANDWIDTH_DENOMINATOR = 1000

#: Named memories at their data rate and a typical loaded latency: ``(GB/s, ns, requests)``.
#: Bandwidth is the JEDEC transfer rate times the interface width; latencies are round figures
#: of what a memory controller returns under load (row miss included), an assumption to vary.
DRAM_PRESETS = {
    "lpddr4x-4266-x16": (4.266 * 2, 100.0, 32),  # 8.53 GB/s: one x16 mobile channel
    "lpddr4x-4266-x32": (4.266 * 4, 100.0, 64),  # 17.06 GB/s: two x16 channels
    "ddr4-3200-x64": (3.2 * 8, 80.0, 64),  # 25.6 GB/s: one DIMM channel
    "lpddr5-6400-x64": (6.4 * 8, 100.0, 64),  # 51.2 GB/s
    "hbm2e-pc": (3.2 * 8, 100.0, 64),  # 25.6 GB/s: one 64-bit pseudo-channel at 3.2 Gb/s/pin
    "hbm2e-stack": (3.2 * 128, 100.0, 256),  # 409.6 GB/s: 16 pseudo-channels, one stack
}


def container_bytes(bits: int) -> int:
    """Bytes of the power-of-two container that holds ``bits`` (a buffer word in DRAM)."""
    check_integer("bits", bits, 1, 1 << 20)
    return 1 << max(0, math.ceil(math.log2(math.ceil(bits / 8))))


@dataclass(frozen=True)
class Dram:
    """A deterministic DRAM behind an AXI4 port.

    Parameters
    ----------
    bandwidth : Fraction, int, float or str
        Bytes per accelerator cycle, ``> 0`` (a fraction with denominator up to 1000; at most
        one beat moves per cycle whatever the bandwidth).
    latency : int
        Cycles from a read request's acceptance to its first beat, and from a write's last beat
        to its response, 1 to 100000.
    max_requests : int
        Bursts (reads and writes together) the DRAM holds at once, 1 to 4096.
    """

    bandwidth: Fraction
    latency: int = 100
    max_requests: int = 64

    def __post_init__(self) -> None:
        bw = self.bandwidth
        if isinstance(bw, bool) or not (isinstance(bw, (Fraction, str)) or is_number(bw)):
            raise ValueError(f"bandwidth must be a positive number of bytes per cycle, not {bw!r}")
        try:
            value = Fraction(bw) if not isinstance(bw, float) else Fraction(str(bw))
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"bandwidth must be a positive number of bytes per cycle, "
                             f"not {bw!r}") from None  # fmt: skip
        value = value.limit_denominator(BANDWIDTH_DENOMINATOR)
        if not 0 < value <= 1 << 16:
            raise ValueError(f"bandwidth must be in (0, 65536] bytes per cycle, not {bw!r}")
        object.__setattr__(self, "bandwidth", value)
        check_integer("latency", self.latency, 1, 100_000)
        check_integer("max_requests", self.max_requests, 1, 4096)
        object.__setattr__(self, "latency", int(self.latency))
        object.__setattr__(self, "max_requests", int(self.max_requests))

    @classmethod
    def physical(cls, gb_per_s: float, latency_ns: float, clock_ghz: float,
                 max_requests: int = 64) -> Dram:  # fmt: skip
        """A memory given in GB/s and ns, seen from an accelerator clocked at ``clock_ghz``."""
        for name, value in (("gb_per_s", gb_per_s), ("latency_ns", latency_ns),
                            ("clock_ghz", clock_ghz)):  # fmt: skip
            if not is_number(value) or value <= 0:
                raise ValueError(f"{name} must be a positive number, not {value!r}")
        bandwidth = Fraction(str(gb_per_s)) / Fraction(str(clock_ghz))
        latency = max(1, round(latency_ns * clock_ghz))
        return cls(bandwidth, latency, max_requests)

    @classmethod
    def preset(cls, name: str, clock_ghz: float = 1.0) -> Dram:
        """One of :data:`DRAM_PRESETS` at the accelerator's clock."""
        if name not in DRAM_PRESETS:
            raise ValueError(f"unknown DRAM preset {name!r}; presets: {', '.join(DRAM_PRESETS)}")
        gbps, ns, requests = DRAM_PRESETS[name]
        return cls.physical(gbps, ns, clock_ghz, requests)

    def to_dict(self) -> dict:
        return {"bandwidth": str(self.bandwidth), "latency": self.latency,
                "max_requests": self.max_requests}  # fmt: skip


#: The DRAM of a run that names none: 16 bytes a cycle (16 GB/s at 1 GHz), 20 cycles of latency,
#: 64 requests in flight; fast enough that small GEMMs are compute-bound.
DEFAULT_MEMORY = Dram(16, 20, 64)


#: The memory of a spec that names none.
DEFAULT_MEMORY_PRESET = "lpddr4x-4266-x32"


@dataclass(frozen=True)
class DramEnergy:
    """What moving a bit to or from a DRAM device costs, interface and core (pJ per bit), with
    the range its sources span: ``low`` and ``high`` bound the read figure, and a write moves
    with it in proportion. ``source`` says where the figures come from."""

    read_pj_per_bit: float
    write_pj_per_bit: float
    low_pj_per_bit: float
    high_pj_per_bit: float
    source: str

    def __post_init__(self) -> None:
        for name in ("read_pj_per_bit", "write_pj_per_bit", "low_pj_per_bit", "high_pj_per_bit"):
            value = getattr(self, name)
            if not is_number(value) or not 0 < value < 1e4:
                raise ValueError(f"{name} must be a number of pJ in (0, 10000), not {value!r}")
            object.__setattr__(self, name, float(value))
        if not self.low_pj_per_bit <= self.read_pj_per_bit <= self.high_pj_per_bit:
            raise ValueError(
                f"the read energy {self.read_pj_per_bit:g} pJ/bit must lie in its "
                f"range [{self.low_pj_per_bit:g}, {self.high_pj_per_bit:g}]"
            )
        if not isinstance(self.source, str) or not self.source.strip():
            raise ValueError("a DRAM energy needs a source: where its figures come from")

    @property
    def spread(self) -> tuple[float, float]:
        """The range as factors of the nominal figures: ``(low, high)``."""
        return (self.low_pj_per_bit / self.read_pj_per_bit,
                self.high_pj_per_bit / self.read_pj_per_bit)  # fmt: skip

    def to_dict(self) -> dict:
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, d: dict) -> DramEnergy:
        return cls(**d)


@dataclass(frozen=True)
class Memory:
    """A DRAM in physical units (GB/s, ns), as specs name it; :meth:`at` gives the
    :class:`Dram` a clock sees, in bytes and cycles. ``device`` is the preset it is (or is
    derived from), whose energy per bit prices it unless ``energy`` gives its own."""

    name: str
    gb_per_s: float
    latency_ns: float
    max_requests: int = 64
    device: str = ""
    energy: DramEnergy | None = None

    @classmethod
    def preset(cls, name: str) -> Memory:
        if name not in DRAM_PRESETS:
            raise ValueError(f"unknown DRAM preset {name!r}; presets: {', '.join(DRAM_PRESETS)}")
        gbps, ns, requests = DRAM_PRESETS[name]
        return cls(name, gbps, ns, requests, device=name)

    def at(self, clock_mhz: float) -> Dram:
        """The DRAM in bytes and cycles of a clock of ``clock_mhz``."""
        return Dram.physical(self.gb_per_s, self.latency_ns, clock_mhz / 1000, self.max_requests)

    def to_dict(self) -> dict:
        return {"name": self.name, "gb_per_s": self.gb_per_s, "latency_ns": self.latency_ns,
                "max_requests": self.max_requests, "device": self.device,
                "energy": self.energy.to_dict() if self.energy else None}  # fmt: skip

    @classmethod
    def from_dict(cls, d: dict) -> Memory:
        energy = d.get("energy")
        return cls(
            d["name"],
            d["gb_per_s"],
            d["latency_ns"],
            d.get("max_requests", 64),
            d.get("device", ""),
            DramEnergy.from_dict(energy) if energy else None,
        )


@dataclass
class BeatClock:
    """The DRAM's data bus: a virtual clock that lets beats through at ``bandwidth`` bytes per
    cycle and at most one per cycle.

    With ``bandwidth = num / den`` and the clock ``v`` in units of ``1 / num`` cycles, a beat of
    ``b`` bytes ready in cycle ``ready`` starts its slot at ``u = max(v, ready * num)``, goes in
    cycle ``ceil(u / num)``, and moves the clock to ``v = u + max(b * den, num)`` (a beat takes
    a whole cycle at least). Back to back, beats keep the exact rate, fractions carried; idle
    time is not banked: after a pause the next beat waits for nothing but its own readiness.
    """

    num: int
    den: int
    v: int = 0

    @classmethod
    def of(cls, dram: Dram) -> BeatClock:
        return cls(dram.bandwidth.numerator, dram.bandwidth.denominator)

    def step(self, size: int) -> int:
        """Virtual-clock units one beat of ``size`` bytes takes."""
        return max(size * self.den, self.num)

    def beat(self, ready: int, size: int) -> int:
        """Send one beat of ``size`` bytes ready from cycle ``ready``; return its cycle."""
        u = max(self.v, ready * self.num)
        self.v = u + self.step(size)
        return -(-u // self.num)

    def run(self, ready: int, beats: int, size: int) -> tuple[int, int]:
        """Send ``beats`` beats of ``size`` bytes, all ready from ``ready``; return the cycles
        of the first and the last (the closed form of ``beats`` calls to :meth:`beat`: after
        the first, none waits for its readiness, so each slot follows the previous one)."""
        u = max(self.v, ready * self.num)
        step = self.step(size)
        self.v = u + beats * step
        return -(-u // self.num), -(-(u + (beats - 1) * step) // self.num)
