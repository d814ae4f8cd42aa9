"""One sweep point, a configuration running one workload, evaluated by the model or in RTL.

Both evaluations produce a *record* (a JSON-able dict) with the same figures, so the report does
not care which produced a point; an RTL record also carries the model's figures for the same
point and the difference.

A workload's GEMMs run one after another on one accelerator, so cycles add up; a GEMM repeated
``count`` times is evaluated once and its figures multiplied (RTL records say so:
``scaled_by_count``).
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
from systolic.contract.config import ArrayConfig
from systolic.golden.data import DataKind
from systolic.golden.reference import reference
from systolic.models.cycles import predict
from systolic.models.device import predict_device
from systolic.models.energy import Coefficients, EnergyReport, figures_energy
from systolic.models.toggles import estimate_toggles
from systolic.sweeps.workloads import Workload

__all__ = ["model_record", "point_id", "rtl_operands", "summarize"]


def point_id(config: ArrayConfig, workload: Workload) -> str:
    """A stable name for the point, the key of resumption."""
    text = json.dumps([config.to_dict(), workload.to_dict()], sort_keys=True)
    return f"{config.name}|{workload.name}|{hashlib.sha256(text.encode()).hexdigest()[:10]}"


def _add(total: dict, part: dict, times: int) -> None:
    for key, value in part.items():
        if isinstance(value, dict):
            _add(total.setdefault(key, {}), value, times)
        else:
            total[key] = total.get(key, 0) + value * times


def summarize(
    config: ArrayConfig,
    workload: Workload,
    per_gemm: list[tuple[object, EnergyReport]],
    clock_mhz: float,
) -> dict:
    """The figures of a point from each GEMM's :class:`contract.figures.GemmFigures` and energy."""
    counters: dict = {}
    offchip: dict = {}
    components: dict = {}
    traffic: dict = {}
    cycles = macs = weight_words_array = weight_words_offchip = 0
    gemms = []
    for gemm, (fig, report) in zip(workload.gemms, per_gemm, strict=True):
        times = gemm.count
        _add(counters, fig.counters, times)
        _add(offchip, fig.offchip_words, times)
        _add(components, report.components, times)
        _add(traffic, report.traffic, times)
        cycles += fig.cycles * times
        macs += fig.macs * times
        if gemm.weights:
            weight_words_array += fig.counters["b_reads"] * times
            weight_words_offchip += fig.offchip_words["b"] * times
        gemms.append(
            {
                "name": gemm.name,
                "shape": list(gemm.shape),
                "count": times,
                "cycles": fig.cycles,
                "utilization": fig.utilization,
                "energy_pj": report.total,
            }
        )
    energy = sum(components.values())
    seconds = cycles / (clock_mhz * 1e6)
    batch = workload.batch
    weight_macs = sum(g.macs for g in workload.gemms if g.weights)
    return {
        "config": config.to_dict(),
        "config_name": config.name,
        "dataflow": config.dataflow.value,
        "array": f"{config.rows}x{config.cols}",
        "pes": config.pes,
        "precision": config.precision,
        "workload": {k: v for k, v in workload.to_dict().items() if k != "gemms"},
        "macs": macs,
        "cycles": cycles,
        "utilization": macs / (cycles * config.pes) if cycles else 0.0,
        "macs_per_cycle": macs / cycles if cycles else 0.0,
        "clock_mhz": clock_mhz,
        "latency_s": seconds,
        "throughput_inf_s": batch / seconds if seconds else 0.0,
        "energy_pj": energy,
        "energy_per_inference_pj": energy / batch,
        "pj_per_mac": energy / macs if macs else 0.0,
        "components_pj": components,
        "traffic_pj": traffic,
        "counters": counters,
        "offchip_words": offchip,
        "weight_words_array_per_inference": weight_words_array / batch,
        "weight_words_offchip_per_inference": weight_words_offchip / batch,
        "weight_reuse_array": weight_macs / weight_words_array if weight_words_array else None,
        "weight_reuse_offchip": (
            weight_macs / weight_words_offchip if weight_words_offchip else None
        ),
        "gemms": gemms,
    }


def model_record(
    config: ArrayConfig, workload: Workload, coefficients: Coefficients, data: str, seed: int
) -> dict:
    """The analytical model's account of a point (energy from toggles estimated for ``data``)."""
    per_gemm = []
    for gemm in workload.gemms:
        pred = predict(config, *gemm.shape)
        toggles = estimate_toggles(config, *gemm.shape, data=data, seed=seed)
        per_gemm.append((pred, figures_energy(pred, toggles, coefficients, source="model")))
    return summarize(config, workload, per_gemm, coefficients.clock_mhz)


def rtl_operands(
    config: ArrayConfig, workload: Workload, data: str, seed: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The operands an RTL evaluation simulates: one pair per distinct GEMM, from a generator
    seeded by the sweep seed and the point, so a resumed sweep simulates the same data."""
    key = int(hashlib.sha256(point_id(config, workload).encode()).hexdigest()[:8], 16)
    rng = np.random.default_rng([seed, key])
    kind = DataKind(data)
    return [
        (
            kind.matrix(rng, (g.m, g.k), config.a_width, config.a_signed),
            kind.matrix(rng, (g.k, g.n), config.b_width, config.b_signed),
        )
        for g in workload.gemms
    ]


def rtl_record(
    config: ArrayConfig,
    workload: Workload,
    operands: list[tuple[np.ndarray, np.ndarray]],
    results: list,
    coefficients: Coefficients,
    model: dict,
) -> dict:
    """A point from its simulated GEMMs (:class:`sim.simulate.SimResult` with toggles)."""
    per_gemm = [(r, figures_energy(r, r.toggles, coefficients, source="toggles")) for r in results]
    record = summarize(config, workload, per_gemm, coefficients.clock_mhz)
    exact = all(
        np.array_equal(r.c, reference(config, a, b)) and r.errors == 0
        for r, (a, b) in zip(results, operands, strict=True)
    )
    record["bit_exact"] = exact
    record["scaled_by_count"] = any(g.count > 1 for g in workload.gemms)
    record["model"] = {k: model[k] for k in ("cycles", "energy_pj", "pj_per_mac")}
    # the device model, cycle for cycle on the same descriptors and DRAM (the model record's
    # cycles are the array's alone until the sweep model accounts for memory)
    record["model"]["device_cycles"] = sum(
        predict_device(config, r.descriptor, r.memory)["cycles"] * g.count
        for r, g in zip(results, workload.gemms, strict=True)
    )
    record["model_diff"] = {
        "cycles": record["cycles"] - record["model"]["device_cycles"],
        "energy_percent": 100 * (model["energy_pj"] - record["energy_pj"]) / record["energy_pj"]
        if record["energy_pj"]
        else 0.0,
    }
    return record
