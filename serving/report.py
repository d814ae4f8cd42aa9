"""The serving study's report: every operating point, the Pareto frontier of feasible ones per
stream (highest sustainable rate at the tightest SLA, lowest P99, lowest energy per inference or
token), and three plots: latency distributions per policy, P99 against offered load with the
SLAs, and energy per inference against sustainable rate with the constraints (feasible points
solid, infeasible ones faded with the constraint they break). Written as ``serving.json``,
``report.md`` and a self-contained ``report.html``."""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path

from systolic.sweeps.pareto import pareto_front

__all__ = ["frontier", "write_serving_report"]

#: The frontier's objectives: +1 more is better, -1 less is better.
OBJECTIVES = {"capacity_rps": +1, "p99_s": -1, "energy_unit_pj": -1}


def _derived(r: dict) -> dict:
    """A record with the frontier's figures: the sustainable rate at the tightest SLA (0 when
    none meets it) and the total energy per inference or token."""
    tight = min(r["capacity"], key=lambda c: c["sla_p99_ms"])
    return r | {"capacity_rps": tight["max_rate_rps"] or 0.0,
                "energy_unit_pj": r["energy_per_unit_pj"]["total_pj"],
                "workload": {"model": r["stream"]}}  # fmt: skip


def frontier(records: list[dict]) -> list[dict]:
    """The feasible records no other feasible record of their stream dominates."""
    feasible = [_derived(r) for r in records if r["feasible"]]
    return pareto_front(feasible, OBJECTIVES)


def _label(r: dict) -> str:
    return f"{r['config_name'].split('-d')[0]} {r['clock_mhz']:g} MHz {r['policy']}"


def _rows(records: list[dict], front_ids: set) -> list[list[str]]:
    rows = []
    for r in records:
        m, e = r["metrics"], r["energy_per_unit_pj"]
        p50 = m.get("p50_s", m.get("ttft_p50_s"))
        rates = ", ".join(
            f"{c['sla_p99_ms']:g} ms: " + (f"{c['max_rate_rps']:.3g}/s" if c["max_rate_rps"]
                                            else "none")
            for c in r["capacity"])  # fmt: skip
        mark = "yes" + (" (frontier)" if _key(r) in front_ids else "") if r["feasible"] else \
            "no: " + "; ".join(r["broken"])  # fmt: skip
        rows.append([r["stream"], _label(r), f"{r['offered_rps']:.3g}", f"{p50 * 1e3:.3g}",
                     f"{r['p99_s'] * 1e3:.3g}", rates,
                     f"{e['total_pj'] / 1e6:.4g} ({e['busy_pj'] / 1e6:.3g} / "
                     f"{e['idle_pj'] / 1e6:.3g} / {e['leakage_pj'] / 1e6:.3g})",
                     f"{r['power_w']:.3g}", str(r["clamps"]), mark])  # fmt: skip
    return rows


HEAD = ["stream", "operating point", "offered req/s", "P50 ms", "P99 ms",
        "max rate at SLA", "uJ per unit (busy / idle / leakage)", "W", "clamps",
        "feasible"]  # fmt: skip


def _key(r: dict) -> tuple:
    return (r["stream"], r["config_name"], r["clock_mhz"], r["policy"])


def _plots(records: list[dict], out: Path, budget_w: float | None) -> dict[str, Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    streams = list(dict.fromkeys(r["stream"] for r in records))
    paths = {}
    # latency CDFs and P99 against load, per stream, at its first configuration's fastest clock
    for name, draw in (("latency_cdf", _cdf), ("p99_vs_load", _load)):
        fig, axes = plt.subplots(1, len(streams), figsize=(5.5 * len(streams), 4), squeeze=False)
        for ax, s in zip(axes[0], streams, strict=True):
            mine = [r for r in records if r["stream"] == s]
            first = (mine[0]["config_name"], max(r["clock_mhz"] for r in mine))
            draw(ax, [r for r in mine if (r["config_name"], r["clock_mhz"]) == first])
            ax.set_title(f"{s}: {first[0].split('-d')[0]}, {first[1]:g} MHz", fontsize=9)
        fig.tight_layout()
        paths[name] = out / f"{name}.png"
        fig.savefig(paths[name], dpi=110)
        plt.close(fig)
    fig, axes = plt.subplots(1, len(streams), figsize=(5.5 * len(streams), 4), squeeze=False)
    for ax, s in zip(axes[0], streams, strict=True):
        for r in (_derived(r) for r in records if r["stream"] == s):
            style = {"alpha": 1.0} if r["feasible"] else {"alpha": 0.25}
            ax.scatter(r["capacity_rps"], r["energy_unit_pj"] / 1e6, **style,
                       marker="o" if r["feasible"] else "x")  # fmt: skip
            note = _label(r) if r["feasible"] else f"{_label(r)}: {r['broken'][0]}"
            ax.annotate(note, (r["capacity_rps"], r["energy_unit_pj"] / 1e6), fontsize=5,
                        alpha=style["alpha"])  # fmt: skip
        unit = "token" if any(r["generation"] for r in records if r["stream"] == s) else "inf."
        ax.set_xlabel("max sustainable rate at the tightest SLA (req/s)")
        ax.set_ylabel(f"energy per {unit} (uJ)")
        ax.set_title(s + (f" (budget {budget_w:g} W)" if budget_w else ""), fontsize=9)
    fig.tight_layout()
    paths["energy_vs_throughput"] = out / "energy_vs_throughput.png"
    fig.savefig(paths["energy_vs_throughput"], dpi=110)
    plt.close(fig)
    return paths


def _cdf(ax, records: list[dict]) -> None:
    for r in records:
        q = r["latency_quantiles_s"]
        ax.plot([x * 1e3 for x in q], range(len(q)), label=r["policy"])
    ax.set_xscale("log")
    ax.set_xlabel("latency (ms; generation: time to first token)")
    ax.set_ylabel("percentile")
    ax.legend(fontsize=7)


def _load(ax, records: list[dict]) -> None:
    for r in records:
        c = r["load_curve"]
        ax.plot([p["offered_rps"] for p in c], [p["p99_s"] * 1e3 for p in c], marker=".",
                label=r["policy"])  # fmt: skip
    for sla in sorted({c["sla_p99_ms"] for r in records for c in r["capacity"]}):
        ax.axhline(sla, color="grey", linestyle="--", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xlabel("offered load (req/s)")
    ax.set_ylabel("P99 (ms), SLAs dashed")
    ax.legend(fontsize=7)


CAPTIONS = {
    "latency_cdf": "Latency distribution at the stream's offered rate, per batching policy.",
    "p99_vs_load": "P99 latency against offered load (the same requests replayed faster), per "
                   "policy; the knee is where queueing takes over. SLAs dashed.",
    "energy_vs_throughput": "Energy per inference (generation: per output token; busy, idle "
                            "and leakage) against the highest rate meeting the tightest SLA; "
                            "infeasible points faded, with the constraint they break.",
}  # fmt: skip


def write_serving_report(name: str, records: list[dict], out: Path,
                         budget_w: float | None = None, notes: list[str] | None = None,
                         ) -> dict[str, Path]:  # fmt: skip
    """Write the report of the study ``name`` into ``out``; return the files."""
    out.mkdir(parents=True, exist_ok=True)
    front = frontier(records)
    front_ids = {_key(r) for r in front}
    rows = _rows(records, front_ids)
    front_rows = _rows([r for r in records if _key(r) in front_ids], front_ids)
    plots = _plots(records, out, budget_w)
    intro = (f"{len(records)} operating points (configuration x clock x stream x batching "
             f"policy). Service times and energy from the device model behind the study's "
             f"memory; clock voltages from serving.power.VF_POINTS (assumptions). Feasible: the "
             f"P99 at the offered rate meets the tightest SLA"
             + (f" and the average power stays within {budget_w:g} W" if budget_w else "")
             + ". Energy per unit: per inference, or per output token for generation "
             "streams.")  # fmt: skip
    paths = {"json": out / "serving.json", "markdown": out / "report.md",
             "html": out / "report.html"}  # fmt: skip
    paths["json"].write_text(json.dumps({"name": name, "records": records}, indent=1))
    md = [f"# Serving report: {name}", "", intro, ""] + [f"- {n}" for n in notes or []]
    md += ["", "## Pareto frontier (feasible points)", "", *_md_table(HEAD, front_rows), "",
           "## Every operating point", "", *_md_table(HEAD, rows)]  # fmt: skip
    for key, path in plots.items():
        md += ["", f"## {key.replace('_', ' ').capitalize()}", "", CAPTIONS[key], "",
               f"![{key}]({path.name})"]  # fmt: skip
    paths["markdown"].write_text("\n".join(md) + "\n")
    body = [f"<h1>Serving report: {html.escape(name)}</h1>", f"<p>{html.escape(intro)}</p>"]
    body += [f"<ul>{''.join(f'<li>{html.escape(n)}</li>' for n in notes or [])}</ul>"]
    body += ["<h2>Pareto frontier (feasible points)</h2>", _html_table(HEAD, front_rows),
             "<h2>Every operating point</h2>", _html_table(HEAD, rows)]  # fmt: skip
    for key, path in plots.items():
        png = base64.b64encode(path.read_bytes()).decode()
        body += [f"<h2>{key.replace('_', ' ').capitalize()}</h2>",
                 f"<p>{html.escape(CAPTIONS[key])}</p>",
                 f'<img alt="{key}" src="data:image/png;base64,{png}">']  # fmt: skip
    paths["html"].write_text(
        "<!doctype html><html><head><meta charset='utf-8'><title>Serving report</title>"
        "<style>body{font-family:sans-serif;max-width:1400px;margin:auto}"
        "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;"
        "padding:2px 6px}img{max-width:100%}</style></head><body>"
        + "\n".join(body) + "</body></html>\n")  # fmt: skip
    return paths | plots


def _md_table(head: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head),
            *("| " + " | ".join(row) + " |" for row in rows)]  # fmt: skip


def _html_table(head: list[str], rows: list[list[str]]) -> str:
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
                   for row in rows)  # fmt: skip
    return f"<table><tr>{cells}</tr>{body}</table>"
