"""Serving studies: a YAML file naming configurations, clocks, a power budget and request streams
with their batching policies and SLAs. Validated whole; every error names the file, the line
and the key::

    name: example
    configs:                      # as a sweep's (crossed)
      dataflow: [ws, os]
      array: [16x16]
      depth: [4096]
    memory: lpddr4x-4266-x16      # one memory (a preset or {gb_per_s, latency_ns, ...})
    clocks: [1000, 500]           # MHz: operating points (voltages from
                                  # serving.power_budget.VF_POINTS); default: the
                                  # coefficients' clock
    synth: true                   # cap the clocks at each configuration's synthesized Fmax
                                  # (0.18 um, scaled to the coefficients' 45 nm: an estimate)
    replicas: [1, 2]              # accelerators behind a round-robin router (crossed; default 1)
    power_budget_w: 2.0           # optional: a sustained budget, the clock steps down past it
    thermal_tau_s: 0.05           # the package's thermal time constant (with a budget)
    streams:
      - name: bert classification
        model: bert-base          # a transformer or CNN of workloads.library
        lengths: [64, 128]        # sequence lengths (transformers), drawn by
        weights: [3, 1]           # these weights (default: equal)
        arrival: {poisson: 200}   # per second; or {on_off: {on_rate, off_rate, on_s, off_s}}
                                  # or {trace: file.csv} (timestamps, relative to this file)
        requests: 4000
        sla_p99_ms: [20, 100]     # P99 latency targets (generation: P99 time to first token)
        policies: [none, {static: 8}, {dynamic: {max_batch: 16, max_wait_ms: 2}}]
      - name: gpt2 chat
        model: gpt2-small
        lengths: [128]            # prompt tokens
        outputs: [32, 128]        # tokens to generate: a generation stream
        arrival: {poisson: 2}
        requests: 200
        sla_p99_ms: [500]
        policies: [{static: 1}, {continuous: 16}]
    seed: 0
    coefficients: my.toml         # energy coefficients (default: calibrated45)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from systolic.contract.checks import is_number
from systolic.contract.config import ArrayConfig
from systolic.contract.memory import DEFAULT_MEMORY_PRESET, Memory
from systolic.workloads.library import CNNS, TRANSFORMERS
from systolic.workloads.spec_reader import (
    SpecDoc,
    as_list,
    coefficients_file,
    integer,
    mapping,
    parse_configs,
    parse_memories,
    read_spec,
)

from .batching import Policy
from .generation import GenPolicy
from .traffic import OnOff, Poisson, RequestKind, Trace, TrafficError

__all__ = ["ServingSpec", "Stream", "load_serving_spec"]

_TOP = ("name", "configs", "memory", "clocks", "synth", "replicas", "power_budget_w",
        "thermal_tau_s", "streams", "seed", "coefficients")  # fmt: skip
_STREAM = ("name", "model", "lengths", "weights", "outputs", "output_weights", "arrival",
           "requests", "sla_p99_ms", "policies")  # fmt: skip


@dataclass(frozen=True)
class Stream:
    """One request stream of a study, and the batching policies it is served under."""

    name: str
    kind: RequestKind
    process: object  # Poisson, OnOff or Trace
    requests: int
    sla_p99_s: tuple[float, ...]
    policies: tuple  # Policy (classification) or GenPolicy (generation)

    @property
    def generation(self) -> bool:
        return bool(self.kind.outputs)


@dataclass
class ServingSpec:
    name: str
    path: Path
    configs: list[ArrayConfig]
    memory: Memory
    streams: list[Stream]
    clocks_mhz: list[float] | None = None
    replicas: list[int] = field(default_factory=lambda: [1])
    synth: bool = False
    power_budget_w: float | None = None
    thermal_tau_s: float = 0.05
    seed: int = 0
    coefficients: Path | None = None
    notes: list[str] = field(default_factory=list)


def _number(doc: SpecDoc, value, path: tuple, lo: float = 0.0, hi: float = math.inf,
            what: str = "a number") -> float:  # fmt: skip
    if not is_number(value) or not lo < value < hi:
        bounds = f"above {lo:g}" + (f" and below {hi:g}" if hi < math.inf else "")
        raise doc.error(path, f"must be {what} {bounds}, not {value!r}")
    return float(value)


def _ints(doc: SpecDoc, raw, path: tuple) -> tuple[int, ...]:
    return tuple(integer(doc, v, path) for v in as_list(doc, raw, path))


def _weights(doc: SpecDoc, raw, path: tuple, count: int) -> tuple[float, ...]:
    values = tuple(_number(doc, v, path) for v in as_list(doc, raw, path))
    if len(values) != count:
        raise doc.error(path, f"must give one weight per value ({count}), not {len(values)}")
    return values


def _arrival(doc: SpecDoc, raw, path: tuple, base: Path):
    raw = mapping(doc, raw, path, ("poisson", "on_off", "trace"))
    if len(raw) != 1:
        raise doc.error(path, "must name exactly one of poisson, on_off, trace")
    ((kind, value),) = raw.items()
    where = (*path, kind)
    if kind == "poisson":
        return Poisson(_number(doc, value, where, what="a rate per second"))
    if kind == "on_off":
        v = mapping(doc, value, where, ("on_rate", "off_rate", "on_s", "off_s"))
        for key in ("on_rate", "on_s", "off_s"):
            if key not in v:
                raise doc.error(where, f"missing key {key!r}")
        try:
            return OnOff(v["on_rate"], v.get("off_rate", 0.0), v["on_s"], v["off_s"])
        except TrafficError as e:
            raise doc.error(where, str(e)) from None
    try:
        return Trace.read(base / str(value))
    except TrafficError as e:
        raise doc.error(where, str(e)) from None


def _policies(doc: SpecDoc, raw, path: tuple, generation: bool) -> tuple:
    out = []
    for i, item in enumerate(as_list(doc, raw, path)):
        where = (*path, i) if isinstance(raw, list) else path
        try:
            if item == "none":
                out.append(GenPolicy("static", 1) if generation else Policy("none"))
                continue
            allowed = ("static", "continuous") if generation else ("static", "dynamic")
            m = mapping(doc, item, where, allowed)
            if len(m) != 1:
                raise doc.error(where, f"must be none or name one of {', '.join(allowed)}")
            ((name, value),) = m.items()
            if name == "dynamic":
                d = mapping(doc, value, (*where, name), ("max_batch", "max_wait_ms"))
                wait = d.get("max_wait_ms", 0.0)
                if not is_number(wait) or not 0 <= wait < math.inf:
                    raise doc.error((*where, name, "max_wait_ms"), "must be a number of "
                                    f"milliseconds, 0 or more, not {wait!r}")  # fmt: skip
                out.append(Policy("dynamic", integer(doc, d.get("max_batch", 8),
                                                     (*where, name, "max_batch")),
                                  float(wait) / 1e3))  # fmt: skip
            else:
                batch = integer(doc, value, (*where, name))
                out.append(GenPolicy(name, batch) if generation else Policy(name, batch))
        except TrafficError as e:
            raise doc.error(where, str(e)) from None
    return tuple(out)


def _stream(doc: SpecDoc, raw, path: tuple, base: Path) -> Stream:
    s = mapping(doc, raw, path, _STREAM)
    for key in ("model", "arrival", "sla_p99_ms", "policies"):
        if key not in s:
            raise doc.error(path, f"missing key {key!r}")
    model = s["model"]
    if model not in TRANSFORMERS and model not in CNNS:
        raise doc.error((*path, "model"), f"must be one of {', '.join([*TRANSFORMERS, *CNNS])}, "
                        f"not {model!r}")  # fmt: skip
    lengths = _ints(doc, s["lengths"], (*path, "lengths")) if "lengths" in s else ()
    if model in TRANSFORMERS and not lengths:
        raise doc.error(path, "missing key 'lengths' (a transformer's sequence lengths)")
    if model in CNNS and lengths:
        raise doc.error((*path, "lengths"), f"{model} is a CNN: it takes no sequence lengths")
    outputs = _ints(doc, s["outputs"], (*path, "outputs")) if "outputs" in s else ()
    if outputs and model not in TRANSFORMERS:
        raise doc.error((*path, "outputs"), "only a transformer generates tokens")
    weights = (_weights(doc, s["weights"], (*path, "weights"), len(lengths))
               if "weights" in s else ())  # fmt: skip
    output_weights = (_weights(doc, s["output_weights"], (*path, "output_weights"), len(outputs))
                      if "output_weights" in s else ())  # fmt: skip
    kind = RequestKind(model, 1.0, lengths, weights, outputs, output_weights)
    slas = tuple(_number(doc, v, (*path, "sla_p99_ms"), what="a number of milliseconds") / 1e3
                 for v in as_list(doc, s["sla_p99_ms"], (*path, "sla_p99_ms")))  # fmt: skip
    count = integer(doc, s.get("requests", 1000), (*path, "requests"), lo=2)
    if count > 2_000_000:
        raise doc.error((*path, "requests"), f"must be at most 2000000, not {count}")
    return Stream(str(s.get("name", model)), kind, _arrival(doc, s["arrival"], (*path, "arrival"),
                  base), count, slas,
                  _policies(doc, s["policies"], (*path, "policies"), bool(outputs)))  # fmt: skip


def load_serving_spec(path: str | Path) -> ServingSpec:
    """Read and validate a serving study (see the module docstring)."""
    path = Path(path)
    doc, raw = read_spec(path, _TOP, ("configs", "streams"))
    memories = parse_memories(doc, raw.get("memory", DEFAULT_MEMORY_PRESET))
    if len(memories) != 1:
        raise doc.error(("memory",), "a serving study runs behind one memory")
    streams_raw = raw["streams"]
    if not isinstance(streams_raw, list) or not streams_raw:
        raise doc.error(("streams",), "must be a non-empty list of streams")
    streams = [_stream(doc, s, ("streams", i), path.parent) for i, s in enumerate(streams_raw)]
    names = [s.name for s in streams]
    if len(set(names)) < len(names):
        raise doc.error(("streams",), f"stream names must differ: {names}")
    spec = ServingSpec(str(raw.get("name", path.stem)), path, parse_configs(doc, raw["configs"]),
                       memories[0], streams)  # fmt: skip
    if "clocks" in raw:
        spec.clocks_mhz = [_number(doc, c, ("clocks",), 0, 10_000, "a clock in MHz")
                           for c in as_list(doc, raw["clocks"], ("clocks",))]  # fmt: skip
    spec.synth = raw.get("synth", False)
    if not isinstance(spec.synth, bool):
        raise doc.error(("synth",), f"must be true or false, not {spec.synth!r}")
    if "replicas" in raw:
        spec.replicas = list(_ints(doc, raw["replicas"], ("replicas",)))
        if max(spec.replicas) > 1024:
            raise doc.error(("replicas",), f"must be 1 to 1024, not {max(spec.replicas)}")
    if "power_budget_w" in raw:
        spec.power_budget_w = _number(doc, raw["power_budget_w"], ("power_budget_w",),
                                      what="a power in watts")  # fmt: skip
    if "thermal_tau_s" in raw:
        spec.thermal_tau_s = _number(doc, raw["thermal_tau_s"], ("thermal_tau_s",),
                                     what="a time in seconds")  # fmt: skip
    spec.seed = integer(doc, raw.get("seed", 0), ("seed",), lo=0)
    spec.coefficients = coefficients_file(doc, raw, path.parent)
    return spec
