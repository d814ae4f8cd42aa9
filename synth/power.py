"""Gate-level power of a synthesized design from the switching activity a simulation measured.

The activity build (sim/probes.py) counts the bit flips of every flip-flop of the device, of
the SRAMs' read data and of the device's inputs over the cycles the array computes. Here each
of those nets is found in the synthesized netlist (the flip-flop that drives it, the macro pin
or the input port), and OpenSTA prices every cell with the library's internal, switching and
leakage power, propagating the measured activity through the combinational logic. The report
sums the cells by component (:data:`synth.flow.COMPONENTS`), beside the toggle model's figures.

How the activity gets in: Debian's OpenSTA (2.0.17) keeps an annotated activity only at the
design's inputs; its propagation recomputes every other pin (a flip-flop's output from its
data input's), and ``set_power_activity -pins`` is broken in its Tcl. So the power run reads a
flattened copy of the netlist in which every measured register and macro output is *cut*: its
loads are driven by a ``BUFX2`` from a new input port that carries the measured activity, and
the flip-flop's own output is left unloaded. The buffer's output switching is the register's
net switching (``0.5 C V^2`` per flip at the same load); its internal and leakage power are
the price of the cut, reported apart (``probe_buffers``) and left out of the components.
The port of each bit of a mesh register also carries that bit's own flips and duty cycle (the
share of the cycles it held a 1), which the propagation needs: the probability that a gate's
other inputs let a flip through. Without it OpenSTA takes every net to be high half the time,
and a multiplier fed with 70% zero operands looks as busy as one fed with random data. The
other registers keep that default: with measured duties there, OpenSTA's propagation around the
memory side's unmeasured FIFO and counter loops returns infinite power on a few gates.

What it leaves out, by construction: glitches (OpenSTA propagates zero-delay activity, and
treats a gate's inputs as independent), the clock tree and wires (there is no placement; a
flip-flop's clock pin is priced, its clock net is not) and the SRAM macros, whose access energy
comes from the memory model.
"""

from __future__ import annotations

import fcntl
import re
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from systolic.rtl.clock_gate import ENABLE as GATE_ENABLE

from .flow import SynthReport, component_of
from .liberty import read_cells
from .tools import ToolError, liberty, run, sta, yosys

__all__ = ["Activity", "PowerReport", "aliases", "annotate", "cut_netlist", "gate_power",
           "drive_gated_clocks", "register_cells"]  # fmt: skip

#: A net's measured activity: flips per bit per clock cycle, and its duty cycle (the share of
#: its bit-cycles at 1; None: unknown, OpenSTA's default of one half).
Activity = tuple[float, float | None]

_MODULE = re.compile(r"^module (\\\S+|\w+)\s*\(", re.M)
_CELL = re.compile(r"^  (\w+) (\\\S+ |\S+) \((.*?)\n  \);", re.M | re.S)
_PIN = re.compile(r"\.(\w+)\(([^()]*)\)")
_BIT = re.compile(r"^(.*?)(?:\[(\d+)\])?$")
#: The cell that drives a cut net from its port, and its pins.
PROBE_BUFFER = ("BUFX2", "A", "Y")


def _name(net: str) -> tuple[str, int]:
    """``("east", 3)`` of a netlist net ``\\east[3] `` (bit 0 for a scalar)."""
    base, bit = _BIT.match(net.strip().lstrip("\\")).groups()
    return base, int(bit or 0)


def register_cells(netlist: str, top: str, sequential: set[str]) -> dict[tuple[str, str], dict]:
    """Every flip-flop of the hierarchical ``netlist`` by the register it holds: ``(instance
    path, register) -> {bit: cell}``, the instance path dotted as the probes write it (``""``
    for the top) and the cell by its flattened name (``array.pe_0_0._1043_``). Amaranth's
    Verilog has one module per instance, so a module's name is its path."""
    found: dict[tuple[str, str], dict] = {}
    starts = [(m.start(), m.group(1).lstrip("\\")) for m in _MODULE.finditer(netlist)]
    for i, (start, module) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(netlist)
        if module != top and not module.startswith(top + "."):
            continue
        path = module.removeprefix(top).removeprefix(".")
        for cell in _CELL.finditer(netlist, start, end):
            if cell.group(1) not in sequential:
                continue
            pins = dict(_PIN.findall(cell.group(3)))
            if "Q" not in pins:
                raise ToolError(f"flip-flop {cell.group(2).strip()} ({cell.group(1)}) has no Q")
            reg, bit = _name(pins["Q"])
            name = cell.group(2).strip().lstrip("\\")
            found.setdefault((path, reg), {})[bit] = f"{path}.{name}" if path else name
    return found


@dataclass(frozen=True)
class Annotation:
    """Measured activities (:data:`Activity`) placed on the netlist: flip-flops by flattened
    cell name, macro output bits by ``(instance, port, bit)``, input port bits."""

    flops: dict[str, Activity]
    macro_pins: dict[tuple[str, str, int], Activity]
    ports: dict[str, Activity]
    unmatched: dict[str, list[str]]  # registers no probe counted -> their flip-flops' cells


_ASSIGN = re.compile(r"^  assign (\\\S+ |\w+)(?:\[(\d+):(\d+)\])? = (\\\S+ |\w+);", re.M)


def aliases(verilog: str, top: str) -> dict[tuple[str, str, int], tuple[str, int]]:
    """Nets of the generated ``verilog`` that only rename another (``assign port[31:0] =
    reg;``), bit by bit: ``(instance path, name, bit) -> (net, bit)``. Synthesis keeps one
    name for such a net, often the port's, so a register is found under its alias too."""
    found: dict[tuple[str, str, int], tuple[str, int]] = {}
    starts = [(m.start(), m.group(1).lstrip("\\")) for m in _MODULE.finditer(verilog)]
    for i, (start, module) in enumerate(starts):
        if module != top and not module.startswith(top + "."):
            continue
        path = module.removeprefix(top).removeprefix(".")
        end = starts[i + 1][0] if i + 1 < len(starts) else len(verilog)
        for name, hi, lo, source in _ASSIGN.findall(verilog, start, end):
            name, source = name.strip().lstrip("\\"), source.strip().lstrip("\\")
            lo_bit = int(lo or 0)
            for b in range(lo_bit, int(hi or 0) + 1):
                found[path, name, b] = (source, b - lo_bit)
    return found


def annotate(netlist: str, top: str, sequential: set[str], macros: set[str],
             activity: dict[str, tuple[float, int, list[tuple[float, float]] | None]],
             renames: dict[tuple[str, str, int], tuple[str, int]] | None = None,
             ) -> Annotation:  # fmt: skip
    """Place ``activity`` (net path ``array.pe_0_0.east`` -> (flips per bit per cycle, bits,
    each bit's own flips per cycle and duty cycle, or None), as the probes name nets) on the
    hierarchical ``netlist``: a register's on the flip-flops that hold it (those synthesis
    removed, constant or merged into another, have none), an output of a macro (an instance
    path of ``macros``) on its pins, an input's on its bits. ``renames`` (:func:`aliases`)
    finds registers kept under another name."""
    registers: dict[tuple[str, str], dict] = {}
    for (inst, reg), cells in register_cells(netlist, top, sequential).items():
        for bit, cell in cells.items():
            name, b = (renames or {}).get((inst, reg, bit), (reg, bit))
            registers.setdefault((inst, name), {})[b] = cell
    inputs = _top_inputs(netlist, top)
    flops: dict[str, Activity] = {}
    macro_pins: dict[tuple[str, str, int], Activity] = {}
    ports: dict[str, Activity] = {}
    for path, (rate, bits, per_bit) in activity.items():
        at: list[Activity] = per_bit or [(rate, None)] * bits
        inst, _, reg = path.rpartition(".")
        if (inst, reg) in registers:
            flops |= {cell: at[b] for b, cell in registers.pop((inst, reg)).items()}
        elif inst in macros:
            macro_pins |= {(inst, reg, b): at[b] for b in range(bits)}
        elif not inst and reg in inputs:
            ports |= {port: at[_name(port)[1]] for port in inputs[reg]}
    unmatched = {f"{inst}.{reg}" if inst else reg: list(cells.values())
                 for (inst, reg), cells in sorted(registers.items())}  # fmt: skip
    return Annotation(flops, macro_pins, ports, unmatched)


def _top_inputs(netlist: str, top: str) -> dict[str, list[str]]:
    """The top module's input ports by name, each with its bits' port names."""
    start = re.search(rf"^module {re.escape(top)}\(", netlist, re.M)
    if start is None:
        raise ToolError(f"the netlist has no module {top}")
    end = netlist.index("\nendmodule", start.end())
    found: dict[str, list[str]] = {}
    for name in re.findall(r"^  input (\\\S+ |\w+);", netlist[start.end() : end], re.M):
        name = name.strip().lstrip("\\")
        found.setdefault(_name(name)[0], []).append(name)
    return found


def cut_netlist(flat: str, top: str, note: Annotation,
                ) -> tuple[str, dict[str, Activity], dict[str, tuple[str, bool]]]:  # fmt: skip
    """The flattened netlist with every annotated flip-flop output and macro output bit cut
    from its loads, which a :data:`PROBE_BUFFER` drives from a new input port instead; the
    activity of every annotated input port, old and new (see module); and for each buffer the
    instance path whose net it drives and whether a flip-flop or a macro holds that net
    (``probe_buf$3`` -> ``("array.pe_0_0", True)``)."""
    ports = dict(note.ports)
    added: list[tuple[str, str, str]] = []  # (port, cut net, the net it drove)
    owners: dict[str, tuple[str, bool]] = {}
    macros = {inst for inst, _, _ in note.macro_pins}

    def cut(net: str, rate: Activity, owner: str, flop: bool) -> str:
        k = len(added)
        added.append((f"probe${k}", f"cut${k}", net.strip()))
        ports[f"probe${k}"] = rate
        owners[f"probe_buf${k}"] = (owner, flop)
        return f"\\cut${k} "

    def bus(name: str, pin: re.Match) -> str:
        port, nets = pin.group(1), pin.group(2).strip()
        bits = nets.strip("{}").split(" , ") if nets.startswith("{") else [nets]
        bits = [b.strip() for b in bits]
        for i, net in enumerate(bits):
            rate = note.macro_pins.get((name, port, len(bits) - 1 - i))
            if rate is not None and net:
                bits[i] = cut(net, rate, name, False).strip()
        return f".{port}({{ {' , '.join(b + ' ' for b in bits)}}})"

    def rewire(cell: re.Match) -> str:
        kind, name, body = cell.group(1), cell.group(2).strip().lstrip("\\"), cell.group(3)
        if name in note.flops:
            rate = note.flops[name]
            owner = name.rpartition(".")[0]
            body = re.sub(r"\.Q\(([^()]+)\)", lambda q: f".Q({cut(q.group(1), rate, owner, True)})",
                          body)  # fmt: skip
        elif name in macros:
            body = _PIN.sub(lambda pin: bus(name, pin), body)
        return f"  {kind} {cell.group(2)} ({body}\n  );"

    text = _CELL.sub(rewire, flat)
    # OpenSTA's power crashes on a pin tied to a constant: the constants come from ports too
    for value in (0, 1):
        tie = f"tie${value}"
        text, n = re.subn(rf"(?<![\w$])1'[hb]{value}\b", rf"\\{tie} ", text)
        if n:
            added.append((tie, "", ""))
            ports[tie] = (0.0, float(value))
    buffer, a, y = PROBE_BUFFER
    header = re.search(rf"^module {re.escape(top)}\(", text, re.M)
    end = text.index("\nendmodule", header.end())
    decls = [f"  input \\{port} ;\n  wire \\{port} ;" + (f"\n  wire \\{net} ;" if net else "")
             for port, net, _ in added]  # fmt: skip
    decls += [f"  {buffer} \\probe_buf${k}  (\n    .{a}(\\{port} ),\n    .{y}({driven} )\n  );"
              for k, (port, _, driven) in enumerate(added) if driven]  # fmt: skip
    text = (text[: header.end()] + "".join(f"\\{port} , " for port, _, _ in added)
            + text[header.end() : end] + "\n" + "\n".join(decls) + text[end:])  # fmt: skip
    return text, ports, owners


@dataclass(frozen=True)
class ComponentPower:
    internal_mw: float
    switching_mw: float
    leakage_mw: float

    @property
    def total_mw(self) -> float:
        return self.internal_mw + self.switching_mw + self.leakage_mw


@dataclass
class PowerReport:
    """Average power of each component over the simulated window at ``clock_ns``, and what
    the annotation covered."""

    clock_ns: float
    directory: Path  # OpenSTA's script, the activities and its per-instance report
    components: dict[str, ComponentPower]
    #: per component, the part of it in flip-flops: their clock pins, internal state and output
    #: nets (the rest of the component is combinational logic)
    flops: dict[str, ComponentPower]
    probe_buffers: ComponentPower  # the cut's own buffers' internal and leakage power, left out
    #: per component: (flip-flops whose activity the simulation measured, flip-flops); the
    #: others (FIFO storage, registers renamed by synthesis) take OpenSTA's propagated activity
    coverage: dict[str, tuple[int, int]]
    unmatched: list[str]  # registers of the netlist no probe counted
    annotated_ports: int  # input port bits, the cut's included

    @property
    def total_mw(self) -> float:
        return sum(c.total_mw for c in self.components.values())

    def energy_pj(self, cycles: int, component: str | None = None) -> float:
        """Energy over ``cycles`` clock periods, of one component or of all."""
        mw = self.total_mw if component is None else self.components[component].total_mw
        return mw * cycles * self.clock_ns  # mW x ns = pJ

    def to_dict(self) -> dict:
        return asdict(self) | {"total_mw": self.total_mw, "directory": str(self.directory)}


def _coverage(note: Annotation, kind: str) -> dict[str, tuple[int, int]]:
    counts: dict[str, list[int]] = {}
    unmatched = [cell for cells in note.unmatched.values() for cell in cells]
    for cells, measured in ((note.flops, 1), (unmatched, 0)):
        for cell in cells:
            tally = counts.setdefault(component_of(cell.rpartition(".")[0], kind), [0, 0])
            tally[0] += measured
            tally[1] += 1
    return {k: (v[0], v[1]) for k, v in sorted(counts.items())}


_FLATTEN = """\
read_liberty -lib {lib}
read_verilog netlist.v
hierarchy -top {top}
flatten
write_verilog -noattr -noexpr netlist_flat.v
"""
_TCL = """\
read_liberty {lib}
{srams_lib}
read_verilog netlist_power.v
link_design {top}
create_clock -name clk -period {period} [get_ports clk]
# inputs change with the clock: OpenSTA prices a net's activity per period of the clock that
# reaches it, and a net no clock reaches at a meaningless default
set_input_delay 0 -clock clk [delete_from_list [all_inputs] [get_ports clk]]
source activity.tcl
report_power -digits 6 -instances [get_cells *] > power_instances.txt
report_power -digits 6
exit
"""
_ROW = re.compile(r"^\s*([-\d.e+]+)\s+([-\d.e+]+)\s+([-\d.e+]+)\s+[-\d.e+]+\s+(\S+)\s*$", re.M)


def _consistent(rate: float, duty: float) -> float:
    """``duty`` moved into what ``rate`` flips a cycle allow (OpenSTA's propagation gives NaN
    otherwise): a net that flips spends at least half its flips' cycles at each level. Only the
    window's first and last edges, where a flip and the level it left are counted apart, fall
    outside."""
    return min(max(duty, rate / 2), 1 - rate / 2)


def drive_gated_clocks(flat: str, sequential: set[str], source: str,
                       clock: str = "clk") -> tuple[str, int]:  # fmt: skip
    """``flat`` with the clock pin of every flip-flop that the ``clock`` port does not reach
    directly (the gated domain's, rtl.clock_gate) on ``source`` instead, and how many: ``clock``
    for a window in which the gate stays open, ``1'b0`` for one in which it stays shut.
    OpenSTA does not price a gated clock as the gate passes it (a clock pin that the clock
    reaches through the gate is clocked whatever the enable, and the gate's propagated activity
    makes no sense on a clock), so each window's clock is drawn as it was."""
    moved = 0
    # flattening leaves each submodule's clock port an alias of the net its parent drives
    alias = {a.strip(): b.strip() for a, b in re.findall(r"^  assign (\\\S+ |\w+) = (\\\S+ |\w+);",
                                                         flat, re.M)}  # fmt: skip

    def root(net: str) -> str:
        seen = set()
        while net in alias and net not in seen:
            seen.add(net)
            net = alias[net]
        return net

    def move(cell: re.Match) -> str:
        nonlocal moved
        if cell.group(1) not in sequential:
            return cell.group(0)
        pin = re.search(r"\.CLK\(([^()]*)\)", cell.group(3))
        if pin is None or root(pin.group(1).strip()) == clock:
            return cell.group(0)
        moved += 1
        body = cell.group(3)[: pin.start()] + f".CLK({source})" + cell.group(3)[pin.end() :]
        return f"  {cell.group(1)} {cell.group(2)} ({body}\n  );"

    return _CELL.sub(move, flat), moved


def gate_power(report: SynthReport,
               activity: dict[str, tuple[float, int, list[tuple[float, float]] | None]],
               clock_ns: float | None = None, *, idle: bool = False) -> PowerReport:  # fmt: skip
    """OpenSTA's power of ``report``'s netlist with the measured ``activity`` (see
    :func:`annotate`) at ``clock_ns`` (default: the synthesis clock), summed by component.
    ``idle``: the device with nothing to do and its clock running, every register and input
    still (``activity`` names the nets; its rates are not used) and the gated clock stopped
    (:func:`drive_gated_clocks`)."""
    directory = Path(report.directory)
    lib = liberty()
    sequential = {name for name, c in read_cells(lib).items() if c.sequential}
    top = report.top
    renames = aliases((directory / "design.v").read_text(), top)
    note = annotate((directory / "netlist.v").read_text(), top, sequential,
                    {s["path"] for s in report.srams}, activity, renames)  # fmt: skip
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel callers flatten once
        if not (directory / "netlist_flat.v").exists():
            (directory / "flatten.ys").write_text(_FLATTEN.format(lib=lib.name, top=top))
            run([yosys(), "-q", "-l", "flatten.log", "flatten.ys"], directory,
                directory / "flatten.out", "Yosys flatten")  # fmt: skip
    flat = (directory / "netlist_flat.v").read_text()
    gate = activity.get(GATE_ENABLE)
    if not idle and gate is not None and gate[0] > 0:
        raise ToolError(f"the clock gate moved in the measured window ({GATE_ENABLE}: {gate}): "
                        f"its power here assumes a gate open throughout")  # fmt: skip
    flat, _ = drive_gated_clocks(flat, sequential, "1'b0" if idle else "clk")
    if idle:  # nothing moves: every flip-flop cut (those no probe counts too), every port still
        still = {c.group(2).strip().lstrip("\\"): (0.0, None) for c in _CELL.finditer(flat)
                 if c.group(1) in sequential}  # fmt: skip
        note = Annotation(still, dict.fromkeys(note.macro_pins, (0.0, None)),
                          dict.fromkeys(note.ports, (0.0, None)), {})  # fmt: skip
    text, ports, owners = cut_netlist(flat, top, note)
    ports.setdefault("rst", (0.0, 0.0))  # released throughout (no probe counts it)
    work = Path(tempfile.mkdtemp(prefix="power-", dir=directory))  # one folder per run
    (work / "netlist_power.v").write_text(text)
    (work / "activity.tcl").write_text("".join(
        f"set_power_activity -input_ports [get_ports {{{port}}}] -activity {rate:.9g}"
        + ("" if duty is None else f" -duty {_consistent(rate, duty):.9g}") + "\n"
        for port, (rate, duty) in sorted(ports.items())))  # fmt: skip
    srams_lib = f"read_liberty {directory / 'srams.lib'}" if report.srams else ""
    period = clock_ns or report.clock_ns
    (work / "power.tcl").write_text(
        _TCL.format(lib=lib, srams_lib=srams_lib, top=top, period=period)
    )
    out = run([sta(), "-no_splash", "-exit", "power.tcl"], work, work / "power.log",
              "OpenSTA power")  # fmt: skip
    problems = [line for line in out.splitlines() if line.startswith(("Error", "Warning"))]
    if problems:
        raise ToolError(f"OpenSTA: {problems[0]} (see {work / 'power.log'})")
    rows = _ROW.findall((work / "power_instances.txt").read_text())
    if not rows:
        raise ToolError(f"OpenSTA reported no instance power (see {work})")
    (work / "netlist_power.v").unlink()  # large, and remade from the flat netlist at will
    by_component: dict[str, list[float]] = {}
    in_flops: dict[str, list[float]] = {}
    flop_cells = {name.strip().lstrip("\\") for kind, name, _ in _CELL.findall(text)
                  if kind in sequential}  # fmt: skip
    buffers = [0.0, 0.0, 0.0]
    for internal, switching, leakage, inst in rows:
        watts = [float(internal) * 1e3, float(switching) * 1e3, float(leakage) * 1e3]
        name = inst.replace("\\", "")
        if name.startswith("probe_buf$"):
            # its output switching is the cut register's; the rest is the cut's own cost
            path, flop = owners[name]
            owner = component_of(path, report.kind)
            by_component.setdefault(owner, [0.0, 0.0, 0.0])[1] += watts[1]
            if flop:
                in_flops.setdefault(owner, [0.0, 0.0, 0.0])[1] += watts[1]
            buffers[0] += watts[0]
            buffers[2] += watts[2]
            continue
        component = component_of(name.rpartition(".")[0], report.kind)
        tallies = [by_component.setdefault(component, [0.0, 0.0, 0.0])]
        if name in flop_cells:
            tallies.append(in_flops.setdefault(component, [0.0, 0.0, 0.0]))
        for tally in tallies:
            for i in range(3):
                tally[i] += watts[i]
    return PowerReport(
        clock_ns=period, directory=work,
        components={k: ComponentPower(*v) for k, v in sorted(by_component.items())},
        flops={k: ComponentPower(*in_flops.get(k, (0.0, 0.0, 0.0))) for k in sorted(by_component)},
        probe_buffers=ComponentPower(buffers[0], 0.0, buffers[2]),
        coverage=_coverage(note, report.kind), unmatched=list(note.unmatched),
        annotated_ports=len(ports),
    )  # fmt: skip
