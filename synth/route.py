"""Place and route a synthesized netlist with the open tools here, and time it again with its
wires: Debian's qflow 1.3 drives graywolf (placement) and qrouter (detailed routing) on the OSU
0.18 um cells, qrouter's extracted resistances and capacitances become a SPEF file
(``rc2dly``), and OpenSTA times the placed netlist three times: without parasitics and with an
ideal clock (the synthesis view), with the SPEF and an ideal clock (what the data wires cost),
and with the SPEF and the routed clock tree propagated (what the clock costs too). qflow builds
no clock tree, so this flow adds one before placement (:func:`clock_tree`): without it one
routed net drives every flip-flop's clock pin, and its slow edge raises their setup time.

The netlist placed is the one :mod:`synth.flow` synthesized and timed (its ABC mapping and
buffer trees), flattened, so the two timings differ by the wires alone. The SRAM macros of a
device have no physical views (LEF) yet, so only the bare mesh is routed (``--design array``).
Runs are cached beside the synthesis run they place.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from systolic.contract.config import ArrayConfig
from systolic.contract.interface import TOPS

from . import tools
from .fanout import Buffered, buffer_fanout
from .flow import CriticalPath, SynthReport, parse_critical_path, synthesize
from .liberty import Cell, read_cells

__all__ = [
    "CLOCK_BUFFER",
    "CLOCK_FANOUT",
    "DENSITY",
    "QFLOW_TECH",
    "RouteReport",
    "clock_tree",
    "measure",
    "mend_rc",
    "mend_spef",
    "parse_def",
    "route",
    "spef_from_rc",
]

#: qflow's technology folder for the OSU 0.18 um cells (Debian's qflow-tech-osu018, which the
#: Makefile installs with qflow, graywolf and qrouter), beside the cell library synthesis reads.
QFLOW_TECH = tools.LIBERTY.parent
_QFLOW_LIB = Path("/usr/lib/qflow")

#: Flatten the synthesized netlist into the BLIF qflow places: one module, names it can read.
_FLATTEN = """\
read_liberty -lib {lib}
read_verilog netlist.v
hierarchy -top {top}
flatten
setundef -zero
opt_clean -purge
rename -hide c:*
rename -hide w:* i:* o:* %u %n w:* %i
rename -enumerate
write_verilog -noattr -noexpr -nohex -nodec flat.v
"""
#: ... and, its clock tree added, as BLIF.
_BLIF = """\
read_liberty -lib {lib}
read_verilog clocked.v
hierarchy -top {top}
write_blif -buf BUFX2 A Y {top}_mapped.blif
"""
#: The clock tree: a clock buffer per this many clock pins, level by level (qflow builds none).
CLOCK_FANOUT = 16
CLOCK_BUFFER = "CLKBUF1"
#: The cells' share of the placement area graywolf starts from (qflow's ``initial_density``:
#: fill cells spread them). qflow's default packs them into about 94% of the die, which the 2x2
#: mesh routes but the 4x4 did not (qrouter's third stage still failing nets after 10 minutes).
DENSITY = 0.6

_STA = """\
read_liberty {lib}
read_verilog synthesis/{top}.rtlnopwr.v
link_design {top}
create_clock -name clk -period {period} [get_ports clk]
set_input_delay 0 -clock clk [delete_from_list [all_inputs] [get_ports clk]]
set_output_delay 0 -clock clk [all_outputs]
{parasitics}
report_checks -path_delay max -digits 4
exit
"""


@dataclass
class RouteReport:
    """A placed and routed netlist: its die, cells, wires and timing without and with them."""

    config: ArrayConfig
    kind: str
    clock_ns: float
    cells: int  # placed standard cells (fill cells not counted)
    cell_area_um2: float
    die_um: tuple[float, float]  # width, height
    wirelength_um: float
    vias: int
    failed_routes: int
    clock_buffers: int  # the clock tree's (counted in ``cells``)
    placed: CriticalPath  # the placed netlist without parasitics, ideal clock
    wired: CriticalPath  # with the extracted parasitics, ideal clock
    routed: CriticalPath  # with the extracted parasitics, the routed clock propagated
    seconds: dict[str, float] = field(default_factory=dict)  # place and route, timing
    directory: Path | None = None

    @property
    def die_um2(self) -> float:
        return self.die_um[0] * self.die_um[1]

    @property
    def density(self) -> float:
        """The cells' share of the die."""
        return self.cell_area_um2 / self.die_um2

    @property
    def fmax_placed_mhz(self) -> float:
        return 1000.0 / (self.clock_ns - self.placed.slack_ns)

    @property
    def fmax_wired_mhz(self) -> float:
        return 1000.0 / (self.clock_ns - self.wired.slack_ns)

    @property
    def fmax_routed_mhz(self) -> float:
        return 1000.0 / (self.clock_ns - self.routed.slack_ns)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["config"] = self.config.name
        out["directory"] = str(self.directory) if self.directory else None
        out.update(die_um2=self.die_um2, density=self.density,
                   fmax_placed_mhz=self.fmax_placed_mhz, fmax_wired_mhz=self.fmax_wired_mhz,
                   fmax_routed_mhz=self.fmax_routed_mhz)  # fmt: skip
        return out

    @classmethod
    def from_dict(cls, d: dict) -> RouteReport:
        d = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        for key in ("placed", "wired", "routed"):
            d[key] = CriticalPath(**d[key])
        d["die_um"] = tuple(d["die_um"])
        d["directory"] = Path(d["directory"]) if d.get("directory") else None
        return cls(**d)


def route(config: ArrayConfig, kind: str = "array", *, clock_ns: float = 10.0,
          root: Path | None = None, force: bool = False) -> RouteReport:  # fmt: skip
    """Place and route the synthesized ``kind`` of ``config`` (only the bare mesh, ``"array"``,
    for now) and time it with its wires at ``clock_ns``, or read the cached run."""
    if kind != "array":
        raise ValueError(f"--route places the bare mesh (--design array), not the {kind}: the "
                         "device's SRAM macros have no physical view (LEF) yet")  # fmt: skip
    for tool in ("qflow", "graywolf", "qrouter"):
        if shutil.which(tool) is None:
            raise tools.ToolError(f"{tool} is not on PATH; {tools._SETUP}")
    synth = synthesize(config, kind, clock_ns=clock_ns, root=root)
    # beside the synthesis run, keyed by this flow's code (its tools are Debian's, pinned by it)
    key = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]
    directory = synth.directory / f"route-{key}"
    report = tools.cached(directory, force, RouteReport.from_dict,
                          lambda: _run(synth, directory))  # fmt: skip
    report.config = config
    return report


def _run(synth: SynthReport, directory: Path) -> RouteReport:
    top = TOPS[synth.kind]
    for sub in ("source", "synthesis", "layout", "log"):
        (directory / sub).mkdir(parents=True, exist_ok=True)
    syn = directory / "synthesis"
    lib = tools.liberty()
    shutil.copyfile(synth.directory / "netlist.v", syn / "netlist.v")
    # (qflow looks for the design's module in a source folder, though it reads only the BLIF)
    shutil.copyfile(synth.directory / "netlist.v", directory / "source" / f"{top}.v")
    shutil.copyfile(lib, syn / lib.name)  # the Yosys sandbox sees the folder it runs in
    (syn / "flatten.ys").write_text(_FLATTEN.format(lib=lib.name, top=top))
    tools.run([tools.yosys(), "-q", "flatten.ys"], syn, syn / "yosys.out", "Yosys (flatten)")
    tree = clock_tree((syn / "flat.v").read_text(), read_cells(lib))
    (syn / "clocked.v").write_text(tree.netlist)
    (syn / "blif.ys").write_text(_BLIF.format(lib=lib.name, top=top))
    tools.run([tools.yosys(), "-q", "blif.ys"], syn, syn / "yosys_blif.out", "Yosys (BLIF)")
    tools.run(["tclsh", str(_QFLOW_LIB / "scripts" / "ypostproc.tcl"), f"{top}_mapped.blif", top,
               str(QFLOW_TECH / "osu018.sh"), "vdd", "gnd"], syn, syn / "ypostproc.out",
              "qflow's ypostproc")  # fmt: skip
    (syn / f"{top}_mapped_tmp.blif").rename(syn / f"{top}.blif")
    (syn / f"{top}_powerground").write_text('set vddnet="vdd"\nset gndnet="gnd"\n')
    blif2verilog = _QFLOW_LIB / "bin" / "blif2Verilog"  # (the netlist OpenSTA times)
    tools.run(["sh", "-c", f"{blif2verilog} -c -p -v vdd -g gnd {top}.blif > {top}.rtlnopwr.v"],
              syn, syn / "blif2verilog.log", "qflow's blif2Verilog")  # fmt: skip
    start = time.monotonic()
    (directory / "project_vars.sh").write_text(f"set initial_density = {DENSITY}\n")
    out = tools.run(["qflow", "place", "route", "-T", "osu018", top], directory,
                    directory / "qflow.out", "qflow place and route")  # fmt: skip
    seconds = {"place_and_route": round(time.monotonic() - start, 1)}
    return measure(synth, directory, _failed_routes(out, directory / "qflow.out"),
                   sum(tree.buffers.values()), seconds)  # fmt: skip


def measure(synth: SynthReport, directory: Path, failed: int, clock_buffers: int,
            seconds: dict[str, float]) -> RouteReport:  # fmt: skip
    """The report of the routed qflow project in ``directory``: its wires extracted, its timing
    three ways, its die, cells and wires from the routed DEF."""
    top, lib = TOPS[synth.kind], tools.liberty()
    layout = directory / "layout"
    spef = directory / f"{top}.spef"
    spef_from_rc(layout / f"{top}.rc", lib, spef, directory)
    start = time.monotonic()
    placed = _time(directory, "sta_placed", top, lib, synth.clock_ns, "")
    wires = f"read_spef {spef.name}"
    wired = _time(directory, "sta_wired", top, lib, synth.clock_ns, wires)
    routed = _time(directory, "sta_routed", top, lib, synth.clock_ns,
                   f"{wires}\nset_propagated_clock [all_clocks]")  # fmt: skip
    timing = round(time.monotonic() - start, 1)
    sizes = _lef_sizes(QFLOW_TECH / "osu018_stdcells.lef")
    d = parse_def((layout / f"{top}.def").read_text(), sizes)
    return RouteReport(synth.config, synth.kind, synth.clock_ns, d["cells"], d["cell_area_um2"],
                       d["die_um"], d["wirelength_um"], d["vias"], failed, clock_buffers, placed,
                       wired, routed, seconds | {"timing": timing}, directory)  # fmt: skip


def clock_tree(netlist: str, cells: dict[str, Cell]) -> Buffered:
    """``netlist`` (flat) with a tree of :data:`CLOCK_BUFFER` on each net that drives more than
    :data:`CLOCK_FANOUT` clock pins, as a clock tree synthesis would give it (without balancing
    the branches' lengths: the propagated clock's skew is timed as it comes out)."""
    clocks = {n: replace(c, inputs=c.clocks) if n != CLOCK_BUFFER else c
              for n, c in cells.items()}  # fmt: skip
    return buffer_fanout(netlist, clocks, buffer=CLOCK_BUFFER, limit=CLOCK_FANOUT)


def _failed_routes(out: str, log: Path) -> int:
    if "Final: No failed routes!" in out:
        return 0
    m = re.search(r"Final:\s*(\d+)\s+failed routes", out)
    if m is None:
        raise tools.ToolError(f"qrouter gave no final count of failed routes (see {log})")
    return int(m.group(1))


def spef_from_rc(rc: Path, lib: Path, spef: Path, cwd: Path) -> None:
    """qrouter's extracted RC file as a SPEF file OpenSTA reads: ``rc2dly`` writes one, with two
    departures from IEEE 1481 mended here: its capacitances are in pF under a header that says
    fF, and its internal nodes are ``<net>_<n>`` where the standard has ``*<net><delimiter><n>``
    (OpenSTA would otherwise drop every wire capacitance, with a warning each). The RC file's
    unnamed wire ends are mended first (:func:`mend_rc`)."""
    mended = cwd / f"{rc.stem}_mended.rc"
    mended.write_text(mend_rc(rc.read_text(), rc))
    tools.run([str(_QFLOW_LIB / "bin" / "rc2dly"), "-r", str(mended), "-l", str(lib), "-d",
               str(spef)], cwd, cwd / "rc2dly.log", "qflow's rc2dly")  # fmt: skip
    spef.write_text(mend_spef(spef.read_text()))


#: A wire end qrouter's delay file could not tie to a pin (it writes ``ERROR`` for its name), with
#: no resistance and no capacitance, as a branch of a net: first or later.
_UNNAMED_END = re.compile(r"\s*,\s*\(\s*0\s+0\s+ERROR\s*\)|\(\s*0\s+0\s+ERROR\s*\)\s*,\s*")


def mend_rc(text: str, rc: Path) -> str:
    """qrouter's RC file without the wire ends it could not name (on the 4x4 mesh: one branch of
    a net that reaches the same pin three times). rc2dly would make each an instance called
    ``ERROR``, which OpenSTA refuses. Dropping one with no resistance and no capacitance changes
    no delay; one with either is an error, not a figure."""
    out = _UNNAMED_END.sub("", text)
    if re.search(r"\bERROR\b", out):
        raise tools.ToolError(
            "qrouter's RC file has a wire end it could not name, with "
            f"resistance or capacitance, so no delay of it holds (see {rc})"
        )
    return out


def mend_spef(text: str) -> str:
    """``rc2dly``'s SPEF with its units and internal node names as IEEE 1481 has them."""
    delimiter = re.search(r"^\*DELIMITER (\S)", text, re.M).group(1)
    text = text.replace("*C_UNIT 1 FF", "*C_UNIT 1 PF")
    return re.sub(r"(?<=\s)(\d+)_(\d+)(?=\s)", rf"*\1{delimiter}\2", text)


def _time(directory: Path, name: str, top: str, lib: Path, clock_ns: float,
          parasitics: str) -> CriticalPath:  # fmt: skip
    (directory / f"{name}.tcl").write_text(
        _STA.format(lib=lib, top=top, period=clock_ns, parasitics=parasitics)
    )
    out = tools.run([tools.sta(), "-no_splash", "-exit", f"{name}.tcl"], directory,
                    directory / f"{name}.log", "OpenSTA timing")  # fmt: skip
    # the fill cells have no timing (a black box each); anything else unknown, or a SPEF line
    # OpenSTA cannot place, would make the figures wrong
    problems = [line for line in out.splitlines()
                if line.startswith("Error") or line.startswith("Warning") and not re.search(
                    r"module FILL not found", line)]  # fmt: skip
    if problems:
        raise tools.ToolError(f"OpenSTA: {problems[0]} (see {directory / name}.log)")
    return parse_critical_path(out, clock_ns)


def _lef_sizes(lef: Path) -> dict[str, tuple[float, float]]:
    """Each cell's width and height in um, from the cell library's LEF."""
    sizes, macro = {}, None
    for line in lef.read_text().splitlines():
        words = line.split()
        if words[:1] == ["MACRO"]:
            macro = words[1]
        elif words[:1] == ["SIZE"] and macro is not None:
            sizes[macro] = (float(words[1]), float(words[3]))
        elif words[:1] == ["END"] and words[1:2] == [macro]:
            macro = None
    return sizes


def parse_def(text: str, sizes: dict[str, tuple[float, float]]) -> dict:
    """A routed DEF's die (um), its standard cells (fill excluded) and their area, and its
    routed wires: the Manhattan length of every segment of every net, and the vias."""
    units = float(re.search(r"UNITS DISTANCE MICRONS (\d+)", text).group(1))
    x0, y0, x1, y1 = map(float, re.search(
        r"DIEAREA \( (-?\d+) (-?\d+) \) \( (-?\d+) (-?\d+) \)", text).groups())  # fmt: skip
    cells, area = 0, 0.0
    components = text[text.index("\nCOMPONENTS") : text.index("END COMPONENTS")]
    for cell in re.findall(r"^- \S+ (\S+) ", components, re.M):
        if cell.startswith("FILL"):
            continue
        w, h = sizes[cell]
        cells, area = cells + 1, area + w * h
    nets = text[text.index("\nNETS") : text.index("END NETS")]
    length, vias = 0.0, 0
    for segment in re.split(r"\b(?:ROUTED|NEW)\b", nets)[1:]:
        segment = segment.split(";")[0]  # (a net's last segment ends it)
        x = y = None
        for token in re.findall(r"\(\s*(\S+)\s+(\S+)(?:\s+\S+)?\s*\)|\b([A-Z]\w*_[A-Z]\w*)\b",
                                segment):  # fmt: skip
            if token[2]:  # a via between two layers (M2_M1, ...)
                vias += 1
                continue
            nx = x if token[0] == "*" else float(token[0])
            ny = y if token[1] == "*" else float(token[1])
            if x is not None:
                length += abs(nx - x) + abs(ny - y)
            x, y = nx, ny
    return {
        "cells": cells,
        "cell_area_um2": area,
        "die_um": ((x1 - x0) / units, (y1 - y0) / units),
        "wirelength_um": length / units,
        "vias": vias,
    }
