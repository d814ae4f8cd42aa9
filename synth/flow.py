"""Synthesize a configuration's device to standard cells and time it: area by component, cell and
flip-flop counts, the critical path and Fmax, every figure parsed from Yosys's and OpenSTA's
output.

The SRAMs (contract.memories) are black boxes in synthesis and Liberty macros in timing
(:func:`synth.liberty.sram_liberty`): paths into and out of them are timed with the macro's
access time, and their area, access energy and leakage come from the memory model
(:mod:`models.sram`, CACTI figures scaled to 0.18 um). Each component is the set of
modules below one of the device's submodules (:data:`COMPONENTS`); the hierarchy is kept, so
logic is optimized within a module, not across. Before timing, nets that drive many gates get
buffer trees (:mod:`synth.fanout`), as a placer's design repair would give them; the buffers
count in the area.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path

from systolic.contract.config import ArrayConfig, check_buildable
from systolic.contract.interface import TOPS
from systolic.contract.memories import memories
from systolic.models import sram
from systolic.models.technology import CELL_LIBRARY_NM
from systolic.rtl.generate import VERILOG_FOLDER, design_config, design_verilog

from . import fanout, tools
from .fanout import buffer_fanout
from .liberty import read_cells, sram_liberty

__all__ = ["COMPONENTS", "CriticalPath", "SynthReport", "component_of", "synthesize", "SYNTH_ROOT"]

#: The node the SRAM macros are priced at: the cell library's.
SRAM_NODE_NM = CELL_LIBRARY_NM
#: The memory model's figures each SRAM of a report carries (models.sram.SramMacro).
_MACRO = ("area_um2", "access_ns", "read_pj", "write_pj", "leakage_mw")

#: Where synthesis runs are kept, one folder per design and clock (beside the simulation models).
SYNTH_ROOT = Path(os.environ.get("SYSTOLIC_BUILD_DIR", Path.cwd() / "build")) / "synth"


def verilog_cache(root: Path | None = None) -> Path:
    """Where a synthesis run finds the design's generated Verilog: beside the simulation
    builds' (``build/verilog``, which they share), or in ``root`` when one is given."""
    return (SYNTH_ROOT.parent if root is None else root) / VERILOG_FOLDER


#: The component of each of the device's submodules (the first name of a module's path below the
#: top); the top module's own logic (descriptor checks, bank states, counters) is "control".
COMPONENTS = {
    "array": "edge",  # the mesh's skew and deskew registers; its PEs are "pe_array"
    "a_buffer": "buffers", "b_buffer": "buffers", "c_buffer": "buffers", "q_buffer": "buffers",
    "controller": "controller",
    "reader": "dma", "writer": "dma",
    "control": "control", "queue": "control",
    "walk_rd": "control", "walk_cp": "control", "walk_wr": "control",
}  # fmt: skip
_PE = re.compile(r"^(array\.)?pe_\d+_\d+$")

_YOSYS = """\
read_verilog {verilog}
{blackbox}
hierarchy -check -top {top}
synth -noabc -top {top}
dfflibmap -liberty {lib}
abc -liberty {lib} -D {period_ps} -script {abc_script}
opt_clean -purge
tee -q -o stat.json stat -json -liberty {lib}
setundef -zero
splitnets -ports
opt_clean -purge
insbuf -buf {buffer}
write_verilog -noattr -noexpr -nohex -nodec netlist.v
"""

#: ABC's mapping for delay, then buffering of high-fanout nets and gate sizing: without them a
#: flip-flop drives hundreds of loads through one minimum inverter (measured on WS 2x2: a 62 ns
#: gate in the descriptor queue), which placement-aware tools would never leave. The adders
#: and comparators reach ABC as Yosys's Brent-Kung carry trees (``synth -noabc``: the generic
#: ``abc -fast`` of ``synth`` would map them for area first), and the script leaves out Yosys's
#: ``dc2``, whose area rewriting turns a carry tree back into a ripple: a registered 32-bit
#: adder 4.59 ns with it, 1.87 ns without; the WS 2x2 mesh 161.8 -> 228.2 MHz for 3.8% more
#: area, the device 104.4 -> 137.7 MHz for 7.6% (issue 36).
_ABC = (
    "+strash;&get,-n;&fraig,-x;&put;scorr;dretime;strash;&get,-n;&dch,-f;&nf,{D};&put;"
    "buffer,-p;upsize,{D};dnsize,{D}"
)

_STA = """\
read_liberty {lib}
{srams_lib}
read_verilog netlist.v
link_design {top}
create_clock -name clk -period {period} [get_ports clk]
set_input_delay 0 -clock clk [delete_from_list [all_inputs] [get_ports clk]]
set_output_delay 0 -clock clk [all_outputs]
report_checks -path_delay max -digits 4 -group_count 3 -endpoint_count 1
exit
"""


@dataclass(frozen=True)
class CriticalPath:
    start: str
    end: str
    arrival_ns: float  # data arrival at the endpoint
    slack_ns: float  # at the requested clock
    #: the shortest clock period the path meets: its delay over the share of the period between
    #: its launching and capturing edges (a half for the clock gate's falling-edge register,
    #: rtl.clock_gate); None in a report cached before it was kept: a full period
    period_ns: float | None = None


@dataclass(frozen=True)
class Component:
    cells: int
    flops: int
    area_um2: float


@dataclass
class SynthReport:
    """One configuration synthesized at one clock (see module)."""

    config: ArrayConfig
    kind: str  # the design: "device" or "array" (contract.interface.TOPS)
    clock_ns: float
    library: str
    cells: int
    flops: int
    area_um2: float  # standard cells only
    leakage_nw: float
    components: dict[str, Component]
    srams: list[dict]  # each memory: path, module, depth, width, bits, and its macro's figures
    critical: CriticalPath
    directory: Path
    notes: list[str] = field(default_factory=list)

    @property
    def top(self) -> str:
        return TOPS[self.kind]

    @property
    def sram_area_um2(self) -> float:
        """The SRAM macros' area (memory model, see module)."""
        return sum(s["area_um2"] for s in self.srams)

    @property
    def total_area_um2(self) -> float:
        return self.area_um2 + self.sram_area_um2

    @property
    def min_period_ns(self) -> float:
        if self.critical.period_ns is not None:
            return self.critical.period_ns
        return self.clock_ns - self.critical.slack_ns

    @property
    def fmax_mhz(self) -> float:
        return 1000.0 / self.min_period_ns

    def to_dict(self) -> dict:
        out = asdict(self)
        out["config"] = self.config.to_dict()
        out["directory"] = str(self.directory)
        out["fmax_mhz"] = self.fmax_mhz
        out["min_period_ns"] = self.min_period_ns
        out["sram_area_um2"] = self.sram_area_um2
        out["total_area_um2"] = self.total_area_um2
        return out

    @classmethod
    def from_dict(cls, d: dict) -> SynthReport:
        d = dict(d)
        for derived in ("fmax_mhz", "min_period_ns", "sram_area_um2", "total_area_um2"):
            d.pop(derived)
        return cls(
            config=ArrayConfig.from_dict(d.pop("config")),
            components={k: Component(**v) for k, v in d.pop("components").items()},
            critical=CriticalPath(**d.pop("critical")),
            directory=Path(d.pop("directory")),
            **d,
        )


def _key(verilog: str, clock_ns: float, lib: Path) -> str:
    h = hashlib.sha256()
    for part in (verilog, str(clock_ns), _YOSYS, _ABC, _STA, lib.read_text(),
                 Path(__file__).read_text(), Path(fanout.__file__).read_text(),
                 Path(tools.yosys()).name, sram.TABLE.read_text(),
                 Path(sram.__file__).read_text()):  # fmt: skip
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:12]


def synthesize(config: ArrayConfig, kind: str = "device", *, clock_ns: float = 10.0,
               root: Path | None = None, force: bool = False) -> SynthReport:  # fmt: skip
    """Synthesize the design ``kind`` of ``config`` (the device, or the bare mesh with
    ``"array"``) and time it at ``clock_ns``, or read the cached run of the same Verilog, clock
    and tools."""
    if kind not in TOPS:
        raise ValueError(f"design must be one of {', '.join(TOPS)}, not {kind!r}")
    if not (0.1 <= clock_ns <= 1000):
        raise ValueError(f"clock_ns must be between 0.1 and 1000 ns, not {clock_ns}")
    check_buildable(config)
    lib = tools.liberty()
    verilog = design_verilog(config, kind, cache=verilog_cache(root))
    key = _key(verilog, clock_ns, lib)
    # configurations with the same hardware (an IS mesh and its WS twin) share one run
    name = design_config(config, kind).name
    directory = (root or SYNTH_ROOT) / f"{name}-{kind}-{clock_ns:g}ns-{key}"
    report = tools.cached(
        directory,
        force,
        SynthReport.from_dict,
        lambda: _run(config, kind, clock_ns, lib, verilog, directory),
    )
    report.config = config  # the run may be its twin's
    return report


def _run(config: ArrayConfig, kind: str, clock_ns: float, lib: Path, verilog: str,
         directory: Path) -> SynthReport:  # fmt: skip
    top = TOPS[kind]
    srams = memories(config) if kind == "device" else []
    (directory / "design.v").write_text(verilog)
    shutil.copyfile(lib, directory / lib.name)  # the Yosys sandbox sees the folder it runs in
    cells = read_cells(lib)
    macros = {s.module: sram.memory_macro(s, SRAM_NODE_NM) for s in srams}
    if srams:
        (directory / "srams.lib").write_text(sram_liberty(
            srams, {m: f.area_um2 for m, f in macros.items()},
            {m: f.access_ns for m, f in macros.items()}))  # fmt: skip
    blackbox = "blackbox " + " ".join(sorted({s.module for s in srams})) if srams else ""
    script = _YOSYS.format(verilog="design.v", top=top, lib=lib.name, blackbox=blackbox,
                           period_ps=round(clock_ns * 1000), buffer="-buf BUFX2 A Y",
                           abc_script=_ABC)  # fmt: skip
    (directory / "synth.ys").write_text(script)
    tools.run([tools.yosys(), "-q", "-l", "yosys.log", "synth.ys"], directory,
              directory / "yosys.out", "Yosys synthesis")  # fmt: skip
    stat = json.loads((directory / "stat.json").read_text())
    yosys_netlist = directory / "netlist.v"
    buffered = buffer_fanout(yosys_netlist.read_text(), cells)
    yosys_netlist.rename(directory / "netlist_yosys.v")
    (directory / "netlist.v").write_text(buffered.netlist)
    _add_cells(stat, buffered.buffers, buffered.cell)
    srams_lib = "read_liberty srams.lib" if srams else ""
    (directory / "sta.tcl").write_text(
        _STA.format(lib=lib.name, top=top, period=clock_ns, srams_lib=srams_lib)
    )
    sta_out = tools.run([tools.sta(), "-no_splash", "-exit", "sta.tcl"], directory,
                        directory / "sta.log", "OpenSTA timing")  # fmt: skip
    # OpenSTA reports a library it cannot read, or a cell it does not know (then timed as an
    # untimed black box), and goes on: either would make the figures wrong
    problems = [line for line in sta_out.splitlines()
                if line.startswith("Error") or "Creating black box" in line]  # fmt: skip
    if problems:
        raise tools.ToolError(f"OpenSTA: {problems[0]} (see {directory / 'sta.log'})")
    report = SynthReport(config, kind, clock_ns, lib.stem, directory=directory,
                         critical=parse_critical_path(sta_out, clock_ns), srams=[],
                         **_tally(stat, cells, top, kind))  # fmt: skip
    report.srams = [dict(path=s.path, module=s.module, depth=s.depth, width=s.width, bits=s.bits,
                         reads=s.reads, **{f: getattr(macros[s.module], f) for f in _MACRO})
                    for s in srams]  # fmt: skip
    if srams:
        report.notes.append(f"SRAM macros: {next(iter(macros.values())).source}")
    return report


def _add_cells(stat: dict, added: dict[str, int], cell: str) -> None:
    """Count cells added to the netlist after Yosys's statistics (module -> count) in them."""
    modules = {name.lstrip("\\"): m for name, m in stat["modules"].items()}
    for module, n in added.items():
        by_type = modules[module]["num_cells_by_type"]
        by_type[cell] = by_type.get(cell, 0) + n


def _tally(stat: dict, cells: dict, top: str, kind: str) -> dict:
    """Cells, flip-flops, area and leakage in total and by component, from ``stat -json``."""
    modules = {name.lstrip("\\"): m for name, m in stat["modules"].items()}
    if top not in modules:
        raise tools.ToolError(f"Yosys's statistics have no module {top}")
    count = {top: 1}
    order = [top]
    for name in order:  # breadth first: every module's instances, times its parent's
        for sub, n in modules[name]["num_cells_by_type"].items():
            sub = sub.lstrip("\\")
            if sub in modules and sub not in cells:
                if sub not in count:
                    order.append(sub)
                count[sub] = count.get(sub, 0) + n * count[name]
    by_component: dict[str, list[float]] = {}
    leakage_nw = 0.0
    for name in order:
        component = component_of(name.removeprefix(top).removeprefix("."), kind)
        tally = by_component.setdefault(component, [0, 0, 0.0])
        for cell, n in modules[name]["num_cells_by_type"].items():
            if cell not in cells:
                continue  # a submodule or an SRAM macro
            n *= count[name]
            c = cells[cell]
            tally[0] += n
            tally[1] += n if c.sequential else 0
            tally[2] += n * c.area
            leakage_nw += n * c.leakage_nw
    components = {k: Component(*v) for k, v in sorted(by_component.items())}
    parts = components.values()
    return dict(cells=sum(c.cells for c in parts), flops=sum(c.flops for c in parts),
                area_um2=sum(c.area_um2 for c in parts), leakage_nw=leakage_nw,
                components=components)  # fmt: skip


def component_of(path: str, kind: str) -> str:
    """The component (:data:`COMPONENTS`) of the module instance at ``path`` below the top of the
    design ``kind`` (``"array.pe_0_1"``; ``""``: the top module itself)."""
    if path == "":
        return "control" if kind == "device" else "edge"
    if _PE.match(path):
        return "pe_array"
    return COMPONENTS.get(path.split(".")[0], "other")


def parse_critical_path(text: str, clock_ns: float) -> CriticalPath:
    """The path of OpenSTA's ``report_checks`` that needs the longest clock period (``clock_ns``
    the period it was timed at): each path's delay (its launch-to-capture span less its slack)
    scaled by the period over that span, so a half-cycle path (launched on one edge, captured
    on the other) counts double. The first path wins a tie."""
    best = None
    for block in re.split(r"(?=^Startpoint: )", text, flags=re.M):
        start = re.search(r"^Startpoint: (\S+)", block, re.M)
        end = re.search(r"^Endpoint: (\S+)", block, re.M)
        arrival = re.search(r"^\s*(-?[\d.]+)\s+data arrival time", block, re.M)
        slack = re.search(r"^\s*(-?[\d.]+)\s+slack \((MET|VIOLATED)\)", block, re.M)
        if not (start and end and arrival and slack):
            continue
        edges = [float(t) for t in _EDGE.findall(block)]
        launch, capture = edges if len(edges) == 2 and edges[1] > edges[0] else (0.0, clock_ns)
        span = capture - launch
        period = (span - float(slack.group(1))) * clock_ns / span
        path = CriticalPath(start.group(1), end.group(1), float(arrival.group(1)),
                            float(slack.group(1)), period)  # fmt: skip
        if best is None or path.period_ns > best.period_ns:
            best = path
    if best is None:
        raise tools.ToolError("OpenSTA reported no timing path (see sta.log)")
    return best


#: A path's launching and capturing clock edges, ``<delay> <time> clock clk (rise edge)``.
_EDGE = re.compile(r"^\s*-?[\d.]+\s+(-?[\d.]+)\s+clock \S+ \((?:rise|fall) edge\)", re.M)
