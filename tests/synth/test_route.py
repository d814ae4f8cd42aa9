"""synth/route.py: the synthesized mesh placed and routed by qflow (graywolf, qrouter) and timed
again by OpenSTA with its extracted wires; the DEF and SPEF readers on hand-made files."""

from __future__ import annotations

import pytest
from systolic.contract.config import ArrayConfig
from systolic.synth import tools
from systolic.synth.flow import synthesize
from systolic.synth.liberty import read_cells
from systolic.synth.route import CLOCK_BUFFER, DENSITY, mend_rc, mend_spef, parse_def, route

from ..helpers import run_cli

#: A routed DEF cut down by hand: a 100 x 50 um die in units of 1/100 um, two cells and a fill,
#: one net of two segments (the second turning twice, with a via at each end), one of one.
_DEF = """\
VERSION 5.6 ;
UNITS DISTANCE MICRONS 100 ;
DIEAREA ( -100 -200 ) ( 9900 4800 ) ;
COMPONENTS 3 ;
- NAND2X1_1 NAND2X1 + PLACED ( 0 0 ) N ;
- FILL_0_0 FILL + PLACED ( 240 0 ) N ;
- DFFPOSX1_1 DFFPOSX1 + PLACED ( 320 0 ) N ;
END COMPONENTS
NETS 2 ;
- _1_ ( NAND2X1_1 Y ) ( DFFPOSX1_1 D )
+ ROUTED metal1 ( 100 100 ) M2_M1
  NEW metal2 ( 100 100 ) ( * 400 ) ( 700 * ) ( * 300 ) M2_M1 ;
- clk ( DFFPOSX1_1 CLK )
+ ROUTED metal3 ( 0 1000 ) ( 2000 * ) ;
END NETS
"""
_SIZES = {"NAND2X1": (2.4, 10.0), "DFFPOSX1": (19.2, 10.0), "FILL": (0.8, 10.0)}


def test_a_hand_made_def_reads_as_counted():
    d = parse_def(_DEF, _SIZES)
    assert d["die_um"] == (100.0, 50.0)
    assert d["cells"] == 2  # the fill cell is not a cell of the design
    assert d["cell_area_um2"] == pytest.approx(24.0 + 192.0)
    # segment 1: a via alone; segment 2: 3 + 6 + 1 um; the clock: 20 um
    assert d["wirelength_um"] == pytest.approx(30.0)
    assert d["vias"] == 2


def test_rc2dly_spef_is_mended_to_the_standard():
    """rc2dly writes capacitances in pF under a fF header and internal nodes as ``<net>_<n>``;
    OpenSTA reads ``*<net><delimiter><n>`` (pins keep their names)."""
    raw = ("*DELIMITER /\n*C_UNIT 1 FF\n*D_NET *35 0.029\n*CAP\n1 35_1 0.0003\n*RES\n"
           "1 *36/Q 35_1 1.3\n2 35_1 35_2 1.0\n")  # fmt: skip
    out = mend_spef(raw)
    assert "*C_UNIT 1 PF" in out and "FF" not in out
    assert "1 *35/1 0.0003" in out
    assert "1 *36/Q *35/1 1.3" in out and "2 *35/1 *35/2 1.0" in out


def test_unnamed_wire_ends_are_dropped_only_when_they_carry_nothing(tmp_path):
    """qrouter names a wire end it cannot tie to a pin ``ERROR`` (seen on the 4x4 mesh): with
    no resistance and no capacitance it goes, first branch or later; with either it is an
    error."""
    line = ("_1_ 1 MUX2X1_1/Y 8 ( 1.2 0.02 ( 0.4 0.001 NOR2X1_2/B ) , ( 0 0 ERROR ) , "
            "( 0.3 0.0001 INVX1_3/A ) ) \n")  # fmt: skip
    assert mend_rc(line, tmp_path) == ("_1_ 1 MUX2X1_1/Y 8 ( 1.2 0.02 ( 0.4 0.001 NOR2X1_2/B ) , "
                                       "( 0.3 0.0001 INVX1_3/A ) ) \n")  # fmt: skip
    first = "_1_ 1 MUX2X1_1/Y 8 ( 1.2 0.02 ( 0 0 ERROR ) , ( 0.4 0.001 NOR2X1_2/B ) ) \n"
    assert mend_rc(first, tmp_path) == "_1_ 1 MUX2X1_1/Y 8 ( 1.2 0.02 ( 0.4 0.001 NOR2X1_2/B ) ) \n"
    with pytest.raises(tools.ToolError, match="could not name"):
        mend_rc(line.replace("( 0 0 ERROR )", "( 0.5 0 ERROR )"), tmp_path)


def test_a_routed_mesh_is_timed_with_its_wires():
    """WS 1x1 (one PE, 535 cells): every net routed; the placed netlist, timed without wires,
    agrees with the synthesis flow's timing of the same cells within 1%; the extracted wires
    only add delay (with the routed clock tree's skew the path may gain a little back); the
    cells take the share of the die asked for (measured 54.4% at 60%)."""
    config = ArrayConfig("ws", 1, 1)
    synth = synthesize(config, "array")
    r = route(config, "array")  # the build cache's (tests/synth/test_drc_lvs.py checks it)
    print(r.to_dict())
    assert r.failed_routes == 0
    assert r.clock_buffers == 3  # its 33 flip-flops' clock pins, 16 a buffer
    assert r.fmax_placed_mhz == pytest.approx(synth.fmax_mhz, rel=0.01)
    assert r.wired.arrival_ns > r.placed.arrival_ns  # the data wires only add delay
    assert r.fmax_wired_mhz < r.fmax_placed_mhz and r.fmax_routed_mhz < r.fmax_placed_mhz
    tree = r.clock_buffers * read_cells(tools.liberty())[CLOCK_BUFFER].area
    assert r.cell_area_um2 - tree == pytest.approx(synth.area_um2, rel=0.02)
    # fill cells spread them to DENSITY of the placement area; the die adds a ring around it
    assert DENSITY - 0.15 < r.density <= DENSITY
    assert r.wirelength_um > 0 and r.vias > 0
    again = route(config, "array")  # the cached run
    assert again.to_dict() == r.to_dict()


def test_route_refuses_the_device_with_a_reason(tmp_path):
    with pytest.raises(ValueError, match="bare mesh"):
        route(ArrayConfig("ws", 2, 2), "device", root=tmp_path)
    r = run_cli("synth", "--dataflow", "ws", "--rows", "2", "--cols", "2", "--route",
                cwd=tmp_path)  # fmt: skip
    assert r.returncode != 0 and "--design array" in r.stderr and "Traceback" not in r.stderr
