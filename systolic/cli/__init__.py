"""The ``systolic`` command line: generate, simulate and measure systolic-array accelerators.

Each subcommand is a module of this package that owns its arguments (``add_parser``) and its
work and printing (``run``); option groups several share live in :mod:`.options`.
"""

from __future__ import annotations

import os
import sys

from systolic.contract.checks import ValueTypeError

from . import (
    accuracy,
    compare,
    generate,
    model,
    options,
    ort_check,
    quantize,
    regress,
    report,
    serve,
    sim,
    sweep,
    synth,
)

__all__ = ["build_parser", "main"]

#: The subcommands, in the order ``systolic --help`` lists them.
COMMANDS = (generate, sim, regress, synth, model, compare, sweep, serve, report, quantize, accuracy,
            ort_check)  # fmt: skip


def build_parser() -> options.Parser:
    parser = options.Parser(
        prog="systolic",
        description="Generate, verify and measure weight-, output- and input-stationary "
        "systolic arrays.",
    )  # its epilog, and every subcommand's, lists the exit statuses (options.EXIT_STATUSES)
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=options.Parser
    )
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return args.func(args)
    except options.UsageError as e:
        print(e, file=sys.stderr)
        return options.EXIT_USAGE
    except (ValueError, ValueTypeError) as e:  # invalid values, named by the message
        print(f"systolic: {e}", file=sys.stderr)
        return options.EXIT_USAGE
    except RuntimeError as e:  # a failed build or simulation: its message names the log
        print(f"systolic: {e}", file=sys.stderr)
        return options.EXIT_FAILED
    except BrokenPipeError:  # `systolic ... | head`: the reader left; not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
