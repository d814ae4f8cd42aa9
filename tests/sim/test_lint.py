"""sim/lint.py on the generated Verilog: every tested configuration lints clean under
verilator -Wall, and a real width problem is still reported."""

from __future__ import annotations

import pytest
from systolic.contract.config import ArrayConfig
from systolic.contract.interface import TOPS
from systolic.rtl.generate import VERILOG_FOLDER, design_verilog
from systolic.sim.build import BUILD_ROOT
from systolic.sim.lint import lint

from ..configs import SIM_CONFIGS
from ..rtl.test_fp import CONFIGS as BF16_CONFIGS
from ..rtl.test_gemms import CONFIGS as GEMM_CONFIGS
from ..rtl.test_quantized import RQ, RQ_U8
from ..sim.test_conv import CONFIGS as CONV_CONFIGS
from ..sim.test_device import CONFIGS as DEVICE_CONFIGS

#: Meshes past 16 rows and 16 columns at once (5-bit row and column indices together; the
#: simulated meshes reach 32 in one dimension only), and an odd IS shape. (17 x 17 lints in a
#: fraction of 32 x 32's 40 s.)
LINT_ONLY = [ArrayConfig(d, 17, 17) for d in ("ws", "os")] + [ArrayConfig("is", 16, 9)]


#: The quantized integer path: zero points at the edge and the requantization unit.
QUANT = [
    ArrayConfig("ws", 4, 4, a_signed=False, zero_points=True, requant=True),
    ArrayConfig("is", 3, 5, zero_points=True, requant=True, out_signed=False, out_width=4),
    ArrayConfig("ws", 3, 3, number="bf16"),
    ArrayConfig("os", 2, 4, number="bf16"),
]


#: Every configuration as a bare mesh. As a whole device, what changes the logic around the mesh
#: (the mesh itself is linted above): each dataflow at the edge shapes, and every precision
#: (word widths and containers) on one dataflow; the device's own variants are linted below.
#: (The 1x1 devices are the simulated ones below.)
DEVICE_LINT = [c for c in SIM_CONFIGS if (c.rows, c.cols) in ((1, 32), (32, 1))
               and c.precision == "int8" and c.acc_width == 32] + [
    c for c in SIM_CONFIGS if (c.rows, c.cols) == (3, 2) and c.dataflow.value == "ws"
]  # fmt: skip
CASES = [(c, "array") for c in SIM_CONFIGS + LINT_ONLY + QUANT] + [
    (c, "device") for c in DEVICE_LINT + LINT_ONLY[2:]
]


def _verilog(config: ArrayConfig, kind: str, folder):
    """The design's Verilog in ``folder``: generated once for the lint and the simulation
    builds of the design (the builds' cache of generated Verilog)."""
    path = folder / f"{TOPS[kind]}.v"
    path.write_text(design_verilog(config, kind, cache=BUILD_ROOT / VERILOG_FOLDER))
    return path


@pytest.mark.parametrize(("config", "kind"), CASES,
                         ids=[f"{c.name}-{k}" for c, k in CASES])  # fmt: skip
def test_lint_clean(config, kind, tmp_path):
    result = lint(_verilog(config, kind, tmp_path), TOPS[kind])
    assert result.clean, "\n".join(result.warnings) or result.output


#: The devices the suite simulates (every dataflow at 1x1, 2x2 and 3x5, zero points, the
#: requantization unit signed and unsigned, bf16 on each dataflow): their Verilog is the builds'
#: (one generation for both); and the device on DRAM where nothing simulates it: wide beats,
#: bursts of one beat and 64-bit sums, the widest bus on a 16 x 16 mesh.
DEVICE = [
    *GEMM_CONFIGS,
    *DEVICE_CONFIGS,
    RQ,  # with the vector unit
    RQ_U8,
    # the vector unit on unsigned outputs: tests/sim/test_end_to_end.py's device
    ArrayConfig(
        "ws", 4, 4, a_signed=False, zero_points=True, requant=True, out_signed=False, vector=True
    ),
    ArrayConfig("ws", 2, 3, a_signed=False, zero_points=True, requant=True),  # both (simulated)
    *BF16_CONFIGS,
    ArrayConfig("os", 2, 2, a_width=16, b_width=16, acc_width=64, bus_width=64, max_burst=1),
    ArrayConfig("ws", 16, 16, bus_width=512),
    *CONV_CONFIGS.values(),  # the convolution expander and its staging buffer
]


@pytest.mark.parametrize("config", DEVICE, ids=lambda c: c.name)
def test_device_lint_clean(config, tmp_path):
    result = lint(_verilog(config, "device", tmp_path), TOPS["device"])
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
