"""synth/drc_lvs.py: the routed 1x1 mesh's layout against its rules and its netlist; the same
layout with a scrap of metal too small for the rules, and against a placed netlist with two of
a cell's connections exchanged, fails; the tools' output is read as they report it, and a
missing result is an error."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace

import pytest
from systolic.contract.config import ArrayConfig
from systolic.contract.interface import TOPS
from systolic.synth import tools
from systolic.synth.drc_lvs import check_layout, describe_checks, parse_drc, parse_lvs
from systolic.synth.route import route

from ..helpers import run_cli

CONFIG = ArrayConfig("ws", 1, 1)  # tests/synth/test_route.py routes it too (one cached run)


@pytest.fixture(scope="module")
def routed():
    return route(CONFIG, "array")


@pytest.fixture(scope="module")
def checked(routed):
    return check_layout(routed)


def _copy(routed, tmp_path):
    """The routed project in a folder of its own (qflow writes its variables for it anew); taken
    once its own checks are done, so that no qflow is writing into it."""
    copy = tmp_path / "project"
    shutil.copytree(routed.directory, copy, ignore=shutil.ignore_patterns("checks-*"))
    for stale in ("qflow_vars.sh", "qflow_exec.sh"):  # they name the original folder
        (copy / stale).unlink()
    return copy


def test_the_routed_mesh_matches_its_netlist(checked, routed):
    """Every wire connects what the placed netlist says. Its rules: qrouter leaves a scrap of
    Metal3 under the minimum area at a pin of the 1x1 (the 2x2 and 4x4 route clean)."""
    print(checked.to_dict())
    assert (checked.lvs_errors, checked.lvs_match) == (0, True)
    assert set(checked.drc) <= {"Metal3 area < 20 (Mosis #+++)"}, checked.drc
    assert checked.clean == (checked.drc_errors == 0)
    assert check_layout(routed).to_dict() == checked.to_dict()  # the cached result


def test_drc_finds_metal_under_the_minimum_area(checked, routed, tmp_path):
    """A lone Metal2-to-Metal3 via added to a routed net, touching none of its wires: its
    pads are metal under the rules' minimum area, violations the layout did not have."""
    copy = _copy(routed, tmp_path)
    def_file = copy / "layout" / f"{TOPS['array']}.def"
    text = def_file.read_text()
    net = re.search(r"^\+ ROUTED metal1 \( (-?\d+) (-?\d+) \)[^;\n]*(?= ;$)", text, re.M)
    assert net, "no net routed on metal1 alone"
    via = f"\n  NEW metal2 ( {net.group(1)} {net.group(2)} ) M3_M2"
    def_file.write_text(text[: net.end()] + via + text[net.end() :])
    checks = check_layout(replace(routed, directory=copy))
    assert checks.drc_errors > checked.drc_errors, (checks.drc, checked.drc)
    new = {rule for rule, n in checks.drc.items() if n > checked.drc.get(rule, 0)}
    assert new and all(" area < " in rule for rule in new), checks.drc


def test_lvs_finds_a_connection_the_wires_do_not_make(checked, routed, tmp_path):
    """The layout as routed, the placed netlist with two of a NAND's connections exchanged:
    netgen cannot match the cell, nor the nets on those pins. (``checked`` first: no worker's
    qflow is still writing into the project it copies.)"""
    copy = _copy(routed, tmp_path)
    (spc,) = (copy / "synthesis").glob("*.spc")
    text = spc.read_text()
    nand = re.search(r"^(X\S+ \S+ )(\S+)( \S+ \S+ )(\S+)( NAND2X1)$", text, re.M)
    assert nand and nand.group(2) != nand.group(4), "no NAND2 with two distinct nets"
    swapped = nand.expand(r"\g<1>\g<4>\g<3>\g<2>\g<5>")
    spc.write_text(text[: nand.start()] + swapped + text[nand.end() :])
    checks = check_layout(replace(routed, directory=copy))
    assert not checks.lvs_match and checks.lvs_errors > 0, checks
    assert not checks.clean


def test_cli_synth_route_prints_the_checks(checked):
    """``systolic synth --design array --route``: the routed figures, then the checks' line;
    with ``--json`` under ``route.checks``."""
    args = ("synth", "--design", "array", "--dataflow", "ws", "--rows", "1", "--cols", "1",
            "--route")  # fmt: skip
    r = run_cli(*args)
    assert r.returncode == 0, r.stderr
    assert describe_checks(checked) in r.stdout, r.stdout
    r = run_cli(*args, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["route"]["checks"] == checked.to_dict()


def test_the_tools_output_is_read_as_they_report_it(tmp_path):
    drc = "violation: Metal3 area < 20\nviolation: Metal3 area < 20\nviolation: M2 spacing\n"
    assert parse_drc(drc + "drc done\n", tmp_path) == {"Metal3 area < 20": 2, "M2 spacing": 1}
    assert parse_drc("drc done\n", tmp_path) == {}
    with pytest.raises(tools.ToolError, match="did not finish"):
        parse_drc(drc, tmp_path)  # magic stopped before the end: not a pass
    assert parse_lvs("Result: Circuits match uniquely.\nTotal errors = 0\n", tmp_path) == (0, True)
    assert parse_lvs("Result: Netlists do not match.\nTotal errors = 4\n", tmp_path) == (4, False)
    with pytest.raises(tools.ToolError, match="no result"):
        parse_lvs("Total errors = 0\n", tmp_path)
