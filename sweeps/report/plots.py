"""The report's plots, drawn from its data (PNG files): weight traffic and reuse, energy by
traffic class, utilization against layer shape, and the Pareto fronts."""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

from systolic.models.energy import TRAFFIC_CLASSES
from systolic.workloads.pareto import group_key

from .content import distinct_layers, layer_pressure

__all__ = ["PLOTS", "write_plots"]

COLORS = {"ws": "tab:blue", "os": "tab:orange", "is": "tab:green"}
MARKERS = {"ws": "o", "os": "s", "is": "^"}  # lines that coincide stay visible
PRECISION_MARKERS = {"int8": "o", "int16": "s", "bf16": "^", "int4": "v"}


def _label(p: dict) -> str:
    return f"{p['dataflow'].upper()} {p['array']} {p['precision']}"


class _Series:
    """Scatter points collected per series (label, colour, marker) and drawn with one call
    each: thousands of layers plot in well under a second."""

    def __init__(self):
        self.points = defaultdict(lambda: ([], []))

    def add(self, label: str, color: str, marker: str, x: float, y: float) -> None:
        xs, ys = self.points[(label, color, marker)]
        xs.append(x)
        ys.append(y)

    def draw(self, ax, **style) -> bool:
        for (label, color, marker), (xs, ys) in sorted(self.points.items()):
            ax.scatter(xs, ys, color=color, marker=marker, label=label, **style)
        return bool(self.points)


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
    series = _Series()
    for p, g in distinct_layers(points):
        series.add(_label(p), COLORS[p["dataflow"]], "o" if p["pes"] <= 64 else "s",
                   min(g["shape"]), 100 * g["utilization"])  # fmt: skip
    if not series.draw(ax, s=18, alpha=0.6):
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


def _arrays(points: list[dict]) -> list[str]:
    return sorted({p["array"] for p in points}, key=lambda a: int(a.split("x")[0]))


def _roofline_plot(points: list[dict], path: Path) -> bool:
    """Per array size, each layer's operational intensity (MACs per DRAM byte) against the
    MACs per cycle it attains, under the compute ceiling (one MAC per PE a cycle) and the
    bandwidth ceiling (the DRAM's or the AXI4 port's bytes a cycle, the lower)."""
    layers = [(p, g) for p, g in distinct_layers(points) if g.get("dram_bytes") and g["cycles"]]
    if not layers:
        return False
    arrays = _arrays([p for p, _ in layers])[:4]
    plt = _plt()
    fig, axes = plt.subplots(1, len(arrays), figsize=(5.5 * len(arrays), 4.6), squeeze=False)
    for ax, array in zip(axes[0], arrays, strict=True):
        series = _Series()
        mine = [(p, g) for p, g in layers if p["array"] == array]
        xs = []
        for p, g in mine:
            x, y = g["macs"] / g["dram_bytes"], g["macs"] / g["cycles"]
            xs.append(x)
            series.add(_label(p), COLORS[p["dataflow"]],
                       PRECISION_MARKERS.get(p["precision"], "o"), x, y)  # fmt: skip
        series.draw(ax, s=16, alpha=0.6)
        pes = mine[0][0]["pes"]
        mem = mine[0][0]["memory"]
        rate = min(mem["bytes_per_cycle"], mem["port_bytes_per_cycle"])
        lo, hi = min(xs) / 2, max(xs) * 2
        knee = pes / rate
        ax.plot([lo, knee, max(hi, knee * 2)], [lo * rate, pes, pes], color="black", lw=1)
        ax.annotate(f"{pes} MACs/cycle", (max(hi, knee * 2), pes), ha="right", va="bottom",
                    fontsize=8)  # fmt: skip
        ax.annotate(f"{rate:.3g} B/cycle ({mem['name']})", (lo, lo * rate), fontsize=8,
                    rotation=30, va="bottom")  # fmt: skip
        ax.set(xscale="log", yscale="log", xlabel="operational intensity, MACs per DRAM byte",
               ylabel="attained MACs per cycle", title=f"Roofline, {array} arrays")  # fmt: skip
        _plain_minor_ticks(ax)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def _pressure_plot(points: list[dict], path: Path) -> bool:
    """Each layer's buffer pressure (A and B whole over a bank of the A and B buffers) against
    its refetch factor (A and B bytes read from DRAM over reading each once)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 4.8))
    series = _Series()
    for p, g in distinct_layers(points):
        pressure = layer_pressure(p, g)
        if pressure is not None:
            series.add(_label(p), COLORS[p["dataflow"]], "o" if p["pes"] <= 64 else "s",
                       *pressure)  # fmt: skip
    if not series.draw(ax, s=16, alpha=0.6):
        plt.close(fig)
        return False
    ax.axvline(1.0, color="black", lw=1, ls="--")
    ax.annotate("operands fit a bank", (1.0, 1.0), xytext=(4, 4),
                textcoords="offset points", fontsize=8)  # fmt: skip
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="A and B whole / a bank of the A and B buffers",
        ylabel="refetch factor (DRAM reads of A and B / reading each once)",
        title="Buffer pressure: what each layer needs on chip, and what it refetches",
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


#: Each plot: its name (the PNG's stem), what draws it, and its caption.
PLOTS = {
    "weights": (
        lambda data, path: _weights_plot(data.points, path),
        "Off-array weight words per inference and weight reuse against batch, per dataflow "
        "(colour) and array (line style).",
    ),
    "traffic": (
        lambda data, path: _traffic_plot(data.points, path),
        "Energy per MAC split by traffic class, per configuration.",
    ),
    "utilization": (
        lambda data, path: _utilization_plot(data.points, path),
        "PE utilization of each layer GEMM against its smallest dimension.",
    ),
    "roofline": (
        lambda data, path: _roofline_plot(data.points, path),
        "Each layer's operational intensity (MACs per byte it moves to or from DRAM) against the "
        "MACs per cycle it attains, per array size, under the compute ceiling and the bandwidth "
        "ceiling of the sweep's first memory (its bytes a cycle or the AXI4 port's, the "
        "lower): layers on the slope are memory-bound, layers under the flat roof are limited "
        "by the array (fill, drain, small dimensions).",
    ),
    "buffer_pressure": (
        lambda data, path: _pressure_plot(data.points, path),
        "Each layer's pressure on the buffers (A and B whole against one bank of the A and B "
        "buffers, the room a chunk has while the other bank loads the next) against its "
        "refetch factor (bytes of A and B read from DRAM over reading each once): beyond 1 on "
        "the x axis the chunks cannot hold the operands whole and one of them is read again "
        "per chunk of the other; chunks the driver splits for overlap (models/chunking.py) "
        "refetch a little even where the operands fit.",
    ),
    "pareto": (
        lambda data, path: _pareto_plot(data.points, data.front_ids, path),
        "Latency against energy per inference; marker size is throughput, the line joins the "
        "Pareto front, dominated points are faded.",
    ),
}


def write_plots(data, out: Path) -> dict[str, Path]:
    """Draw every plot the data has points for into ``out``; ``{name: path}`` of those drawn."""
    drawn = {}
    for name, (draw, _) in PLOTS.items():
        path = out / f"{name}.png"
        if draw(data, path):
            drawn[name] = path
    return drawn
