"""``systolic model``: a GEMM's cycles, counters, traffic, reuse and energy, without simulating;
or a whole inference (``--onnx FILE``, ``--workload NAME``): every GEMM, the operators between
them where they run, the host and the driver."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from systolic.contract.dma import place
from systolic.contract.host import DEFAULT_HOST, HOST_PRESETS, Host
from systolic.contract.memory import DEFAULT_MEMORY_PRESET, Memory
from systolic.workloads.library import CNNS, PHASES, TRANSFORMERS

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
    positive,
)
from .output import print_energy, print_figures, print_inference, write_trace


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
    add_shape_options(p, required=False)
    whole = p.add_argument_group("a whole inference instead of one GEMM")
    whole.add_argument("--onnx", type=Path, metavar="FILE",
                       help="an ONNX model: every operator, lowered and placed (batch: "
                       "--batch, the sequence length: --seq)")  # fmt: skip
    whole.add_argument(
        "--workload",
        metavar="NAME",
        choices=sorted((*TRANSFORMERS, *CNNS)),
        help=f"a built-in model: {', '.join(sorted((*TRANSFORMERS, *CNNS)))}",
    )
    whole.add_argument("--batch", type=positive, default=1, help="inputs per inference (1)")
    whole.add_argument(
        "--seq",
        type=positive,
        default=128,
        help="a transformer's sequence length, or decode's cache (128)",
    )
    whole.add_argument(
        "--phase",
        choices=PHASES,
        default="prefill",
        help="a transformer's prefill or one decode step (prefill)",
    )
    whole.add_argument("--host", choices=sorted(HOST_PRESETS), default=DEFAULT_HOST,
                       help=f"the host CPU beside the device (default {DEFAULT_HOST}: "
                       "docs/inference.md)")  # fmt: skip
    whole.add_argument("--counters", action="store_true",
                       help="the driver reads every counter after each descriptor, as the "
                       "simulation's driver does")  # fmt: skip
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


def _whole(args: argparse.Namespace) -> int:
    """A whole inference: the record a sweep point has, printed as its split."""
    from systolic.workloads.evaluate import model_record
    from systolic.workloads.library import cnn, transformer
    from systolic.workloads.onnx_import import onnx_workload

    config = config_from_args(args)
    if any(getattr(args, k) is not None for k in ("bandwidth", "latency", "max_requests")):
        raise SystemExit("error: a whole inference takes a --memory preset (GB/s and ns), not "
                         "--bandwidth, --latency or --max-requests")  # fmt: skip
    memory = Memory.preset(args.memory or DEFAULT_MEMORY_PRESET)
    if args.onnx is not None:
        workload = onnx_workload(args.onnx, args.batch, args.seq)
    elif args.workload in CNNS:
        workload = cnn(args.workload, args.batch)
    else:
        workload = transformer(args.workload, args.batch, args.seq, args.phase)
    host = Host.preset(args.host)
    if args.counters:
        host = Host(**(host.to_dict() | {"counters": True}))
    coefficients = energy_coefficients(args)
    record = model_record(config, workload, memory, coefficients, "random", 0,
                          args.clock_mhz, host)  # fmt: skip
    if args.json:
        print(
            json.dumps(
                record["inference"]
                | {"workload": record["workload"], "gemm_only": _gemm_only(record)},
                indent=2,
            )
        )
        return 0
    print_inference(config.name, workload.name, record, host)
    return 0


def _gemm_only(record: dict) -> dict:
    return {k: record[k] for k in ("cycles", "latency_s", "utilization", "energy_pj")}


def run(args: argparse.Namespace) -> int:
    if args.onnx is not None or args.workload is not None:
        if args.onnx is not None and args.workload is not None:
            raise SystemExit("error: give --onnx or --workload, not both")
        return _whole(args)
    if None in (args.m, args.k, args.n):
        raise SystemExit("error: give the GEMM (--m, --k, --n), or --onnx FILE or --workload")
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
