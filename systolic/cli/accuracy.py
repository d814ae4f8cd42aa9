"""``systolic accuracy``: accuracy retention of int8, int4 and bf16 through the RTL."""

from __future__ import annotations

import argparse
import json

from .options import add_seed_option, positive, seed_of


def add_parser(sub) -> None:
    p = sub.add_parser(
        "accuracy",
        help="accuracy retention of int8, int4 and bf16 against float, through the RTL",
        description="Train a small MLP in numpy on generated data, quantize it (per-tensor "
        "asymmetric activations, per-channel symmetric weights, requantization with ReLU), run "
        "it through the simulated accelerator in int8, int4 and bf16, and print test accuracy, "
        "retention relative to float, pJ/MAC from RTL toggles and whether the RTL matched "
        "golden/ bit for bit (exit 1 if not).",
    )
    p.add_argument("--samples", type=positive, default=1000, help="test samples (1000)")
    p.add_argument("--rows", type=positive, default=8, help="array rows = cols (8)")
    add_seed_option(p, "the data and the training")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from systolic.quant.accuracy import run_accuracy

    experiment = run_accuracy(args.samples, args.rows, seed_of(args))
    if args.json:
        print(json.dumps({"float_accuracy": experiment.float_accuracy,
                          "test_samples": experiment.test_samples,
                          "results": [vars(r) for r in experiment.results]}, indent=2))  # fmt: skip
    else:
        print(
            f"MLP 64-48-10 on a generated 10-class task, {experiment.test_samples} test "
            f"samples, through the simulated {args.rows}x{args.rows} WS accelerator:"
        )
        print(experiment.table())
    return 0 if all(r.rtl_equals_golden for r in experiment.results) else 1
