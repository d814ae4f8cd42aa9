"""The ``systolic`` command line: generate, simulate and measure systolic-array accelerators."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from rtl.config import DEFAULT_DEPTH, LIMITS, PRECISIONS, ArrayConfig, Dataflow

__all__ = ["main"]


class UsageError(Exception):
    """A bad option or value: reported as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse prints the whole usage; one clear line is enough
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")


def _range(name: str) -> str:
    lo, hi = LIMITS[name]
    return f"{lo}..{hi}"


def add_config_options(p: argparse.ArgumentParser) -> None:
    """The options that make an ArrayConfig; shared by every subcommand that needs one."""
    g = p.add_argument_group("array configuration")
    g.add_argument(
        "--config",
        metavar="FILE",
        type=Path,
        help="read the configuration from a config.json (other options then override it)",
    )
    g.add_argument(
        "--dataflow",
        choices=[d.value for d in Dataflow],
        help="weight-, output- or input-stationary",
    )
    g.add_argument("--rows", type=int, metavar="R", help=f"PE rows ({_range('rows')})")
    g.add_argument("--cols", type=int, metavar="C", help=f"PE columns ({_range('cols')})")
    g.add_argument(
        "--a-width",
        type=int,
        metavar="BITS",
        help=f"activation (A) operand bits ({_range('a_width')}, default 8)",
    )
    g.add_argument(
        "--b-width",
        type=int,
        metavar="BITS",
        help=f"weight (B) operand bits ({_range('b_width')}, default 8)",
    )
    g.add_argument(
        "--a-unsigned",
        action="store_true",
        default=None,
        help="A operands are unsigned (default: two's complement)",
    )
    g.add_argument(
        "--b-unsigned",
        action="store_true",
        default=None,
        help="B operands are unsigned (default: two's complement)",
    )
    g.add_argument(
        "--acc-width",
        type=int,
        metavar="BITS",
        help=f"accumulator and output bits ({_range('acc_width')}, default 32); sums "
        "wrap around at this width",
    )
    g.add_argument(
        "--precision",
        choices=[*PRECISIONS, "bf16"],
        help="operand and accumulator bits together: int4 (acc 16), int8 (acc 32, the "
        "default), int16 (acc 48), or bf16 (fp32 accumulation); --a-width, --b-width, "
        "--acc-width override the integer ones",
    )
    g.add_argument(
        "--zero-points",
        action="store_true",
        default=None,
        help="per-tensor zero points of A and B in hardware (subtracted at the array edge)",
    )
    g.add_argument(
        "--requant",
        action="store_true",
        default=None,
        help="a per-channel output requantization unit on the C read path (acc <= 32 bits)",
    )
    g.add_argument("--out-width", type=int, metavar="BITS",
                   help=f"requantized output bits ({_range('out_width')}, default 8)")  # fmt: skip
    g.add_argument("--out-unsigned", action="store_true", default=None,
                   help="requantized outputs are unsigned")  # fmt: skip
    for buf, what in (("a", "A (activations)"), ("b", "B (weights)"), ("c", "C (outputs)")):
        g.add_argument(
            f"--{buf}-depth",
            type=int,
            metavar="WORDS",
            help=f"words of the {what} buffer ({_range(f'{buf}_depth')}, default "
            f"{DEFAULT_DEPTH}); a word is one array-edge vector",
        )


def config_from_args(args: argparse.Namespace) -> ArrayConfig:
    values: dict = {}
    if args.config is not None:
        try:
            values = ArrayConfig.from_json(args.config.read_text()).to_dict()
        except OSError as e:
            raise UsageError(
                f"systolic {args.command}: cannot read --config {args.config}: {e.strerror}"
            ) from None
    if args.precision == "bf16":
        values["number"] = "bf16"
    elif args.precision is not None:
        bits, acc = PRECISIONS[args.precision]
        values |= {"a_width": bits, "b_width": bits, "acc_width": acc}
    keys = ("dataflow", "rows", "cols", "a_width", "b_width", "acc_width", "out_width")
    for key in (*keys, "a_depth", "b_depth", "c_depth", "zero_points", "requant"):
        if getattr(args, key) is not None:
            values[key] = getattr(args, key)
    for key in ("a_signed", "b_signed", "out_signed"):
        if getattr(args, key.replace("signed", "unsigned")):
            values[key] = False
    if getattr(args, "a_zero", None) or getattr(args, "b_zero", None):
        values["zero_points"] = True  # zero points given: the hardware must take them
    for key in ("dataflow", "rows", "cols"):
        if key not in values:
            raise UsageError(
                f"systolic {args.command}: --{key} is required (or give --config FILE)"
            )
    return ArrayConfig.from_dict(values)


def cmd_generate(args: argparse.Namespace) -> int:
    from rtl.generate import TOPS, write_design

    config = config_from_args(args)
    out = args.out if args.out is not None else Path(config.name)
    paths = write_design(config, out, args.design)
    report = {"name": config.name, **{k: str(v) for k, v in paths.items()}}
    status = 0
    if args.lint:
        from tb.lint import lint

        result = lint(paths["verilog"], TOPS[args.design])
        report["lint"] = {"clean": result.clean, "warnings": result.warnings}
        status = 0 if result.clean else 1
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{config.name}: wrote {paths['verilog']} and {paths['config']}")
        if args.lint:
            if result.clean:
                print("verilator --lint-only -Wall: clean")
            else:
                print("verilator --lint-only -Wall: " + "\n".join(result.warnings))
    return status


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {value}")
    return value


def _data_kind(text: str):
    from golden.data import DataKind

    try:
        return DataKind(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"must be a probability in [0, 1), not {text!r}")
    return value


def add_energy_options(p: argparse.ArgumentParser, energy_help: str) -> None:
    """``--energy`` and ``--coefficients FILE``."""
    p.add_argument("--energy", action="store_true", help=energy_help)
    p.add_argument(
        "--coefficients",
        type=Path,
        metavar="FILE",
        help="energy coefficients (TOML; default golden/coefficients/horowitz45.toml)",
    )


def add_data_option(p: argparse.ArgumentParser, data_help: str) -> None:
    """``--data {random,zeros,sparse:P}``."""
    p.add_argument(
        "--data",
        type=_data_kind,
        default="random",
        metavar="{random,zeros,sparse:P}",
        help=data_help,
    )


def add_shape_options(p: argparse.ArgumentParser, *, required: bool) -> None:
    """``--m --k --n``: the GEMM ``C[M,N] = A[M,K] @ B[K,N]``."""
    p.add_argument("--m", type=_positive, required=required, help="rows of A and C")
    p.add_argument("--k", type=_positive, required=required, help="columns of A, rows of B")
    p.add_argument("--n", type=_positive, required=required, help="columns of B and C")


def cmd_sim(args: argparse.Namespace) -> int:
    import numpy as np

    from golden.calibrate import output_params
    from golden.data import random_operands
    from golden.gemm import check_zero_points, reference, requantized_reference
    from rtl.host import chunk_sizes
    from tb.gemm import Quant, run_gemm

    config = config_from_args(args)
    chunk_sizes(config, args.m, args.k, args.n)  # buffers too small: a clear error, before building
    check_zero_points(config, args.a_zero, args.b_zero)
    seed = args.seed if args.seed is not None else int(np.random.SeedSequence().entropy % 2**31)
    rng = np.random.default_rng(seed)
    ((a, b),) = random_operands(rng, config, [(args.m, args.k, args.n)], args.data)
    coefficients = _coefficients(args) if args.energy else None
    expected = reference(config, a, b, args.a_zero, args.b_zero)
    params = None
    if config.requant:  # per-channel scales that map each column's range onto the output's
        params = output_params(expected, config.out_width, config.out_signed,
                                    args.out_zero, args.relu)  # fmt: skip
        params.check(config, args.n)
        expected = requantized_reference(config, a, b, args.a_zero, args.b_zero, params)
    quant = Quant(args.a_zero, args.b_zero, params)
    result = run_gemm(config, a, b, pause=args.pause, seed=seed, activity=args.energy,
                      quant=[quant])  # fmt: skip
    mismatches = int(np.count_nonzero(result.c != expected))
    summary = result.summary() | {
        "seed": seed,
        "data": args.data.text,
        "bit_exact": mismatches == 0,
        "mismatches": mismatches,
        "quant": {
            "a_zero": args.a_zero,
            "b_zero": args.b_zero,
            "requant": config.requant,
            "out_zero": args.out_zero,
            "relu": args.relu,
        },  # fmt: skip
    }
    report = None
    if args.energy:
        from golden.energy import figures_energy

        report = figures_energy(result, result.toggles, coefficients, source="toggles")
        summary["energy"] = report.to_dict()
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        _print_sim(summary, mismatches, expected.size)
        if report is not None:
            _print_energy(report)
    return 0 if mismatches == 0 and result.errors == 0 else 1


def _print_figures(s: dict) -> None:
    """The lines `sim` and `model` share, from a GemmFigures summary."""
    c, off, reuse = s["counters"], s["offchip_words"], s["reuse"]
    print(
        f"  cycles {s['cycles']}, PE utilization {100 * s['utilization']:.1f}% "
        f"({s['commands']} command(s))"
    )
    print(
        f"  streaming {c['stream_cycles']}, fill {c['fill_cycles']}, stall {c['stall_cycles']}, "
        f"drain {c['drain_cycles']}, preload {c['preload_cycles']} cycles"
    )
    print(
        f"  buffer words read: A {c['a_reads']}, B {c['b_reads']}, C {c['c_reads']}; "
        f"written: C {c['c_writes']}"
    )
    print(f"  off-chip words: A {off['a']}, B {off['b']} written; C {off['c']} read")
    print(f"  MACs per word: into the array A {reuse['array_a']:.1f}, B {reuse['array_b']:.1f}; "
          f"from off-chip A {reuse['offchip_a']:.1f}, B {reuse['offchip_b']:.1f}")  # fmt: skip


def _print_sim(s: dict, mismatches: int, size: int) -> None:
    verdict = "C matches golden/ bit for bit" if not mismatches else (
        f"MISMATCH: {mismatches} of {size} outputs differ from golden/")  # fmt: skip
    data = "" if s["data"] == "random" else f", {s['data']} data"
    print(f"{s['config']}: {s['m']}x{s['k']}x{s['n']} GEMM, seed {s['seed']}{data}: {verdict}")
    if s["errors"]:
        print(f"  the accelerator flagged an error on {s['errors']} command(s)")
    q = s["quant"]
    if q["a_zero"] or q["b_zero"] or q["requant"]:
        text = f"  zero points A {q['a_zero']}, B {q['b_zero']}"
        if q["requant"]:
            text += (f"; outputs requantized per channel (output zero point {q['out_zero']}"
                     f"{', ReLU' if q['relu'] else ''})")  # fmt: skip
        print(text)
    _print_figures(s)


def _coefficients(args: argparse.Namespace):
    from golden.energy import load_coefficients

    return load_coefficients(args.coefficients)  # CoefficientsError is a ValueError: exit 2


def _print_energy(report) -> None:
    """The component and traffic split of an EnergyReport."""
    total = report.total
    print(
        f"  energy ({report.source}, coefficients {report.coefficients}): {total / 1e3:,.1f} nJ, "
        f"{report.pj_per_mac:.3f} pJ/MAC, {report.power_mw:,.1f} mW average at "
        f"{report.clock_mhz:g} MHz"
    )
    print(f"    {'by component':24}{'nJ':>13} {'share':>7}")
    for name, pj in report.components.items():
        print(f"    {name:24}{pj / 1e3:>13,.2f} {100 * pj / total:>6.1f}%")
    print(f"    by traffic {'':9} {'array':>13} {'buffer':>13} {'off-chip':>13} {'share':>7}")
    for klass, levels in report.traffic.items():
        cells = [levels.get(level) for level in ("array", "buffer", "offchip")]
        text = " ".join(f"{'' if v is None else f'{v / 1e3:,.2f}':>13}" for v in cells)
        print(f"    {klass:24}{text} {100 * sum(levels.values()) / total:>6.1f}%")
    print("    (nJ; array = registers and datapath, buffer = on-chip SRAM and its ports)")


def cmd_model(args: argparse.Namespace) -> int:
    from golden.model import predict

    config = config_from_args(args)
    pred = predict(config, args.m, args.k, args.n)
    summary = pred.summary()
    report = None
    if args.energy:
        from golden.activity import estimate_toggles
        from golden.energy import figures_energy

        toggles = estimate_toggles(config, args.m, args.k, args.n, data=args.data.text)
        report = figures_energy(pred, toggles, _coefficients(args), source="model")
        summary["energy"] = report.to_dict() | {"data": args.data.text}
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"{config.name}: {args.m}x{args.k}x{args.n} GEMM (model, no simulation)")
    _print_figures(summary)
    if report is not None:
        _print_energy(report)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from rtl.host import chunk_sizes
    from tb.compare import compare, default_points, read_shapes

    given = [args.m, args.k, args.n]
    if args.shapes is not None or any(v is not None for v in given):
        config = config_from_args(args)
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
        points = [(config, shape) for shape in shapes]
    else:
        points = default_points()

    def show(row):
        if args.json:
            return
        m, k, n = row.shape
        diff = row.differences
        verdict = (
            "equal"
            if not diff
            else "DIFFER: "
            + ", ".join(f"{name} {row.rtl[name]} vs {row.model[name]}" for name in diff)
        )
        third = f" {row.scalesim_cycles:>9}" if args.scalesim else ""
        if args.energy:
            third += (f" {row.energy_rtl.pj_per_mac:>9.3f} {row.energy_model.pj_per_mac:>9.3f} "
                      f"{row.energy_error:>+6.2f}%")  # fmt: skip
        print(
            f"{row.config.name:32} {f'{m}x{k}x{n}':>12} {row.rtl['cycles']:>9} "
            f"{row.model['cycles']:>9} {row.model['cycles'] - row.rtl['cycles']:>5}{third}  "
            f"{'bit-exact' if row.bit_exact else 'C MISMATCH':10} {verdict}",
            flush=True,
        )

    if not args.json:
        third = f" {'SCALE-Sim':>9}" if args.scalesim else ""
        if args.energy:
            third += f" {'pJ/MAC':>9} {'model':>9} {'act.diff':>7}"
        print(f"{'configuration':32} {'M x K x N':>12} {'RTL cyc':>9} {'model cyc':>9} "
              f"{'diff':>5}{third}  {'C':10} counters and off-chip words")  # fmt: skip
        if args.scalesim:
            print("(SCALE-Sim simulates cycle by cycle in Python, slow on large GEMMs; its cycles "
                  "differ from ours by design: docs/model.md explains each term)")  # fmt: skip
    if args.scalesim:
        from tb.scalesim import available

        if not available():
            raise UsageError(
                "systolic compare: --scalesim needs SCALE-Sim: pip install '.[scalesim]'"
            )
    coefficients = _coefficients(args) if args.energy else None
    rows = compare(points, seed=args.seed, scalesim=args.scalesim, progress=show,
                   energy=args.energy, coefficients=coefficients)  # fmt: skip
    quantities = len(rows[0].rtl) if rows else 0
    differing = [r for r in rows if r.differences]
    wrong_c = [r for r in rows if not r.bit_exact]
    if args.json:
        print(json.dumps([r.as_dict() for r in rows], indent=2))
    else:
        print(f"\n{len(rows)} points x {quantities} quantities (cycles, every counter, off-chip "
              f"words): {len(differing)} point(s) with differences; C bit-exact on "
              f"{len(rows) - len(wrong_c)} of {len(rows)}")  # fmt: skip
        if args.energy and rows:
            worst = max(rows, key=lambda r: abs(r.energy_error))
            print(f"energy: the model's activity energy (bit flips predicted from the operands) is "
                  f"within {abs(worst.energy_error):.2f}% of the RTL's toggle-based one on every "
                  f"point (largest on {worst.config.name} {'x'.join(map(str, worst.shape))}); "
                  f"coefficients {worst.energy_rtl.coefficients}")  # fmt: skip
    return 1 if differing or wrong_c else 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from sweeps.report import write_report
    from sweeps.run import SweepInterrupted, run_sweep
    from sweeps.spec import load_spec

    sweep = load_spec(args.spec)  # SpecError (a ValueError) names file, line and key: exit 2
    out = args.out if args.out is not None else Path("results") / sweep.name
    print(f"sweep {sweep.name}: {len(sweep.configs)} configuration(s) x {len(sweep.workloads)} "
          f"workload(s) = {sweep.points} points; RTL: {sweep.rtl}; results in {out}",
          file=sys.stderr)  # fmt: skip
    try:
        results = run_sweep(sweep, out, jobs=args.jobs, resume=args.resume,
                            progress=not args.quiet)  # fmt: skip
    except SweepInterrupted as e:
        print(f"systolic sweep: {e}", file=sys.stderr)
        return 3
    paths = write_report(results)
    from sweeps.report import points_of
    from sweeps.run import load_results

    points, failures = points_of(load_results(results))
    print(f"{len(points)} points, {len(failures)} failed evaluation(s); report: {paths['html']} "
          f"(and {paths['markdown'].name}, plots in {paths['html'].parent})")  # fmt: skip
    return 1 if failures else 0


def cmd_report(args: argparse.Namespace) -> int:
    from sweeps.report import write_report

    if not args.results.is_file():
        raise UsageError(f"systolic report: no results file {args.results}")
    paths = write_report(args.results, args.out)
    print(f"report: {paths['html']} (and {paths['markdown'].name}, "
          f"{len(paths) - 2} plot(s))")  # fmt: skip
    return 0


def cmd_accuracy(args: argparse.Namespace) -> int:
    from tb.accuracy import run_accuracy

    experiment = run_accuracy(args.samples, args.rows, args.seed)
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


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="systolic",
        description="Generate, verify and measure weight-, output- and input-stationary "
        "systolic arrays.",
    )
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_Parser
    )

    gen = sub.add_parser(
        "generate",
        help="write the Verilog of an array and its config.json",
        description="Write <DIR>/<top>.v and <DIR>/config.json: the whole accelerator (top "
        "module `systolic_accelerator`: buffers, tiling controller, array, host streams, "
        "command and counters) or, with --design array, the bare mesh (top module "
        "`systolic_array`). Ports are named <interface>__<member> (cmd__valid, "
        "c_data__payload, ...); clock `clk`, synchronous reset `rst`.",
    )
    add_config_options(gen)
    gen.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="output folder (default: ./<config name>, e.g. ./ws-8x8-i8-acc32)",
    )
    gen.add_argument(
        "--design",
        choices=["accelerator", "array"],
        default="accelerator",
        help="the whole accelerator (default) or only the systolic mesh",
    )
    gen.add_argument(
        "--lint",
        action="store_true",
        help="also run verilator --lint-only -Wall on the result; exit 1 if unclean",
    )
    gen.add_argument("--json", action="store_true", help="print what was written as JSON")
    gen.set_defaults(func=cmd_generate)

    sim = sub.add_parser(
        "sim",
        help="run one GEMM on random data through the simulated accelerator",
        description="Simulate C = A @ B on random A (M x K) and B (K x N) with Verilator, check C "
        "against the golden model, and print cycles, utilization and the performance counters. "
        "Exit status 1 when C differs or the accelerator flags an error.",
    )
    add_config_options(sim)
    add_shape_options(sim, required=True)
    sim.add_argument("--seed", type=int, help="random seed of the operands (default: random)")
    add_data_option(
        sim,
        "operand data: uniform random (default), all zeros, or random with a fraction P of zeros",
    )
    sim.add_argument("--a-zero", type=int, default=0, metavar="Z",
                     help="zero point of A (implies --zero-points; default 0)")  # fmt: skip
    sim.add_argument("--b-zero", type=int, default=0, metavar="Z",
                     help="zero point of B (implies --zero-points; default 0)")  # fmt: skip
    sim.add_argument("--out-zero", type=int, default=0, metavar="Z",
                     help="output zero point, with --requant (default 0)")  # fmt: skip
    sim.add_argument(
        "--relu",
        action="store_true",
        help="ReLU in the requantization (clamp at the output zero point)",
    )
    sim.add_argument(
        "--pause",
        type=_probability,
        default=0.0,
        help="probability that the host pauses a stream in a cycle (default 0)",
    )
    add_energy_options(
        sim,
        "also count switching activity (a separate, instrumented build, 1.4-4x slower) and "
        "print the energy by component and by traffic class",
    )
    sim.add_argument("--json", action="store_true", help="print the result as JSON")
    sim.set_defaults(func=cmd_sim)

    model = sub.add_parser(
        "model",
        help="predict cycles, counters, traffic and reuse of a GEMM without simulating",
        description="The analytical model (golden/model.py): every performance counter of the "
        "accelerator, the host's off-chip words and the reuse they imply, exactly as the RTL "
        "counts them (systolic compare checks that).",
    )
    add_config_options(model)
    add_shape_options(model, required=True)
    add_energy_options(
        model,
        "also estimate the energy: bit flips predicted on a sample of operands of --data, "
        "scaled to the whole GEMM (golden.activity.estimate_toggles)",
    )
    add_data_option(model, "operand data the energy estimate assumes (default random)")
    model.add_argument("--json", action="store_true", help="print the prediction as JSON")
    model.set_defaults(func=cmd_model)

    cmp = sub.add_parser(
        "compare",
        help="run RTL and model on the same points; exit 1 on any difference",
        description="Simulate each point, predict it with the model, and compare cycles, every "
        "counter and the off-chip words. With no shape options it runs a default list of 60 "
        "points (three dataflows, four arrays, ragged shapes, GEMMs larger than the buffers).",
    )
    add_config_options(cmp)
    add_shape_options(cmp, required=False)
    cmp.add_argument(
        "--shapes",
        type=Path,
        metavar="FILE",
        help="GEMM shapes to compare on the given configuration, one M,K,N a line",
    )
    cmp.add_argument("--seed", type=int, default=0, help="random seed of the operands (default 0)")
    cmp.add_argument(
        "--scalesim",
        action="store_true",
        help="add SCALE-Sim's cycles as a third column (needs pip install '.[scalesim]'; "
        "slow on large GEMMs)",
    )
    add_energy_options(
        cmp,
        "also compare the model's energy (toggles predicted from the operands) with the "
        "toggle-based energy of the RTL",
    )
    cmp.add_argument("--json", action="store_true", help="print the comparison as JSON")
    cmp.set_defaults(func=cmd_compare)

    sw = sub.add_parser(
        "sweep",
        help="evaluate configurations x workloads from a YAML spec and write a report",
        description="Evaluate every configuration of SPEC on every workload with the analytical "
        "model, simulate the points the spec chooses in RTL (cycles, counters, toggle energy, "
        "bit-exact check), append each result to RESULTS/results.jsonl as it finishes, and "
        "write report.md, report.html and PNG plots there. See sweeps/spec.py for the format "
        "and sweeps/specs/default.yaml for an example. Exit status 1 when an evaluation failed, "
        "3 when interrupted (rerun with --resume).",
    )
    sw.add_argument("spec", type=Path, help="the sweep specification (YAML)")
    sw.add_argument("--out", type=Path, metavar="DIR",
                    help="results folder (default: results/<spec name>)")  # fmt: skip
    sw.add_argument("--jobs", type=_positive, metavar="N",
                    help="configurations simulated in parallel (default: all cores)")  # fmt: skip
    sw.add_argument("--resume", action="store_true",
                    help="continue an interrupted sweep: skip every point already in the "
                    "results file")  # fmt: skip
    sw.add_argument("--quiet", action="store_true", help="no progress bar")
    sw.set_defaults(func=cmd_sweep)

    rep = sub.add_parser(
        "report",
        help="write the markdown and HTML report (with plots) of a sweep's results",
        description="Read RESULTS (a sweep's results.jsonl) and write report.md, report.html "
        "and the PNG plots into its folder (or --out).",
    )
    rep.add_argument("results", type=Path, help="a results.jsonl written by systolic sweep")
    rep.add_argument("--out", type=Path, metavar="DIR", help="where to write the report")
    rep.set_defaults(func=cmd_report)

    acc = sub.add_parser(
        "accuracy",
        help="accuracy retention of int8, int4 and bf16 against float, through the RTL",
        description="Train a small MLP in numpy on generated data, quantize it (per-tensor "
        "asymmetric activations, per-channel symmetric weights, requantization with ReLU), run "
        "it through the simulated accelerator in int8, int4 and bf16, and print test accuracy, "
        "retention relative to float, pJ/MAC from RTL toggles and whether the RTL matched "
        "golden/ bit for bit (exit 1 if not).",
    )
    acc.add_argument("--samples", type=_positive, default=1000, help="test samples (1000)")
    acc.add_argument("--rows", type=_positive, default=8, help="array rows = cols (8)")
    acc.add_argument("--seed", type=int, default=0, help="data and training seed (0)")
    acc.add_argument("--json", action="store_true", help="print the results as JSON")
    acc.set_defaults(func=cmd_accuracy)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return args.func(args)
    except UsageError as e:
        print(e, file=sys.stderr)
        return 2
    except (ValueError, TypeError) as e:  # invalid configuration values, named by the message
        print(f"systolic: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `systolic ... | head`: the reader left; not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
