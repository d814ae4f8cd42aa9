# amaranth: UnusedElaboratable=no
"""Turn an :class:`ArrayConfig` into Verilog: the one place that picks a configuration's design.

Tools also build components only to read their signatures (the simulation wrapper's ports); the
comment on the first line tells Amaranth that such instances, never elaborated, are not
forgotten submodules.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from amaranth import Value
from amaranth.back import verilog
from amaranth.lib.wiring import In
from systolic.contract.config import ArrayConfig, Dataflow, check_buildable
from systolic.contract.interface import TOPS
from systolic.contract.regdocs import HEADER_NAME, MAP_NAME, c_header, markdown

from .array import OutputStationaryArray, StationaryArray
from .device import Device
from .sram import sram_models

__all__ = ["design", "design_config", "design_ports", "design_verilog", "write_design"]


def _check_kind(kind: str) -> None:
    if kind not in TOPS:
        raise ValueError(f"design must be one of {', '.join(map(repr, TOPS))}, not {kind!r}")


def design_config(config: ArrayConfig, kind: str = "device") -> ArrayConfig:
    """The configuration the hardware of ``kind`` is generated from. The bare IS mesh is the WS
    mesh of the transposed problem (A stays where WS keeps B, B streams where WS streams A), so
    it is generated, and built, as the WS configuration with the operands swapped; every other
    design is generated from ``config`` itself."""
    if kind == "array" and config.dataflow is Dataflow.IS:
        return dataclasses.replace(
            config, dataflow=Dataflow.WS, a_width=config.b_width, b_width=config.a_width,
            a_signed=config.b_signed, b_signed=config.a_signed,
        )  # fmt: skip
    return config


def design(config: ArrayConfig, kind: str = "device"):
    """The mesh (``kind="array"``) or the whole accelerator, the device that streams GEMMs from
    DRAM (``"device"``), of ``config``, after checking that the generator builds it
    (:func:`contract.config.check_buildable`)."""
    _check_kind(kind)
    check_buildable(config)
    if kind == "device":
        return Device(config)
    if config.dataflow is Dataflow.OS:
        return OutputStationaryArray(config)
    return StationaryArray(design_config(config, kind))


def design_verilog(config: ArrayConfig, kind: str = "device") -> str:
    """Verilog of the design, top module ``TOPS[kind]``; the device's ends with the models of
    its SRAM modules (rtl/sram.py)."""
    text = verilog.convert(design(config, kind), name=TOPS[kind], emit_src=False)
    return text + "\n" + sram_models(config) if kind == "device" else text


def design_ports(config: ArrayConfig, kind: str = "device") -> list[tuple[str, str, int]]:
    """``(name, "in" | "out", width)`` of every port of the design's top module except the
    clock: ``rst`` and the signature's members (the device's ``s_axil_awaddr``,
    ``m_axi_arvalid``, ``irq``, ...; the mesh's joined with ``__``, ``a_in__valid``)."""
    top = design(config, kind)
    ports = [("rst", "in", 1)]
    for path, member, value in top.signature.flatten(top):
        direction = "in" if member.flow == In else "out"
        ports.append(("__".join(map(str, path)), direction, len(Value.cast(value))))
    return ports


def write_design(config: ArrayConfig, out_dir: str | Path, kind: str = "device") -> dict:
    """Write ``<top>.v`` and ``config.json`` into ``out_dir`` (created if missing), and for the
    device its register map (``registers.md``) and C header (``systolic_regs.h``)."""
    _check_kind(kind)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"verilog": out / f"{TOPS[kind]}.v", "config": out / "config.json"}
    paths["verilog"].write_text(design_verilog(config, kind))
    paths["config"].write_text(config.to_json() + "\n")
    if kind == "device":
        paths["registers"], paths["header"] = out / MAP_NAME, out / HEADER_NAME
        paths["registers"].write_text(markdown(config))
        paths["header"].write_text(c_header(config))
    return paths
