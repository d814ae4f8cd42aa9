"""``systolic sim``: one GEMM (or convolution) on random data through the simulated accelerator,
checked."""

from __future__ import annotations

import argparse
import dataclasses
import json

from systolic.contract.config import check_buildable
from systolic.contract.plan import chunk_sizes
from systolic.contract.trace import trace_order

from .options import (
    add_config_options,
    add_conv_options,
    add_data_option,
    add_energy_options,
    add_memory_options,
    add_seed_option,
    add_shape_options,
    chunk_from_args,
    config_from_args,
    conv_from_args,
    dram_energy_from_args,
    energy_coefficients,
    memory_from_args,
    output_file,
    seed_of,
)
from .output import print_energy, print_figures, write_trace


def add_parser(sub) -> None:
    p = sub.add_parser(
        "sim",
        help="run one GEMM on random data through the simulated accelerator",
        description="Simulate C = A @ B on random A (M x K) and B (K x N) with Verilator: the "
        "device fetches A and B from the DRAM model and stores C there; check C against the "
        "golden model, and print cycles, utilization, the compute, memory-wait and DMA "
        "counters, and whether the analytical model predicts every counter. Exit status 1 "
        "when C differs, the device refuses the GEMM or the model disagrees.",
    )
    add_config_options(p, rtl=True)
    add_shape_options(p, required=False)
    add_conv_options(p)
    add_seed_option(p, "the operands")
    p.add_argument("--waves", type=output_file, metavar="FILE",
                   help="write the waveform of the run: FILE.fst (compact) or FILE.vcd; open "
                   "it with gtkwave or surfer")  # fmt: skip
    add_data_option(
        p,
        "operand data: uniform random (default), all zeros, or random with a fraction P of zeros",
    )
    p.add_argument("--a-zero", type=int, default=0, metavar="Z",
                     help="zero point of A (implies --zero-points; default 0)")  # fmt: skip
    p.add_argument("--b-zero", type=int, default=0, metavar="Z",
                     help="zero point of B (implies --zero-points; default 0)")  # fmt: skip
    p.add_argument("--out-zero", type=int, default=0, metavar="Z",
                     help="output zero point, with --requant (default 0)")  # fmt: skip
    p.add_argument(
        "--relu",
        action="store_true",
        help="ReLU in the requantization (clamp at the output zero point)",
    )
    p.add_argument("--bias", action="store_true",
                   help="add a random per-channel int32 bias before requantization (seeded), "
                   "with --requant")  # fmt: skip
    p.add_argument("--float-scale", action="store_true",
                   help="requantize by float32 scales, as onnxruntime does (a device built "
                   "with --requant-float)")  # fmt: skip
    p.add_argument("--clamp", type=_clamp, metavar="LO,HI",
                   help="activation clamp of the outputs to [LO, HI] (output integers; ReLU6 "
                   "is Z,Z+6/scale), with --requant")  # fmt: skip
    add_memory_options(p)
    add_energy_options(
        p,
        "also count switching activity (a separate, instrumented build, 1.4-4x slower) and "
        "print the energy by component and by traffic class",
    )
    p.add_argument("--trace", type=output_file, metavar="FILE.json",
                   help="write the run's timeline (loads, compute, stores, waits) as Chrome "
                   "trace-event JSON for Perfetto or chrome://tracing, and check it against "
                   "the model's, event for event")  # fmt: skip
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def _clamp(text: str) -> tuple[int, int]:
    try:
        lo, hi = (int(x) for x in text.split(","))
    except ValueError:
        msg = f"--clamp takes LO,HI (two integers), not {text!r}"
        raise argparse.ArgumentTypeError(msg) from None
    return lo, hi


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from systolic.contract.conv import device_gemm
    from systolic.contract.dma import word_layout
    from systolic.golden.conv import conv_reference
    from systolic.golden.data import random_operands
    from systolic.golden.reference import check_zero_points, reference
    from systolic.models.device import predict_device, trace_device
    from systolic.models.energy import figures_energy
    from systolic.models.pipeline import expanded_words
    from systolic.quant.calibrate import output_params
    from systolic.sim.simulate import Quantization, run_conv, run_gemm

    config = config_from_args(args)
    check_buildable(config)  # before anything is generated or built
    conv = conv_from_args(args, config, "sim")
    if conv is None:  # buffers too small: a clear error, before building
        chunk_sizes(config, args.m, args.k, args.n)
    check_zero_points(config, args.a_zero, args.b_zero)
    memory = memory_from_args(args)
    seed = seed_of(args)
    rng = np.random.default_rng(seed)
    if conv is None:
        ((a, b),) = random_operands(rng, config, [(args.m, args.k, args.n)], args.data)
        expected = reference(config, a, b, args.a_zero, args.b_zero)
    else:  # a is the NHWC input, b the weights O x K x K x C
        ((a, b),) = random_operands(rng, config, [(conv.batch * conv.height * conv.width,
                                                   conv.channels, conv.out_channels * conv.kernel[0]
                                                   * conv.kernel[1])], args.data)  # fmt: skip
        a = a.reshape(conv.batch, conv.height, conv.width, conv.channels)
        b = b.T.reshape(conv.out_channels, *conv.kernel, conv.channels)
        expected = conv_reference(config, conv, a, b, args.a_zero, args.b_zero)
        args.m, args.k, args.n = device_gemm(conv, word_layout(config, "a").tile)
    coefficients = energy_coefficients(args) if args.energy else None
    params = None
    if not config.requant and (args.bias or args.clamp or args.relu or args.float_scale):
        raise SystemExit("error: --bias, --clamp, --relu and --float-scale need --requant (the "
                         "fused output path)")  # fmt: skip
    if args.float_scale and not config.requant_float:
        raise SystemExit("error: --float-scale needs a device built with --requant-float")
    expected_acc = expected
    if config.requant:  # per-channel scales that map each column's range onto the output's
        bias = None
        if args.bias:  # about the accumulators' own size, so both matter
            span = int(np.abs(expected).max()) + 1
            bias = rng.integers(-span, span + 1, size=args.n)
        params = output_params(expected if bias is None else expected + bias, config.out_width,
                               config.out_signed, args.out_zero, args.relu,
                               float_scale=args.float_scale)  # fmt: skip
        params = dataclasses.replace(params, bias=bias, clamp=args.clamp)
        params.check(config, args.n)
        expected = params.apply(config, expected_acc)
    quant = Quantization(args.a_zero, args.b_zero, params)
    options = dict(memory=memory, activity=args.energy, quant=quant,
                   trace=args.trace is not None, waves=args.waves)  # fmt: skip
    if conv is None:
        chunk = chunk_from_args(args, config, memory)
        result = run_gemm(config, a, b, order=args.order, chunk=chunk, **options)
    else:
        result = run_conv(config, conv, a, b, **options)
    mismatches = int(np.count_nonzero(result.c != expected))
    predicted = predict_device(config, result.descriptor, memory)
    differences = {k: [v, predicted[k]] for k, v in result.counters.items() if predicted[k] != v}
    summary = result.summary() | {
        "seed": seed,
        "data": args.data.text,
        "bit_exact": mismatches == 0,
        "mismatches": mismatches,
        "order": args.order,
        "chunking": args.chunks,
        "model_differences": differences,
        "quant": {
            "a_zero": args.a_zero,
            "b_zero": args.b_zero,
            "requant": config.requant,
            "out_zero": args.out_zero,
            "relu": args.relu,
            "bias": args.bias,
            "float_scale": args.float_scale,
            "clamp": list(args.clamp) if args.clamp else None,
        },  # fmt: skip
    }
    if args.trace is not None:
        timeline = sorted(result.trace, key=trace_order)
        predicted_timeline = sorted(trace_device(config, result.descriptor, memory),
                                    key=trace_order)  # fmt: skip
        if timeline != predicted_timeline:
            pairs = enumerate(zip(timeline, predicted_timeline, strict=False))
            first = next((i for i, (x, y) in pairs
                          if x != y), min(len(timeline), len(predicted_timeline)))  # fmt: skip
            differences["trace"] = (
                f"{len(timeline)} events against the model's "
                f"{len(predicted_timeline)}, first different at {first}"
            )
        write_trace(args.trace, timeline, config.name, args.clock_mhz)
        summary["trace"] = {"file": str(args.trace), "events": len(timeline),
                            "model_agrees": timeline == predicted_timeline}  # fmt: skip
    report = None
    if args.energy:
        report = figures_energy(result, result.toggles, coefficients, source="toggles",
                                dram=dram_energy_from_args(args),
                                expanded=expanded_words(config, result.descriptor,
                                                        memory))  # fmt: skip
        summary["energy"] = report.to_dict()
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        _print_sim(summary, mismatches, expected.size)
        if report is not None:
            print_energy(report)
    return 0 if mismatches == 0 and result.errors == 0 and not differences else 1


def _print_sim(s: dict, mismatches: int, size: int) -> None:
    verdict = "C matches golden/ bit for bit" if not mismatches else (
        f"MISMATCH: {mismatches} of {size} outputs differ from golden/")  # fmt: skip
    data = "" if s["data"] == "random" else f", {s['data']} data"
    print(f"{s['config']}: {s['m']}x{s['k']}x{s['n']} GEMM, seed {s['seed']}{data}: {verdict}")
    if s["errors"]:
        print("  the device refused the descriptor")
    q = s["quant"]
    if q["a_zero"] or q["b_zero"] or q["requant"]:
        text = f"  zero points A {q['a_zero']}, B {q['b_zero']}"
        if q["requant"]:
            text += (f"; outputs requantized per channel (output zero point {q['out_zero']}"
                     f"{', ReLU' if q['relu'] else ''}"
                     f"{', float32 scales' if q.get('float_scale') else ''})")  # fmt: skip
        print(text)
    print_figures(s)
    if "trace" in s:
        t = s["trace"]
        verdict = "agrees event for event" if t["model_agrees"] else "DIFFERS"
        print(f"  timeline: {t['events']} events in {t['file']} (Chrome trace JSON); the "
              f"model's {verdict}")  # fmt: skip
    diff = {k: v for k, v in s["model_differences"].items() if k != "trace"}
    if diff:
        text = ", ".join(f"{k} {rtl} (model {model})" for k, (rtl, model) in diff.items())
        print(f"  MODEL DIFFERS: {text}")
    else:
        print("  the model (models/device.py) predicts every counter exactly")
