"""Option groups and parsing shared by the subcommands: one definition of each."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from systolic.contract.axi import BUS_WIDTHS
from systolic.contract.config import (
    DEFAULT_DEPTH,
    LIMITS,
    PRECISIONS,
    RTL_LIMITS,
    ArrayConfig,
    Dataflow,
    beyond_rtl_value,
)
from systolic.contract.dma import LOOP_ORDERS
from systolic.contract.memory import DEFAULT_MEMORY, DRAM_PRESETS, Dram

if TYPE_CHECKING:
    from systolic.golden.data import DataKind
    from systolic.models.energy import Coefficients


__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_STATUSES",
    "EXIT_UNAVAILABLE",
    "EXIT_USAGE",
    "Parser",
    "UsageError",
    "check_output_folder",
    "file_problem",
    "folder_problem",
    "output_file",
    "output_folder",
    "add_config_options",
    "add_data_option",
    "add_energy_options",
    "add_memory_options",
    "add_shape_options",
    "energy_coefficients",
    "config_from_args",
    "memory_from_args",
    "positive",
    "probability",
]


class UsageError(Exception):
    """A bad option or value: reported as one line, exit status 2."""


#: Exit statuses, one meaning each (every command's --help lists them).
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_UNAVAILABLE = 0, 1, 2, 3, 4
EXIT_STATUSES = f"""exit status:
  {EXIT_OK}  done
  {EXIT_FAILED}  a check, simulation or evaluation failed (the message or the report says which)
  {EXIT_USAGE}  bad usage: an option, a specification or configuration file, or an output path
  {EXIT_INTERRUPTED}  interrupted while running (Ctrl-C, workers that died): what finished is
     saved; rerun with --resume where the command has it
  {EXIT_UNAVAILABLE}  a service it needs did not answer (a Dask scheduler)"""


class _Formatter(argparse.HelpFormatter):
    """argparse's, but the exit statuses keep their lines."""

    def _fill_text(self, text, width, indent):
        if text == EXIT_STATUSES:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


class Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("epilog", EXIT_STATUSES)
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message):  # argparse prints the whole usage; one clear line is enough
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")


def folder_problem(path: Path) -> str | None:
    """Why ``path`` cannot be a folder to write into (it, or a folder above it, is a file), or
    None: an existing folder, or one that can be created."""
    for above in (path, *path.parents):
        if above.exists():
            if above.is_dir():
                return None
            return (f"{path} is a file, not a folder" if above == path
                    else f"{above} is a file, so {path} cannot be a folder")  # fmt: skip
    return None


def file_problem(path: Path) -> str | None:
    """Why ``path`` cannot be a file to write (it is a folder, or its folder cannot be)."""
    if path.is_dir():
        return f"{path} is a folder, not a file"
    return folder_problem(path.parent)


def output_folder(text: str) -> Path:
    """An argparse type: a folder to write into, checked before any work runs."""
    problem = folder_problem(Path(text))
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return Path(text)


def output_file(text: str) -> Path:
    """An argparse type: a file to write, checked before any work runs."""
    problem = file_problem(Path(text))
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return Path(text)


def check_output_folder(path: Path, command: str, option: str = "--out") -> Path:
    """A default output folder (one the user did not give), checked like :func:`output_folder`."""
    problem = folder_problem(path)
    if problem:
        raise UsageError(f"systolic {command}: {problem} (choose another with {option})")
    return path


def add_config_options(p: argparse.ArgumentParser, *, rtl: bool) -> None:
    """The options that make an ArrayConfig; shared by every subcommand that needs one. With
    ``rtl`` the help gives the ranges the RTL generator builds, else the model's."""

    def span(name: str) -> str:
        lo, hi = (RTL_LIMITS if rtl else {}).get(name, LIMITS[name])
        return f"{lo}..{hi}"

    p.set_defaults(rtl_limits=rtl)
    g = p.add_argument_group(
        "array configuration",
        "--dataflow, --rows and --cols are required, unless --config gives them",
    )
    g.add_argument(
        "--config",
        metavar="FILE",
        type=Path,
        help="read the configuration from a config.json (other options then override it)",
    )
    g.add_argument(
        "--dataflow",
        choices=[d.value for d in Dataflow],
        help="weight-, output- or input-stationary (required, unless --config)",
    )
    g.add_argument("--rows", type=int, metavar="R",
                   help=f"PE rows ({span('rows')}; required, unless --config)")  # fmt: skip
    g.add_argument("--cols", type=int, metavar="C",
                   help=f"PE columns ({span('cols')}; required, unless --config)")  # fmt: skip
    g.add_argument(
        "--a-width",
        type=int,
        metavar="BITS",
        help=f"activation (A) operand bits ({span('a_width')}, default 8)",
    )
    g.add_argument(
        "--b-width",
        type=int,
        metavar="BITS",
        help=f"weight (B) operand bits ({span('b_width')}, default 8)",
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
        help=f"accumulator and output bits ({span('acc_width')}, default 32); sums "
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
    g.add_argument(
        "--requant-float",
        action="store_true",
        default=None,
        help="the requantization unit also scales by float32, as onnxruntime does (with "
        "--requant; sim --float-scale)",
    )
    g.add_argument(
        "--vector",
        action="store_true",
        default=None,
        help="a vector unit beside the array for residual adds, maxima and pooling (with "
        "--requant, outputs of at most 8 bits; docs/vector.md)",
    )
    g.add_argument("--out-width", type=int, metavar="BITS",
                   help=f"requantized output bits ({span('out_width')}, default 8)")  # fmt: skip
    g.add_argument("--out-unsigned", action="store_true", default=None,
                   help="requantized outputs are unsigned")  # fmt: skip
    for buf, what in (("a", "A (activations)"), ("b", "B (weights)"), ("c", "C (outputs)")):
        g.add_argument(
            f"--{buf}-depth",
            type=int,
            metavar="WORDS",
            help=f"words of the {what} buffer ({span(f'{buf}_depth')}, default "
            f"{DEFAULT_DEPTH}); a word is one array-edge vector",
        )
    g.add_argument("--stage-depth", type=int, metavar="WORDS",
                   help=f"words of the staging buffer convolution descriptors stage input rows "
                   f"in ({span('stage_depth')}, default 0: none; ws only)")  # fmt: skip
    g = p.add_argument_group("DMA and AXI4 port")
    g.add_argument("--bus-width", type=int, metavar="BITS",
                   help=f"AXI4 data bus to DRAM ({', '.join(map(str, BUS_WIDTHS))}; "
                   "default 128)")  # fmt: skip
    g.add_argument(
        "--max-burst",
        type=int,
        metavar="BEATS",
        help="longest burst, a power of two whose bytes fit 4 KB (default 16)",
    )
    g.add_argument(
        "--max-reads",
        type=int,
        metavar="N",
        help=f"read bursts outstanding ({span('max_reads')}, default 16)",
    )
    g.add_argument(
        "--max-writes",
        type=int,
        metavar="N",
        help=f"write bursts outstanding ({span('max_writes')}, default 8)",
    )
    g.add_argument("--queue-depth", type=int, metavar="N",
                   help=f"descriptors queued behind the running one ({span('queue_depth')}, "
                   "default 2)")  # fmt: skip


def add_memory_options(p: argparse.ArgumentParser) -> None:
    """The DRAM behind the device: a preset or its three numbers, and the chunk loop order."""
    from systolic.models.chunking import CHUNKINGS

    g = p.add_argument_group("DRAM (the simulation's DRAM model, and the model's)")
    g.add_argument(
        "--memory",
        choices=list(DRAM_PRESETS),
        metavar="PRESET",
        help=f"a named memory at --clock-mhz ({', '.join(DRAM_PRESETS)}); "
        "--bandwidth, --latency and --max-requests override its numbers",
    )
    g.add_argument("--clock-mhz", type=positive_number, default=1000.0, metavar="MHZ",
                   help="the accelerator's clock in MHz, to see a --memory preset in cycles "
                   "(default 1000)")  # fmt: skip
    g.add_argument("--bandwidth", metavar="BYTES", help="DRAM bytes per cycle, a number or a "
                   f"fraction such as 7/3 (default {DEFAULT_MEMORY.bandwidth})")  # fmt: skip
    g.add_argument("--latency", type=int, metavar="CYCLES",
                   help=f"cycles from a read request to its first beat (default "
                   f"{DEFAULT_MEMORY.latency})")  # fmt: skip
    g.add_argument(
        "--max-requests",
        type=int,
        metavar="N",
        help=f"bursts the DRAM holds at once (default {DEFAULT_MEMORY.max_requests})",
    )
    g.add_argument("--order", choices=LOOP_ORDERS, default="nmk",
                   help="the chunk loop nest, outermost first (default nmk: K innermost, no "
                   "partial sums to DRAM)")  # fmt: skip
    g.add_argument("--chunks", choices=CHUNKINGS, default="tuned",
                   help="chunk sizes: the largest that fit the banks (fit), or those the "
                   "pipeline model predicts fastest behind this DRAM (tuned, the default: "
                   "smaller chunks hide more of the first loads and the last store), or the "
                   "exact model's fastest of the pipeline model's best (exact), or those "
                   "fastest for identical GEMMs queued back to back (stream)")  # fmt: skip


def chunk_from_args(args: argparse.Namespace, config, memory: Dram) -> tuple[int, int, int]:
    """The chunk sizes of the ``--chunks`` option for the GEMM ``--m --k --n`` (requantized
    where the configuration requantizes, as ``systolic sim`` runs it)."""
    from systolic.models.chunking import choose_chunk

    try:
        return choose_chunk(config, args.m, args.k, args.n, memory, order=args.order,
                            chunking=args.chunks, requant=config.requant)  # fmt: skip
    except ValueError as e:
        raise UsageError(f"systolic {args.command}: {e}") from None


def memory_from_args(args: argparse.Namespace) -> Dram:
    """The :class:`contract.memory.Dram` of the memory options."""
    base = DEFAULT_MEMORY
    if args.memory is not None:
        try:
            base = Dram.preset(args.memory, args.clock_mhz / 1000)
        except ValueError as e:
            raise UsageError(f"systolic {args.command}: --clock-mhz: {e}") from None
    values = {"bandwidth": base.bandwidth, "latency": base.latency,
              "max_requests": base.max_requests}  # fmt: skip
    for key in values:
        if getattr(args, key) is not None:
            values[key] = getattr(args, key)
    try:
        return Dram(**values)
    except (TypeError, ValueError) as e:
        raise UsageError(f"systolic {args.command}: {e}") from None


def dram_energy_from_args(args: argparse.Namespace):
    """What the memory options' DRAM bits cost: the ``--memory`` preset's device, or the
    default memory's (:func:`models.technology.dram_energy`)."""
    from systolic.contract.memory import Memory
    from systolic.models.technology import dram_energy

    return dram_energy(Memory.preset(args.memory) if args.memory is not None else None)


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
    dma = ("bus_width", "max_burst", "max_reads", "max_writes", "queue_depth")
    for key in (*keys, "a_depth", "b_depth", "c_depth", "zero_points", "requant", "vector",
                "stage_depth", "requant_float", *dma):  # fmt: skip
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
    if getattr(args, "rtl_limits", False):  # a command that builds RTL names the RTL's range
        for key, value in values.items():
            problem = beyond_rtl_value(key, value)
            if problem:
                raise UsageError(f"systolic {args.command}: --{key.replace('_', '-')}: {problem}")
    return ArrayConfig.from_dict(values)


def _integer_at_least(lo: int, what: str):
    """An argparse type: an integer of at least ``lo`` (``what`` names it in the error)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {what}, not {text!r}") from None
        if value < lo:
            raise argparse.ArgumentTypeError(f"must be {what}, not {value}")
        return value

    return parse


positive = _integer_at_least(1, "a positive integer")
non_negative = _integer_at_least(0, "an integer >= 0")


def positive_number(text: str) -> float:
    """A finite number above zero, such as a clock in MHz."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, not {text!r}")
    return value


def add_json_option(p: argparse.ArgumentParser, what: str) -> None:
    """``--json``: print ``what`` as one JSON document on stdout (the human lines go to stderr)."""
    p.add_argument("--json", action="store_true", help=f"print {what} as JSON")


def human(args: argparse.Namespace):
    """Where a command's human-readable lines go: stdout, or stderr under ``--json``."""
    import sys

    return sys.stderr if getattr(args, "json", False) else sys.stdout


def add_seed_option(p: argparse.ArgumentParser, what: str) -> None:
    """``--seed``: of ``what``; when not given, drawn and printed (:func:`seed_of`)."""
    p.add_argument("--seed", type=non_negative, metavar="N",
                   help=f"seed of {what} (default: drawn, and printed for a replay)")  # fmt: skip


def seed_of(args: argparse.Namespace) -> int:
    """The run's seed: ``--seed``, or one drawn now and printed on stderr with the option that
    replays it (every command draws and prints alike)."""
    if args.seed is None:
        import random
        import sys

        args.seed = random.SystemRandom().randrange(2**31)
        print(f"systolic {args.command}: seed {args.seed} (replay with --seed {args.seed})",
              file=sys.stderr)  # fmt: skip
    return args.seed


def fraction(text: str) -> float:
    """A share in (0, 1], such as an accuracy floor."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a fraction in (0, 1], not {text!r}")
    return value


def _data_kind(text: str) -> DataKind:
    from systolic.golden.data import DataKind

    try:
        return DataKind(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def probability(text: str) -> float:
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
        help="energy coefficients (TOML; default models/coefficients/calibrated45.toml)",
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


def add_conv_options(p: argparse.ArgumentParser) -> None:
    """``--conv N,H,W,C,O,K`` with ``--stride``, ``--pad``, ``--dilation``: a convolution in
    place of ``--m --k --n`` (:func:`conv_from_args`)."""
    p.add_argument("--conv", type=_conv, metavar="N,H,W,C,O,K",
                   help="a convolution instead of --m --k --n: N images of H x W x C (NHWC), "
                   "O output channels, a K x K kernel, as a convolution descriptor (needs "
                   "--stage-depth); with --stride, --pad, --dilation")  # fmt: skip
    for name, default, what in (("stride", 1, "stride"), ("pad", 0, "padding on every side"),
                                ("dilation", 1, "dilation")):  # fmt: skip
        p.add_argument(f"--{name}", type=int, default=default, metavar="S",
                       help=f"the convolution's {what} (default {default})")  # fmt: skip


def _conv(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(x) for x in text.split(","))
    except ValueError:
        values = ()
    if len(values) != 6 or min(values) < 1:
        msg = f"--conv takes N,H,W,C,O,K (six positive integers), not {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return values


def conv_from_args(args: argparse.Namespace, config, command: str):
    """The convolution of ``--conv`` (None for a GEMM: then ``--m --k --n`` are required), or a
    clear error naming ``systolic COMMAND``."""
    from systolic.contract.conv import Conv

    if args.conv is None:
        missing = [f"--{d}" for d in "mkn" if getattr(args, d) is None]
        if missing:
            raise UsageError(f"systolic {command}: give {', '.join(missing)} (a GEMM) or --conv "
                             "(a convolution)")  # fmt: skip
        return None
    if not config.stage_depth:
        raise UsageError(f"systolic {command}: --conv needs a staging buffer: give --stage-depth "
                         "WORDS")  # fmt: skip
    n, h, w, c, o, k = args.conv
    try:
        return Conv(n, h, w, c, o, (k, k), (args.stride,) * 2, (args.pad,) * 4,
                    (args.dilation,) * 2)  # fmt: skip
    except ValueError as e:
        raise UsageError(f"systolic {command}: --conv: {e}") from None


def add_shape_options(p: argparse.ArgumentParser, *, required: bool) -> None:
    """``--m --k --n``: the GEMM ``C[M,N] = A[M,K] @ B[K,N]``."""
    p.add_argument("--m", type=positive, required=required, help="rows of A and C")
    p.add_argument("--k", type=positive, required=required, help="columns of A, rows of B")
    p.add_argument("--n", type=positive, required=required, help="columns of B and C")


def energy_coefficients(args: argparse.Namespace) -> Coefficients:
    """The energy coefficients of ``--coefficients`` (or the default file)."""
    from systolic.models.energy import load_coefficients

    return load_coefficients(args.coefficients)  # CoefficientsError is a ValueError: exit 2
