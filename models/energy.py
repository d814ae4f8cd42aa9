"""Energy of a GEMM from its activity: bit flips per component, memory accesses, cycles.

One pricing function serves both sides of the comparison: :func:`energy` turns toggle counts
(measured by an activity build of the RTL, or predicted by :mod:`models.toggles`) plus the
performance counters and off-chip words into an :class:`EnergyReport`, with coefficients from
one data file (:func:`load_coefficients`; ``models/coefficients/horowitz45.toml`` by default).

Pricing:

- multiplier operand bit flips at ``E_mul / (a * (wa + wb))`` each, where ``E_mul`` is the
  multiply energy at the operand widths and ``a`` the reference activity, so random operands cost
  the published per-multiply figure and constant ones cost nothing;
- accumulator register bit flips at the register figure plus ``E_add32 / (32 a)`` for the adder;
- other register bit flips at their component's per-toggle figure;
- SRAM accesses (counters and host transfers) at the 64-bit figure for the buffer's capacity,
  scaled by word width; DRAM (off-chip) words the host moves, per 64 bits;
- clock per mesh register bit per busy cycle; leakage per PE and per SRAM KiB per busy cycle.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path

from systolic.contract.activity import COMPONENTS, datapath_flop_bits
from systolic.contract.checks import is_number
from systolic.contract.config import ArrayConfig
from systolic.contract.layouts import layouts

from .cycles import predict
from .toggles import predict_toggles

__all__ = [
    "clock_pj_per_cycle",
    "leakage_pj_per_cycle",
    "DEFAULT_COEFFICIENTS",
    "ENERGY_COMPONENTS",
    "TRAFFIC_CLASSES",
    "Coefficients",
    "CoefficientsError",
    "EnergyReport",
    "energy",
    "figures_energy",
    "load_coefficients",
    "model_energy",
]

DEFAULT_COEFFICIENTS = Path(__file__).parent / "coefficients" / "horowitz45.toml"

#: The rows of the component split, in report order.
ENERGY_COMPONENTS = (*COMPONENTS, "sram", "dram", "clock", "leakage")
#: The traffic split: data classes by level, then compute and overhead.
DATA_TRAFFIC = ("activation", "weight", "psum", "output")
#: Every class of the traffic split.
TRAFFIC_CLASSES = (*DATA_TRAFFIC, "compute", "overhead")
LEVELS = ("array", "buffer", "offchip")

# What a coefficients file holds: section -> figure names (each a {value, source} table).
_SCHEMA = {
    "clock_mhz": None,
    "mac": (
        "multiply_8bit",
        "add_32bit",
        "reference_activity",
        "multiply_width_exponent",
        "multiply_bf16",
        "add_fp32",
    ),
    "toggle": COMPONENTS[1:],  # every component but the multiplier, priced from mac
    "sram": ("points", "write_factor"),
    "dram": ("access_64bit",),
    "clock": ("per_flop_bit",),
    "leakage": ("per_pe", "per_sram_kib"),
}


class CoefficientsError(ValueError):
    """A coefficients file that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class Coefficients:
    """Validated energy figures (pJ; see the default file for their meaning and sources)."""

    name: str
    technology: str
    clock_mhz: float
    mac: dict[str, float]
    toggle: dict[str, float]
    sram_points: tuple[tuple[float, float], ...]  # (KiB, pJ per 64-bit access), by size
    sram_write_factor: float
    dram_access_64bit: float
    clock_per_flop_bit: float
    leakage: dict[str, float]
    path: str = ""

    def __hash__(self) -> int:  # by value, so that caches can key on the figures
        try:
            return self.__dict__["_hash"]
        except KeyError:
            values = (getattr(self, f.name) for f in fields(self))
            key = tuple(tuple(sorted(v.items())) if isinstance(v, dict) else v for v in values)
            object.__setattr__(self, "_hash", hash(key))
            return self.__dict__["_hash"]

    def multiply(self, a_width: int, b_width: int) -> float:
        """One multiply at the reference activity."""
        scale = (a_width * b_width / 64) ** (self.mac["multiply_width_exponent"] / 2)
        return self.mac["multiply_8bit"] * scale

    def per_toggle(self, component: str, config: ArrayConfig) -> float:
        """pJ per bit flip of ``component``."""
        ref = self.mac["reference_activity"]
        bf16 = config.number == "bf16"
        if component == "multiplier":
            a, b = config.mesh_widths  # with zero points, one bit wider than the buffers
            energy = self.mac["multiply_bf16"] if bf16 else self.multiply(a, b)
            return energy / (ref * (a + b))
        if component == "accumulator":
            adder = self.mac["add_fp32"] if bf16 else self.mac["add_32bit"]
            return self.toggle["accumulator"] + adder / (ref * 32)
        return self.toggle[component]

    def sram_access(self, width_bits: int, depth: int) -> float:
        """One access of ``width_bits`` to an SRAM of ``depth`` such words."""
        kib = depth * width_bits / 8 / 1024
        pts = self.sram_points
        if len(pts) == 1:
            per64 = pts[0][1]
        else:
            i = 0 if kib <= pts[0][0] else len(pts) - 2
            for j in range(len(pts) - 1):
                if pts[j][0] <= kib <= pts[j + 1][0]:
                    i = j
            (k0, e0), (k1, e1) = pts[i], pts[i + 1]
            slope = math.log(e1 / e0) / math.log(k1 / k0)
            per64 = e0 * (kib / k0) ** slope
        return per64 * width_bits / 64


def _fail(path, key: str, problem: str) -> CoefficientsError:
    return CoefficientsError(f"{path}: {key}: {problem}")


def _figure(path, key: str, entry) -> float:
    if not isinstance(entry, dict) or set(entry) != {"value", "source"}:
        raise _fail(path, key, 'must be a table { value = <number>, source = "..." }')
    value, source = entry["value"], entry["source"]
    if not is_number(value) or not math.isfinite(value):
        raise _fail(path, key, f"value must be a number, not {value!r}")
    if value < 0:
        raise _fail(path, key, f"value must be >= 0, not {value}")
    if not isinstance(source, str) or not source.strip():
        raise _fail(path, key, "source must name where the figure comes from")
    return float(value)


def load_coefficients(path: str | Path | None = None) -> Coefficients:
    """Read and validate a coefficients file (TOML; the default when ``path`` is None).

    Unknown or missing keys, negative or non-numeric values and figures without a source are
    rejected with :class:`CoefficientsError` naming the file and the key."""
    path = Path(path) if path is not None else DEFAULT_COEFFICIENTS
    try:
        raw = tomllib.loads(path.read_text())
    except OSError as e:
        raise CoefficientsError(f"{path}: cannot read: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise CoefficientsError(f"{path}: not valid TOML: {e}") from None
    for key in ("name", "technology"):
        if not isinstance(raw.get(key), str):
            raise _fail(path, key, "missing (a string)")
    for key in raw:
        if key not in _SCHEMA and key not in ("name", "technology"):
            raise _fail(path, key, f"unknown key; expected one of {', '.join(_SCHEMA)}")
    sections: dict[str, dict] = {}
    for section, names in _SCHEMA.items():
        if section not in raw:
            raise _fail(path, section, "missing")
        if names is None:
            continue
        table = raw[section]
        if not isinstance(table, dict):
            raise _fail(path, section, "must be a table")
        for key in table:
            if key not in names:
                expected = ", ".join(names)
                raise _fail(path, f"{section}.{key}", f"unknown key; expected one of {expected}")
        for key in names:
            if key not in table:
                raise _fail(path, f"{section}.{key}", "missing")
        sections[section] = {k: table[k] for k in names}
    points = sections["sram"]["points"]
    if not isinstance(points, list) or not points:
        raise _fail(path, "sram.points", "must be a non-empty list of {kib, pj_per_64bit, source}")
    parsed = []
    for i, point in enumerate(points):
        key = f"sram.points[{i}]"
        if not isinstance(point, dict) or set(point) != {"kib", "pj_per_64bit", "source"}:
            raise _fail(path, key, "must be a table { kib, pj_per_64bit, source }")
        kib = _figure(path, f"{key}.kib", {"value": point["kib"], "source": point["source"]})
        pj = _figure(path, f"{key}.pj_per_64bit",
                     {"value": point["pj_per_64bit"], "source": point["source"]})  # fmt: skip
        if kib <= 0 or pj <= 0:
            raise _fail(path, key, "kib and pj_per_64bit must be > 0")
        parsed.append((kib, pj))
    parsed.sort()
    if len({k for k, _ in parsed}) != len(parsed):
        raise _fail(path, "sram.points", "two points have the same kib")

    def figures(section: str, skip=()) -> dict[str, float]:
        return {
            k: _figure(path, f"{section}.{k}", v)
            for k, v in sections[section].items()
            if k not in skip
        }

    mac = figures("mac")
    if mac["reference_activity"] <= 0 or mac["reference_activity"] > 1:
        raise _fail(path, "mac.reference_activity", "value must be in (0, 1]")
    clock_mhz = _figure(path, "clock_mhz", raw["clock_mhz"])
    if clock_mhz <= 0:
        raise _fail(path, "clock_mhz", "value must be > 0")
    return Coefficients(
        name=raw["name"],
        technology=raw["technology"],
        clock_mhz=clock_mhz,
        mac=mac,
        toggle=figures("toggle"),
        sram_points=tuple(parsed),
        sram_write_factor=figures("sram", skip=("points",))["write_factor"],
        dram_access_64bit=figures("dram")["access_64bit"],
        clock_per_flop_bit=figures("clock")["per_flop_bit"],
        leakage=figures("leakage"),
        path=str(path),
    )


@dataclass
class EnergyReport:
    """Energy of one GEMM (pJ), split by component and by traffic class."""

    components: dict[str, float]
    traffic: dict[str, dict[str, float]]  # class -> level -> pJ (compute/overhead: "array")
    macs: int
    cycles: int
    clock_mhz: float
    coefficients: str
    source: str  # "toggles" (measured in RTL) or "model"
    notes: list[str] = field(default_factory=list)

    @property
    def total(self) -> float:
        return sum(self.components.values())

    @property
    def activity(self) -> float:
        """The part priced from bit flips (the rest follows from counters and cycles)."""
        return sum(self.components[c] for c in COMPONENTS)

    @property
    def pj_per_mac(self) -> float:
        return self.total / self.macs if self.macs else 0.0

    @property
    def seconds(self) -> float:
        return self.cycles / (self.clock_mhz * 1e6)

    @property
    def power_mw(self) -> float:
        """Average power while busy, at ``clock_mhz``."""
        return self.total * 1e-12 / self.seconds * 1e3 if self.cycles else 0.0

    def to_dict(self) -> dict:
        return {
            "source": self.source,
            "coefficients": self.coefficients,
            "total_pj": self.total,
            "activity_pj": self.activity,
            "pj_per_mac": self.pj_per_mac,
            "power_mw": self.power_mw,
            "clock_mhz": self.clock_mhz,
            "components_pj": self.components,
            "traffic_pj": self.traffic,
            "notes": self.notes,
        }


def clock_pj_per_cycle(config: ArrayConfig, co: Coefficients) -> float:
    """The mesh's clock energy per cycle: every register bit's clock pin, busy or idle (no
    clock gating)."""
    return sum(datapath_flop_bits(config).values()) * co.clock_per_flop_bit


def leakage_pj_per_cycle(config: ArrayConfig, co: Coefficients) -> float:
    """Leakage per cycle of the coefficients' clock (a power: ``* clock_mhz * 1e-6`` is mW):
    per PE and per KiB of buffer SRAM."""
    width = {name: word.bits for name, word in layouts(config).items()}
    depth = {"a": config.a_depth, "b": config.b_depth, "c": config.c_depth}
    sram_kib = sum(depth[b] * width[b] for b in "abc") / 8 / 1024
    return co.leakage["per_pe"] * config.pes + co.leakage["per_sram_kib"] * sram_kib


def energy(
    config: ArrayConfig,
    counters: dict[str, int],
    offchip_words: dict[str, int],
    toggles: dict[tuple[str, str], int],
    macs: int,
    coefficients: Coefficients | None = None,
    *,
    source: str = "toggles",
) -> EnergyReport:
    """Price one GEMM (see the module docstring). ``toggles`` maps ``(component, traffic)`` to
    bit flips while busy, as :func:`sim.simulate.run_gemm` (``activity=True``) returns them."""
    co = coefficients or load_coefficients()
    comp = dict.fromkeys(ENERGY_COMPONENTS, 0.0)
    traffic = {t: dict.fromkeys(LEVELS, 0.0) for t in DATA_TRAFFIC}
    traffic |= {"compute": {"array": 0.0}, "overhead": {"array": 0.0}}

    def add(component: str, klass: str, level: str, pj: float) -> None:
        comp[component] += pj
        traffic[klass][level] += pj

    for (component, klass), flips in toggles.items():
        if component not in COMPONENTS:
            raise ValueError(f"unknown activity component {component!r}")
        if component == "multiplier":
            add(component, "compute", "array", flips * co.per_toggle(component, config))
        elif component == "accumulator":
            adder = co.per_toggle(component, config) - co.toggle["accumulator"]  # the rest
            add(component, "compute", "array", flips * adder)
            add(component, klass, "array", flips * co.toggle["accumulator"])
        elif component == "control" or klass == "control":
            add(component, "overhead", "array", flips * co.per_toggle(component, config))
        else:
            level = "buffer" if component == "buffer" else "array"
            add(component, klass, level, flips * co.per_toggle(component, config))

    width = {name: word.bits for name, word in layouts(config).items()}
    depth = {"a": config.a_depth, "b": config.b_depth, "c": config.c_depth}
    read = {b: co.sram_access(width[b], depth[b]) for b in "abc"}
    write = {b: read[b] * co.sram_write_factor for b in "abc"}
    c_final = offchip_words.get("c", 0)  # each finished C word is written once, read once
    accesses = [
        ("activation", counters["a_reads"] * read["a"] + offchip_words.get("a", 0) * write["a"]),
        ("weight", counters["b_reads"] * read["b"] + offchip_words.get("b", 0) * write["b"]),
        ("psum", counters["c_reads"] * read["c"] + (counters["c_writes"] - c_final) * write["c"]),
        ("output", c_final * (write["c"] + read["c"])),
    ]
    for klass, pj in accesses:
        add("sram", klass, "buffer", pj)
    for klass, buf in (("activation", "a"), ("weight", "b"), ("output", "c")):
        bits = offchip_words.get(buf, 0) * width[buf]
        add("dram", klass, "offchip", bits / 64 * co.dram_access_64bit)

    cycles = counters["cycles"]
    add("clock", "overhead", "array", cycles * clock_pj_per_cycle(config, co))
    add("leakage", "overhead", "array", cycles * leakage_pj_per_cycle(config, co))
    return EnergyReport(
        components=comp, traffic=traffic, macs=macs, cycles=cycles, clock_mhz=co.clock_mhz,
        coefficients=co.name, source=source,
    )  # fmt: skip


def figures_energy(
    fig, toggles: dict[tuple[str, str], int], coefficients: Coefficients | None = None, *,
    source: str,
) -> EnergyReport:  # fmt: skip
    """:func:`energy` of a :class:`contract.figures.GemmFigures` (a prediction or an RTL result)."""
    return energy(fig.config, fig.counters, fig.offchip_words, toggles, fig.macs, coefficients,
                  source=source)  # fmt: skip


def model_energy(
    config: ArrayConfig, a, b, coefficients: Coefficients | None = None
) -> EnergyReport:
    """The analytical energy of ``A @ B``: the model's counters and off-chip words, and bit flips
    predicted from the operands (:func:`models.toggles.predict_toggles`)."""
    (m, k), n = a.shape, b.shape[1]
    pred = predict(config, m, k, n)
    return figures_energy(pred, predict_toggles(config, a, b), coefficients, source="model")
