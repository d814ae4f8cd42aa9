"""synth/fpga.py: the meshes through Yosys synth_ecp5 and nextpnr-ecp5, every figure read back
from the tools' own reports."""

from __future__ import annotations

import json

import pytest
from systolic.contract.config import ArrayConfig, Dataflow
from systolic.synth.fpga import place_and_route

from ..helpers import run_cli


@pytest.mark.parametrize("dataflow", list(Dataflow), ids=lambda d: d.value)
def test_every_dataflow_mesh_is_placed_and_routed_on_an_ecp5(dataflow):
    config = ArrayConfig(dataflow, 2, 2)
    report = place_and_route(config, "array")
    pnr = json.loads((report.directory / "report_pnr.json").read_text())
    stat = json.loads((report.directory / "stat.json").read_text())
    assert report.fmax_mhz == pnr["fmax"]["clk"]["achieved"] > 0
    for cell, (used, available) in report.utilization.items():
        assert (used, available) == (pnr["utilization"][cell]["used"],
                                     pnr["utilization"][cell]["available"])  # fmt: skip
    assert report.luts == stat["design"]["num_cells_by_type"]["LUT4"]
    # one int8 x int8 multiply per PE, each in one 18x18 DSP block; no memories in a bare mesh
    assert report.utilization["MULT18X18D"][0] == config.pes
    assert report.utilization["DP16KD"][0] == 0
    assert report.utilization["TRELLIS_FF"][0] > 0


def test_cli_synth_target_ecp5_prints_the_fpga_figures():
    args = ("synth", "--target", "ecp5", "--design", "array", "--dataflow", "ws", "--rows", "2",
            "--cols", "2")  # fmt: skip
    res = run_cli(*args, "--json")
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    out = run_cli(*args).stdout
    assert f"Fmax {report['fmax_mhz']:.1f} MHz" in out and "MULT18X18D" in out
    assert report["critical"]["start"] in out


def test_bad_fpga_arguments_are_refused_by_name():
    with pytest.raises(ValueError, match="part must be one of 25k, 45k, 85k, not '12k'"):
        place_and_route(ArrayConfig("ws", 2, 2), "array", part="12k")
    with pytest.raises(ValueError, match="target_mhz must be between 1 and 1000 MHz, not 0"):
        place_and_route(ArrayConfig("ws", 2, 2), "array", target_mhz=0)
