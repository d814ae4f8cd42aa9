"""synth/: the generated Verilog through Yosys to the OSU 0.18 um cells and OpenSTA, every figure
read back from the tools' own output."""

from __future__ import annotations

import json
import re

import pytest
from systolic.contract.config import ArrayConfig, Dataflow
from systolic.contract.memories import memories
from systolic.contract.registers import always_on_bits
from systolic.models.sram import tiled_memory
from systolic.synth import flow, tools
from systolic.synth.flow import parse_critical_path, synthesize
from systolic.synth.liberty import read_cells

from ..helpers import run_cli

CLOCK_NS = 10.0


def _raw_cells(report) -> tuple[int, int]:
    """Cells and flip-flops counted straight from Yosys's stat.json and the Liberty file, and the
    fan-out buffers the timed netlist adds."""
    stat = json.loads((report.directory / "stat.json").read_text())
    lib = (report.directory / "osu018_stdcells.lib").read_text()
    names = set(re.findall(r"^\s*cell\s*\((\w+)\)", lib, re.M))
    flops = {n for n in names if n.startswith(("DFF", "LATCH"))}
    total = stat["design"]["num_cells_by_type"]
    timed = (report.directory / "netlist.v").read_text()
    buffers = len(re.findall(r"^  BUFX4 fanout_\d+_buf \($", timed, re.M))
    return (sum(v for k, v in total.items() if k in names) + buffers,
            sum(v for k, v in total.items() if k in flops))  # fmt: skip


def _max_fanout(report) -> int:
    """The most cell inputs one net drives in one module of the timed netlist (clocks aside)."""
    lib = (report.directory / "osu018_stdcells.lib").read_text()
    names = set(re.findall(r"^\s*cell\s*\((\w+)\)", lib, re.M))
    most = 0
    for module in re.split(r"^endmodule", (report.directory / "netlist.v").read_text(), flags=re.M):
        loads: dict[str, int] = {}
        for cell, body in re.findall(r"^  (\S+) +\S+ +\(\n(.*?)\n  \);", module, re.M | re.S):
            if cell not in names:
                continue
            for pin, net in re.findall(r"\.(\w+)\((.*?)\),?$", body, re.M):
                if pin not in ("Y", "Q", "YC", "YS", "CLK"):
                    loads[net] = loads.get(net, 0) + 1
        most = max([most, *loads.values()])
    return most


def _raw_slack(report) -> float:
    text = (report.directory / "sta.log").read_text()
    return float(re.findall(r"(-?\d+\.\d+)\s+slack \(", text)[0])


def _raw_min_period(report) -> tuple[float, int]:
    """The longest period any path of sta.log needs (its launch-to-capture span, read off its
    two clock edges, less its slack, per share of the clock), and how many paths span half a
    clock (the clock gate's falling-edge register, rtl.clock_gate)."""
    text = (report.directory / "sta.log").read_text()
    needs, halves = [], 0
    for block in text.split("Startpoint:")[1:]:
        launch, capture = (float(t) for t in re.findall(r"(-?\d+\.\d+)\s+clock clk \(", block))
        slack = float(re.findall(r"(-?\d+\.\d+)\s+slack \(", block)[0])
        halves += capture - launch == report.clock_ns / 2
        needs.append((capture - launch - slack) * report.clock_ns / (capture - launch))
    return max(needs), halves


def _always_clocked(netlist: str, top: str) -> int:
    """Flip-flops of the hierarchical netlist on the ungated clock: the top module's on its
    ``clk`` port and the always-on submodules' on their ``aon_clk`` (rtl.clock_gate)."""
    count = 0
    for module in netlist.split("\nmodule ")[1:]:
        name = re.match(r"\\?([^\s(]+)", module).group(1)
        clock = "clk" if name == top else "aon_clk"
        count += len(re.findall(rf"^  DFF\w+ [^;]*?\.CLK\({clock}\)", module, re.M))
    return count


def _check_components_add_up(report) -> None:
    """The components together hold every cell and flip-flop Yosys counted (its stat.json, read
    here without synth/), and the report's area."""
    parts = report.components.values()
    assert (sum(c.cells for c in parts), sum(c.flops for c in parts)) == _raw_cells(report)
    assert sum(c.area_um2 for c in parts) == pytest.approx(report.area_um2)
    assert all(c.flops > 0 and c.area_um2 > 0 for c in parts), report.components


@pytest.mark.parametrize("dataflow", list(Dataflow), ids=lambda d: d.value)
def test_every_dataflow_mesh_synthesizes_and_meets_a_10ns_clock(dataflow):
    report = synthesize(ArrayConfig(dataflow, 2, 2), "array", clock_ns=CLOCK_NS)
    assert (report.cells, report.flops) == _raw_cells(report)
    assert _max_fanout(report) <= 16  # what synth/fanout.py promises timing
    assert report.critical.slack_ns == _raw_slack(report)
    assert report.fmax_mhz == pytest.approx(1000 / (CLOCK_NS - report.critical.slack_ns))
    assert report.critical.slack_ns > 0, report.critical  # an int8 MAC fits 10 ns at 0.18 um
    assert set(report.components) == {"pe_array", "edge"}
    _check_components_add_up(report)


def test_mesh_area_grows_with_rows_times_columns():
    """4x4 has four times the PEs of 2x2: the PE array's area grows about fourfold (edge PEs
    lack some ports, so not exactly), the total with it."""
    small, big = (synthesize(ArrayConfig("ws", n, n), "array", clock_ns=CLOCK_NS) for n in (2, 4))
    ratio = big.components["pe_array"].area_um2 / small.components["pe_array"].area_um2
    assert 3.5 < ratio < 5, ratio
    assert big.area_um2 > 3.5 * small.area_um2
    assert big.flops > 3.5 * small.flops


@pytest.mark.long
def test_the_device_synthesizes_with_its_srams_as_timed_macros():
    config = ArrayConfig("ws", 2, 2)
    report = synthesize(config, clock_ns=CLOCK_NS)
    assert (report.cells, report.flops) == _raw_cells(report)
    assert _max_fanout(report) <= 16
    # the clock gate's half-cycle paths (its enable into the falling-edge register, that
    # register into the gate) need half a clock: the critical path is the full-cycle one
    period, halves = _raw_min_period(report)
    assert halves == 2 and report.min_period_ns == pytest.approx(period, abs=1e-6)
    assert report.min_period_ns == pytest.approx(CLOCK_NS - report.critical.slack_ns, abs=1e-6)
    assert set(report.components) == {"pe_array", "edge", "buffers", "controller", "dma",
                                      "control"}  # fmt: skip
    _check_components_add_up(report)
    # every SRAM is an instance of a macro of the SRAM library, which OpenSTA loaded and linked
    netlist = (report.directory / "netlist.v").read_text()
    # the clock gate leaves on the ungated clock what contract.registers counts (the energy
    # model's idle clock): the control registers, the descriptor queue and the gate's own
    assert _always_clocked(netlist, report.top) == always_on_bits(config)
    for sram in memories(config):
        assert re.search(rf"^\s*{sram.module} {sram.path.split('.')[-1]} \(", netlist, re.M), sram
    assert sorted(s["path"] for s in report.srams) == sorted(s.path for s in memories(config))
    sta_log = (report.directory / "sta.log").read_text()
    assert "Error" not in sta_log and "black box" not in sta_log
    # the macros carry the memory model's area and access time into the report and the timing
    macros = [tiled_memory(s.width, s.depth, s.reads, 180) for s in memories(config)]
    assert report.sram_area_um2 == pytest.approx(sum(m.area_um2 for m in macros))
    lib = (report.directory / "srams.lib").read_text()
    for m in macros:
        assert f'values ("{m.access_ns}")' in lib and f"area : {m.area_um2};" in lib


def test_cli_synth_prints_area_by_component_fmax_and_the_critical_path():
    args = ("synth", "--dataflow", "ws", "--rows", "2", "--cols", "2", "--clock-mhz", "100")
    res = run_cli(*args)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    for line in ("pe_array", "dma", "controller", "critical path:", "Fmax", "SRAM macros: 6"):
        assert line in out, out
    res = run_cli(*args, "--json")
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert f"Fmax {report['fmax_mhz']:.1f} MHz" in out
    assert report["critical"]["start"] in out and report["critical"]["end"] in out


def test_a_missing_tool_is_named_with_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(tools.ToolError, match="OpenSTA .* `make setup` installs it"):
        tools.sta()
    monkeypatch.setattr(tools, "LIBERTY", tmp_path / "missing.lib")
    with pytest.raises(tools.ToolError, match="missing.lib is missing; `make setup`"):
        synthesize(ArrayConfig("ws", 1, 1), "array")


def test_bad_arguments_and_reports_are_refused():
    with pytest.raises(ValueError, match="clock_ns must be between 0.1 and 1000 ns, not 0"):
        synthesize(ArrayConfig("ws", 2, 2), clock_ns=0)
    with pytest.raises(ValueError, match="design must be one of array, device, not 'mesh'"):
        synthesize(ArrayConfig("ws", 2, 2), "mesh")
    with pytest.raises(tools.ToolError, match="no timing path"):
        parse_critical_path("No paths found.\n", CLOCK_NS)


def test_liberty_cells_are_read_with_area_and_kind():
    cells = read_cells(tools.liberty())
    text = tools.liberty().read_text()
    assert len(cells) == len(re.findall(r"^\s*cell\s*\(", text, re.M))
    dff = re.search(r"cell \(DFFPOSX1\) \{\s*area : ([\d.]+);", text)
    assert cells["DFFPOSX1"].area == float(dff.group(1)) and cells["DFFPOSX1"].sequential
    assert not cells["NAND2X1"].sequential
    assert flow.COMPONENTS["reader"] == "dma"
