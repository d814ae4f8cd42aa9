"""Sweep specifications: a YAML file naming configurations and workloads to cross.

Validated whole before anything runs; every error names the file, the line and the key::

    name: example
    configs:                    # lists are crossed
      dataflow: [ws, os, is]
      array: [8x8, 16x16]       # ROWSxCOLS
      precision: [int8, bf16]   # int4, int8, int16 (accumulators 16, 32, 48 bits) or bf16
      depth: [4096]             # words of each buffer
      stage_depth: [0, 8192]    # words of the convolution staging buffer (0: none, the
                                # default): convolutions then run as convolution descriptors
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
    coefficients: my.toml       # technology (default: models/coefficients/calibrated45.toml)
    host: mobile                # the CPU beside the device for whole inferences (embedded,
                                # mobile, server; or {preset: server, read_ns: 500, ...})
    serving: serving.yaml       # a serving study (serving/study_spec.py) to run too; the
                                # report gains its section (relative to this file)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from systolic.contract.checks import is_number
from systolic.contract.config import ArrayConfig
from systolic.contract.host import DEFAULT_HOST, Host
from systolic.contract.memory import DEFAULT_MEMORY_PRESET, Memory
from systolic.golden.data import DataKind
from systolic.workloads.library import Workload
from systolic.workloads.spec_reader import (
    PRECISION_NAMES,
    SpecError,
    as_list,
    coefficients_file,
    integer,
    mapping,
    parse_configs,
    parse_memories,
    parse_workloads,
    read_spec,
)

__all__ = ["RTL_MODES", "SpecError", "Sweep", "load_spec"]

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
    "host",
)
_EVALUATE_KEYS = ("rtl", "sample", "max_macs", "timeout", "rtl_precision", "synth", "clock_mhz")


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
    serving: Path | None = None  # a serving study (serving/study_spec.py) the sweep runs too
    model_only: set[str] = field(default_factory=set)  # workloads marked rtl: false
    rtl_precision: set[str] = field(default_factory=lambda: set(PRECISION_NAMES))
    memories: list[Memory] = field(default_factory=lambda: [Memory.preset(DEFAULT_MEMORY_PRESET)])
    synth: bool = False  # synthesize every configuration (sweeps/synthesis.py)
    clock_mhz: float | None = None  # every point's clock (None: the coefficients')
    host: Host | None = None  # the host beside the device (None: contract.host's default)

    @property
    def points(self) -> int:
        return len(self.configs) * len(self.workloads) * len(self.memories)


def load_spec(path: str | Path) -> Sweep:
    """Read and validate a sweep specification (see the module docstring)."""
    path = Path(path)
    doc, raw = read_spec(path, _TOP_KEYS, ("configs", "workloads"))
    workloads, model_only = parse_workloads(doc, raw["workloads"], path.parent)
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
    if "host" in raw:
        sweep.host = _host(doc, raw["host"])
    return sweep


def _host(doc, raw) -> Host:
    """``host:``, a preset's name or a mapping: ``preset`` (default the default host) and any
    of the host's numbers."""
    keys = ("preset", *(k for k in Host.preset().to_dict() if k != "name"))
    if isinstance(raw, str):
        raw = {"preset": raw}
    values = mapping(doc, raw, ("host",), keys)
    try:
        base = Host.preset(str(values.pop("preset", DEFAULT_HOST)))
        if not values:
            return base
        return Host(**(base.to_dict() | values | {"name": f"{base.name} (modified)"}))
    except (TypeError, ValueError) as e:
        raise doc.error(("host",), str(e)) from None
