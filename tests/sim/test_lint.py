"""sim/lint.py on the generated Verilog: every tested configuration lints clean under
verilator -Wall, and a real width problem is still reported."""

from __future__ import annotations

import pytest
from systolic.contract.config import ArrayConfig
from systolic.contract.interface import TOPS
from systolic.rtl.generate import write_design
from systolic.sim.lint import lint

from ..configs import SIM_CONFIGS

LINT_ONLY = [ArrayConfig(d, 32, 32) for d in ("ws", "os")] + [ArrayConfig("is", 16, 9)]


#: The quantized integer path: zero points at the edge and the requantization unit.
QUANT = [
    ArrayConfig("ws", 4, 4, a_signed=False, zero_points=True, requant=True),
    ArrayConfig("is", 3, 5, zero_points=True, requant=True, out_signed=False, out_width=4),
    ArrayConfig("ws", 3, 3, number="bf16"),
    ArrayConfig("os", 2, 4, number="bf16"),
]


@pytest.mark.parametrize("kind", ["array", "accelerator"])
@pytest.mark.parametrize("config", SIM_CONFIGS + LINT_ONLY + QUANT, ids=lambda c: c.name)
def test_lint_clean(config, kind, tmp_path):
    paths = write_design(config, tmp_path, kind)
    result = lint(paths["verilog"], TOPS[kind])
    assert result.clean, "\n".join(result.warnings) or result.output


def test_lint_reports_width_problems(tmp_path):
    """The waiver file waives only Amaranth's style warnings: a width bug still fails lint."""
    bad = tmp_path / "bad.v"
    bad.write_text(
        "module bad(input wire [7:0] a, output wire [3:0] y);\n  assign y = a;\nendmodule\n"
    )
    result = lint(bad, "bad")
    assert not result.clean
    assert any("WIDTHTRUNC" in w for w in result.warnings)
