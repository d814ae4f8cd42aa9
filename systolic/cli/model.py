"""``systolic model``: a GEMM's cycles, counters, traffic, reuse and energy, without simulating."""

from __future__ import annotations

import argparse
import json

from systolic.models.cycles import predict
from systolic.models.energy import figures_energy
from systolic.models.toggles import estimate_toggles

from .options import (
    add_config_options,
    add_data_option,
    add_energy_options,
    add_shape_options,
    config_from_args,
    energy_coefficients,
)
from .output import print_energy, print_figures


def add_parser(sub) -> None:
    p = sub.add_parser(
        "model",
        help="predict cycles, counters, traffic and reuse of a GEMM without simulating",
        description="The analytical model (models/cycles.py): every performance counter of the "
        "accelerator, the host's off-chip words and the reuse they imply, exactly as the RTL "
        "counts them (systolic compare checks that).",
    )
    add_config_options(p, rtl=False)
    add_shape_options(p, required=True)
    add_energy_options(
        p,
        "also estimate the energy: bit flips predicted on a sample of operands of --data, "
        "scaled to the whole GEMM (models.toggles.estimate_toggles)",
    )
    add_data_option(p, "operand data the energy estimate assumes (default random)")
    p.add_argument("--json", action="store_true", help="print the prediction as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    pred = predict(config, args.m, args.k, args.n)
    summary = pred.summary()
    report = None
    if args.energy:
        toggles = estimate_toggles(config, args.m, args.k, args.n, data=args.data.text)
        report = figures_energy(pred, toggles, energy_coefficients(args), source="model")
        summary["energy"] = report.to_dict() | {"data": args.data.text}
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"{config.name}: {args.m}x{args.k}x{args.n} GEMM (model, no simulation)")
    print_figures(summary)
    if report is not None:
        print_energy(report)
    return 0
