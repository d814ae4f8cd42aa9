"""The HTML report's interactive plots (Plotly, plotly.js embedded once in the page, so the file
opens without a network): hovering a point shows its whole configuration and figures, clicking a
legend entry hides or shows a series, a menu picks the workload, and series that coincide are
drawn once under one label (``WS 8x8 int8 = WS 16x16 int8``), not on top of each other."""

from __future__ import annotations

from collections import defaultdict

import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs
from systolic.workloads.pareto import group_key

__all__ = ["interactive_plots", "merge_series", "plotly_js"]

COLORS = {"ws": "#1f77b4", "os": "#ff7f0e", "is": "#2ca02c"}
SYMBOLS = ["circle", "square", "diamond", "triangle-up", "cross", "x"]
DASHES = {"int4": "dot", "int8": "solid", "int16": "dash", "bf16": "dashdot"}


def plotly_js() -> str:
    """plotly.js (about 4 MB of JavaScript), to embed once in a page of these plots."""
    return get_plotlyjs()


def merge_series(series: dict[str, tuple[list, list]]) -> list[tuple[list[str], list, list]]:
    """Series whose points are identical merged: ``(labels, xs, ys)`` in first-seen order."""
    merged: dict[tuple, list[str]] = {}
    data = {}
    for label, (xs, ys) in series.items():
        key = (tuple(xs), tuple(round(y, 12) if isinstance(y, float) else y for y in ys))
        merged.setdefault(key, []).append(label)
        data.setdefault(key, (xs, ys))
    return [(labels, *data[key]) for key, labels in merged.items()]


def _label(p: dict) -> str:
    return f"{p['dataflow'].upper()} {p['array']} {p['precision']}"


def _hover(p: dict) -> str:
    w = p["workload"]
    lines = [
        f"<b>{p['config_name']}</b>", f"{w['name']} ({w['family']})",
        f"energy {p['energy_per_inference_pj'] / 1e6:.4g} uJ/inference "
        f"({p['pj_per_mac']:.3g} pJ/MAC)",
        f"latency {p['latency_s'] * 1e3:.4g} ms, {p['throughput_inf_s']:.4g} inf/s",
        f"utilization {100 * p['utilization']:.1f}%, {p.get('bound', '-')}-bound",
        f"weights {p.get('weight_bytes_per_inference', 0) / 1e6:.3g} MB/inference from DRAM",
        f"memory {p.get('memory', {}).get('name', '-')}, {p['clock_mhz']:g} MHz, "
        f"{p['evaluated']}",
    ]  # fmt: skip
    if "area_mm2" in p:
        lines.append(f"area {p['area_mm2']:.3g} mm^2, Fmax {p['fmax_mhz']:.1f} MHz")
    return "<br>".join(lines)


def _style(p: dict, arrays: list[str]) -> dict:
    return {"color": COLORS.get(p["dataflow"], "#777"),
            "symbol": SYMBOLS[arrays.index(p["array"]) % len(SYMBOLS)],
            "dash": DASHES.get(p["precision"], "solid")}  # fmt: skip


def _menu(fig: go.Figure, groups: list[str], owner: list[int]) -> None:
    """A drop-down that shows one group's traces at a time."""
    if len(groups) < 2:
        return
    buttons = [dict(label=g, method="restyle", args=[{"visible": [o == i for o in owner]}])
               for i, g in enumerate(groups)]  # fmt: skip
    fig.update_layout(updatemenus=[dict(buttons=buttons, x=0, xanchor="left", y=1.16,
                                        yanchor="top", showactive=True)])  # fmt: skip


#: Log axes labelled at 1, 2 and 5 of each decade (not every minor tick).
_LOG = {"type": "log", "dtick": "D2"}


def _group_name(key) -> str:
    model, seq = key[0], key[1] if len(key) > 1 else None
    return f"{model}" + (f" s{seq}" if seq else "")


def _pareto(points: list[dict], front_ids: set) -> go.Figure | None:
    groups = defaultdict(lambda: defaultdict(list))
    for p in points:
        groups[_group_name(group_key(p))][_label(p)].append(p)
    if not groups:
        return None
    arrays = sorted({p["array"] for p in points}, key=lambda a: int(a.split("x")[0]))
    fig, owner, names = go.Figure(), [], sorted(groups)
    for i, g in enumerate(names):
        for label, pts in sorted(groups[g].items()):
            pts = sorted(pts, key=lambda p: p["energy_per_inference_pj"])
            s = _style(pts[0], arrays)
            fig.add_trace(go.Scatter(
                x=[p["energy_per_inference_pj"] / 1e6 for p in pts],
                y=[p["latency_s"] * 1e3 for p in pts], mode="markers", name=label,
                legendgroup=label, visible=i == 0, hovertext=[_hover(p) for p in pts],
                hovertemplate="%{hovertext}<extra></extra>",
                marker=dict(color=s["color"], symbol=s["symbol"], size=9,
                            opacity=[1.0 if p["id"] in front_ids else 0.35 for p in pts],
                            line=dict(width=[1.5 if p["id"] in front_ids else 0 for p in pts],
                                      color="black")),
            ))  # fmt: skip
            owner.append(i)
    fig.update_layout(xaxis_title="energy per inference (uJ)", yaxis_title="latency (ms)",
                      xaxis=_LOG, yaxis=_LOG,
                      title=names[0] if len(names) == 1 else None)  # fmt: skip
    _menu(fig, names, owner)
    return fig


def _against_batch(points: list[dict], figure: str, scale: float, ytitle: str) -> go.Figure | None:
    """A line per configuration over batch, per (model, sequence); identical lines merged."""
    groups = defaultdict(lambda: defaultdict(list))
    for p in points:
        if p.get(figure):
            groups[_group_name(group_key(p))][_label(p)].append(p)
    groups = {g: series for g, series in groups.items()
              if any(len({p["workload"]["batch"] for p in pts}) > 1
                     for pts in series.values())}  # fmt: skip
    if not groups:
        return None
    arrays = sorted({p["array"] for p in points}, key=lambda a: int(a.split("x")[0]))
    fig, owner, names = go.Figure(), [], sorted(groups)
    for i, g in enumerate(names):
        ordered = {label: sorted(pts, key=lambda p: p["workload"]["batch"])
                   for label, pts in sorted(groups[g].items())}  # fmt: skip
        series = {label: ([p["workload"]["batch"] for p in pts], [p[figure] * scale for p in pts])
                  for label, pts in ordered.items()}  # fmt: skip
        for labels, xs, ys in merge_series(series):
            pts = ordered[labels[0]]
            s = _style(pts[0], arrays)
            name = (
                " = ".join(labels)
                if len(labels) <= 3
                else (f"{labels[0]} and {len(labels) - 1} more (identical)")
            )
            hover = [_hover(p) + ("<br>identical: " + ", ".join(labels[1:]) if labels[1:] else "")
                     for p in pts]  # fmt: skip
            fig.add_trace(go.Scatter(
                x=xs, y=ys, mode="lines+markers", name=name, visible=i == 0, hovertext=hover,
                hovertemplate="%{hovertext}<extra></extra>",
                line=dict(color=s["color"], dash=s["dash"]),
                marker=dict(symbol=s["symbol"], size=8, color=s["color"]),
            ))  # fmt: skip
            owner.append(i)
    fig.update_layout(xaxis_title="batch", yaxis_title=ytitle, xaxis=_LOG, yaxis=_LOG,
                      title=names[0] if len(names) == 1 else None)  # fmt: skip
    _menu(fig, names, owner)
    return fig


#: The interactive plots: name -> (title, caption).
INTERACTIVE = {
    "pareto_interactive": (
        "Latency against energy",
        "Every configuration on the chosen workload (menu); Pareto-optimal points outlined, the "
        "rest faded. Hover for a point's configuration and figures; click the legend to hide "
        "or show a configuration."),
    "weights_interactive": (
        "Weight traffic against batch",
        "Weight bytes each inference reads from DRAM, by batch: how much reuse batching buys "
        "each configuration. Configurations with identical figures share one line."),
    "energy_interactive": (
        "Energy against batch",
        "Energy per inference by batch for each configuration (identical lines merged)."),
}  # fmt: skip


def interactive_plots(points: list[dict], front_ids: set) -> list[dict]:
    """Each interactive plot the points allow: ``{name, title, caption, html}`` (a ``div``
    that needs :func:`plotly_js` on the page)."""
    figures = {
        "pareto_interactive": _pareto(points, front_ids),
        "weights_interactive": _against_batch(points, "weight_bytes_per_inference", 1e-6,
                                              "weight MB per inference (DRAM)"),
        "energy_interactive": _against_batch(points, "energy_per_inference_pj", 1e-6,
                                             "energy per inference (uJ)"),
    }  # fmt: skip
    out = []
    for name, fig in figures.items():
        if fig is None:
            continue
        fig.update_layout(height=520, margin=dict(t=90, l=60, r=20, b=50),
                          legend=dict(font=dict(size=11)), template="plotly_white")  # fmt: skip
        title, caption = INTERACTIVE[name]
        div = pio.to_html(fig, full_html=False, include_plotlyjs=False, div_id=f"{name}-plot",
                          config={"displaylogo": False, "responsive": True})  # fmt: skip
        out.append({"name": name, "title": title, "caption": caption, "html": div})
    return out
