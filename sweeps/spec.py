"""Sweep specifications: a YAML file naming configurations and workloads to cross.

Validated whole before anything runs; every error names the file, the line and the key::

    name: example
    configs:                    # lists are crossed
      dataflow: [ws, os, is]
      array: [8x8, 16x16]       # ROWSxCOLS
      precision: [int8, bf16]   # int4, int8, int16 (accumulators 16, 32, 48 bits) or bf16
      depth: [4096]             # words of each buffer
    workloads:
      - transformer: bert-base  # bert-base, bert-large, gpt2-small
        batch: [1, 8]
        seq: [128]
        phase: [prefill, decode]  # decode: one token per sequence, a KV cache of seq tokens
      - cnn: resnet50           # resnet50, mobilenet-v1
        batch: [1]
      - scalesim: my_topology.csv   # relative to this file; form: conv | gemm (optional)
      - onnx: my_model.onnx     # relative to this file: MatMul, Gemm and Conv nodes as GEMMs
        batch: [1, 8]           # values of the graph's symbolic batch and sequence dimensions
        seq: [128]
        dims: {heads: 12}       # any other symbolic dimension, by name
      - gemm: {m: 64, k: 64, n: 64}
        rtl: false              # any workload: never simulate it (model only)
    memory:                     # DRAM behind the device, crossed with the rest (default:
      - lpddr4x-4266-x32        # lpddr4x-4266-x32); a preset or its numbers at the clock
      - {name: slow, gb_per_s: 8, latency_ns: 120, max_requests: 32}  # of the coefficients
    evaluate:
      rtl: sample               # none | all | sample | pareto: which points also run in RTL
                                # (at the first memory only)
      sample: 4                 # how many, for rtl: sample
      max_macs: 300000000       # RTL only where the simulated MACs are at most this
      timeout: 900              # seconds per simulator process
      rtl_precision: [int8]     # only these precisions' configurations run RTL (default: all)
      synth: true               # synthesize each configuration once (0.18 um): area, Fmax and
                                # leakage on every point, which runs at its own Fmax
      clock_mhz: 100            # the clock of every point (with synth: where it meets timing,
                                # else at its Fmax; default: the coefficients' clock)
    data: random                # operand data: random, zeros, sparse:P
    seed: 0
    coefficients: my.toml       # energy coefficients (default: models/coefficients/horowitz45.toml)
    serving: serving.yaml       # a serving study (serving/spec.py) to run too; the report gains
                                # its section (relative to this file)
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from systolic.contract.checks import is_integer, is_number
from systolic.contract.config import PRECISIONS, ArrayConfig
from systolic.contract.memory import DRAM_PRESETS, Dram
from systolic.golden.data import DataKind
from systolic.models.energy import CoefficientsError, load_coefficients
from systolic.sweeps.onnx_graph import onnx_workload
from systolic.sweeps.workloads import (
    CNNS,
    PHASES,
    TRANSFORMERS,
    Gemm,
    Workload,
    WorkloadError,
    cnn,
    read_scalesim_topology,
)
from systolic.sweeps.workloads import transformer as transformer_workload

__all__ = [
    "PRECISION_NAMES",
    "RTL_MODES",
    "Memory",
    "SpecDoc",
    "SpecError",
    "Sweep",
    "as_list",
    "integer",
    "load_spec",
    "mapping",
    "parse_configs",
    "parse_memories",
]

#: Precision names of the spec: the integer presets of contract.config, and bf16.
PRECISION_NAMES = (*PRECISIONS, "bf16")
RTL_MODES = ("none", "all", "sample", "pareto")

_TOP_KEYS = (
    "name",
    "configs",
    "workloads",
    "memory",
    "evaluate",
    "data",
    "seed",
    "coefficients",
    "serving",
)
_MEMORY_KEYS = ("name", "preset", "gb_per_s", "latency_ns", "max_requests")

#: The memory of a spec that names none.
DEFAULT_MEMORY_PRESET = "lpddr4x-4266-x32"
_CONFIG_KEYS = ("dataflow", "array", "precision", "depth")
_EVALUATE_KEYS = ("rtl", "sample", "max_macs", "timeout", "rtl_precision", "synth", "clock_mhz")


class SpecError(ValueError):
    """An invalid sweep specification; the message names the file, line and key."""


@dataclass(frozen=True)
class Memory:
    """A DRAM of the memory axis, in physical units (seen in cycles at the sweep's clock)."""

    name: str
    gb_per_s: float
    latency_ns: float
    max_requests: int = 64

    @classmethod
    def preset(cls, name: str) -> Memory:
        gbps, ns, requests = DRAM_PRESETS[name]
        return cls(name, gbps, ns, requests)

    def at(self, clock_mhz: float) -> Dram:
        """The DRAM in bytes and cycles of a clock of ``clock_mhz``."""
        return Dram.physical(self.gb_per_s, self.latency_ns, clock_mhz / 1000, self.max_requests)

    def to_dict(self) -> dict:
        return {"name": self.name, "gb_per_s": self.gb_per_s, "latency_ns": self.latency_ns,
                "max_requests": self.max_requests}  # fmt: skip


@dataclass
class Sweep:
    """A validated sweep: every configuration crossed with every workload."""

    name: str
    path: Path
    configs: list[ArrayConfig]
    workloads: list[Workload]
    rtl: str = "none"
    sample: int = 4
    max_macs: int = 300_000_000
    timeout: float = 900.0
    data: str = "random"
    seed: int = 0
    coefficients: Path | None = None
    serving: Path | None = None  # a serving study (serving/spec.py) the sweep runs too
    model_only: set[str] = field(default_factory=set)  # workloads marked rtl: false
    rtl_precision: set[str] = field(default_factory=lambda: set(PRECISION_NAMES))
    memories: list[Memory] = field(default_factory=lambda: [Memory.preset(DEFAULT_MEMORY_PRESET)])
    synth: bool = False  # synthesize every configuration (sweeps/synthesis.py)
    clock_mhz: float | None = None  # every point's clock (None: the coefficients')

    @property
    def points(self) -> int:
        return len(self.configs) * len(self.workloads) * len(self.memories)


class SpecDoc:
    """The parsed YAML and the line of every key and list item, for error messages."""

    def __init__(self, path: Path, text: str):
        self.path = path
        self.lines: dict[tuple, int] = {}
        try:
            loader = yaml.SafeLoader(text)
            try:
                node = loader.get_single_node()
                self.data = loader.construct_document(node) if node is not None else None
            finally:
                loader.dispose()
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f":{mark.line + 1}" if mark else ""
            raise SpecError(f"{path}{where}: not valid YAML: {getattr(e, 'problem', e)}") from None
        if node is not None:
            self._walk(node, ())

    def _walk(self, node, path: tuple) -> None:
        self.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                self.lines[(*path, key.value)] = key.start_mark.line + 1
                self._walk(value, (*path, key.value))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                self._walk(item, (*path, i))

    def error(self, path: tuple, message: str) -> SpecError:
        while path and path not in self.lines:
            path = path[:-1]
        line = self.lines.get(path, 1)
        key = ".".join(str(p) for p in path) or "(top)"
        return SpecError(f"{self.path}:{line}: {key}: {message}")


def mapping(doc: SpecDoc, value, path: tuple, keys: tuple[str, ...]) -> dict:
    if not isinstance(value, dict):
        raise doc.error(path, f"must be a mapping with keys {', '.join(keys)}")
    for key in value:
        if key not in keys:
            raise doc.error((*path, key), f"unknown key; expected one of {', '.join(keys)}")
    return value


def as_list(doc: SpecDoc, value, path: tuple) -> list:
    items = value if isinstance(value, list) else [value]
    if not items:
        raise doc.error(path, "must not be empty")
    return items


def integer(doc: SpecDoc, value, path: tuple, lo: int = 1) -> int:
    if not is_integer(value) or value < lo:
        raise doc.error(path, f"must be an integer >= {lo}, not {value!r}")
    return value


def parse_configs(doc: SpecDoc, raw) -> list[ArrayConfig]:
    path = ("configs",)
    raw = mapping(doc, raw, path, _CONFIG_KEYS)
    for key in ("dataflow", "array"):
        if key not in raw:
            raise doc.error(path, f"missing key {key!r}")
    axes = {}
    for key in _CONFIG_KEYS:
        default = {"precision": ["int8"], "depth": [4096]}.get(key)
        axes[key] = as_list(doc, raw.get(key, default), (*path, key))
    arrays = []
    for i, text in enumerate(axes["array"]):
        shape = str(text).lower().split("x")
        if len(shape) != 2 or not all(s.strip().isdigit() for s in shape):
            where = (*path, "array", i) if isinstance(raw["array"], list) else (*path, "array")
            raise doc.error(where, f"must be ROWSxCOLS like 8x8, not {text!r}")
        arrays.append((int(shape[0]), int(shape[1])))
    for p in axes["precision"]:
        if p not in PRECISION_NAMES:
            raise doc.error(
                (*path, "precision"), f"must be one of {', '.join(PRECISION_NAMES)}, not {p!r}"
            )
    configs = []
    for dataflow, (rows, cols), precision, depth in itertools.product(
        axes["dataflow"], arrays, axes["precision"], axes["depth"]
    ):
        if precision == "bf16":
            arith = {"number": "bf16"}
        else:
            width, acc = PRECISIONS[precision]
            arith = {"a_width": width, "b_width": width, "acc_width": acc}
        try:
            configs.append(
                ArrayConfig(
                    dataflow, rows, cols, a_depth=depth, b_depth=depth, c_depth=depth, **arith
                )  # fmt: skip
            )
        except (ValueError, TypeError) as e:
            text = str(e)
            axis = next((a for a, words in (("array", ("rows", "cols")), ("depth", ("depth",)),
                                            ("dataflow", ("dataflow",)))
                         if any(w in text for w in words)), None)  # fmt: skip
            raise doc.error((*path, axis) if axis else path, text) from None
    return configs


def parse_memories(doc: SpecDoc, raw) -> list[Memory]:
    path = ("memory",)
    out = []
    for i, item in enumerate(as_list(doc, raw, path)):
        where = (*path, i) if isinstance(raw, list) else path
        if isinstance(item, str):
            if item not in DRAM_PRESETS:
                raise doc.error(where, f"unknown memory preset {item!r}; presets: "
                                f"{', '.join(DRAM_PRESETS)}")  # fmt: skip
            out.append(Memory.preset(item))
            continue
        m = mapping(doc, item, where, _MEMORY_KEYS)
        if "preset" in m:
            if m["preset"] not in DRAM_PRESETS:
                raise doc.error((*where, "preset"), f"unknown memory preset {m['preset']!r}; "
                                f"presets: {', '.join(DRAM_PRESETS)}")  # fmt: skip
            base = Memory.preset(m["preset"])
        else:
            for key in ("gb_per_s", "latency_ns"):
                if key not in m:
                    raise doc.error(where, f"missing key {key!r} (or give a preset)")
            base = Memory("", 0.0, 0.0)
        values = {}
        for key in ("gb_per_s", "latency_ns"):
            value = m.get(key, getattr(base, key))
            if not is_number(value) or value <= 0:
                raise doc.error((*where, key), f"must be a positive number, not {value!r}")
            values[key] = float(value)
        requests = integer(doc, m.get("max_requests", base.max_requests), (*where, "max_requests"))
        if requests > 4096:
            raise doc.error((*where, "max_requests"), f"must be 1 to 4096, not {requests}")
        name = str(m.get("name", m.get("preset", f"{values['gb_per_s']:g}GB/s")))
        out.append(Memory(name, values["gb_per_s"], values["latency_ns"], requests))
    if not out:
        raise doc.error(path, "must name at least one memory")
    if len({m.name for m in out}) < len(out):
        raise doc.error(path, "memory names must differ (give each a name)")
    return out


def _workloads(doc: SpecDoc, raw, base: Path) -> tuple[list[Workload], set[str]]:
    """The workloads, and the names of those marked ``rtl: false`` (model only)."""
    items = raw if isinstance(raw, list) else None
    if not items:
        raise doc.error(("workloads",), "must be a non-empty list of workloads")
    out: list[Workload] = []
    model_only: set[str] = set()
    simulated: set[str] = set()
    kinds = ("transformer", "cnn", "scalesim", "onnx", "gemm")
    for i, item in enumerate(items):
        path = ("workloads", i)
        if not isinstance(item, dict):
            raise doc.error(path, f"must be a mapping naming one of {', '.join(kinds)}")
        named = [k for k in kinds if k in item]
        if len(named) != 1:
            raise doc.error(path, f"must name exactly one of {', '.join(kinds)}")
        kind = named[0]
        allowed = {
            "transformer": ("transformer", "batch", "seq", "phase"),
            "cnn": ("cnn", "batch"),
            "scalesim": ("scalesim", "batch", "form"),
            "onnx": ("onnx", "batch", "seq", "dims"),
            "gemm": ("gemm", "name", "count"),
        }[kind] + ("rtl",)
        mapping(doc, item, path, allowed)
        rtl = item.get("rtl", True)
        if not isinstance(rtl, bool):
            raise doc.error((*path, "rtl"), f"must be true or false, not {rtl!r}")
        first = len(out)
        # an ONNX model's batch defaults to the file's own (onnx_graph.onnx_workload)
        default = None if kind == "onnx" else 1
        batches = (
            [
                integer(doc, b, (*path, "batch"))
                for b in as_list(doc, item.get("batch", default), (*path, "batch"))
            ]
            if "batch" in item
            else [default]
        )
        try:
            if kind == "transformer":
                if item["transformer"] not in TRANSFORMERS:
                    raise doc.error(
                        (*path, "transformer"), f"must be one of {', '.join(TRANSFORMERS)}"
                    )
                seqs = [
                    integer(doc, s, (*path, "seq"))
                    for s in as_list(doc, item.get("seq", 128), (*path, "seq"))
                ]
                phases = as_list(doc, item.get("phase", "prefill"), (*path, "phase"))
                for phase in phases:
                    if phase not in PHASES:
                        raise doc.error((*path, "phase"), f"must be one of {', '.join(PHASES)}, "
                                        f"not {phase!r}")  # fmt: skip
                out += [
                    transformer_workload(item["transformer"], b, s, phase)
                    for phase in phases
                    for b in batches
                    for s in seqs
                ]
            elif kind == "cnn":
                if item["cnn"] not in CNNS:
                    raise doc.error((*path, "cnn"), f"must be one of {', '.join(CNNS)}")
                out += [cnn(item["cnn"], b) for b in batches]
            elif kind == "scalesim":
                file = base / str(item["scalesim"])
                out += [read_scalesim_topology(file, b, item.get("form")) for b in batches]
            elif kind == "onnx":
                file = base / str(item["onnx"])
                seqs = [
                    integer(doc, s, (*path, "seq"))
                    for s in as_list(doc, item.get("seq", [None]), (*path, "seq"))
                    if s is not None
                ] or [None]
                given = item.get("dims", {})
                if not isinstance(given, dict):
                    raise doc.error((*path, "dims"), "must map symbolic dimension names to values")
                dims = {str(k): integer(doc, v, (*path, "dims", k)) for k, v in given.items()}
                out += [onnx_workload(file, b, s, dims) for b in batches for s in seqs]
            else:
                dims = mapping(doc, item["gemm"], (*path, "gemm"), ("m", "k", "n"))
                for d in "mkn":
                    if d not in dims:
                        raise doc.error((*path, "gemm"), f"missing key {d!r}")
                m, k, n = (integer(doc, dims[d], (*path, "gemm", d)) for d in "mkn")
                count = integer(doc, item.get("count", 1), (*path, "count"))
                name = str(item.get("name", f"gemm {m}x{k}x{n}"))
                gemm = Gemm(name, m, k, n, count)
                out.append(Workload(name, name, "gemm", 1, None, (gemm,)))
        except WorkloadError as e:
            raise doc.error(path, str(e)) from None
        (model_only if not rtl else simulated).update(w.name for w in out[first:])
    # A workload named twice is one point per configuration: simulated if any entry allows it.
    unique = list({w.name: w for w in out}.values())
    return unique, model_only - simulated


def read_spec(path: Path, keys: tuple[str, ...], required: tuple[str, ...]) -> tuple[SpecDoc, dict]:
    """A YAML specification file, read whole: its document and its top-level mapping, whose keys
    are among ``keys`` and include ``required``."""
    try:
        text = path.read_text()
    except OSError as e:
        raise SpecError(f"{path}: cannot read: {e.strerror}") from None
    doc = SpecDoc(path, text)
    raw = mapping(doc, doc.data, (), keys)
    for key in required:
        if key not in raw:
            raise doc.error((), f"missing key {key!r}")
    return doc, raw


def coefficients_file(doc: SpecDoc, raw: dict, base: Path) -> Path | None:
    """The energy coefficients a specification names (relative to ``base``), checked."""
    if "coefficients" not in raw:
        return None
    path = base / str(raw["coefficients"])
    try:
        load_coefficients(path)
    except CoefficientsError as e:
        raise doc.error(("coefficients",), str(e)) from None
    return path


def load_spec(path: str | Path) -> Sweep:
    """Read and validate a sweep specification (see the module docstring)."""
    path = Path(path)
    doc, raw = read_spec(path, _TOP_KEYS, ("configs", "workloads"))
    workloads, model_only = _workloads(doc, raw["workloads"], path.parent)
    sweep = Sweep(
        name=str(raw.get("name", path.stem)),
        path=path,
        configs=parse_configs(doc, raw["configs"]),
        workloads=workloads,
        model_only=model_only,
    )
    if "memory" in raw:
        sweep.memories = parse_memories(doc, raw["memory"])
    ev = mapping(doc, raw.get("evaluate", {}), ("evaluate",), _EVALUATE_KEYS)
    sweep.rtl = ev.get("rtl", "none")
    if sweep.rtl not in RTL_MODES:
        raise doc.error(
            ("evaluate", "rtl"), f"must be one of {', '.join(RTL_MODES)}, not {sweep.rtl!r}"
        )
    sweep.sample = integer(doc, ev.get("sample", 4), ("evaluate", "sample"))
    rtl_precision = as_list(doc, ev.get("rtl_precision", list(PRECISION_NAMES)),
                          ("evaluate", "rtl_precision"))  # fmt: skip
    for p in rtl_precision:
        if p not in PRECISION_NAMES:
            names = ", ".join(PRECISION_NAMES)
            raise doc.error(("evaluate", "rtl_precision"),
                            f"must list precisions among {names}, not {p!r}")  # fmt: skip
    sweep.rtl_precision = set(rtl_precision)
    max_macs = ev.get("max_macs", sweep.max_macs)
    if isinstance(max_macs, float) and max_macs.is_integer():
        max_macs = int(max_macs)
    sweep.max_macs = integer(doc, max_macs, ("evaluate", "max_macs"))
    timeout = ev.get("timeout", sweep.timeout)
    if not is_number(timeout) or not math.isfinite(timeout) or timeout <= 0:
        raise doc.error(
            ("evaluate", "timeout"), f"must be a positive number of seconds, not {timeout!r}"
        )
    sweep.timeout = float(timeout)
    sweep.synth = ev.get("synth", False)
    if not isinstance(sweep.synth, bool):
        raise doc.error(("evaluate", "synth"), f"must be true or false, not {sweep.synth!r}")
    if "clock_mhz" in ev:
        clock = ev["clock_mhz"]
        if not is_number(clock) or not 1 <= clock <= 10_000:
            raise doc.error(("evaluate", "clock_mhz"),
                            f"must be a number of MHz from 1 to 10000, not {clock!r}")  # fmt: skip
        sweep.clock_mhz = float(clock)
    data = raw.get("data", "random")
    try:
        sweep.data = DataKind(str(data)).text
    except ValueError as e:
        raise doc.error(("data",), str(e)) from None
    sweep.seed = integer(doc, raw.get("seed", 0), ("seed",), lo=0)
    if "serving" in raw:
        sweep.serving = path.parent / str(raw["serving"])
        if not sweep.serving.is_file():
            raise doc.error(("serving",), f"no such serving study: {sweep.serving}")
    sweep.coefficients = coefficients_file(doc, raw, path.parent)
    return sweep
