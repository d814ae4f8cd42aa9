"""The sweep report: a markdown file and a self-contained HTML page with PNG plots.

Every sentence of the summary is computed from the results; nothing is written by hand.
"""

from __future__ import annotations

import base64
import html
import math
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from golden.energy import TRAFFIC_CLASSES

from .pareto import OBJECTIVES, group_key, pareto_front
from .run import load_results

__all__ = ["points_of", "write_report"]

COLORS = {"ws": "tab:blue", "os": "tab:orange", "is": "tab:green"}
MARKERS = {"ws": "o", "os": "s", "is": "^"}  # lines that coincide stay visible
PRECISION_MARKERS = {"int8": "o", "int16": "s", "bf16": "^", "int4": "v"}


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


def _label(p: dict) -> str:
    return f"{p['dataflow'].upper()} {p['array']} {p['precision']}"


# -- plots -------------------------------------------------------------------------------------


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _weights_plot(points: list[dict], path: Path) -> bool:
    """Per (model, sequence) with a batch profile: weight words into the array and from off-chip
    per inference, and weight reuse, against batch; a line per dataflow (colour) and array
    (style)."""
    groups = defaultdict(lambda: defaultdict(list))
    for p in points:
        if p["weight_words_array_per_inference"]:
            groups[group_key(p)][(p["dataflow"], p["array"], p["precision"])].append(p)
    profiles = {
        k: v for k, v in groups.items()
        if len({p["workload"]["batch"] for s in v.values() for p in s}) >= 3
    }  # fmt: skip
    if not profiles:
        return False
    keys = sorted(profiles, key=lambda k: (-len(next(iter(profiles[k].values()))), str(k)))[:3]
    plt = _plt()
    fig, axes = plt.subplots(len(keys), 3, figsize=(15, 4 * len(keys)), squeeze=False)
    arrays = sorted(
        {a for k in keys for (_, a, _) in profiles[k]}, key=lambda a: int(a.split("x")[0])
    )
    styles = ["-", "--", ":", "-."]
    figures = [
        ("weight_words_array_per_inference", "weight words into the array / inference"),
        ("weight_words_offchip_per_inference", "weight words from off-chip / inference"),
        ("weight_reuse_array", "MACs per weight word into the array"),
    ]
    for row, key in zip(axes, keys, strict=True):
        model, seq = key
        for (dataflow, array, precision), pts in sorted(profiles[key].items()):
            pts = sorted(pts, key=lambda p: p["workload"]["batch"])
            for ax, (figure, _) in zip(row, figures, strict=True):
                ax.plot(
                    [p["workload"]["batch"] for p in pts],
                    [p[figure] for p in pts],
                    color=COLORS[dataflow],
                    linestyle=styles[arrays.index(array) % len(styles)],
                    marker=MARKERS[dataflow],
                    markersize=4,
                    fillstyle="none",
                    label=f"{dataflow.upper()} {array} {precision}",
                )
        for ax, (_, label) in zip(row, figures, strict=True):
            ax.set(xscale="log", yscale="log", xlabel="batch", ylabel=label,
                   title=f"{model}{f', seq {seq}' if seq else ''}")  # fmt: skip
            ax.grid(True, which="both", alpha=0.3)
        row[2].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def _traffic_plot(points: list[dict], path: Path) -> bool:
    """Energy per MAC by traffic class, per dataflow and array: a stacked bar."""
    groups = defaultdict(lambda: defaultdict(float))
    macs = defaultdict(int)
    for p in points:
        key = (p["dataflow"], p["array"], p["precision"])
        macs[key] += p["macs"]
        for klass, levels in p["traffic_pj"].items():
            groups[key][klass] += sum(levels.values())
    if not groups:
        return False
    plt = _plt()
    keys = sorted(groups, key=lambda k: (k[0], int(k[1].split("x")[0]), k[2]))
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(keys) + 2), 4.8))
    bottom = [0.0] * len(keys)
    cmap = plt.get_cmap("tab10")
    for i, klass in enumerate(TRAFFIC_CLASSES):
        values = [groups[k][klass] / macs[k] for k in keys]
        ax.bar(range(len(keys)), values, bottom=bottom, label=klass, color=cmap(i))
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_xticks(range(len(keys)), [f"{d.upper()}\n{a} {p}" for d, a, p in keys])
    ax.set(
        ylabel="pJ per MAC (all points of the configuration)",
        title="Energy by traffic class (registers, on-chip buffers and off-chip together)",
    )
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _utilization_plot(points: list[dict], path: Path) -> bool:
    """PE utilization of every distinct GEMM against its smallest dimension."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 4.8))
    seen, labelled = set(), set()
    any_point = False
    for p in points:
        for g in p["gemms"]:
            key = (p["config_name"], tuple(g["shape"]))
            if key in seen:
                continue
            seen.add(key)
            any_point = True
            label = _label(p) if _label(p) not in labelled else None
            labelled.add(_label(p))
            ax.scatter(
                min(g["shape"]),
                100 * g["utilization"],
                s=18,
                alpha=0.6,
                color=COLORS[p["dataflow"]],
                marker="o" if p["pes"] <= 64 else "s",
                label=label,
            )
    if not any_point:
        plt.close(fig)
        return False
    ax.set(
        xscale="log",
        xlabel="smallest GEMM dimension (min of M, K, N)",
        ylabel="PE utilization, %",
        ylim=(0, 105),
        title="Shape sensitivity: utilization of each layer GEMM",
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _plain_minor_ticks(ax) -> None:
    """No labels on log-scale minor ticks (they collide on narrow ranges)."""
    from matplotlib.ticker import NullFormatter

    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())


def _scale(values) -> str:
    """Logarithmic when the values span a decade or more."""
    values = [v for v in values if v > 0]
    return "log" if values and max(values) >= 10 * min(values) else "linear"


def _pareto_plot(points: list[dict], front_ids: set, path: Path) -> bool:
    """Latency against energy per inference per (model, sequence); dominated points faded."""
    groups = defaultdict(list)
    for p in points:
        groups[group_key(p)].append(p)
    groups = {k: v for k, v in groups.items() if len(v) > 1}
    if not groups:
        return False
    plt = _plt()
    keys = sorted(groups, key=str)[:9]
    cols = min(3, len(keys))
    rows = math.ceil(len(keys) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 4.3 * rows), squeeze=False)
    for ax, key in zip(axes.flat, keys, strict=False):
        pts = groups[key]
        tmax = max(p["throughput_inf_s"] for p in pts)
        for p in pts:
            on = p["id"] in front_ids
            ax.scatter(
                p["latency_s"] * 1e3,
                p["energy_per_inference_pj"] / 1e6,
                s=20 + 180 * p["throughput_inf_s"] / tmax,
                color=COLORS[p["dataflow"]],
                marker=PRECISION_MARKERS.get(p["precision"], "D"),
                alpha=0.95 if on else 0.18,
                edgecolors="black" if on else "none",
            )
        front = sorted((p for p in pts if p["id"] in front_ids), key=lambda p: p["latency_s"])
        ax.plot(
            [p["latency_s"] * 1e3 for p in front],
            [p["energy_per_inference_pj"] / 1e6 for p in front],
            color="black",
            lw=0.8,
        )
        model, seq = key
        ax.set(
            xscale=_scale(p["latency_s"] for p in pts),
            yscale=_scale(p["energy_per_inference_pj"] for p in pts),
            xlabel="latency, ms",
            ylabel="energy per inference, uJ",
            title=f"{model}{f' seq {seq}' if seq else ''}",
        )
        ax.grid(True, which="both", alpha=0.3)
        _plain_minor_ticks(ax)
    for ax in list(axes.flat)[len(keys) :]:
        ax.axis("off")
    handles = [
        plt.Line2D([], [], marker="o", ls="", color=c, label=d.upper()) for d, c in COLORS.items()
    ]
    precisions = sorted({p["precision"] for p in points})
    if len(precisions) > 1:
        handles += [plt.Line2D([], [], marker=PRECISION_MARKERS.get(q, "D"), ls="", color="gray",
                               label=q) for q in precisions]  # fmt: skip
    fig.legend(
        handles=handles,
        loc="upper right",
        fontsize=8,
        title="marker size: throughput\nfaded: dominated",
    )
    fig.tight_layout(rect=(0, 0, 0.9, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# -- text --------------------------------------------------------------------------------------


def _winners_by_array(points: list[dict], figure: str, what: str) -> list[str]:
    """Per model and array size, the dataflow with the lowest ``figure`` at each batch and
    sequence, runs of the same winner merged: where the answer changes, and at which batch."""
    groups = defaultdict(lambda: defaultdict(list))
    for p in points:
        w = p["workload"]
        groups[(w["model"], p["array"], p["precision"])][(w.get("seq") or 0, w["batch"])].append(p)
    lines = []
    for (model, array, precision), instances in sorted(groups.items()):
        if len(instances) < 2:
            continue
        runs: list[tuple[str, list[str]]] = []
        for (seq, batch), pts in sorted(instances.items()):
            winner = min(pts, key=lambda p: p[figure])["dataflow"].upper()
            label = f"b{batch}" + (f" s{seq}" if seq else "")
            if runs and runs[-1][0] == winner:
                runs[-1][1].append(label)
            else:
                runs.append((winner, [label]))
        text = "; ".join(f"{w} at {', '.join(labels)}" for w, labels in runs)
        lines.append(f"Lowest {what}, {model} on {array} {precision}: {text}.")
    return lines


def _summary(points: list[dict]) -> list[str]:
    """Which dataflow wins where, from the data."""
    lines = []
    by_workload = defaultdict(list)
    for p in points:
        w = p["workload"]
        by_workload[(w["family"], w["name"])].append(p)
    for figure, what in (
        ("energy_per_inference_pj", "energy per inference"),
        ("latency_s", "latency"),
    ):
        wins = defaultdict(Counter)
        for (family, _), pts in by_workload.items():
            best = min(pts, key=lambda p: p[figure])
            wins[family][best["dataflow"]] += 1
        for family, counter in sorted(wins.items()):
            total = sum(counter.values())
            parts = ", ".join(f"{d.upper()} on {n} of {total}" for d, n in counter.most_common())
            lines.append(f"Lowest {what}, {family} workloads: {parts}.")
        lines += _winners_by_array(points, figure, what)
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
        "eval",
        "cycles",
        "util %",
        "latency ms",
        "inf/s",
        "MACs/cycle",
        "uJ/inference",
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
                p["evaluated"],
                f"{p['cycles']:,}",
                f"{100 * p['utilization']:.1f}",
                _fmt(p["latency_s"] * 1e3),
                _fmt(p["throughput_inf_s"]),
                _fmt(p["macs_per_cycle"]),
                _fmt(p["energy_per_inference_pj"] / 1e6),
                _fmt(p["pj_per_mac"]),
                _fmt(p["weight_words_array_per_inference"]),
                diff,
            ]
        )
    return head, rows


def _md_table(head, rows) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def write_report(results: Path, out: Path | None = None) -> dict[str, Path]:
    """Write ``report.md``, ``report.html`` and the PNG plots next to ``results``."""
    out = out or results.parent
    out.mkdir(parents=True, exist_ok=True)
    records = load_results(results)
    if not records:
        raise ValueError(f"{results}: no results to report")
    points, failures = points_of(records)
    front = pareto_front(points)
    front_ids = {p["id"] for p in front}
    plots = {}
    for name, make in (
        ("weights", lambda p: _weights_plot(points, p)),
        ("traffic", lambda p: _traffic_plot(points, p)),
        ("utilization", lambda p: _utilization_plot(points, p)),
        ("pareto", lambda p: _pareto_plot(points, front_ids, p)),
    ):
        path = out / f"{name}.png"
        if make(path):
            plots[name] = path
    kinds = Counter(p["evaluated"] for p in points)
    rtl = [p for p in points if p["evaluated"] == "rtl"]
    summary = _summary(points)
    precision_head, precision_rows, precision_lines = _precision_table(points)
    summary += precision_lines
    if rtl:
        worst = max(rtl, key=lambda p: abs(p["model_diff"]["energy_percent"]))
        cycles_equal = sum(p["model_diff"]["cycles"] == 0 for p in rtl)
        summary.append(
            f"Model against RTL on {len(rtl)} simulated point(s): cycles equal on "
            f"{cycles_equal}; energy within "
            f"{abs(worst['model_diff']['energy_percent']):.2f}%; C bit-exact on all."
        )
    head, rows = _table(points)
    front_head = ["group", "configuration", "workload", "inf/s", "latency ms", "uJ/inference"]
    front_rows = [
        [
            f"{p['workload']['model']} s{p['workload'].get('seq') or '-'}",
            p["config_name"],
            p["workload"]["name"],
            _fmt(p["throughput_inf_s"]),
            _fmt(p["latency_s"] * 1e3),
            _fmt(p["energy_per_inference_pj"] / 1e6),
        ]
        for p in sorted(front, key=lambda p: (str(group_key(p)), p["latency_s"]))
    ]
    fail_rows = [
        [
            r["config_name"],
            r["workload"]["name"],
            r["kind"],
            r.get("error", ""),
            str(r.get("log") or ""),
        ]
        for r in failures
    ]
    clock = points[0]["clock_mhz"] if points else 0
    title = f"Sweep report: {results.parent.name}"
    intro = (
        f"{len(points)} points ({kinds.get('rtl', 0)} simulated in RTL with toggle-based "
        f"energy, {kinds.get('model', 0)} from the analytical model), {len(failures)} "
        f"failed evaluation(s). Latency and throughput at {clock:g} MHz; an inference is "
        f"one pass of the workload over its batch; objectives of the Pareto front: "
        f"{', '.join(OBJECTIVES)}."
    )
    captions = {
        "weights": "Off-array weight words per inference and weight reuse against batch, per "
        "dataflow (colour) and array (line style).",
        "traffic": "Energy per MAC split by traffic class, per configuration.",
        "utilization": "PE utilization of each layer GEMM against its smallest dimension.",
        "pareto": "Latency against energy per inference; marker size is throughput, the line "
        "joins the Pareto front, dominated points are faded.",
    }
    md = [f"# {title}", "", intro, "", "## Which dataflow wins where", ""]
    md += [f"- {line}" for line in summary]
    for name, path in plots.items():
        md += ["", f"## {name.capitalize()}", "", captions[name], "", f"![{name}]({path.name})"]
    if precision_rows:
        md += ["", "## Precision", "", "Lowest energy per inference of each workload at each "
               "precision (its pJ/MAC in brackets).", ""]  # fmt: skip
        md += _md_table(precision_head, precision_rows)
    md += ["", "## Pareto front", ""] + _md_table(front_head, front_rows)
    md += ["", "## Every point", ""] + _md_table(head, rows)
    if fail_rows:
        md += ["", "## Failures", ""] + _md_table(
            ["configuration", "workload", "evaluation", "error", "log"], fail_rows
        )
    md_path = out / "report.md"
    md_path.write_text("\n".join(md) + "\n")

    def table(head, rows) -> str:
        cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows
        )
        return f"<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"

    parts = [
        f"<h1>{html.escape(title)}</h1><p>{html.escape(intro)}</p>",
        "<h2>Which dataflow wins where</h2><ul>"
        + "".join(f"<li>{html.escape(s)}</li>" for s in summary)
        + "</ul>",
    ]
    for name, path in plots.items():
        data = base64.b64encode(path.read_bytes()).decode()
        parts.append(
            f"<h2>{name.capitalize()}</h2><p>{html.escape(captions[name])}</p>"
            f'<img alt="{name}" src="data:image/png;base64,{data}">'
        )
    if precision_rows:
        parts.append("<h2>Precision</h2>" + table(precision_head, precision_rows))
    parts.append("<h2>Pareto front</h2>" + table(front_head, front_rows))
    parts.append("<h2>Every point</h2>" + table(head, rows))
    if fail_rows:
        parts.append(
            "<h2>Failures</h2>"
            + table(["configuration", "workload", "evaluation", "error", "log"], fail_rows)
        )
    style = (
        "body{font-family:sans-serif;max-width:1400px;margin:auto;padding:1em}"
        "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;"
        "padding:2px 6px;text-align:right}img{max-width:100%}"
    )
    html_path = out / "report.html"
    html_path.write_text(
        f"<!doctype html><html><head><meta charset='utf-8'><title>"
        f"{html.escape(title)}</title><style>{style}</style></head><body>"
        + "".join(parts)
        + "</body></html>\n"
    )
    return {"markdown": md_path, "html": html_path, **plots}
