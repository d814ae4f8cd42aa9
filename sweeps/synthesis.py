"""Synthesis in a sweep (``evaluate: synth: true``): each configuration's device is synthesized
once (synth/flow.py, cached by its Verilog), and every point of it gains its area, Fmax and
leakage, and runs at its own clock.

A configuration's synthesis is a record of ``results.jsonl`` of its own (``kind: "synth"``), so a
resumed sweep does not synthesize it again and every point's figures can be traced to it. The
clock of a point is the configuration's Fmax at 0.18 um, or the spec's ``clock_mhz`` where the
configuration meets it (figures from :mod:`synth.flow`; 45 nm area from
:mod:`models.technology`'s scaling, an estimate).
"""

from __future__ import annotations

import hashlib
import json

from systolic.contract.config import ArrayConfig, beyond_rtl
from systolic.models.technology import CELL_LIBRARY_NM, COEFFICIENTS_NM, factor
from systolic.synth.flow import synthesize
from systolic.synth.tools import ToolError

__all__ = ["point_fields", "point_clock", "synth_id", "synth_record"]

#: The node synthesis measures at, and the one its area is also estimated at.
FLOW_NM, ESTIMATE_NM = CELL_LIBRARY_NM, COEFFICIENTS_NM


def synth_id(config: ArrayConfig) -> str:
    """The key of a configuration's synthesis record, for resumption."""
    text = json.dumps(config.to_dict(), sort_keys=True)
    return f"synth|{config.name}|{hashlib.sha256(text.encode()).hexdigest()[:10]}"


def synth_record(config: ArrayConfig) -> dict:
    """Worker: the synthesis figures of ``config``'s device, or a failed record saying why
    (a configuration past the RTL generator's limits, a tool that failed)."""
    base = {"id": synth_id(config), "kind": "synth", "config_name": config.name,
            "config": config.to_dict(),
            "workload": {"name": "(synthesis)", "model": "-"}}  # fmt: skip
    why = beyond_rtl(config)
    if why is not None:
        return base | {"status": "failed", "error": f"not synthesized: {why}"}
    try:
        report = synthesize(config)
    except (ToolError, ValueError) as e:
        return base | {"status": "failed", "error": f"synthesis failed: {e}"}
    macros_mw = sum(s["leakage_mw"] for s in report.srams)
    return base | {
        "status": "ok",
        "library": report.library,
        "cells": report.cells,
        "flops": report.flops,
        "cell_area_mm2": report.area_um2 / 1e6,
        "sram_area_mm2": report.sram_area_um2 / 1e6,
        "area_mm2": report.total_area_um2 / 1e6,
        "area_mm2_45nm": report.total_area_um2 / 1e6 * factor("area", FLOW_NM, ESTIMATE_NM),
        "components_mm2": {k: c.area_um2 / 1e6 for k, c in report.components.items()},
        "fmax_mhz": report.fmax_mhz,
        "critical_path": f"{report.critical.start} -> {report.critical.end}",
        "leakage_mw": report.leakage_nw / 1e6 + macros_mw,
        "directory": str(report.directory),
    }


def point_clock(synth: dict, chosen_mhz: float | None) -> float:
    """The clock a configuration's points run at: ``chosen_mhz`` where synthesis says it meets
    timing, else its Fmax."""
    fmax = synth["fmax_mhz"]
    return fmax if chosen_mhz is None else min(chosen_mhz, fmax)


def point_fields(synth: dict, record: dict) -> dict:
    """What a point of a synthesized configuration gains: area, Fmax, leakage and the
    efficiencies they give (throughput per mm^2 at 0.18 um, inferences per joule)."""
    area = synth["area_mm2"]
    energy_pj = record["energy_per_inference_pj"]
    return {
        "area_mm2": area,
        "area_mm2_45nm": synth["area_mm2_45nm"],
        "fmax_mhz": synth["fmax_mhz"],
        "leakage_mw": synth["leakage_mw"],
        "throughput_per_mm2": record["throughput_inf_s"] / area,
        "inferences_per_j": 1e12 / energy_pj if energy_pj else None,
    }
