"""The report's content as data: every figure and sentence, computed from the results.

:func:`report_data` builds a :class:`ReportData` that the templates render (render.py) and the
plots draw (plots.py); tests check it directly, without parsing HTML or markdown.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np
from systolic.contract.config import ArrayConfig
from systolic.contract.dma import LOOP_ORDERS, place
from systolic.contract.memory import Memory
from systolic.models.chunking import choose_chunk
from systolic.models.pipeline import predict_pipeline
from systolic.workloads.pareto import group_key, objectives_of, pareto_front

from .answers import Answer, Matrix, answers, matrices

__all__ = [
    "SERVING_FOLDER",
    "ReportData",
    "Table",
    "distinct_layers",
    "layer_pressure",
    "points_of",
    "report_data",
]


@dataclass(frozen=True)
class Table:
    """A table of text cells."""

    head: list[str]
    rows: list[list[str]]


#: The folder, beside the results, that holds a serving study's report (serving.json and plots):
#: the sweep's report includes its frontier and plots.
SERVING_FOLDER = "serving"

#: The longest table of points the report shows; every point is in ``points.csv`` beside it.
TABLE_ROWS = 300


@dataclass
class ReportData:
    """What the report says: the title and introduction, the summary sentences, the tables, and
    the points the plots draw."""

    title: str
    intro: str
    summary: list[str]  # further findings, below the answers and matrices
    precision: Table | None
    front: Table
    points_table: Table  # every point; in the report itself when it has TABLE_ROWS rows at most
    failures: Table | None
    points: list[dict] = field(repr=False)
    front_ids: set = field(repr=False)
    memory_lines: list[str] = field(default_factory=list)
    memory: Table | None = None
    weight_bandwidth: Table | None = None
    buffer_pressure: Table | None = None
    loop_orders: Table | None = None
    operators: Table | None = None  # an ONNX workload's operators that are not array work
    inference: Table | None = None  # each workload's whole inference at its fastest point
    synthesis: Table | None = None
    efficiency: Table | None = None
    serving: Table | None = None  # a serving study's feasible frontier
    serving_intro: str = ""
    serving_plots: list[dict] = field(default_factory=list)  # name, file (relative), caption
    answers: list[Answer] = field(default_factory=list)  # the first screen
    matrices: list[Matrix] = field(default_factory=list)  # who wins where, per objective


def points_of(records: list[dict]) -> tuple[list[dict], list[dict]]:
    """``(points, failures)``: one figure set per point, the RTL's where it ran and passed (with
    the model's next to it), else the model's; and every failed evaluation."""
    latest: dict[tuple, dict] = {}
    for r in records:
        latest[(r["id"], r["kind"])] = r
    failures = [r for r in latest.values() if r["status"] == "failed"]
    points = []
    for (pid, kind), r in latest.items():
        if kind != "model" or r["status"] != "ok":
            continue
        rtl = latest.get((pid, "rtl"))
        chosen = rtl if rtl and rtl["status"] == "ok" else r
        points.append({**chosen, "evaluated": "rtl" if chosen is rtl else "model"})
    points.sort(
        key=lambda p: (
            p["workload"]["model"],
            p["workload"].get("seq") or 0,
            p["workload"]["batch"],
            p["config_name"],
        )
    )
    return points, failures


def _summary(points: list[dict]) -> list[str]:
    """Findings beside the answers: weight reuse and PE utilization per dataflow."""
    lines = []
    # weight reuse across batch: per dataflow, the range of weight reuse into the array
    reuse = defaultdict(list)
    for p in points:
        if p["weight_reuse_array"]:
            reuse[p["dataflow"]].append(p["weight_reuse_array"])
    for dataflow, values in sorted(reuse.items()):
        lines.append(
            f"{dataflow.upper()}: weight reuse into the array spans "
            f"{min(values):,.0f} to {max(values):,.0f} MACs per weight word."
        )
    util = defaultdict(list)
    for p in points:
        util[p["dataflow"]].append(p["utilization"])
    for dataflow, values in sorted(util.items()):
        lines.append(
            f"{dataflow.upper()}: PE utilization {100 * min(values):.1f}% to "
            f"{100 * max(values):.1f}% (median {100 * sorted(values)[len(values) // 2]:.1f}%)."
        )
    return lines


def _precision_table(points: list[dict]) -> tuple[list[str], list[list[str]], list[str]]:
    """Per workload and precision, the lowest energy per inference over configurations and its
    pJ/MAC; and, per precision, the geometric-mean ratio of that energy to the first
    precision's. Empty when the sweep has one precision."""
    precisions = sorted({p["precision"] for p in points}, key=lambda s: (s == "bf16", len(s), s))
    if len(precisions) < 2:
        return [], [], []
    best: dict[tuple[str, str], dict] = {}
    for p in points:
        key = (p["workload"]["name"], p["precision"])
        if key not in best or p["energy_per_inference_pj"] < best[key]["energy_per_inference_pj"]:
            best[key] = p
    head = ["workload"] + [f"{q}: uJ/inference (pJ/MAC)" for q in precisions]
    rows, ratios = [], defaultdict(list)
    for name in sorted({p["workload"]["name"] for p in points}):
        row = [name]
        for q in precisions:
            p = best.get((name, q))
            cell = "-"
            if p is not None:
                cell = f"{_fmt(p['energy_per_inference_pj'] / 1e6)} ({p['pj_per_mac']:.2f})"
            row.append(cell)
            base = best.get((name, precisions[0]))
            if p is not None and base is not None:
                ratios[q].append(p["energy_per_inference_pj"] / base["energy_per_inference_pj"])
        rows.append(row)
    lines = [
        f"{q}: energy per inference {math.exp(np.mean(np.log(ratios[q]))):.2f}x that of "
        f"{precisions[0]} (geometric mean over {len(ratios[q])} workloads, best configuration of "
        f"each)." for q in precisions[1:] if ratios[q]
    ]  # fmt: skip
    return head, rows, lines


def _fmt(value, digits=3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}g}" if abs(value) < 1e4 else f"{value:,.0f}"
    return f"{value:,}"


def _table(points: list[dict]) -> tuple[list[str], list[list[str]]]:
    head = [
        "configuration",
        "workload",
        "memory",
        "bound",
        "eval",
        "cycles",
        "util %",
        "latency ms",
        "inf/s",
        "MACs/cycle",
        "uJ/inference (range)",
        "pJ/MAC",
        "weight words/inf",
        "model vs RTL",
    ]
    rows = []
    for p in points:
        diff = "-"
        if p["evaluated"] == "rtl":
            d = p["model_diff"]
            diff = f"cycles {d['cycles']:+d}, energy {d['energy_percent']:+.2f}%"
        rows.append(
            [
                p["config_name"],
                p["workload"]["name"],
                _memory_name(p),
                p.get("bound", "-"),
                p["evaluated"],
                f"{p['cycles']:,}",
                f"{100 * p['utilization']:.1f}",
                _fmt(p["latency_s"] * 1e3),
                _fmt(p["throughput_inf_s"]),
                _fmt(p["macs_per_cycle"]),
                _energy_range(p),
                _fmt(p["pj_per_mac"]),
                _fmt(p["weight_words_array_per_inference"]),
                diff,
            ]
        )
    return head, rows


def _memory_name(p: dict) -> str:
    return p.get("memory", {}).get("name", "-")


def _memory_section(by_memory: dict[str, list[dict]]) -> tuple[list[str], Table | None]:
    """Per memory, how many points are memory-bound, by kind of workload; and per workload the
    lowest latency over the configurations at each memory, and what bounds it."""
    lines = []
    for name, pts in by_memory.items():
        mem = pts[0].get("memory", {})
        kinds = defaultdict(lambda: [0, 0])
        for p in pts:
            w = p["workload"]
            kind = w["family"]
            if kind == "transformer":
                kind = "decode" if "decode" in w["name"] else "encoder/prefill"
            kinds[kind][0] += p.get("bound") == "memory"
            kinds[kind][1] += 1
        parts = ", ".join(f"{k} {b} of {n}" for k, (b, n) in sorted(kinds.items()))
        bound = sum(p.get("bound") == "memory" for p in pts)
        dram = pts[0].get("priced_by", {}).get("dram")
        energy = (f" Its bits cost {dram['read_pj_per_bit']:g} pJ read, "
                  f"{dram['write_pj_per_bit']:g} pJ written ({dram['low_pj_per_bit']:g} to "
                  f"{dram['high_pj_per_bit']:g} over the sources): {dram['source']}."
                  if dram else "")  # fmt: skip
        lines.append(
            f"{name} ({mem.get('gb_per_s', 0):g} GB/s, {mem.get('latency_ns', 0):g} ns: "
            f"{mem.get('bytes_per_cycle', 0):.3g} bytes and {mem.get('latency_cycles', 0)} "
            f"cycles at the clock, behind a port of {mem.get('port_bytes_per_cycle', '-')} bytes "
            f"a cycle): {bound} of {len(pts)} points memory-bound ({parts}).{energy}"
        )
    names = list(by_memory)
    if len(names) < 2:
        return lines, None
    best = defaultdict(dict)
    frugal = defaultdict(dict)
    for name, pts in by_memory.items():
        for p in pts:
            key = p["workload"]["name"]
            if key not in best[name] or p["latency_s"] < best[name][key]["latency_s"]:
                best[name][key] = p
            energy = p["energy_per_inference_pj"]
            if key not in frugal[name] or energy < frugal[name][key]["energy_per_inference_pj"]:
                frugal[name][key] = p
    rows = []
    for workload in sorted({w for b in best.values() for w in b}):
        row = [workload]
        for name in names:
            p = best[name].get(workload)
            row.append("-" if p is None else
                       f"{_fmt(p['latency_s'] * 1e3)} ({p.get('bound', '-')}, "
                       f"{p['config_name']})")  # fmt: skip
        for name in names:
            p = frugal[name].get(workload)
            row.append("-" if p is None else f"{_energy_range(p)} ({p['config_name']})")
        rows.append(row)
    head = ["workload"] + [f"{n}: lowest latency ms (bound, configuration)" for n in names]
    head += [f"{n}: lowest uJ/inference, range (configuration)" for n in names]
    return lines, Table(head, rows)


def _energy_range(p: dict) -> str:
    """A point's energy per inference in uJ, with its range where the record has one."""
    batch = p["energy_pj"] / p["energy_per_inference_pj"] if p["energy_per_inference_pj"] else 1
    text = _fmt(p["energy_per_inference_pj"] / 1e6)
    if "energy_range_pj" in p:
        low, high = (x / batch / 1e6 for x in p["energy_range_pj"])
        text += f" ({_fmt(low)} to {_fmt(high)})"
    return text


#: Inference rates (per second) at which the weight-bandwidth table prices each workload.
TARGET_RATES = (10, 100, 1000)


def _weight_bandwidth(points: list[dict]) -> Table | None:
    """Per workload, the fewest weight bytes from DRAM an inference needs over the
    configurations (the reuse the best of them attains across its batch), and the DRAM
    bandwidth those bytes alone take at each target rate."""
    best: dict[str, dict] = {}
    for p in points:
        w = p.get("weight_bytes_per_inference")
        if not w:
            continue
        key = p["workload"]["name"]
        if key not in best or w < best[key]["weight_bytes_per_inference"]:
            best[key] = p
    if not best:
        return None
    rows = []
    for key in sorted(best, key=lambda k: (best[k]["workload"]["model"],
                                           best[k]["workload"].get("seq") or 0,
                                           best[k]["workload"]["batch"])):  # fmt: skip
        p = best[key]
        w = p["weight_bytes_per_inference"]
        rows.append([key, str(p["workload"]["batch"]), str(p["workload"].get("seq") or "-"),
                     _fmt(w / 1e6), p["config_name"]]
                    + [_fmt(w * rate / 1e9) for rate in TARGET_RATES])  # fmt: skip
    head = (["workload", "batch", "seq", "weight MB / inference", "lowest on"]
            + [f"GB/s at {r} inf/s" for r in TARGET_RATES])  # fmt: skip
    return Table(head, rows)


def distinct_layers(points: list[dict]):
    """``(point, gemm)`` once per configuration and layer shape (workloads share layers)."""
    seen = set()
    for p in points:
        for g in p["gemms"]:
            key = (p["config_name"], tuple(g["shape"]))
            if key not in seen:
                seen.add(key)
                yield p, g


def layer_pressure(p: dict, g: dict) -> tuple[float, float] | None:
    """A layer's buffer pressure on its configuration: the bytes A and B take whole over one
    bank of the A and B buffers (the room a chunk has: the other bank holds the next one), and
    the refetch factor (bytes of A and B read from DRAM over what reading each once takes)."""
    once, cap = g.get("once_bytes"), p.get("buffer_bytes")
    if not once or not cap:
        return None
    need = once["a"] + once["b"]
    read = g["read_bytes"]["a"] + g["read_bytes"]["b"]
    return 2 * need / (cap["a"] + cap["b"]), read / need


def _buffer_pressure(points: list[dict]) -> Table | None:
    """The layers that refetch most: per configuration and layer shape, what the whole
    operands take against the buffers, and how often A and B each cross from DRAM."""
    rows = []
    for p, g in distinct_layers(points):
        pressure = layer_pressure(p, g)
        if pressure is not None:
            once = g["once_bytes"]
            rows.append((pressure[1], [
                p["config_name"], "x".join(map(str, g["shape"])), g["name"],
                _fmt((once["a"] + once["b"]) / 1024),
                _fmt((p["buffer_bytes"]["a"] + p["buffer_bytes"]["b"]) / 2048),
                _fmt(pressure[0]), "x".join(map(str, g.get("chunk") or [])),
                _fmt(g["read_bytes"]["a"] / once["a"]), _fmt(g["read_bytes"]["b"] / once["b"]),
            ]))  # fmt: skip
    if not rows:
        return None
    rows.sort(key=lambda r: -r[0])
    head = ["configuration", "layer MxKxN", "GEMM", "A+B KB whole", "A+B KB a bank",
            "pressure", "chunk", "A refetch", "B refetch"]  # fmt: skip
    return Table(head, [r for _, r in rows[:15]])


def _loop_orders(points: list[dict]) -> Table | None:
    """Loop order's effect on reuse, from the pipeline model: for the largest array of each
    dataflow and two weight layers (the one with the fewest rows, as in decode or batch 1, and
    the largest), the cycles and DRAM megabytes of each loop order."""
    configs: dict[str, dict] = {}
    for p in points:
        best = configs.get(p["dataflow"])
        if best is None or (p["pes"], p["precision"] == "int8") > (
                best["pes"], best["precision"] == "int8"):  # fmt: skip
            configs[p["dataflow"]] = p
    layers = {tuple(g["shape"]) for p in points for g in p["gemms"] if g.get("weights")}
    if not configs or not layers:
        return None
    few_rows = min(layers, key=lambda s: (s[0], -s[1] * s[2]))
    largest = max(layers, key=lambda s: s[0] * s[1] * s[2])
    rows = []
    for _, p in sorted(configs.items()):
        config = ArrayConfig.from_dict(p["config"])
        mem = p["memory"]
        dram = Memory.from_dict(mem).at(p["clock_mhz"])
        for shape in dict.fromkeys([few_rows, largest]):
            results = {}
            try:
                choose_chunk(config, *shape, dram, chunking="fit")
            except ValueError:
                continue  # a layer of another configuration that this one cannot hold
            for order in LOOP_ORDERS:
                chunk = choose_chunk(config, *shape, dram, order=order)
                d = place(config, *shape, order=order, chunk=chunk)
                c = predict_pipeline(config, d, dram)
                moved = sum(c[f"dram_read_bytes_{x}"] for x in "abc") + c["dram_write_bytes"]
                results[order] = (c["cycles"], moved)
            fastest = min(results, key=lambda o: results[o])
            rows.append([p["config_name"], "x".join(map(str, shape))] + [
                f"{_fmt(cyc)} ({_fmt(moved / 1e6)} MB){' *' if o == fastest else ''}"
                for o, (cyc, moved) in results.items()])  # fmt: skip
    return Table(["configuration", "layer MxKxN"] + list(LOOP_ORDERS), rows)


def _operators(points: list[dict]) -> Table | None:
    """Per model read from a file, the operators that cost no array time (by type and count)."""
    rows = {}
    for p in points:
        w = p["workload"]
        if w.get("host_ops") or w.get("unsupported_ops"):
            rows[w["model"]] = [
                w["model"],
                ", ".join(f"{op} x{n}" for op, n in w.get("unsupported_ops", {}).items()) or "-",
                ", ".join(f"{op} x{n}" for op, n in w.get("host_ops", {}).items()) or "-",
            ]
    if not rows:
        return None
    head = ["model", "unsupported (MACs not counted)", "not array work (elementwise, shape)"]
    return Table(head, [rows[k] for k in sorted(rows)])


#: The parts of a whole inference's latency, as the report names them.
_PARTS = {"array": "array", "memory_stalls": "stalls", "host": "host", "driver": "driver"}


def _whole_inference(points: list[dict]) -> Table | None:
    """Per workload, its point with the shortest whole inference (models.inference): the
    latency end to end against the GEMMs alone, PE utilization both ways, the parts' shares,
    the energy, and which operators ran on the host."""
    best: dict[str, dict] = {}
    for p in points:
        inf, name = p.get("inference"), p["workload"]["name"]
        if inf and (name not in best or inf["latency_s"] < best[name]["inference"]["latency_s"]):
            best[name] = p
    if not best:
        return None
    rows = []
    for name, p in sorted(best.items()):
        inf = p["inference"]
        total = inf["latency_s"]
        shares = [f"{100 * inf['latency_split_s'][k] / total:.1f}%" for k in _PARTS]
        host = ", ".join(f"{op} x{n}" for op, n in inf["where"].get("host", {}).items()) or "-"
        rows.append([name, p["config_name"], _fmt(total * 1e3), _fmt(p["latency_s"] * 1e3),
                     f"{100 * inf['utilization']:.1f}%", f"{100 * p['utilization']:.1f}%",
                     *shares, _fmt(inf["energy_pj"] / 1e6), host])  # fmt: skip
    head = ["workload", "fastest configuration", "latency ms", "GEMMs alone ms",
            "PE utilization", "over GEMMs", *_PARTS.values(), "uJ", "on the host"]  # fmt: skip
    return Table(head, rows)


def _inference_line(points: list[dict]) -> str | None:
    """The summary's line: how far end to end falls from the GEMMs alone."""
    with_inference = [p for p in points if p.get("inference")]
    if not with_inference:
        return None
    host = [p["inference"]["latency_split_s"]["host"] / p["inference"]["latency_s"]
            for p in with_inference]  # fmt: skip
    drop = [p["utilization"] - p["inference"]["utilization"] for p in with_inference]
    host_name = with_inference[0]["inference"]["host"]["name"]
    return (f"End to end (operators between the GEMMs, the {host_name} host, the driver), the "
            f"host's operators take {100 * min(host):.0f} to {100 * max(host):.0f}% of an "
            f"inference's latency, and PE utilization falls {100 * min(drop):.0f} to "
            f"{100 * max(drop):.0f} points below the GEMMs alone.")  # fmt: skip


def _synthesis(records: list[dict]) -> Table | None:
    """Per synthesized configuration: cells, area (0.18 um, and the 45 nm estimate), Fmax,
    leakage and its three largest components."""
    synths = {r["config_name"]: r for r in records if r["kind"] == "synth" and r["status"] == "ok"}
    if not synths:
        return None
    rows = []
    for name, s in sorted(synths.items()):
        parts = sorted(s["components_mm2"].items(), key=lambda kv: -kv[1])[:3]
        share = ", ".join(f"{k} {100 * v / s['cell_area_mm2']:.0f}%" for k, v in parts)
        rows.append([name, f"{s['cells']:,}", f"{s['flops']:,}", _fmt(s["cell_area_mm2"]),
                     _fmt(s["sram_area_mm2"]), _fmt(s["area_mm2"]), _fmt(s["area_mm2_45nm"]),
                     f"{s['fmax_mhz']:.1f}", _fmt(s["leakage_mw"]), share])  # fmt: skip
    return Table(["configuration", "cells", "flip-flops", "std-cell mm^2", "SRAM mm^2",
                  "total mm^2", "45 nm mm^2 (est.)", "Fmax MHz", "leakage mW",
                  "largest (of std-cell area)"], rows)  # fmt: skip


def _efficiency(points: list[dict]) -> Table | None:
    """Per workload, the configuration with the most inferences per second per mm^2 and the one
    with the most inferences per joule (synthesized sweeps)."""
    points = [p for p in points if "area_mm2" in p]
    if not points:
        return None
    by_workload: dict[str, list[dict]] = {}
    for p in points:
        by_workload.setdefault(p["workload"]["name"], []).append(p)
    rows = []
    for workload, members in by_workload.items():
        dense = max(members, key=lambda p: p["throughput_per_mm2"])
        frugal = max(members, key=lambda p: p["inferences_per_j"] or 0)
        rows.append([workload, dense["config_name"], _fmt(dense["throughput_per_mm2"]),
                     f"{dense['clock_mhz']:.1f}", frugal["config_name"],
                     _fmt(frugal["inferences_per_j"])])  # fmt: skip
    return Table(["workload", "most inf/s per mm^2", "inf/s/mm^2", "at MHz", "most inf/J",
                  "inf/J"], rows)  # fmt: skip


def _serving_line(serving: dict | None) -> str | None:
    """Per stream and SLA, the highest sustainable rate on the frontier and where."""
    if not serving or not serving.get("frontier_rows"):
        return None
    head = serving["head"]
    at = {name: head.index(name) for name in ("stream", "SLA ms", "operating point",
                                               "max req/s at SLA", "uJ")}  # fmt: skip
    best = {}
    rate = at["max req/s at SLA"]
    for row in serving["frontier_rows"]:
        key = (row[at["stream"]], row[at["SLA ms"]])
        if key not in best or float(row[rate]) > float(best[key][rate]):
            best[key] = row
    parts = []
    for (stream, sla), row in best.items():
        # "5.627e+04 per inference (3.1e+04 to 7.2e+04)": uJ, and its range
        found = re.fullmatch(r"(\S+) (per \w+)(?: \((\S+) to (\S+)\))?", row[at["uJ"]])
        try:
            value, per, low, high = found.groups()
            energy = f"{float(value) / 1e3:.3g} mJ {per}"
            if low is not None:
                energy += f", {float(low) / 1e3:.3g} to {float(high) / 1e3:.3g} mJ"
        except (AttributeError, ValueError):
            energy = row[at["uJ"]]
        parts.append(f"{stream} at P99 <= {sla} ms: {row[rate]} req/s on "
                     f"{row[at['operating point']]} ({energy})")  # fmt: skip
    return "; ".join(parts) + "."


def report_data(records: list[dict], name: str, serving: dict | None = None) -> ReportData:
    """The report of a sweep named ``name`` whose results file holds ``records``. Its dataflow
    comparisons are at the first memory of the sweep (the one RTL points run at); the memory
    section and the table of every point cover all memories."""
    if not records:
        raise ValueError(f"{name}: no results to report")
    every, failures = points_of(records)
    by_memory: dict[str, list[dict]] = {}
    for r in records:  # in the order the sweep evaluated them: its first memory first
        by_memory.setdefault(_memory_name(r), [])
    for p in every:
        by_memory[_memory_name(p)].append(p)
    by_memory = {k: v for k, v in by_memory.items() if v}
    points = next(iter(by_memory.values()), [])
    memory_lines, memory_table = _memory_section(by_memory)
    objectives = objectives_of(points)
    front = pareto_front(points, objectives)
    rtl = [p for p in points if p["evaluated"] == "rtl"]
    summary = _summary(points)
    precision_head, precision_rows, precision_lines = _precision_table(points)
    rtl_line = None
    if rtl:
        worst = max(rtl, key=lambda p: abs(p["model_diff"]["energy_percent"]))
        cycles_equal = sum(p["model_diff"]["cycles"] == 0 for p in rtl)
        exact = sum(bool(p.get("bit_exact")) for p in rtl)
        rtl_line = (
            f"Device model against RTL on {len(rtl)} simulated point(s): cycles equal on "
            f"{cycles_equal}; energy within "
            f"{abs(worst['model_diff']['energy_percent']):.2f}%; C bit-exact on {exact}."
        )
    grids = matrices(points)
    synthesis = _synthesis(records)
    synthesis_line = None
    if synthesis:
        fmax = [float(row[7]) for row in synthesis.rows]
        areas = [float(row[5]) for row in synthesis.rows]
        synthesis_line = (f"{len(synthesis.rows)} configuration(s) synthesized (0.18 um): "
                          f"{min(areas):.3g} to {max(areas):.3g} mm^2, Fmax {min(fmax):.1f} to "
                          f"{max(fmax):.1f} MHz.")  # fmt: skip
    found = answers(
        points,
        grids,
        precision_lines=precision_lines,
        rtl_line=rtl_line,
        serving_line=_serving_line(serving),
        synthesis_line=synthesis_line,
        inference_line=_inference_line(points),
    )
    front_rows = [
        [
            f"{p['workload']['model']} s{p['workload'].get('seq') or '-'}",
            p["config_name"],
            p["workload"]["name"],
            _fmt(p["throughput_inf_s"]),
            _fmt(p["latency_s"] * 1e3),
            _fmt(p["energy_per_inference_pj"] / 1e6),
            *([_fmt(p["area_mm2"])] if "area_mm2" in objectives else []),
        ]
        for p in sorted(front, key=lambda p: (str(group_key(p)), p["latency_s"]))
    ]
    fail_rows = [
        [r["config_name"], r["workload"]["name"], r["kind"], r.get("error", ""),
         str(r.get("log") or "")]
        for r in failures
    ]  # fmt: skip
    clocks = sorted({p["clock_mhz"] for p in points})
    if "area_mm2" in objectives:
        span = (f"{clocks[0]:.1f} MHz" if len(clocks) == 1 else
                f"{clocks[0]:.1f} to {clocks[-1]:.1f} MHz")  # fmt: skip
        at = (f"each configuration's own clock, its synthesized Fmax at 0.18 um ({span}; area "
              f"in the objectives)")  # fmt: skip
    else:
        at = f"{clocks[0]:g} MHz" if clocks else "-"
    kinds = Counter(p["evaluated"] for p in every)
    intro = (
        f"{len(every)} points ({kinds.get('rtl', 0)} simulated in RTL with toggle-based "
        f"energy, {kinds.get('model', 0)} from the analytical model), {len(failures)} "
        f"failed evaluation(s). Latency and throughput at {at}; an inference is "
        f"one pass of the workload over its batch; objectives of the Pareto front: "
        f"{', '.join(objectives)}. Memories: {', '.join(by_memory)}; the dataflow comparisons "
        f"and the Pareto front are at {next(iter(by_memory), '-')}."
    )
    return ReportData(
        title=f"Sweep report: {name}",
        intro=intro,
        summary=summary,
        precision=Table(precision_head, precision_rows) if precision_rows else None,
        front=Table(
            [
                "group",
                "configuration",
                "workload",
                "inf/s",
                "latency ms",
                "uJ/inference",
                *(["mm^2"] if "area_mm2" in objectives else []),
            ],
            front_rows,
        ),
        points_table=Table(*_table(every)),
        failures=Table(["configuration", "workload", "evaluation", "error", "log"], fail_rows)
        if fail_rows
        else None,
        points=points,
        front_ids={p["id"] for p in front},
        memory_lines=memory_lines,
        memory=memory_table,
        weight_bandwidth=_weight_bandwidth(points),
        buffer_pressure=_buffer_pressure(points),
        loop_orders=_loop_orders(points),
        operators=_operators(every),
        inference=_whole_inference(points),
        synthesis=synthesis,
        efficiency=_efficiency(points),
        serving=Table(serving["head"], serving["frontier_rows"]) if serving else None,
        serving_intro=serving["intro"] if serving else "",
        answers=found,
        matrices=grids,
        serving_plots=[p | {"file": f"{SERVING_FOLDER}/{p['file']}"} for p in serving["plots"]]
        if serving
        else [],
    )
