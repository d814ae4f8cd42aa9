"""DRC and LVS of a routed mesh, in the qflow project :func:`synth.route.route` left: qflow's
migrate (magic builds the layout from the routed DEF), magic's rule check of it, and qflow's LVS
(netgen compares the netlist magic extracts from the layout with the one that was placed).

What they can check with this library: its cells are abstract views (LEF: pins and
obstructions), so DRC checks what the router drew (the metals and vias, against each other and
the cells' pins and obstructions), and LVS checks the connections the wires make, every cell a
black box, against the placed netlist; neither sees inside a cell.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from systolic.contract.interface import TOPS

from . import tools
from .route import QFLOW_TECH, RouteReport

__all__ = ["LayoutChecks", "check_layout", "describe_checks", "parse_drc", "parse_lvs"]


#: magic's DRC of the migrated layout, one line per violation with its rule (qflow's own DRC
#: step prints only the count, and stops the flow there when it is not 0).
_DRC = """\
lef read {lef}
load {top}
drc on
select top cell
expand
drc check
drc catchup
foreach {{why boxes}} [drc listall why] {{
    foreach box $boxes {{ puts stdout "violation: $why" }}
}}
puts stdout "drc done"
quit -noprompt
"""


@dataclass
class LayoutChecks:
    """The routed layout's rule violations and its netlist comparison."""

    drc: dict[str, int]  # magic's violations, by the rule each breaks
    lvs_errors: int  # netgen's unmatched nets, devices, pins and properties
    lvs_match: bool  # netgen: the extracted and the placed netlists match uniquely
    seconds: float
    directory: Path | None = None

    @property
    def drc_errors(self) -> int:
        return sum(self.drc.values())

    @property
    def lvs_clean(self) -> bool:
        return self.lvs_match and self.lvs_errors == 0

    @property
    def clean(self) -> bool:
        return self.drc_errors == 0 and self.lvs_clean

    def to_dict(self) -> dict:
        return asdict(self) | {"drc_errors": self.drc_errors, "directory": str(self.directory)}

    @classmethod
    def from_dict(cls, d: dict) -> LayoutChecks:
        d = {k: v for k, v in d.items() if k != "drc_errors"}
        return cls(**(d | {"directory": Path(d["directory"])}))


def check_layout(route: RouteReport, *, force: bool = False) -> LayoutChecks:
    """DRC and LVS of ``route``'s layout (its qflow project), or the cached result. Kept apart
    from the route's own cache, so that a routed mesh is checked without routing it again."""
    project, top = route.directory, TOPS[route.kind]
    key = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]
    directory = project / f"checks-{key}"

    def run() -> LayoutChecks:
        start = time.monotonic()
        tools.run(["qflow", "migrate", "-T", "osu018", top], project, directory / "migrate.out",
                  "qflow's migrate (magic reads the routed DEF)")  # fmt: skip
        script = directory / "drc.tcl"
        script.write_text(_DRC.format(lef=QFLOW_TECH / "osu018_stdcells.lef", top=top))
        drc = parse_drc(tools.run(["magic", "-dnull", "-noconsole", str(script)],
                                  project / "layout", directory / "drc.out", "magic's DRC"),
                        directory / "drc.out")  # fmt: skip
        # qflow exits 1 when LVS finds a difference: the counts below say what it found
        out = tools.run(["qflow", "lvs", "-T", "osu018", top], project, directory / "lvs.out",
                        "qflow's LVS (netgen)", judged=True)  # fmt: skip
        errors, match = parse_lvs(out, directory / "lvs.out")
        return LayoutChecks(drc, errors, match, round(time.monotonic() - start, 1), directory)

    return tools.cached(directory, force, LayoutChecks.from_dict, run)


def parse_drc(out: str, log: Path) -> dict[str, int]:
    """Violations by rule from the DRC script's output; output that did not reach its end is
    an error naming the log, never a pass."""
    if not re.search(r"^drc done$", out, re.M):
        raise tools.ToolError(f"magic's DRC did not finish (see {log})")
    return dict(Counter(re.findall(r"^violation: (.*)$", out, re.M)))


def parse_lvs(out: str, log: Path) -> tuple[int, bool]:
    """``(LVS errors, netlists match)`` from qflow's LVS output; a missing result is an error
    naming the log, never a pass."""
    total = re.search(r"^Total errors = (\d+)\s*$", out, re.M)
    result = re.search(r"^Result: (.*)$", out, re.M)
    if total is None or result is None:
        raise tools.ToolError(f"qflow's LVS output has no result (see {log})")
    return int(total.group(1)), "match uniquely" in result.group(1)


def describe_checks(checks: LayoutChecks) -> str:
    """One line: the DRC violations by rule and the LVS verdict."""
    rules = ", ".join(f"{n} {rule}" for rule, n in sorted(checks.drc.items()))
    drc = f"DRC {checks.drc_errors} violation(s)" + (f" ({rules})" if rules else "")
    lvs = ("LVS clean: the netlists match" if checks.lvs_clean
           else f"LVS {checks.lvs_errors} error(s), the netlists do not match")  # fmt: skip
    return f"{drc}; {lvs} (magic, netgen on the cells' abstract views: {checks.directory})"
