"""Which nets of the generated Verilog to watch for switching activity, and what each one is.

Every flip-flop of the device (a ``reg`` with an initial value in Amaranth's Verilog), the
multipliers' operands (``mul_a``/``mul_b``, combinational) and the device's input ports become
a :class:`Probe` tagged with a *component* (what kind of hardware switches) and a *traffic*
class (whose data it carries). The compute side (the mesh, its controller, the buffers' ports
and the per-chunk counters) is priced by its toggles, per component and traffic class. The
memory side (the descriptor queue, the chunk walkers, the DMA engines, the bank states, the
control registers and the device's own counters: component ``memory``) and the input ports
(component ``input``) are counted too, register by register, so that gate-level power has every
flip-flop's activity; the energy model prices what they move per word instead
(:data:`contract.activity.UNPRICED`). Inside the memories only the read ports' data is probed
(component ``sram``: what a macro drives into the logic); their energy is priced per access
from the performance counters.

The components and traffic classes are the contract's (:mod:`contract.activity`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from systolic.contract.activity import stream_traffic
from systolic.contract.config import ArrayConfig
from systolic.contract.interface import TOPS
from systolic.contract.memories import memories

__all__ = ["Probe", "probes"]


@dataclass(frozen=True)
class Probe:
    """One net: ``path`` below the top module (``array.pe_0_1.east``), its width and roles."""

    path: str
    width: int
    component: str
    traffic: str
    flop: bool  # a register (False: a combinational net, sampled once a cycle)

    @property
    def verilog(self) -> str:
        """Hierarchical reference to the net, escaping names that need it."""
        parts = self.path.split(".")
        plain = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
        return ".".join(p if plain.fullmatch(p) else f"\\{p} " for p in parts)


_MODULE = re.compile(r"^module (\\\S+|\w+)\s*\(")
_NET = re.compile(r"^  (reg|wire|input) (?:\[(\d+):0\] )?(\\\S+|\w+)\s*(=|;)")


#: Modules of the compute side, and the device's own registers that belong to it (the counters
#: of the chunk that computes, :func:`rtl.core.command_counters`).
_COMPUTE = ("array", "a_buffer", "b_buffer", "c_buffer", "controller")
_COMPUTE_TOP = ("counter", "counter_gaps", "seen_stream")


def _computes(inst: str, name: str) -> bool:
    if inst == "":
        return name in _COMPUTE_TOP
    return inst.split(".")[0] in _COMPUTE


def _classify(config: ArrayConfig, inst: str, name: str) -> tuple[str, str] | None:
    if not _computes(inst, name):
        return "memory", "control"
    streaming, stationary = stream_traffic(config)
    if inst.startswith("array.pe_"):
        return {
            "mul_a": ("multiplier", "compute"),
            "mul_b": ("multiplier", "compute"),
            "psum_out": ("accumulator", "psum"),
            "acc": ("accumulator", "output"),  # OS: the accumulator register drives port acc
            "east": ("pipeline", streaming),
            "b_out": ("pipeline", "weight"),
            "w0": ("stationary", stationary),
            "w1": ("stationary", stationary),
        }.get(name)
    if inst == "array":
        if "deskew" in name:
            return "edge", "output"
        if name.startswith(("pskew_col", "w_in")):  # its last stage takes the PE port's name
            return "edge", stationary  # WS/IS: the preload, skewed by column
        if name.startswith("pskew_ctl"):
            return "control", "control"  # its valid, bank and row flags
        if "skew_col" in name or name.startswith("b_in"):
            return "edge", "weight"  # OS: B enters from the north
        return "edge", streaming
    if inst.split(".")[0] in ("a_buffer", "b_buffer", "c_buffer"):  # the buffer or its SRAMs
        if name.endswith("_bank"):  # which bank a port last used: control, not data
            return "control", "control"
        if name == "rmw_old":  # the C word an update adds to: the SRAM's read data, registered
            return "sram", "control"
        kind = inst[0]
        return "buffer", {"a": "activation", "b": "weight", "c": "psum"}[kind]
    return "control", "control"


def probes(config: ArrayConfig, verilog: str) -> list[Probe]:
    """Every net of the device's Verilog worth counting, classified (see module)."""
    top = TOPS["device"]
    found: list[Probe] = []
    inst = None
    for line in verilog.splitlines():
        if line.startswith("module "):
            name = _MODULE.match(line).group(1).lstrip("\\")
            inst = "" if name == top else name.removeprefix(top + ".")
            continue
        match = _NET.match(line)
        if not match or inst is None:
            continue
        kind, msb, name, end = match.groups()
        name = name.lstrip("\\")
        flop = kind == "reg" and end == "="
        if name.startswith("$auto$"):  # yosys's own dummy
            continue
        if kind == "input":
            if inst == "" and name not in ("clk", "rst"):  # the clock is the clock's; reset idles
                found.append(Probe(name, int(msb or 0) + 1, "input", "control", False))
            continue
        if not flop and not (kind == "wire" and name in ("mul_a", "mul_b")):
            continue
        role = _classify(config, inst, name)
        if role is None:
            raise ValueError(f"register {name!r} of {inst} has no activity class (sim/probes.py)")
        component, traffic = role
        path = f"{inst}.{name}" if inst else name
        found.append(Probe(path, int(msb or 0) + 1, component, traffic, flop))
    for sram in memories(config):
        found += [Probe(f"{sram.path}.r{i}_data", sram.width, "sram", "control", True)
                  for i in range(sram.reads)]  # fmt: skip
    return found
