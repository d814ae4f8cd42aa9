"""Reading YAML specifications (sweeps, serving studies): the document with the line of every
key, so that each error names the file, the line and the key, and the parsers of the sections the
studies share: configurations, memories, workloads and the energy coefficients file.

The formats themselves are documented in docs/specs.md."""

from __future__ import annotations

import itertools
from pathlib import Path

import yaml
from systolic.contract.checks import is_integer, is_number
from systolic.contract.config import DEFAULT_DEPTH, PRECISIONS, REQUANT_MAX_ACC, ArrayConfig
from systolic.contract.memory import DRAM_PRESETS, DramEnergy, Memory
from systolic.models.energy import CoefficientsError, load_coefficients
from systolic.workloads.library import (
    CNNS,
    PHASES,
    TRANSFORMERS,
    Gemm,
    Workload,
    WorkloadError,
    cnn,
    read_scalesim_topology,
)
from systolic.workloads.library import transformer as transformer_workload
from systolic.workloads.onnx_import import onnx_workload

__all__ = [
    "PRECISION_NAMES",
    "SpecDoc",
    "SpecError",
    "as_list",
    "coefficients_file",
    "integer",
    "mapping",
    "parse_configs",
    "parse_memories",
    "parse_workloads",
    "read_spec",
]

#: Precision names of a spec: the integer presets of contract.config, and bf16.
PRECISION_NAMES = (*PRECISIONS, "bf16")
_MEMORY_KEYS = (
    "name",
    "preset",
    "gb_per_s",
    "latency_ns",
    "max_requests",
    "read_pj_per_bit",
    "write_pj_per_bit",
    "low_pj_per_bit",
    "high_pj_per_bit",
    "energy_source",
)
#: A memory's own energy: what it must give (or none of), and what it may.
_ENERGY_KEYS = ("read_pj_per_bit", "write_pj_per_bit", "energy_source")
_ENERGY_RANGE = ("low_pj_per_bit", "high_pj_per_bit")
_CONFIG_KEYS = ("dataflow", "array", "precision", "depth", "requant", "vector", "stage_depth")


class SpecError(ValueError):
    """An invalid specification; the message names the file, line and key."""


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
        default = {"precision": ["int8"], "depth": [DEFAULT_DEPTH], "requant": [False],
                   "vector": [False], "stage_depth": [0]}.get(key)  # fmt: skip
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
    for key in ("requant", "vector"):
        for value in axes[key]:
            if not isinstance(value, bool):
                raise doc.error((*path, key), f"must list true or false, not {value!r}")
    for i, value in enumerate(axes["stage_depth"]):
        integer(doc, value, (*path, "stage_depth", i), lo=0)
    configs = []
    for dataflow, (rows, cols), precision, depth, requant, vector, stage in itertools.product(
        axes["dataflow"],
        arrays,
        axes["precision"],
        axes["depth"],
        dict.fromkeys(axes["requant"]),
        dict.fromkeys(axes["vector"]),
        dict.fromkeys(axes["stage_depth"]),
    ):
        if precision == "bf16":
            arith = {"number": "bf16"}
        else:
            width, acc = PRECISIONS[precision]
            arith = {"a_width": width, "b_width": width, "acc_width": acc}
        # the fused output path takes integer accumulators of at most 32 bits; other
        # precisions are kept without it (once)
        if requant and precision != "bf16" and arith["acc_width"] <= REQUANT_MAX_ACC:
            arith["requant"] = True
        elif requant and False in axes["requant"]:
            continue
        # the vector unit works on the fused path's outputs: kept without it (once) elsewhere
        if vector and arith.get("requant"):
            arith["vector"] = True
        elif vector and False in axes["vector"]:
            continue
        if stage:
            arith["stage_depth"] = stage
        try:
            configs.append(
                ArrayConfig(
                    dataflow, rows, cols, a_depth=depth, b_depth=depth, c_depth=depth, **arith
                )  # fmt: skip
            )
        except (ValueError, TypeError) as e:
            text = str(e)
            axis = next((a for a, words in (("stage_depth", ("stage_depth",)),
                                            ("array", ("rows", "cols")), ("depth", ("depth",)),
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
        energy = _memory_energy(doc, m, where)
        if energy is None and not base.device:
            raise doc.error(where, "a memory without a preset needs its energy per bit: "
                            f"{', '.join(_ENERGY_KEYS)}")  # fmt: skip
        out.append(Memory(name, values["gb_per_s"], values["latency_ns"], requests,
                          base.device, energy))  # fmt: skip
    if not out:
        raise doc.error(path, "must name at least one memory")
    if len({m.name for m in out}) < len(out):
        raise doc.error(path, "memory names must differ (give each a name)")
    return out


def _memory_energy(doc: SpecDoc, m: dict, where: tuple) -> DramEnergy | None:
    """A memory's own energy per bit, when it gives one (all of :data:`_ENERGY_KEYS`; the range
    defaults to the read figure alone)."""
    given = [k for k in (*_ENERGY_KEYS, *_ENERGY_RANGE) if k in m]
    if not given:
        return None
    missing = [k for k in _ENERGY_KEYS if k not in m]
    if missing:
        raise doc.error(where, f"a memory's own energy needs {', '.join(_ENERGY_KEYS)}; "
                        f"missing {', '.join(missing)}")  # fmt: skip
    read = m["read_pj_per_bit"]
    try:
        return DramEnergy(read, m["write_pj_per_bit"], m.get("low_pj_per_bit", read),
                          m.get("high_pj_per_bit", read), m["energy_source"])  # fmt: skip
    except ValueError as e:
        raise doc.error(where, str(e)) from None


def parse_workloads(doc: SpecDoc, raw, base: Path) -> tuple[list[Workload], set[str]]:
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
