# amaranth: UnusedElaboratable=no
"""Turn an :class:`ArrayConfig` into Verilog: the one place that picks a configuration's design.

Tools also build components only to read their signatures (the simulation wrapper's ports); the
comment on the first line tells Amaranth that such instances, never elaborated, are not
forgotten submodules.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path

import amaranth
import systolic.contract
from amaranth import Value
from amaranth.back import verilog
from amaranth.lib.wiring import In
from systolic.contract.config import ArrayConfig, Dataflow, check_buildable
from systolic.contract.interface import TOPS
from systolic.contract.regdocs import HEADER_NAME, MAP_NAME, c_header, markdown

from .array import OutputStationaryArray, StationaryArray
from .device import Device
from .sram import sram_models

__all__ = [
    "design",
    "design_config",
    "design_ports",
    "design_verilog",
    "generator_sources",
    "VERILOG_FOLDER",
    "write_design",
]


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


def design(config: ArrayConfig, kind: str = "device", *, clock_gate: bool = True):
    """The mesh (``kind="array"``) or the whole accelerator, the device that streams GEMMs from
    DRAM (``"device"``), of ``config``, after checking that the generator builds it
    (:func:`contract.config.check_buildable`). ``clock_gate``: the device's clock gate
    (rtl.clock_gate; an FPGA keeps its clocks on its clock network and goes without)."""
    _check_kind(kind)
    check_buildable(config)
    if kind == "device":
        return Device(config, clock_gate=clock_gate)
    if config.dataflow is Dataflow.OS:
        return OutputStationaryArray(config)
    return StationaryArray(design_config(config, kind))


#: The folder, under a build root, that callers give :func:`design_verilog` as its cache (the
#: simulation builds and the synthesis runs of a design share it).
VERILOG_FOLDER = "verilog"


def generator_sources() -> list[str]:
    """The text of every module that fixes the generated Verilog (this layer and the contract),
    with Amaranth's version: what a cache of anything made from the Verilog must key on."""
    dirs = (Path(__file__).parent, Path(systolic.contract.__file__).parent)
    texts = [p.read_text() for d in dirs for p in sorted(d.glob("*.py"))]
    return [f"amaranth {amaranth.__version__}", *texts]


def design_verilog(config: ArrayConfig, kind: str = "device", *, cache: Path | None = None,
                   clock_gate: bool = True) -> str:  # fmt: skip
    """Verilog of the design, top module ``TOPS[kind]``; the device's ends with the models of
    its SRAM modules (rtl/sram.py). With ``cache`` (a folder), the text is kept there under a
    hash of the configuration, the kind and :func:`generator_sources`, and read back by the next
    call: generating a small device takes seconds, reading it milliseconds (the simulation
    builds and synthesis runs of one design share it)."""
    path = None
    if cache is not None:
        h = hashlib.sha256()
        hardware = design_config(config, kind)  # an IS mesh shares its WS twin's text
        flavour = kind if clock_gate or kind != "device" else f"{kind}-ungated"
        for part in (hardware.to_json(), flavour, *generator_sources()):
            h.update(part.encode() + b"\0")
        path = Path(cache) / f"{hardware.name}-{flavour}-{h.hexdigest()[:12]}.v"
        if path.is_file():
            return path.read_text()
    top = design(config, kind, clock_gate=clock_gate)
    text = verilog.convert(top, name=TOPS[kind], emit_src=False)
    text = text + "\n" + sram_models(config) if kind == "device" else text
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(text)
        partial.replace(path)  # whole or absent: parallel writers of one design never mix
    return text


def design_ports(config: ArrayConfig, kind: str = "device") -> list[tuple[str, str, int]]:
    """``(name, "in" | "out", width)`` of every port of the design's top module except the
    clock: ``rst`` and the signature's members (the device's ``s_axil_awaddr``,
    ``m_axi_arvalid``, ``irq``, ...; the mesh's joined with ``__``, ``a_in__valid``)."""
    top = design(config, kind)
    ports = [("rst", "in", 1)]
    for path, member, value in top.signature.flatten(top):
        if path in (("clk",), ("rst",)):  # the gated device's own (rtl.clock_gate)
            continue
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
