"""``systolic ort-check``: a model quantized by onnxruntime, every quantized layer against
golden's arithmetic (quant/ort_check.py) and, with ``--rtl``, run by the simulated device
(quant/ort_device.py)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .options import add_json_option, add_seed_option, human, positive, seed_of


def add_parser(sub) -> None:
    p = sub.add_parser(
        "ort-check",
        help="quantize an ONNX model with onnxruntime and check every quantized layer against "
        "golden's arithmetic",
        description="Quantize a float ONNX model with onnxruntime's quantize_static (or take "
        "one it quantized, --quantized), run it on onnxruntime with every quantized layer's "
        "input and output exposed (a QDQ model as onnxruntime fuses it), and compute each "
        "QLinearConv, QLinearMatMul and QGemm layer with golden (exact accumulators, then "
        "onnxruntime's float requantization) on the tensor onnxruntime fed it. Prints each "
        "layer's elements equal and the operators left to the host; exit 1 if a layer differs. "
        "With --rtl every such layer also runs on the simulated device (Verilator, float32 "
        "scales in its fused output path), whose every output element is compared too.",
    )
    p.add_argument("model", type=Path, metavar="MODEL.onnx", help="the float (or quantized) model")
    p.add_argument("--quantized", action="store_true",
                   help="MODEL is quantized already (QDQ or QOperator)")  # fmt: skip
    p.add_argument("--format", choices=("qdq", "qoperator"), default="qdq",
                   help="quantize_static's format (qdq)")  # fmt: skip
    p.add_argument("--per-channel", action="store_true", help="per-channel weight scales")
    p.add_argument("--calibrate", choices=("minmax", "entropy", "percentile"), default="minmax",
                   help="onnxruntime's calibrator (minmax)")  # fmt: skip
    p.add_argument("--activations", choices=("u8", "s8"), default="u8",
                   help="activation type (u8)")  # fmt: skip
    p.add_argument("--full-range", action="store_true",
                   help="weights over all of int8 (default +-64, reduce_range: onnxruntime's "
                   "arithmetic is exact on every x86 machine only there)")  # fmt: skip
    p.add_argument("--data", type=Path, metavar="FILE.npy",
                   help="inputs, one sample per row of the first axis: calibration and the "
                   "check (default: random normal samples of the model's input shape)")  # fmt: skip
    p.add_argument("--samples", type=positive, default=8,
                   help="random samples without --data (8)")  # fmt: skip
    p.add_argument("--out", type=Path, metavar="FILE.onnx",
                   help="keep the quantized model here")  # fmt: skip
    p.add_argument("--rtl", action="store_true",
                   help="run every quantized layer on the simulated device too")  # fmt: skip
    p.add_argument("--device", type=_device, metavar="DF-RxC",
                   help="the device of --rtl (implies it): its dataflow and PE rows x columns "
                   "(ws-4x4; os-8x8, ...)")  # fmt: skip
    add_seed_option(p, "the random samples")
    add_json_option(p, "every layer's check")
    p.set_defaults(func=run)


def _device(text: str) -> tuple[str, int, int]:
    """``ws-4x4``: a dataflow, rows and columns (within what the RTL generator builds)."""
    from systolic.contract.config import RTL_LIMITS

    (r0, r1), (c0, c1) = RTL_LIMITS["rows"], RTL_LIMITS["cols"]
    dataflow, _, shape = text.lower().partition("-")
    rows, x, cols = shape.partition("x")
    if not (dataflow in ("ws", "os", "is") and x and rows.isdigit() and cols.isdigit()
            and r0 <= int(rows) <= r1 and c0 <= int(cols) <= c1):  # fmt: skip
        raise argparse.ArgumentTypeError(f"must be DATAFLOW-ROWSxCOLS (ws, os or is; rows "
                                         f"{r0}..{r1}, columns {c0}..{c1}), as ws-4x4, not "
                                         f"{text!r}")  # fmt: skip
    return dataflow, int(rows), int(cols)


def _samples(args: argparse.Namespace, model):
    """The samples, one a row of the first axis: ``--data``'s, or random normal ones."""
    import numpy as np

    if args.data is not None:
        if not args.data.is_file():
            raise ValueError(f"--data: no such file {args.data}")
        try:
            data = np.load(args.data)
        except ValueError as e:
            raise ValueError(f"--data: {args.data} is not a .npy array ({e})") from None
        if data.ndim < 2 or len(data) == 0:
            raise ValueError(f"--data: {args.data} must hold samples along its first axis, "
                             f"not an array of shape {data.shape}")  # fmt: skip
        return data
    dims = model.graph.input[0].type.tensor_type.shape.dim
    shape = [d.dim_value if d.HasField("dim_value") else 1 for d in dims][1:]
    return np.random.default_rng(seed_of(args)).normal(0, 1, (args.samples, *shape))


def run(args: argparse.Namespace) -> int:
    import tempfile
    from dataclasses import replace

    import numpy as np
    import onnx

    from systolic.quant.ort_check import check_model, fused, quantize_with_ort
    from systolic.quant.ort_device import device_config

    args.rtl = args.rtl or args.device is not None  # a device named: run on it
    if not args.model.is_file():
        raise ValueError(f"no such model file: {args.model}")
    try:
        model = onnx.load(str(args.model))
    except Exception as e:  # protobuf's DecodeError and friends: not an ONNX file
        raise ValueError(f"{args.model} is not an ONNX model ({type(e).__name__})") from None
    samples = _samples(args, model)
    out = human(args)
    with tempfile.TemporaryDirectory() as scratch:
        if not args.quantized:
            target = args.out or Path(scratch) / "quantized.onnx"
            model = quantize_with_ort(args.model, target, samples,
                                      fmt={"qdq": "QDQ", "qoperator": "QOperator"}[args.format],
                                      per_channel=args.per_channel,
                                      method={"minmax": "MinMax", "entropy": "Entropy",
                                              "percentile": "Percentile"}[args.calibrate],
                                      signed_activations=args.activations == "s8",
                                      reduce_range=not args.full_range)  # fmt: skip
        graph = fused(model)
        name, dims = graph.graph.input[0].name, graph.graph.input[0].type.tensor_type.shape.dim
        batch = dims[0].dim_value if dims and dims[0].HasField("dim_value") else len(samples)
        device = device_config(*(args.device or ("ws", 4, 4))) if args.rtl else None
        totals: dict = {}
        for start in range(0, len(samples), batch):  # a model of a fixed batch: a run each
            rows = np.asarray(samples[start : start + batch], np.float32)
            if len(rows) < batch:
                break  # a last part batch the model cannot take
            checks, host = check_model(graph, {name: rows}, device)
            for c in checks:
                seen = totals.get(c.name)
                totals[c.name] = c if seen is None else replace(
                    c, elements=seen.elements + c.elements, equal=seen.equal + c.equal,
                    device=None if c.device is None else seen.device + c.device)  # fmt: skip
        if not totals:
            raise ValueError(f"the model takes batches of {batch}: give at least {batch} "
                             f"samples (--samples or --data)")  # fmt: skip
        checks = list(totals.values())
    width = max([len(c.name) for c in checks] + [5])
    rtl = "   device  rate" if args.rtl else ""
    print(f"{'layer':{width}} {'op':24} {'elements':>9} {'golden':>9}  rate{rtl}", file=out)
    for c in checks:
        on = ""
        if args.rtl:
            on = f"  {'host':>7}" if c.device is None else f"  {c.device:>7}  {c.device_rate:.2%}"
        print(f"{c.name:{width}} {c.op:24} {c.elements:>9} {c.equal:>9}  {c.rate:.2%}{on}",
              file=out)  # fmt: skip
    print(f"on the host (not checked): {', '.join(host) or 'none'}", file=out)
    ok = all(c.exact for c in checks)
    where = "golden's and the device's are" if args.rtl else "golden's is"
    print(f"{'every' if ok else 'NOT every'} element of the {len(checks)} quantized layer(s) "
          f"equals onnxruntime's ({where} compared)", file=out)  # fmt: skip
    if args.json:
        json.dump({"layers": [vars(c) | {"rate": c.rate, "device_rate": c.device_rate}
                              for c in checks], "host": host}, sys.stdout, indent=1)  # fmt: skip
        print()
    return 0 if ok else 1
