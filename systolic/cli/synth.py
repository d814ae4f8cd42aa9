"""``systolic synth``: the accelerator synthesized to standard cells and timed with OpenSTA."""

from __future__ import annotations

import argparse
import json

from systolic.contract.config import check_buildable
from systolic.synth.flow import synthesize

from .options import add_config_options, config_from_args


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
    p.add_argument("--target", choices=["asic"], default="asic",
                   help="asic: OSU 0.18 um standard cells (the only target so far)")  # fmt: skip
    p.add_argument("--clock-ns", type=float, default=10.0, metavar="T",
                   help="clock period the timing is checked against (default 10 ns)")  # fmt: skip
    p.add_argument("--force", action="store_true", help="synthesize again even if cached")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    check_buildable(config)
    report = synthesize(config, args.design, clock_ns=args.clock_ns, force=args.force)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
        return 0
    print(f"{config.name}: {report.cells} cells ({report.flops} flip-flops), "
          f"{report.area_um2 / 1e6:.4f} mm^2 of standard cells ({report.library})")  # fmt: skip
    print(f"  {'component':<12} {'cells':>8} {'flops':>7} {'area um^2':>12} {'share':>6}")
    for name, c in sorted(report.components.items(), key=lambda kv: -kv[1].area_um2):
        share = 100 * c.area_um2 / report.area_um2
        print(f"  {name:<12} {c.cells:>8} {c.flops:>7} {c.area_um2:>12.0f} {share:>5.1f}%")
    if report.srams:
        bits = sum(s["bits"] for s in report.srams)
        print(f"  SRAM macros: {len(report.srams)}, {bits} bits ({bits / 8192:.1f} KiB)")
    cp = report.critical
    print(f"  critical path: {cp.start} -> {cp.end}, {cp.arrival_ns:.3f} ns "
          f"(slack {cp.slack_ns:+.3f} ns at {report.clock_ns:g} ns)")  # fmt: skip
    print(f"  Fmax {report.fmax_mhz:.1f} MHz (min period {report.min_period_ns:.3f} ns)")
    for note in report.notes:
        print(f"  note: {note}")
    print(f"  logs and netlist: {report.directory}")
    return 0
