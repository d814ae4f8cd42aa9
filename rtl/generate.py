"""Turn an :class:`ArrayConfig` into Verilog files."""

from __future__ import annotations

from pathlib import Path

from amaranth.back import verilog

from .array import build_array
from .config import ArrayConfig
from .describe import describe

__all__ = ["TOP", "LINT_WAIVERS", "array_verilog", "array_ports", "write_array"]

#: Verilog name of the generated top module.
TOP = "systolic_array"

#: The one Verilator control file of lint waivers, each documented inside it.
LINT_WAIVERS = Path(__file__).with_name("lint_waivers.vlt")


def array_verilog(config: ArrayConfig) -> str:
    """Verilog of the systolic mesh for ``config``, top module :data:`TOP`."""
    return verilog.convert(build_array(config), name=TOP, emit_src=False)


def array_ports(config: ArrayConfig) -> list[str]:
    """Verilog port names of the array's top module: ``clk``, ``rst`` and the signature's members
    joined with ``__`` (``stream__valid``, ``result__payload``, ...)."""
    array = describe(config)
    members = ["__".join(map(str, path)) for path, _, _ in array.signature.flatten(array)]
    return ["clk", "rst", *members]


def write_array(config: ArrayConfig, out_dir: str | Path) -> dict[str, Path]:
    """Write ``<TOP>.v`` and ``config.json`` into ``out_dir`` (created if missing)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"verilog": out / f"{TOP}.v", "config": out / "config.json"}
    paths["verilog"].write_text(array_verilog(config))
    paths["config"].write_text(config.to_json() + "\n")
    return paths
