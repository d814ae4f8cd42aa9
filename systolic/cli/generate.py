"""``systolic generate``: Verilog of an accelerator or a bare mesh, and its config.json."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from systolic.contract.config import check_buildable
from systolic.contract.interface import TOPS

from .options import add_config_options, check_output_folder, config_from_args, output_folder


def add_parser(sub) -> None:
    p = sub.add_parser(
        "generate",
        help="write the Verilog of an accelerator, its register map, C header and config.json",
        description="Write <DIR>/<top>.v and <DIR>/config.json: the whole accelerator (top "
        "module `systolic_device`: AXI4-Lite control registers, descriptor queue, chunk "
        "sequencer, AXI4 DMA, banked buffers, tiling controller, array and counters), with "
        "its register map (registers.md) and C header (systolic_regs.h); or, with --design "
        "array, the bare mesh (top module `systolic_array`). The accelerator's ports are "
        "named as SoC tools infer AXI interfaces (s_axil_awaddr ..., m_axi_araddr ...), with "
        "irq, clock `clk` and reset `rst` (active high, synchronous).",
    )
    add_config_options(p, rtl=True)
    p.add_argument(
        "--out",
        type=output_folder,
        metavar="DIR",
        help="output folder (default: ./<config name>, e.g. ./ws-8x8-i8-acc32)",
    )
    p.add_argument(
        "--design",
        choices=["device", "array"],
        default="device",
        help="the whole accelerator (default) or only the systolic mesh",
    )
    p.add_argument(
        "--lint",
        action="store_true",
        help="also run verilator --lint-only -Wall on the result; exit 1 if unclean",
    )
    p.add_argument("--json", action="store_true", help="print what was written as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from systolic.rtl.generate import write_design
    from systolic.sim.lint import lint

    config = config_from_args(args)
    check_buildable(config)  # before anything is generated or built
    out = args.out if args.out is not None else Path(config.name)
    check_output_folder(out, "generate")
    paths = write_design(config, out, args.design)
    report = {"name": config.name, **{k: str(v) for k, v in paths.items()}}
    status = 0
    if args.lint:
        result = lint(paths["verilog"], TOPS[args.design])
        report["lint"] = {"clean": result.clean, "warnings": result.warnings}
        status = 0 if result.clean else 1
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{config.name}: wrote " + ", ".join(str(p) for p in paths.values()))
        if args.lint:
            if result.clean:
                print("verilator --lint-only -Wall: clean")
            else:
                print("verilator --lint-only -Wall: " + "\n".join(result.warnings))
    return status
