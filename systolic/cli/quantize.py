"""``systolic quantize``: the quantization playbook (quant/playbook.py) on real data, ending in
a report with its deployment checks."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from systolic.quant.tasks import MODELS

from .options import (
    add_json_option,
    add_seed_option,
    check_output_folder,
    fraction,
    human,
    non_negative,
    output_folder,
    positive,
    seed_of,
)

KNOWN = tuple(f"{t}:{m}" for t, ms in MODELS.items() for m in ms)


def add_parser(sub) -> None:
    p = sub.add_parser(
        "quantize",
        help="quantization playbook: calibration, QAT, mixed precision and deployment checks "
        "through the RTL, on real data",
        description="Train each network in float on scikit-learn's bundled data (or read yours "
        "from ONNX), write it as ONNX and read it back, then measure calibration choices "
        "(min/max, percentile, MSE, entropy; per tensor or per channel; calibration-set size; "
        "clipping of outliers), post-training quantization against quantization-aware "
        "training at int8 and int4, per-layer sensitivity and every mix of int8, int4 and "
        "bf16 against the energy model; choose the cheapest mix above the accuracy floor and "
        "check its deployment, through the simulated RTL. onnxruntime's own quantization of "
        "each network is a baseline row, and its layers run through the RTL too. Writes "
        "quantize.md, quantize.html, "
        "quantize.json, plots and the ONNX files to OUT; exit 1 if a check fails.",
    )
    p.add_argument("--models", nargs="+", choices=KNOWN, default=list(KNOWN), metavar="TASK:MODEL",
                   help=f"networks to run (default: all of {', '.join(KNOWN)})")  # fmt: skip
    p.add_argument("--onnx", type=Path, metavar="FILE",
                   help="quantize this ONNX network (a chain of Conv, MatMul/Gemm, Relu, "
                   "Flatten, no biases) on the task of the one model given, instead of "
                   "training")  # fmt: skip
    p.add_argument("--out", type=output_folder, default=Path("results/quantize"), metavar="DIR",
                   help="report folder (results/quantize)")  # fmt: skip
    p.add_argument(
        "--floor",
        type=fraction,
        default=0.99,
        help="the least test accuracy retention a deployment may have (0.99)",
    )
    p.add_argument("--rtl-samples", type=non_negative, default=16, metavar="N",
                   help="test samples run through the simulated RTL (16; 0: none)")  # fmt: skip
    p.add_argument("--qat-epochs", type=positive, default=10, help="QAT epochs (10)")
    p.add_argument("--rows", type=positive, default=8, help="array rows = cols (8)")
    add_seed_option(p, "the training and the sampling")
    p.add_argument(
        "--quick",
        action="store_true",
        help="shorter training and fewer calibration draws (a smoke run)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    add_json_option(p, "the playbook's records")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from systolic.quant.playbook import Options, run_playbook
    from systolic.quant.playbook_report import write_report

    if args.onnx is not None and len(args.models) != 1:
        raise ValueError("--onnx needs exactly one --models TASK:MODEL (whose task it runs on)")
    check_output_folder(args.out, "quantize")  # the default's too, before any work
    opts = Options(
        models=tuple(args.models), out=args.out, floor=args.floor, qat_epochs=args.qat_epochs,
        rtl_samples=args.rtl_samples, rows=args.rows, seed=seed_of(args), onnx=args.onnx,
        log=(lambda text: None) if args.quiet else (lambda text: print(text, file=sys.stderr)),
    )  # fmt: skip
    if args.quick:
        opts.epochs_scale, opts.cal_draws, opts.cal_sizes = 0.5, 2, (8, 64, 512)
        opts.qat_epochs = min(opts.qat_epochs, 3)
    records = run_playbook(opts)
    md, page = write_report(records, opts.out)
    out = human(args)
    for r in records:
        print(f"{r['model']} ({r['name']}): float {100 * r['float']['test']:.2f}%", file=out)
        for row in r["retention"][1:]:
            energy = "" if row["energy_pj"] is None else f", {row['energy_pj'] / 1e3:,.1f} nJ"
            print(f"  {row['name']}: {100 * row['test']:.2f}% "
                  f"(retention {100 * row['retention']:.2f}%{energy})", file=out)  # fmt: skip
        for c in r["checks"]:
            print(f"  {'PASS' if c['passed'] else 'FAIL'} {c['name']}: {c['detail']}", file=out)
    print(f"report: {md} and {page}", file=out)
    if args.json:
        print(json.dumps({"records": records, "files": [str(md), str(page)]}, indent=2,
                         default=str))  # fmt: skip
    return 0 if all(c["passed"] for r in records for c in r["checks"]) else 1
