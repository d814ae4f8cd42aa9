"""Gate-level power from simulated activity (synth/power.py, verify/gate_energy.py): the
measured activity reaches OpenSTA's figures, and they sit within a measured bound of the toggle
model's, component by component."""

from __future__ import annotations

import json

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig
from systolic.contract.registers import always_on_bits
from systolic.sim.simulate import run_gemms
from systolic.synth.flow import synthesize
from systolic.synth.power import _consistent, aliases, annotate, cut_netlist, gate_power
from systolic.verify.gate_energy import gate_energy

from systolic.cli.synth import print_power

from ..conftest import SEED
from ..helpers import computed_once, run_cli

CONFIG = ArrayConfig("ws", 2, 2)  # the device tests/synth/test_flow.py synthesizes


@pytest.fixture(scope="module")
def runs():
    return computed_once("gate-energy-runs", _runs)  # the tests below, on whichever workers


def _runs():
    rng = np.random.default_rng(SEED)
    shape = (32, 24, 16)
    a = rng.integers(-128, 128, shape[:2])
    b = rng.integers(-128, 128, shape[1:])
    zero_a, zero_b = np.zeros_like(a), np.zeros_like(b)
    return gate_energy(CONFIG, [(a, b), (zero_a, zero_b)]), a, b


@pytest.mark.long
def test_the_per_net_build_counts_what_the_grouped_build_counts(runs):
    """Two builds of different counters, one GEMM: the per-net counts summed by group are the
    grouped build's toggles, group for group."""
    (random, _), a, b = runs
    (grouped,) = run_gemms(CONFIG, [(a, b)], activity=True)
    assert grouped.net_toggles is None
    assert random.result.toggles == grouped.toggles
    owners = {path.split(".")[0] for path in random.result.net_toggles}
    assert {"reader", "writer", "walk_rd", "control", "m_axi_rdata"} <= owners  # memory side too


def test_the_mesh_registers_count_each_bits_flips_and_high_cycles(runs):
    """The per-bit counters of the mesh's registers: their flips add up to the net's own
    popcount counter; a bit can only fall after it was high and rise after it was low (within
    each chunk's window), so its flips are bounded by its high and low cycles; with zero
    operands the weights and partial sums never hold a 1, with random ones every bit of them
    does at some point."""
    (random, zeros), _, _ = runs
    for run in (random, zeros):
        result = run.result
        cycles, chunks = result.activity_cycles, result.counters["jobs"]
        counted = {path: per_bit for path, (_, _, per_bit) in result.net_toggles.items() if per_bit}
        assert {p.rpartition(".")[0] for p in counted} >= {f"array.pe_{i}_{j}" for i in range(2)
                                                             for j in range(2)}  # fmt: skip
        assert not [p for p in counted if not p.startswith("array")]  # the mesh's only
        for path, per_bit in counted.items():
            flips, bits, _ = result.net_toggles[path]
            assert len(per_bit) == bits and sum(f for f, _ in per_bit) == flips, path
            for f, high in per_bit:
                assert 0 <= high <= cycles, path
                assert f <= 2 * min(high, cycles - high) + chunks, (path, f, high)
    data = ("w0", "w1", "psum_out")
    for run, held in ((zeros, False), (random, True)):
        for path, (_, _, per_bit) in run.result.net_toggles.items():
            if path.rpartition(".")[2] in data:
                assert all((high > 0) is held for _, high in per_bit), (path, per_bit)


def test_the_measured_duty_cycles_reach_opensta(runs):
    """Zero operands hold the mesh's data at 0 while its flags still move: with each bit's
    measured duty OpenSTA sees that a flag's flip steers a mux between zeros, with its default
    (every net high half the time) it sees data move. The same run priced without the duty
    cycles: the PEs' switching is 0.625 of it with them (measured, whatever the seed: the
    operands are zeros); random operands give 0.69 to 0.73 (seeds 1 to 3)."""
    (_, zeros), _, _ = runs
    default = {path: (rate, bits, None) for path, (rate, bits, _) in
               zeros.result.net_activity().items()}  # fmt: skip
    without = gate_power(synthesize(CONFIG, clock_ns=zeros.power.clock_ns), default,
                         zeros.power.clock_ns).components["pe_array"]  # fmt: skip
    with_duty = zeros.power.components["pe_array"]
    assert with_duty.switching_mw < 0.7 * without.switching_mw, (with_duty, without)


def test_every_mesh_flip_flop_takes_its_measured_activity(runs):
    (random, _), _, _ = runs
    coverage = random.power.coverage
    assert set(coverage) == {"pe_array", "edge", "buffers", "controller", "dma", "control"}
    for component in ("pe_array", "edge", "buffers"):
        measured, flops = coverage[component]
        assert measured == flops > 0, (component, coverage)
    measured, flops = coverage["controller"]
    assert measured >= 0.95 * flops, coverage


def test_the_measured_activity_drives_the_gate_level_power(runs):
    """The same hardware, clock and cycles: all-zero operands leave the multipliers and
    accumulators still, so the mesh's switching falls; with the activity ignored (OpenSTA's
    default), both runs would price the same."""
    (random, zeros), _, _ = runs
    assert random.window == zeros.window
    busy, still = (r.power.components["pe_array"] for r in (random, zeros))
    assert still.switching_mw < 0.2 * busy.switching_mw, (still, busy)
    assert still.total_mw < 0.6 * busy.total_mw, (still, busy)
    # the clock still reaches every flip-flop: internal power stays well above zero
    assert still.internal_mw > 0.2 * busy.internal_mw


def test_the_idle_device_clocks_only_its_always_on_registers(runs):
    """Idle (rtl.clock_gate shut, nothing moving): what is left is the always-on flip-flops'
    clock pins, all in "control" (the control registers and the queue), each priced as a PE's
    flip-flop clocked with still data (the all-zero run: measured 0.994 of it); every gated
    component is still. The issue's bound: idle at most a fifth of busy (measured 14.3% of the
    random run here)."""
    (random, zeros), _, _ = runs
    report = synthesize(CONFIG, clock_ns=random.power.clock_ns)
    idle = gate_power(report, random.result.net_activity(), random.power.clock_ns, idle=True)
    gated = {k: c.total_mw for k, c in idle.components.items() if k != "control"}
    assert all(mw < 0.01 for mw in gated.values()), gated
    per_flop = idle.flops["control"].internal_mw / always_on_bits(CONFIG)
    still = zeros.power.flops["pe_array"].internal_mw / zeros.power.coverage["pe_array"][1]
    assert per_flop == pytest.approx(still, rel=0.02)
    assert idle.total_mw < 0.2 * random.power.total_mw, (idle.total_mw, random.power.total_mw)


def test_gate_level_and_model_energy_agree_within_the_fits_bounds(runs):
    """A fresh gate-level point (not one the logic prices were fitted to), random and zero
    operands: the model's mesh within 15% of the gate level, its whole logic within 20%
    (tests/verify/test_logic_fit.py's bounds on held-out points)."""
    for run in runs[0]:
        rows = {row["row"]: row for row in run.rows()}
        assert set(rows) == {"mesh", "logic"}
        assert abs(rows["mesh"]["ratio"] - 1) <= 0.15, rows["mesh"]
        assert abs(rows["logic"]["ratio"] - 1) <= 0.20, rows["logic"]
        for row in rows.values():
            scaled = row["gate_pj_per_mac_180nm"] * run.node_factor
            assert row["gate_pj_per_mac_45nm"] == pytest.approx(scaled)


def test_a_register_is_found_under_its_alias_and_cut_from_its_loads():
    design = (
        "module top(a, clk);\n  output [1:0] a;\n  reg [1:0] r = 2'h0;\n"
        "  assign a[1:0] = r;\nendmodule\n"
    )
    assert aliases(design, "top") == {("", "a", 0): ("r", 0), ("", "a", 1): ("r", 1)}
    netlist = (
        "module top(a, clk);\n  output \\a[0] ;\n  input clk;\n"
        "  DFFPOSX1 _1_ (\n    .CLK(clk),\n    .D(1'h0),\n    .Q(\\a[0] )\n  );\nendmodule\n"
    )
    activity = {"r": (0.25, 2, [(0.5, 0.25), (0.0, 0.0)])}  # per net, then per bit
    note = annotate(netlist, "top", {"DFFPOSX1"}, set(), activity, aliases(design, "top"))
    assert note.flops == {"_1_": (0.5, 0.25)} and not note.unmatched  # its bit's own activity
    text, ports, owners = cut_netlist(netlist, "top", note)
    assert ports == {"probe$0": (0.5, 0.25), "tie$0": (0.0, 0.0)}
    assert owners == {"probe_buf$0": ("", True)}
    assert ".D(\\tie$0 ),\n    .Q(\\cut$0 )" in text
    assert "BUFX2 \\probe_buf$0  (\n    .A(\\probe$0 ),\n    .Y(\\a[0] )" in text


def test_a_duty_is_moved_into_what_its_flips_allow():
    """A bit that flips ``rate`` times a cycle spends at least ``rate / 2`` of the cycles at
    each level (OpenSTA returns NaN otherwise): a duty outside moves to that edge, one inside
    stays, and a constant keeps its level."""
    assert _consistent(0.02, 0.0) == pytest.approx(0.01)
    assert _consistent(0.02, 1.0) == pytest.approx(0.99)
    assert _consistent(0.02, 0.011) == 0.011 and _consistent(0.02, 0.989) == 0.989
    assert (_consistent(0.0, 0.0), _consistent(0.0, 1.0)) == (0.0, 1.0)
    assert _consistent(1.0, 0.3) == pytest.approx(0.5)  # a bit that flips every cycle


def test_cli_synth_power_prints_the_gate_level_table_beside_the_model(runs, capsys):
    """One run of the command (a gate-level point costs a simulation and two OpenSTA runs): its
    JSON; the text it prints for a point, from the functions it prints with, on the module's
    point."""
    args = ("synth", "--dataflow", "ws", "--rows", "2", "--cols", "2", "--clock-mhz", "100",
            "--power", "--gemm", "16", "12", "8", "--seed", "0", "--json")  # fmt: skip
    res = run_cli(*args)
    assert res.returncode == 0, res.stderr
    power = json.loads(res.stdout)["power"]
    assert power["shape"] == [16, 12, 8] and power["window_cycles"] > 0
    assert {row["row"] for row in power["rows"]} == {"mesh", "logic"}
    assert 0 < power["idle"]["total_mw"] < power["power"]["total_mw"]
    (random, _), a, b = runs
    print_power(random, SEED)
    out = capsys.readouterr().out
    m, k, n = a.shape + b.shape[1:]
    for text in (f"gate-level power, {m}x{k}x{n} random GEMM (seed {SEED})", "pe_array", "mesh",
                 "model/gate"):  # fmt: skip
        assert text in out, out
    bad = run_cli("synth", "--dataflow", "ws", "--rows", "2", "--cols", "2", "--power",
                  "--design", "array")  # fmt: skip
    assert bad.returncode != 0 and "--power prices the device" in bad.stderr
