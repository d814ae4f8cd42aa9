"""`make bench-synth`: area and Fmax of the meshes as they grow, every dataflow, from synthesis.

A systolic array's promise is a clock that does not slow down as the array grows: every path is
PE to neighbour. This synthesizes the bare mesh of each dataflow from 2x2 to 16x16 (int8, 32-bit
accumulators) to the OSU 0.18 um cells and prints cells, flip-flops, area, area per PE, Fmax and
the critical path, and the 16x16 Fmax against the 4x4 one. Figures only; no assertion.
"""

from __future__ import annotations

import argparse
import sys
import time

from systolic.contract.config import ArrayConfig, Dataflow
from systolic.synth.drc_lvs import check_layout, describe_checks
from systolic.synth.flow import synthesize
from systolic.synth.route import route

SIZES = (2, 4, 8, 16)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m systolic.experiments.synth_bench",
                                     description=__doc__)  # fmt: skip
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), metavar="N",
                        help="square array sizes (default: 2 4 8 16)")  # fmt: skip
    parser.add_argument(
        "--clock-mhz",
        type=float,
        default=100.0,
        metavar="MHZ",
        help="the clock timing is checked against (default 100 MHz)",
    )
    parser.add_argument("--design", choices=["array", "device"], default="array")
    parser.add_argument("--route", action="store_true",
                        help="place and route each mesh too (qflow), and print the routed "
                        "figures against the synthesized ones (WS only: the three dataflows' "
                        "meshes differ little)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.route:
        return _routed(args.sizes, 1000.0 / args.clock_mhz)
    print(f"{'config':<20} {'cells':>8} {'flops':>7} {'area mm^2':>10} {'um^2/PE':>9} "
          f"{'Fmax MHz':>9} {'synth s':>8}  critical path")  # fmt: skip
    fmax = {}
    for dataflow in Dataflow:
        for n in args.sizes:
            config = ArrayConfig(dataflow, n, n)
            start = time.monotonic()
            r = synthesize(config, args.design, clock_ns=1000.0 / args.clock_mhz)
            fmax[dataflow, n] = r.fmax_mhz
            print(f"{config.name:<20} {r.cells:>8} {r.flops:>7} {r.area_um2 / 1e6:>10.4f} "
                  f"{r.components['pe_array'].area_um2 / n / n:>9.0f} {r.fmax_mhz:>9.1f} "
                  f"{time.monotonic() - start:>8.1f}  {r.critical.start} -> {r.critical.end}",
                  flush=True)  # fmt: skip
    if 4 in args.sizes and 16 in args.sizes:
        for dataflow in Dataflow:
            ratio = fmax[dataflow, 16] / fmax[dataflow, 4]
            print(f"{dataflow.value}: Fmax 16x16 / 4x4 = {ratio:.3f}")
    return 0


def _routed(sizes: list[int], clock_ns: float) -> int:
    """Each WS mesh synthesized, then placed and routed: die, the cells' share of it, wires,
    and Fmax from synthesis, from the placed netlist without wires, with its data wires (ideal
    clock), and routed (the clock net too); then its layout's DRC and LVS."""
    print(f"{'config':<16} {'cells':>7} {'die mm^2':>9} {'density':>8} {'wires mm':>9} "
          f"{'vias':>7} {'failed':>6} {'synth MHz':>9} {'placed':>7} {'wired':>7} "
          f"{'routed':>7} {'routed/synth':>12} {'P&R s':>7}")  # fmt: skip
    for n in sizes:
        config = ArrayConfig(Dataflow.WS, n, n)
        synth = synthesize(config, "array", clock_ns=clock_ns)
        r = route(config, "array", clock_ns=clock_ns)
        print(f"{config.name:<16} {r.cells:>7} {r.die_um2 / 1e6:>9.4f} {100 * r.density:>7.1f}% "
              f"{r.wirelength_um / 1000:>9.1f} {r.vias:>7} {r.failed_routes:>6} "
              f"{synth.fmax_mhz:>9.1f} {r.fmax_placed_mhz:>7.1f} {r.fmax_wired_mhz:>7.1f} "
              f"{r.fmax_routed_mhz:>7.1f} "
              f"{r.fmax_routed_mhz / synth.fmax_mhz:>12.3f} "
              f"{r.seconds['place_and_route']:>7.0f}", flush=True)  # fmt: skip
        print(
            f"  routed critical path: {r.routed.start} -> {r.routed.end}, "
            f"{r.routed.arrival_ns:.3f} ns (placed {r.placed.arrival_ns:.3f} ns)",
            flush=True,
        )
        checks = check_layout(r)
        print(f"  {describe_checks(checks)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
