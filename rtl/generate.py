"""Turn an :class:`ArrayConfig` into Verilog files."""

from __future__ import annotations

from pathlib import Path

from amaranth import Value
from amaranth.back import verilog
from amaranth.lib.wiring import In

from .config import ArrayConfig
from .describe import describe_design

__all__ = ["TOPS", "LINT_WAIVERS", "design_verilog", "design_ports", "write_design"]

#: Verilog top-module name of each design: the bare mesh, and the accelerator around it.
TOPS = {"array": "systolic_array", "accelerator": "systolic_accelerator"}

#: The one Verilator control file of lint waivers, each documented inside it.
LINT_WAIVERS = Path(__file__).with_name("lint_waivers.vlt")


def _check_kind(kind: str) -> None:
    if kind not in TOPS:
        raise ValueError(f"design must be one of {', '.join(map(repr, TOPS))}, not {kind!r}")


def design_verilog(config: ArrayConfig, kind: str = "accelerator") -> str:
    """Verilog of the design, top module ``TOPS[kind]``."""
    _check_kind(kind)
    return verilog.convert(describe_design(config, kind), name=TOPS[kind], emit_src=False)


def design_ports(config: ArrayConfig, kind: str = "accelerator") -> list[tuple[str, str, int]]:
    """``(name, "in" | "out", width)`` of every port of the design's top module except the
    clock: ``rst`` and the signature's members joined with ``__`` (``cmd__valid``, ...)."""
    _check_kind(kind)
    design = describe_design(config, kind)
    ports = [("rst", "in", 1)]
    for path, member, value in design.signature.flatten(design):
        direction = "in" if member.flow == In else "out"
        ports.append(("__".join(map(str, path)), direction, len(Value.cast(value))))
    return ports


def write_design(config: ArrayConfig, out_dir: str | Path, kind: str = "accelerator") -> dict:
    """Write ``<top>.v`` and ``config.json`` into ``out_dir`` (created if missing)."""
    _check_kind(kind)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"verilog": out / f"{TOPS[kind]}.v", "config": out / "config.json"}
    paths["verilog"].write_text(design_verilog(config, kind))
    paths["config"].write_text(config.to_json() + "\n")
    return paths
