"""``systolic model``: a GEMM's cycles, counters, traffic, reuse and energy, without simulating."""

from __future__ import annotations

import argparse
import json

from systolic.contract.dma import place

from .options import (
    add_config_options,
    add_data_option,
    add_energy_options,
    add_memory_options,
    add_shape_options,
    chunk_from_args,
    config_from_args,
    dram_energy_from_args,
    energy_coefficients,
    memory_from_args,
    output_file,
)
from .output import print_energy, print_figures, write_trace


def add_parser(sub) -> None:
    p = sub.add_parser(
        "model",
        help="predict cycles, counters, traffic and reuse of a GEMM without simulating",
        description="The analytical model of the device behind its DRAM (models/pipeline.py): "
        "every counter, the DRAM traffic and the reuse it implies; the chunks, compute counters "
        "and DRAM bytes exactly as the RTL counts them, the cycles and waits within the bounds "
        "docs/memory.md gives. --exact follows the device cycle by cycle instead "
        "(models/device.py, equal to the RTL on every counter: systolic compare checks that), "
        "in time proportional to the cycles.",
    )
    add_config_options(p, rtl=False)
    add_shape_options(p, required=True)
    add_memory_options(p)
    p.add_argument("--exact", action="store_true",
                   help="the cycle-level model (exact, slow on large GEMMs)")  # fmt: skip
    add_energy_options(
        p,
        "also estimate the energy: bit flips predicted on a sample of operands of --data, "
        "scaled to the whole GEMM (models.toggles.estimate_toggles)",
    )
    add_data_option(p, "operand data the energy estimate assumes (default random)")
    p.add_argument("--trace", type=output_file, metavar="FILE.json",
                   help="write the timeline (loads, compute, stores, waits) as Chrome "
                   "trace-event JSON, from the cycle-level model (as with --exact)")  # fmt: skip
    p.add_argument("--json", action="store_true", help="print the prediction as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from systolic.models.device import DeviceFigures, predict_device, trace_device
    from systolic.models.energy import figures_energy
    from systolic.models.pipeline import predict_pipeline
    from systolic.models.toggles import estimate_toggles

    config = config_from_args(args)
    memory = memory_from_args(args)
    chunk = chunk_from_args(args, config, memory)
    d = place(config, args.m, args.k, args.n, order=args.order, chunk=chunk)
    model = predict_device if args.exact else predict_pipeline
    pred = DeviceFigures(config, (args.m, args.k, args.n), d, dict(model(config, d, memory)))
    summary = pred.summary() | {"memory": memory.to_dict(), "order": args.order,
                                "chunking": args.chunks,
                                "model": "device" if args.exact else "pipeline"}  # fmt: skip
    if args.trace is not None:
        events = trace_device(config, d, memory)
        write_trace(args.trace, events, config.name, args.clock_mhz)
        summary["trace"] = {"file": str(args.trace), "events": len(events)}
    report = None
    if args.energy:
        toggles = estimate_toggles(config, args.m, args.k, args.n, data=args.data.text)
        report = figures_energy(pred, toggles, energy_coefficients(args), source="model",
                                dram=dram_energy_from_args(args))  # fmt: skip
        summary["energy"] = report.to_dict() | {"data": args.data.text}
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    how = "cycle-level model" if args.exact else "pipeline model"
    print(f"{config.name}: {args.m}x{args.k}x{args.n} GEMM ({how}, no simulation)")
    print_figures(summary)
    if "trace" in summary:
        print(f"  timeline: {summary['trace']['events']} events in {summary['trace']['file']} "
              "(Chrome trace JSON, from models/device.py)")  # fmt: skip
    if report is not None:
        print_energy(report)
    return 0
