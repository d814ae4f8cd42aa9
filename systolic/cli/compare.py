"""``systolic compare``: RTL against the model on the same points; exit 1 on any difference."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from systolic.contract.config import check_buildable
from systolic.contract.conv import device_gemm
from systolic.contract.dma import place, word_layout
from systolic.contract.plan import chunk_sizes

from .options import (
    UsageError,
    add_config_options,
    add_conv_options,
    add_energy_options,
    add_memory_options,
    add_seed_option,
    add_shape_options,
    config_from_args,
    conv_from_args,
    energy_coefficients,
    memory_from_args,
    seed_of,
)


def add_parser(sub) -> None:
    p = sub.add_parser(
        "compare",
        help="run RTL and model on the same points; exit 1 on any difference",
        description="Simulate each point on the device behind the DRAM model, predict it with "
        "the model, and compare cycles, every counter (compute, memory waits, DRAM traffic) and "
        "the off-chip words. With no shape options it runs a default list of 60 points (three "
        "dataflows, four arrays, ragged shapes, GEMMs larger than the buffers); with no memory "
        "options, at two DRAM settings (16 B/cycle, latency 20, 64 requests; 5/2 B/cycle, "
        "latency 100, 4 requests). --conv compares a convolution descriptor instead (a device "
        "with --stage-depth).",
    )
    add_config_options(p, rtl=True)
    add_shape_options(p, required=False)
    add_conv_options(p)
    add_memory_options(p)
    p.add_argument(
        "--shapes",
        type=Path,
        metavar="FILE",
        help="GEMM shapes to compare on the given configuration, one M,K,N a line",
    )
    add_seed_option(p, "the operands")
    p.add_argument(
        "--scalesim",
        action="store_true",
        help="add SCALE-Sim's cycles as a third column (needs pip install '.[scalesim]'; "
        "slow on large GEMMs)",
    )
    add_energy_options(
        p,
        "also compare the model's energy (toggles predicted from the operands) with the "
        "toggle-based energy of the RTL",
    )
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from systolic.verify.compare import DEFAULT_MEMORIES, compare
    from systolic.verify.scalesim import available

    points = _points(args)
    if args.scalesim and not available():
        raise UsageError("systolic compare: --scalesim needs SCALE-Sim: pip install '.[scalesim]'")
    coefficients = energy_coefficients(args) if args.energy else None
    if not args.json:
        _print_header(args)
    show = None if args.json else (lambda row: _print_row(row, args))
    given = (args.memory, args.bandwidth, args.latency, args.max_requests)
    memories = [memory_from_args(args)] if any(v is not None for v in given) else DEFAULT_MEMORIES
    rows = compare(points, memories=memories, order=args.order, seed=seed_of(args),
                   scalesim=args.scalesim, progress=show, energy=args.energy,
                   coefficients=coefficients)  # fmt: skip
    differing = [r for r in rows if r.differences]
    wrong_c = [r for r in rows if not r.bit_exact]
    if args.json:
        print(json.dumps([r.as_dict() for r in rows], indent=2))
    else:
        _print_summary(rows, len(differing), len(wrong_c), args.energy)
    return 1 if differing or wrong_c else 0


def _points(args: argparse.Namespace) -> list:
    """The given configuration on ``--shapes``, ``--m --k --n`` or ``--conv``, or the default
    points."""
    from systolic.verify.compare import default_points, read_shapes

    given = [args.m, args.k, args.n]
    if args.shapes is None and args.conv is None and all(v is None for v in given):
        return default_points()
    config = config_from_args(args)
    check_buildable(config)
    if args.conv is not None:
        if args.energy or args.scalesim or args.shapes is not None:
            raise UsageError("systolic compare: --conv compares one convolution's counters: "
                             "without --energy, --scalesim or --shapes")  # fmt: skip
        conv = conv_from_args(args, config, "compare")
        try:
            place(config, *device_gemm(conv, word_layout(config, "a").tile), conv=conv)
        except ValueError as e:  # no chunk fits: a clear error before any build
            raise UsageError(f"systolic compare: --conv: {e}") from None
        return [(config, conv)]
    if args.shapes is not None:
        try:
            shapes = read_shapes(args.shapes)
        except OSError as e:
            raise UsageError(
                f"systolic compare: cannot read --shapes {args.shapes}: {e.strerror}"
            ) from None
    elif all(v is not None for v in given):
        shapes = [tuple(given)]
    else:
        raise UsageError("systolic compare: give all of --m, --k and --n, or --shapes FILE")
    for shape in shapes:
        chunk_sizes(config, *shape)  # too small buffers: a clear error before any build
    return [(config, shape) for shape in shapes]


def _print_header(args: argparse.Namespace) -> None:
    third = f" {'SCALE-Sim':>9}" if args.scalesim else ""
    if args.energy:
        third += f" {'pJ/MAC':>9} {'model':>9} {'act.diff':>7}"
    print(f"{'configuration':32} {'M x K x N':>12} {'DRAM':>14} {'RTL cyc':>9} {'model cyc':>9} "
          f"{'diff':>5}{third}  {'C':10} counters and off-chip words")  # fmt: skip
    if args.scalesim:
        print("(SCALE-Sim simulates cycle by cycle in Python, slow on large GEMMs; its cycles "
              "differ from ours by design: docs/model.md explains each term)")  # fmt: skip


def _print_row(row, args: argparse.Namespace) -> None:
    m, k, n = row.shape  # a convolution's: its implicit GEMM on the device
    diff = row.differences
    verdict = "equal" if not diff else "DIFFER: " + ", ".join(
        f"{name} {row.rtl[name]} vs {row.model[name]}" for name in diff
    )  # fmt: skip
    third = f" {row.scalesim_cycles:>9}" if args.scalesim else ""
    if args.energy:
        third += (f" {row.energy_rtl.pj_per_mac:>9.3f} {row.energy_model.pj_per_mac:>9.3f} "
                  f"{row.energy_error:>+6.2f}%")  # fmt: skip
    print(
        f"{row.config.name:32} {f'{m}x{k}x{n}':>12} {_memory(row.memory):>14} "
        f"{row.rtl['cycles']:>9} "
        f"{row.model['cycles']:>9} {row.model['cycles'] - row.rtl['cycles']:>5}{third}  "
        f"{'bit-exact' if row.bit_exact else 'C MISMATCH':10} {verdict}",
        flush=True,
    )


def _memory(memory) -> str:
    return f"{memory.bandwidth}B/{memory.latency}/{memory.max_requests}"


def _print_summary(rows: list, differing: int, wrong_c: int, energy: bool) -> None:
    quantities = len(rows[0].rtl) if rows else 0
    settings = len({r.memory for r in rows})
    print(f"\n{len(rows)} points ({settings} DRAM setting(s)) x {quantities} quantities (cycles, "
          f"every counter, off-chip words): {differing} point(s) with differences; C bit-exact on "
          f"{len(rows) - wrong_c} of {len(rows)}")  # fmt: skip
    if energy and rows:
        worst = max(rows, key=lambda r: abs(r.energy_error))
        print(f"energy: the model's activity energy (bit flips predicted from the operands) is "
              f"within {abs(worst.energy_error):.2f}% of the RTL's toggle-based one on every "
              f"point (largest on {worst.config.name} {'x'.join(map(str, worst.shape))}); "
              f"coefficients {worst.energy_rtl.coefficients}")  # fmt: skip
