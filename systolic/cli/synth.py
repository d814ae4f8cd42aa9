"""``systolic synth``: the accelerator synthesized to standard cells and timed with OpenSTA."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from systolic.contract.config import check_buildable, value_range
from systolic.synth.fpga import PARTS, RESOURCES, place_and_route

from .options import add_config_options, add_seed_option, config_from_args, positive_number, seed_of

if TYPE_CHECKING:
    from systolic.verify.gate_energy import GateEnergy


def add_parser(sub) -> None:
    p = sub.add_parser(
        "synth",
        help="synthesize the accelerator (Yosys, OSU 0.18 um cells) and time it (OpenSTA)",
        description="Synthesize the whole accelerator of a configuration to the OSU 0.18 um "
        "standard cells with Yosys, keeping its SRAMs as macros, and time it with OpenSTA: "
        "area, cells and flip-flops by component, the critical path and Fmax. Runs are "
        "cached under build/synth by the Verilog, the clock and the tools.",
    )
    add_config_options(p, rtl=True)
    p.add_argument("--design", choices=["device", "array"], default="device",
                   help="the whole accelerator (default) or only the systolic mesh")  # fmt: skip
    p.add_argument("--target", choices=["asic", "ecp5"], default="asic",
                   help="asic: OSU 0.18 um standard cells (default); ecp5: a Lattice ECP5 FPGA "
                   "(Yosys synth_ecp5, nextpnr-ecp5)")  # fmt: skip
    p.add_argument("--part", choices=list(PARTS), default="85k",
                   help="the ECP5 part for --target ecp5 (default 85k)")  # fmt: skip
    p.add_argument("--clock-mhz", type=positive_number, default=100.0, metavar="MHZ",
                   help="the clock the timing is checked against, in MHz (default 100: a 10 ns "
                   "period)")  # fmt: skip
    p.add_argument("--route", action="store_true",
                   help="also place and route the synthesized mesh (qflow: graywolf, "
                   "qrouter) and time it with its extracted wires (OpenSTA, SPEF); with "
                   "--design array")  # fmt: skip
    p.add_argument("--power", action="store_true",
                   help="also simulate a random GEMM on the activity build and price it at gate "
                   "level (OpenSTA, measured activity) beside the toggle model")  # fmt: skip
    p.add_argument("--gemm", type=int, nargs=3, metavar=("M", "K", "N"), default=(64, 64, 64),
                   help="the GEMM --power simulates (default 64 64 64)")  # fmt: skip
    add_seed_option(p, "the --power GEMM's operands")
    p.add_argument("--force", action="store_true", help="synthesize again even if cached")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from systolic.synth.flow import synthesize

    config = config_from_args(args)
    check_buildable(config)
    if args.power and args.design != "device":
        raise ValueError("--power prices the device (its activity build); drop --design array")
    if any(d < 1 for d in args.gemm):
        raise ValueError(f"--gemm M K N must be positive, not {' '.join(map(str, args.gemm))}")
    if args.route and (args.design != "array" or args.target != "asic"):
        raise ValueError(
            "--route places the bare mesh in standard cells: use it with --design array "
            "(the device's SRAM macros have no physical view yet) and --target asic"
        )
    if args.target == "ecp5":
        if args.power:
            raise ValueError("--power is for --target asic (OpenSTA with the cell library)")
        return _fpga(config, args)
    report = synthesize(config, args.design, clock_ns=1000.0 / args.clock_mhz, force=args.force)
    gate = _gate_energy(config, args) if args.power else None
    idle = _idle_power(report, gate, args) if gate else None
    routed, checks = _route(config, args) if args.route else (None, None)
    if args.json:
        power = {"power": gate.to_dict() | {"idle": idle.to_dict()}} if gate else {}
        route = {"route": routed.to_dict() | {"checks": checks.to_dict()}} if routed else {}
        extra = power | route
        print(json.dumps(report.to_dict() | extra, indent=2))
        return 0
    print(f"{config.name}: {report.cells} cells ({report.flops} flip-flops), "
          f"{report.area_um2 / 1e6:.4f} mm^2 of standard cells ({report.library})")  # fmt: skip
    print(f"  {'component':<12} {'cells':>8} {'flops':>7} {'area um^2':>12} {'share':>6}")
    for name, c in sorted(report.components.items(), key=lambda kv: -kv[1].area_um2):
        share = 100 * c.area_um2 / report.area_um2
        print(f"  {name:<12} {c.cells:>8} {c.flops:>7} {c.area_um2:>12.0f} {share:>5.1f}%")
    if report.srams:
        bits = sum(s["bits"] for s in report.srams)
        leak = sum(s["leakage_mw"] for s in report.srams)
        print(f"  SRAM macros: {len(report.srams)}, {bits} bits ({bits / 8192:.1f} KiB), "
              f"{report.sram_area_um2 / 1e6:.4f} mm^2, leakage {leak:.2f} mW, access "
              f"{max(s['access_ns'] for s in report.srams):.2f} ns (memory model)")  # fmt: skip
        print(f"  total area {report.total_area_um2 / 1e6:.4f} mm^2 "
              f"(standard cells and SRAM macros)")  # fmt: skip
    cp = report.critical
    print(f"  critical path: {cp.start} -> {cp.end}, {cp.arrival_ns:.3f} ns "
          f"(slack {cp.slack_ns:+.3f} ns at {report.clock_ns:g} ns)")  # fmt: skip
    print(f"  Fmax {report.fmax_mhz:.1f} MHz (min period {report.min_period_ns:.3f} ns)")
    for note in report.notes:
        print(f"  note: {note}")
    print(f"  logs and netlist: {report.directory}")
    if routed:
        _print_route(routed, checks)
    if gate:
        print_power(gate, args.seed)
        _print_idle(idle, gate)
    return 0


def _idle_power(report, gate: GateEnergy, args):
    from systolic.synth.power import gate_power

    return gate_power(report, gate.result.net_activity(), 1000.0 / args.clock_mhz, idle=True)


def _print_idle(idle, gate: GateEnergy) -> None:
    busy = gate.power.total_mw
    parts = {k: sum(getattr(c, k) for c in idle.components.values())
             for k in ("internal_mw", "leakage_mw")}  # fmt: skip
    print(
        f"  idle (no descriptor, the clock running, the gated clock stopped): "
        f"{idle.total_mw:.3f} mW ({parts['internal_mw']:.3f} internal, "
        f"{parts['leakage_mw']:.5f} leakage), {100 * idle.total_mw / busy:.1f}% of busy"
    )
    for name, c in idle.components.items():
        print(f"    {name:<12} {c.total_mw:>9.3f} mW")


def _route(config, args):
    from systolic.synth.drc_lvs import check_layout
    from systolic.synth.route import route

    routed = route(config, args.design, clock_ns=1000.0 / args.clock_mhz, force=args.force)
    return routed, check_layout(routed, force=args.force)


def _print_route(r, checks) -> None:
    from systolic.synth.drc_lvs import describe_checks

    w, h = r.die_um
    print(f"placed and routed (qflow {r.seconds['place_and_route']:.0f} s: graywolf, qrouter): "
          f"die {w:.1f} x {h:.1f} um ({r.die_um2 / 1e6:.4f} mm^2), {r.cells} cells, "
          f"{100 * r.density:.1f}% of the die")  # fmt: skip
    print(f"  wires {r.wirelength_um / 1000:.2f} mm, {r.vias} vias, {r.failed_routes} failed "
          f"route(s); a clock tree of {r.clock_buffers} buffers")  # fmt: skip
    for name, cp, fmax in (("placed", r.placed, r.fmax_placed_mhz),
                           ("wired", r.wired, r.fmax_wired_mhz),
                           ("routed", r.routed, r.fmax_routed_mhz)):  # fmt: skip
        print(f"  {name}: {cp.start} -> {cp.end}, {cp.arrival_ns:.3f} ns, Fmax {fmax:.1f} MHz")
    print(
        "  (placed: no wires, ideal clock; wired: the extracted wires (SPEF), ideal clock; "
        "routed: the wires and the routed clock tree)"
    )
    print(f"  {describe_checks(checks)}")
    print(f"  layout and logs: {r.directory}")


def _fpga(config, args) -> int:
    report = place_and_route(config, args.design, part=args.part,
                             target_mhz=args.clock_mhz, force=args.force)  # fmt: skip
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
        return 0
    print(f"{config.name} ({args.design}) on ECP5 {report.part}, out of context "
          f"(Yosys synth_ecp5, nextpnr-ecp5): {report.luts} LUT4s")  # fmt: skip
    for cell, (used, available) in report.utilization.items():
        print(f"  {cell:<13} {used:>7} / {available:<7} {RESOURCES[cell]}")
    cp = report.critical
    print(f"  critical path: {cp['start']} -> {cp['end']}, {cp['delay_ns']:.3f} ns")
    print(f"  Fmax {report.fmax_mhz:.1f} MHz (target {report.target_mhz:.1f} MHz)")
    print(f"  logs and netlist: {report.directory}")
    return 0


def _gate_energy(config, args) -> GateEnergy:
    import numpy as np

    from systolic.verify.gate_energy import gate_energy

    rng = np.random.default_rng(seed_of(args))
    m, k, n = args.gemm
    lo_a, hi_a = value_range(config.a_width, config.a_signed)
    lo_b, hi_b = value_range(config.b_width, config.b_signed)
    a = rng.integers(lo_a, hi_a + 1, (m, k))
    b = rng.integers(lo_b, hi_b + 1, (k, n))
    (gate,) = gate_energy(config, [(a, b)], clock_ns=1000.0 / args.clock_mhz)
    return gate


def print_power(gate: GateEnergy, seed: int) -> None:
    """The gate-level power table of ``--power``: each component, and the model beside it."""
    from systolic.models.technology import factor
    from systolic.verify.gate_energy import FLOW_NM, MODEL_NM

    p = gate.power
    m, k, n = gate.shape
    print(f"gate-level power, {m}x{k}x{n} random GEMM (seed {seed}), measured activity over "
          f"{gate.window} busy cycles at {p.clock_ns:g} ns (OpenSTA, OSU 0.18 um):")  # fmt: skip
    print(f"  {'component':<12} {'internal mW':>12} {'switching mW':>13} {'leakage mW':>11} "
          f"{'pJ/MAC':>9} {'measured flops':>15}")  # fmt: skip
    for name, c in p.components.items():
        measured, flops = p.coverage.get(name, (0, 0))
        print(f"  {name:<12} {c.internal_mw:>12.3f} {c.switching_mw:>13.3f} "
              f"{c.leakage_mw:>11.5f} {gate.gate_pj_per_mac((name,)):>9.3f} "
              f"{measured:>7}/{flops:<7}")  # fmt: skip
    print(f"  total {p.total_mw:.3f} mW, {gate.gate_pj_per_mac():.3f} pJ/MAC at 0.18 um "
          f"(SRAM macros and DRAM not included)")  # fmt: skip
    print(f"  against the energy model (its logic prices fitted to such points at 0.18 um; "
          f"at {MODEL_NM} nm both scale by {factor('energy', FLOW_NM, MODEL_NM):.4f}, "
          f"Stillmaker-Baas, an estimate):")  # fmt: skip
    for row in gate.rows():
        print(f"  {row['row']:<12} gate {row['gate_pj_per_mac_180nm']:.3f} pJ/MAC, model "
              f"{row['model_pj_per_mac_180nm']:.3f} pJ/MAC, "
              f"model/gate {row['ratio']:.3f}")  # fmt: skip
    print(f"  OpenSTA files: {p.directory}")
