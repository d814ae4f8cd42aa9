"""Energy of a GEMM from its activity: logic events, memory accesses, cycles.

One pricing function serves both sides of the comparison: :func:`energy` turns toggle counts
(measured by an activity build of the RTL, or predicted by :mod:`models.toggles`) plus the
performance counters and off-chip words into an :class:`EnergyReport`. What it reads is one
technology description (:func:`load_coefficients`; ``models/coefficients/calibrated45.toml``
by default):

- **logic**: the events of :func:`models.logic.logic_events` (bit flips per register group,
  operations, clocked cycles), each at the price fitted to gate-level power at 0.18 um
  (``logic_osu018.toml``, :mod:`verify.logic_fit`), scaled to the technology's node by
  Stillmaker and Baas' energy factor (:mod:`models.technology`);
- **SRAM**: every buffer access at the read or write energy of the CACTI macro synthesis places
  for that buffer (:func:`models.sram.buffer_macros`, the one lookup both use);
- **DRAM**: every off-chip bit at its device's read or write energy
  (:func:`models.technology.dram_energy`: per memory preset, cited, or a memory's own);
- **leakage**: per PE and per SRAM KiB per cycle (stated assumptions).

Each of logic, SRAM and DRAM carries a range (:data:`UNCERTAIN`): the fit's error on held-out
points times the node scaling's, CACTI against published SRAM figures, the spread of the DRAM
device's sources. A report gives each term's energy, so a range can be taken at any corner,
with the same corner for two designs compared (:mod:`models.uncertainty`).
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path

from systolic.contract.activity import COMPONENTS
from systolic.contract.checks import is_number
from systolic.contract.config import ArrayConfig
from systolic.contract.dma import place
from systolic.contract.layouts import layouts
from systolic.contract.memory import DEFAULT_MEMORY, Dram, DramEnergy
from systolic.contract.registers import always_on_bits

from .device import DeviceFigures, predict_device
from .logic import TERMS, logic_events
from .sram import NODES as SRAM_NODES
from .sram import buffer_macros
from .technology import dram_energy, factor
from .toggles import flag_flips, predict_toggles, waiting_flips
from .uncertainty import FIT, energy_range

__all__ = [
    "DEFAULT_COEFFICIENTS",
    "ENERGY_COMPONENTS",
    "TRAFFIC_CLASSES",
    "UNCERTAIN",
    "Coefficients",
    "CoefficientsError",
    "EnergyReport",
    "idle_pj_per_cycle",
    "energy",
    "energy_terms",
    "figures_energy",
    "leakage_pj_per_cycle",
    "load_coefficients",
    "model_energy",
]

DEFAULT_COEFFICIENTS = Path(__file__).parent / "coefficients" / "calibrated45.toml"

#: The rows of the component split, in report order: the toggle groups, the mesh's clock (its
#: flip-flops and per-PE logic every cycle), the rest of the device's logic per cycle, leakage,
#: and the memories.
ENERGY_COMPONENTS = (*COMPONENTS, "clock", "device", "leakage", "sram", "dram")
#: The terms whose prices carry a range, and the components each covers.
UNCERTAIN = {
    "logic": (*COMPONENTS, "clock", "device", "leakage"),
    "sram": ("sram",),
    "dram": ("dram",),
}
#: The traffic split: data classes by level, then compute and overhead.
DATA_TRAFFIC = ("activation", "weight", "psum", "output")
#: Every class of the traffic split.
TRAFFIC_CLASSES = (*DATA_TRAFFIC, "compute", "overhead")
LEVELS = ("array", "buffer", "offchip")

# What a technology file holds: section -> names (figures are {value, source}, ranges
# {low, high, source}).
_SCHEMA = {
    "clock_mhz": None,
    "node_nm": None,
    "logic": ("file", "node_range"),
    "sram": ("range",),
    "leakage": ("per_pe", "per_sram_kib"),
}
_TOP = ("name", "technology")


def energy_terms(components: dict[str, float]) -> dict[str, float]:
    """The energy of each uncertain term (:data:`UNCERTAIN`) from a split by component."""
    return {t: sum(components.get(c, 0.0) for c in comps) for t, comps in UNCERTAIN.items()}


class CoefficientsError(ValueError):
    """A coefficients file that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class Coefficients:
    """A validated technology description (see the default file for each figure's source).

    ``logic`` holds the fitted prices (pJ per event of :data:`models.logic.TERMS`) at
    ``logic_node_nm``; :attr:`node_factor` carries them to ``node_nm``, the node every figure
    of a report is given at. Ranges are ``(low, high)`` factors of the nominal figure."""

    name: str
    technology: str
    node_nm: int
    clock_mhz: float
    logic: dict[str, float]
    logic_node_nm: int
    logic_source: str
    logic_range: tuple[float, float]  # the fit's error on held-out points (int8)
    node_range: tuple[float, float]  # the node scaling's
    precision_ranges: dict[str, tuple[float, float]]  # the fit's on int16's and bf16's points
    sram_range: tuple[float, float]
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

    @property
    def node_factor(self) -> float:
        """Logic energy at ``node_nm`` over the same at ``logic_node_nm``."""
        return factor("energy", self.logic_node_nm, self.node_nm)

    def price(self, term: str) -> float:
        """pJ per event of ``term`` at the technology's node."""
        return self.logic[term] * self.node_factor

    def ranges(self, dram: DramEnergy, config: ArrayConfig | None = None
               ) -> dict[str, tuple[float, float]]:  # fmt: skip
        """Each uncertain term's range (:data:`UNCERTAIN`) behind the DRAM device ``dram``,
        shared between designs (the node scaling's on logic, SRAM's, DRAM's), and the logic
        fit's own for ``config``'s arithmetic (:data:`models.uncertainty.FIT`)."""
        return {"logic": self.node_range, "sram": self.sram_range, "dram": dram.spread,
                FIT: self.fit_range(config)}  # fmt: skip

    def fit_range(self, config: ArrayConfig | None) -> tuple[float, float]:
        """The logic fit's range for ``config``'s arithmetic: int16's or bf16's points where
        the logic file has them, else the int8 held-out points'."""
        kind = fit_kind(config) if config is not None else "int8"
        return self.precision_ranges.get(kind, self.logic_range)


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


def _range(path, key: str, entry) -> tuple[float, float]:
    if not isinstance(entry, dict) or set(entry) != {"low", "high", "source"}:
        raise _fail(path, key, "must be a table { low = <factor>, high = <factor>, "
                               'source = "..." }')  # fmt: skip
    low, high = entry["low"], entry["high"]
    for name, value in (("low", low), ("high", high)):
        if not is_number(value) or not math.isfinite(value) or value <= 0:
            raise _fail(path, key, f"{name} must be a positive number, not {value!r}")
    if not low <= 1 <= high:
        raise _fail(path, key, f"the range must hold the nominal figure: low <= 1 <= high, "
                               f"not [{low}, {high}]")  # fmt: skip
    if not isinstance(entry["source"], str) or not entry["source"].strip():
        raise _fail(path, key, "source must say where the range comes from")
    return float(low), float(high)


def _toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text())
    except OSError as e:
        raise CoefficientsError(f"{path}: cannot read: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise CoefficientsError(f"{path}: not valid TOML: {e}") from None


def fit_kind(config: ArrayConfig) -> str:
    """The arithmetic a configuration's logic fit range is for: ``bf16``, ``int16`` (operands
    wider than 8 bits) or ``int8`` (the fitted width and narrower)."""
    if config.number == "bf16":
        return "bf16"
    return "int16" if max(config.a_width, config.b_width) > 8 else "int8"


def _logic_file(path: Path) -> tuple[dict[str, float], int, str, tuple[float, float], dict]:
    """The fitted prices of a logic file: (prices, node, source, the fit's range, its ranges
    per arithmetic)."""
    raw = _toml(path)
    for key in raw:
        if key not in ("name", "node_nm", "cell_library", "source", "range", "price",
                       "precision_range"):  # fmt: skip
            raise _fail(path, key, "unknown key; expected name, node_nm, cell_library, source, "
                                   "range, precision_range, price")  # fmt: skip
    for key in ("name", "cell_library", "source"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise _fail(path, key, "missing (a string)")
    node = raw.get("node_nm")
    if node not in SRAM_NODES:
        raise _fail(path, "node_nm", f"must be one of {', '.join(map(str, SRAM_NODES))}, "
                                     f"not {node!r}")  # fmt: skip
    prices = raw.get("price")
    if not isinstance(prices, dict):
        raise _fail(path, "price", "missing (a table of term = pJ)")
    for key in prices:
        if key not in TERMS:
            raise _fail(path, f"price.{key}", f"unknown term; expected one of {', '.join(TERMS)}")
    for key in TERMS:
        value = prices.get(key)
        if not is_number(value) or not math.isfinite(value) or value < 0:
            raise _fail(path, f"price.{key}", f"must be a number >= 0, not {value!r}")
    if "range" not in raw:
        raise _fail(path, "range", "missing")
    kinds = raw.get("precision_range", {})
    if not isinstance(kinds, dict) or not set(kinds) <= {"int16", "bf16"}:
        raise _fail(path, "precision_range", "must be a table of int16 and bf16 ranges")
    by_kind = {k: _range(path, f"precision_range.{k}", v) for k, v in kinds.items()}
    return ({k: float(prices[k]) for k in TERMS}, int(node), f"{raw['source']} ({path.name})",
            _range(path, "range", raw["range"]), by_kind)  # fmt: skip


def load_coefficients(path: str | Path | None = None) -> Coefficients:
    """Read and validate a technology file (TOML; the default when ``path`` is None) and the
    logic file it names (relative to it).

    Unknown or missing keys, negative or non-numeric values, ranges that leave out their
    nominal figure and figures without a source are rejected with :class:`CoefficientsError`
    naming the file and the key."""
    path = Path(path) if path is not None else DEFAULT_COEFFICIENTS
    raw = _toml(path)
    for key in _TOP:
        if not isinstance(raw.get(key), str):
            raise _fail(path, key, "missing (a string)")
    for key in raw:
        if key not in _SCHEMA and key not in _TOP:
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
        sections[section] = table
    node = raw["node_nm"]
    if node not in SRAM_NODES:
        raise _fail(path, "node_nm", f"must be one of {', '.join(map(str, SRAM_NODES))}, "
                                     f"not {node!r}")  # fmt: skip
    clock_mhz = _figure(path, "clock_mhz", raw["clock_mhz"])
    if clock_mhz <= 0:
        raise _fail(path, "clock_mhz", "value must be > 0")
    logic_path = path.parent / str(sections["logic"]["file"])
    prices, logic_node, logic_source, logic_range, by_kind = _logic_file(logic_path)
    return Coefficients(
        name=raw["name"], technology=raw["technology"], node_nm=int(node), clock_mhz=clock_mhz,
        logic=prices, logic_node_nm=logic_node, logic_source=logic_source,
        logic_range=logic_range,
        node_range=_range(path, "logic.node_range", sections["logic"]["node_range"]),
        precision_ranges=by_kind,
        sram_range=_range(path, "sram.range", sections["sram"]["range"]),
        leakage={k: _figure(path, f"leakage.{k}", v) for k, v in sections["leakage"].items()},
        path=str(path),
    )  # fmt: skip


@dataclass
class EnergyReport:
    """Energy of one GEMM (pJ), split by component and by traffic class, with the energy of
    each uncertain term and its range (:data:`UNCERTAIN`)."""

    components: dict[str, float]
    traffic: dict[str, dict[str, float]]  # class -> level -> pJ (compute/overhead: "array")
    macs: int
    cycles: int
    clock_mhz: float
    coefficients: str
    source: str  # "toggles" (measured in RTL) or "model"
    dram: str = ""  # what priced the DRAM bits
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def total(self) -> float:
        return sum(self.components.values())

    @property
    def terms(self) -> dict[str, float]:
        """The energy of each uncertain term (they add up to the total)."""
        return energy_terms(self.components)

    @property
    def low(self) -> float:
        return energy_range(self.terms, self.ranges)[0]

    @property
    def high(self) -> float:
        return energy_range(self.terms, self.ranges)[1]

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
            "range_pj": [self.low, self.high],
            "terms_pj": self.terms,
            "ranges": {t: list(r) for t, r in self.ranges.items()},
            "dram": self.dram,
            "activity_pj": self.activity,
            "pj_per_mac": self.pj_per_mac,
            "power_mw": self.power_mw,
            "clock_mhz": self.clock_mhz,
            "components_pj": self.components,
            "traffic_pj": self.traffic,
            "notes": self.notes,
        }


def _sram_kib(config: ArrayConfig) -> float:
    width = {name: word.bits for name, word in layouts(config).items()}
    depth = {"a": config.a_depth, "b": config.b_depth, "c": config.c_depth}
    return sum(depth[b] * width[b] for b in "abc") / 8 / 1024


def idle_pj_per_cycle(config: ArrayConfig, co: Coefficients) -> float:
    """What the idle device's logic spends a cycle, its gated clock stopped (rtl.clock_gate):
    the clock pins of the flip-flops it clocks always (:func:`contract.registers.always_on_bits`,
    the control registers and the descriptor queue), each at a mesh flip-flop's clock price
    (measured at 0.18 um: 28.3 mW for 1,275 such bits at 100 MHz, the model 27.7 mW)."""
    return always_on_bits(config) * (co.price("mesh_clock") + co.price("clock_tree"))


def leakage_pj_per_cycle(config: ArrayConfig, co: Coefficients) -> float:
    """Leakage per cycle of the coefficients' clock (a power: ``* clock_mhz * 1e-6`` is mW):
    per PE and per KiB of buffer SRAM."""
    return co.leakage["per_pe"] * config.pes + co.leakage["per_sram_kib"] * _sram_kib(config)


def energy(
    config: ArrayConfig,
    counters: dict[str, int],
    offchip_words: dict[str, int],
    toggles: dict[tuple[str, str], int],
    macs: int,
    coefficients: Coefficients | None = None,
    *,
    source: str = "toggles",
    dram: DramEnergy | None = None,
    shape: tuple[int, int, int] | None = None,
    expanded: int = 0,
) -> EnergyReport:
    """Price one GEMM (see the module docstring). ``toggles`` maps ``(component, traffic)`` to
    bit flips while busy, as :func:`sim.simulate.run_gemm` (``activity=True``) returns them;
    ``dram`` prices the off-chip bits (default: the default memory's device); the GEMM's
    ``shape`` gives its PEs' flag flips (:func:`models.toggles.flag_flips`; none without). A
    convolution descriptor's A words come through the staging buffer: ``expanded`` A words
    written into the A buffer, each read from the staging buffer, which the off-chip A words
    were written into (0: a GEMM, its off-chip A words written into the A buffer)."""
    co = coefficients or load_coefficients()
    dram = dram or dram_energy(None)
    comp = dict.fromkeys(ENERGY_COMPONENTS, 0.0)
    traffic = {t: dict.fromkeys(LEVELS, 0.0) for t in DATA_TRAFFIC}
    traffic |= {"compute": {"array": 0.0}, "overhead": {"array": 0.0}}

    def add(component: str, klass: str, level: str, pj: float) -> None:
        comp[component] += pj
        traffic[klass][level] += pj

    flags = flag_flips(config, *shape) if shape else 0
    for term, klass, count in logic_events(config, counters, toggles, flags=flags):
        component = TERMS[term][0]
        level = "buffer" if component == "buffer" and klass in DATA_TRAFFIC else "array"
        add(component, klass, level, count * co.price(term))

    macros = buffer_macros(config, co.node_nm)
    read = {b: macros[b].read_pj for b in "abc"}
    write = {b: macros[b].write_pj for b in "abc"}
    c_final = offchip_words.get("c", 0)  # each finished C word is written once, read once
    a_in, staging = offchip_words.get("a", 0), 0.0
    if expanded:  # off-chip words into the staging buffer, expanded words out of it into A
        staging = a_in * macros["staging"].write_pj + expanded * macros["staging"].read_pj
        a_in = expanded
    accesses = [
        ("activation", counters["a_reads"] * read["a"] + a_in * write["a"] + staging),
        ("weight", counters["b_reads"] * read["b"] + offchip_words.get("b", 0) * write["b"]),
        ("psum", counters["c_reads"] * read["c"] + (counters["c_writes"] - c_final) * write["c"]),
        ("output", c_final * (write["c"] + read["c"])),
    ]
    for klass, pj in accesses:
        add("sram", klass, "buffer", pj)
    width = {name: word.bits for name, word in layouts(config).items()}
    for klass, buf in (("activation", "a"), ("weight", "b"), ("output", "c")):
        bits = offchip_words.get(buf, 0) * width[buf]
        per_bit = dram.write_pj_per_bit if buf == "c" else dram.read_pj_per_bit
        add("dram", klass, "offchip", bits * per_bit)

    add("leakage", "overhead", "array", counters["cycles"] * leakage_pj_per_cycle(config, co))
    return EnergyReport(
        components=comp, traffic=traffic, macs=macs, cycles=counters["cycles"],
        clock_mhz=co.clock_mhz, coefficients=co.name, source=source, dram=dram.source,
        ranges=co.ranges(dram, config),
    )  # fmt: skip


def figures_energy(
    fig, toggles: dict[tuple[str, str], int], coefficients: Coefficients | None = None, *,
    source: str, dram: DramEnergy | None = None, expanded: int = 0,
) -> EnergyReport:  # fmt: skip
    """:func:`energy` of a :class:`contract.figures.GemmFigures` (a prediction or an RTL result;
    ``expanded``: a convolution descriptor's A words expanded, as :func:`energy` takes). A
    model's toggles count the chunks' closed forms: the device's waits for words to land add
    their control flips (:func:`models.toggles.waiting_flips`; measured toggles have them)."""
    d = getattr(fig, "descriptor", None)
    if source == "model" and d is not None:
        toggles = dict(toggles)
        waits = waiting_flips(fig.config, d, fig.counters["compute_cycles"])
        toggles[("control", "control")] = toggles.get(("control", "control"), 0) + waits
    return energy(fig.config, fig.counters, fig.offchip_words, toggles, fig.macs, coefficients,
                  source=source, dram=dram, shape=fig.shape, expanded=expanded)  # fmt: skip


def model_energy(
    config: ArrayConfig, a, b, coefficients: Coefficients | None = None, *,
    memory: Dram = DEFAULT_MEMORY, dram: DramEnergy | None = None,
) -> EnergyReport:  # fmt: skip
    """The analytical energy of ``A @ B`` run as the driver runs it behind ``memory``: the exact
    device model's counters (the whole descriptor's cycles, which the clock pays for) and
    off-chip words, and bit flips predicted from the operands
    (:func:`models.toggles.predict_toggles`)."""
    (m, k), n = a.shape, b.shape[1]
    d = place(config, m, k, n)
    fig = DeviceFigures(config, (m, k, n), d, dict(predict_device(config, d, memory)))
    return figures_energy(fig, predict_toggles(config, a, b), coefficients, source="model",
                          dram=dram)  # fmt: skip
