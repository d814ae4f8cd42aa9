"""synth/fanout.py: buffer trees on nets that drive many gates, checked on small netlists by a
reader of their own (which load hangs on which net, through how many buffers)."""

from __future__ import annotations

import re

import pytest
from systolic.synth import tools
from systolic.synth.fanout import FANOUT_LIMIT, buffer_fanout
from systolic.synth.liberty import read_cells


@pytest.fixture(scope="module")
def cells():
    return read_cells(tools.liberty())


def _netlist(loads: int) -> str:
    """A flip-flop whose output ``sel`` drives ``loads`` NAND gates and a submodule port; the
    clock drives every flip-flop."""
    gates = "".join(
        f"  NAND2X1 _g{i}_ (\n    .A(sel),\n    .B(\\in[{i}] ),\n    .Y(\\out[{i}] )\n  );\n"
        for i in range(loads)
    )
    flops = "".join(
        f"  DFFPOSX1 _f{i}_ (\n    .CLK(clk),\n    .D(\\out[{i}] ),\n    .Q(\\q[{i}] )\n  );\n"
        for i in range(loads)
    )
    return (
        "/* header */\n"
        "module top(clk, s);\n  input clk;\n  input s;\n  wire sel;\n"
        "  DFFPOSX1 _r_ (\n    .CLK(clk),\n    .D(s),\n    .Q(sel)\n  );\n"
        + gates + flops
        + "  \\top.sub  sub (\n    .x(sel)\n  );\nendmodule\n"
        "module \\top.sub (x);\n  input x;\nendmodule\n"
    )  # fmt: skip


def _instances(text: str) -> list[tuple[str, str, dict[str, str]]]:
    out = []
    for m in re.finditer(r"^  (\S+) +(\S+) +\(\n(.*?)\n  \);", text, re.M | re.S):
        pins = dict(re.findall(r"\.(\w+)\((.*?)\),?$", m.group(3), re.M))
        out.append((m.group(1), m.group(2), pins))
    return out


def _root(net: str, driver_input: dict[str, str]) -> tuple[str, int]:
    """The net a load hangs on, through buffers, and how many buffers it passes."""
    depth = 0
    while net in driver_input:
        net, depth = driver_input[net], depth + 1
    return net, depth


@pytest.mark.parametrize("loads", [FANOUT_LIMIT, FANOUT_LIMIT + 1, 300])
def test_every_load_stays_on_its_net_through_a_tree_of_bounded_fanout(cells, loads):
    result = buffer_fanout(_netlist(loads), cells)
    instances = _instances(result.netlist)
    buffers = {pins["Y"]: pins["A"] for cell, _, pins in instances if cell == "BUFX4"}
    # every NAND still reads sel, through as many levels as a tree of 16 per buffer needs
    depth = 0 if loads <= FANOUT_LIMIT else 1 if loads <= FANOUT_LIMIT**2 else 2
    for cell, name, pins in instances:
        if cell == "NAND2X1":
            assert _root(pins["A"], buffers) == ("sel", depth), name
            assert pins["B"].startswith("\\in[")  # the other input untouched
        if cell == "DFFPOSX1":
            assert pins["CLK"] == "clk"  # the ideal clock is not buffered
    fanout: dict[str, int] = {}
    for cell, _, pins in instances:
        for pin, net in pins.items():
            if cell in cells and pin in cells[cell].inputs:
                fanout[net] = fanout.get(net, 0) + 1
    assert max(fanout.values()) <= FANOUT_LIMIT
    expected, level = 0, loads  # a buffer per 16 loads, level by level
    while level > FANOUT_LIMIT:
        level = -(-level // FANOUT_LIMIT)
        expected += level
    assert sum(result.buffers.values()) == expected == len(buffers)
    assert result.buffers == ({"top": expected} if expected else {})
    # the submodule's port is still on sel, and the text around the module is kept
    assert any(cell == "\\top.sub" and pins["x"] == "sel" for cell, _, pins in instances)
    assert result.netlist.startswith("/* header */\n")
    assert result.netlist.endswith("module \\top.sub (x);\n  input x;\nendmodule\n")


def test_an_escaped_net_keeps_its_terminating_space(cells):
    text = _netlist(40).replace("(sel)", "(\\sel[0] )").replace("wire sel;", "wire \\sel[0] ;")
    result = buffer_fanout(text, cells)
    roots = [pins["A"] for cell, _, pins in _instances(result.netlist)
             if cell == "BUFX4" and not pins["A"].startswith("fanout_")]  # fmt: skip
    assert roots == ["\\sel[0] "] * 3


def test_buffering_twice_changes_nothing(cells):
    once = buffer_fanout(_netlist(300), cells)
    twice = buffer_fanout(once.netlist, cells)
    assert (twice.netlist, twice.buffers) == (once.netlist, {})
