"""The serving study's report: every operating point, the Pareto frontier of feasible ones per
stream and SLA (highest sustainable rate at the SLA, lowest P99, lowest energy per inference or
token), and three plots: latency distributions per policy, P99 against offered load with the
SLAs, and energy per inference against sustainable rate with the constraints (feasible points
solid, infeasible ones faded with the constraint they break). Written as ``serving.json``,
``report.md`` and a self-contained ``report.html``; ``serving.json`` also holds the frontier's
table and the plots' names for a report that includes this one (the sweep's)."""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path

from systolic.workloads.markdown import md_escape
from systolic.workloads.pareto import pareto_front

__all__ = ["STUDY_FILE", "frontier", "study_summary", "write_serving_report"]

#: The file, in a study's folder, that holds its records and the summary another report shows.
STUDY_FILE = "serving.json"

#: The frontier's objectives: +1 more is better, -1 less is better.
OBJECTIVES = {"capacity_rps": +1, "p99_s": -1, "energy_unit_pj": -1}


def _at_sla(r: dict, sla_ms: float) -> dict:
    """A record as a candidate at one SLA: the sustainable rate there (0 when none meets it) and
    the total energy per inference or token; grouped by stream and SLA."""
    cap = next(c for c in r["capacity"] if c["sla_p99_ms"] == sla_ms)
    return r | {"capacity_rps": cap["max_rate_rps"] or 0.0, "sla_p99_ms": sla_ms,
                "energy_unit_pj": r["energy_per_unit_pj"]["total_pj"],
                "workload": {"model": r["stream"], "seq": sla_ms}}  # fmt: skip


def frontier(records: list[dict]) -> list[dict]:
    """Per stream and SLA, the records that meet it (feasible there) and no other such record
    dominates; each carries its ``sla_p99_ms``."""
    candidates = [_at_sla(r, sla) for r in records for sla in r["meets_sla_ms"]]
    return pareto_front(candidates, OBJECTIVES)


def _label(r: dict) -> str:
    scale = f" x{r['replicas']}" if r.get("replicas", 1) > 1 else ""
    return f"{r['config_name'].split('-d')[0]}{scale} {r['clock_mhz']:g} MHz {r['policy']}"


def _rows(records: list[dict], front_ids: set) -> list[list[str]]:
    rows = []
    for r in records:
        m, e = r["metrics"], r["energy_per_unit_pj"]
        lo, hi = r["energy_per_unit_range_pj"]
        p50 = m.get("p50_s", m.get("ttft_p50_s"))
        rates = ", ".join(
            f"{c['sla_p99_ms']:g} ms: " + (f"{c['max_rate_rps']:.3g}/s" if c["max_rate_rps"]
                                            else "none")
            for c in r["capacity"])  # fmt: skip
        meets = ", ".join(f"{m:g}" for m in r["meets_sla_ms"])
        mark = f"at {meets} ms" if r["feasible"] else "no: " + "; ".join(r["broken"])
        rows.append([r["stream"], _label(r), f"{r['offered_rps']:.3g}", f"{p50 * 1e3:.3g}",
                     f"{r['p99_s'] * 1e3:.3g}", rates,
                     f"{e['total_pj'] / 1e6:.4g} ({e['busy_pj'] / 1e6:.3g} / "
                     f"{e['idle_pj'] / 1e6:.3g} / {e['leakage_pj'] / 1e6:.3g}; range "
                     f"{lo / 1e6:.3g} to {hi / 1e6:.3g})",
                     f"{r['power_w']:.3g}", _clamps(r), mark])  # fmt: skip
    return rows


HEAD = ["stream", "operating point", "offered req/s", "P50 ms", "P99 ms",
        "max rate at SLA", "uJ per unit (busy / idle / leakage)", "W", "clamps",
        "feasible (SLAs met at the offered rate)"]  # fmt: skip


def _clamps(r: dict) -> str:
    """Clamp events, and what they cost the P99 (against the same stream with no budget)."""
    if not r["clamps"]:
        return "0"
    return f"{r['clamps']} (P99 {r.get('clamp_cost_p99_s', 0.0) * 1e3:+.3g} ms)"


def _key(r: dict) -> tuple:
    return (r["stream"], r["config_name"], r["clock_mhz"], r["policy"], r.get("replicas", 1))


def _front_rows(front: list[dict]) -> list[list[str]]:
    rows = []
    for r in sorted(front, key=lambda r: (r["stream"], r["sla_p99_ms"], -r["capacity_rps"])):
        e = r["energy_per_unit_pj"]["total_pj"]
        lo, hi = r["energy_per_unit_range_pj"]
        rows.append([r["stream"], f"{r['sla_p99_ms']:g}", _label(r), f"{r['capacity_rps']:.3g}",
                     f"{r['p99_s'] * 1e3:.3g}",
                     f"{e / 1e6:.4g} per {r['unit']} ({lo / 1e6:.3g} to {hi / 1e6:.3g})",
                     f"{r['power_w']:.3g}", _clamps(r)])  # fmt: skip
    return rows


FRONT_HEAD = ["stream", "SLA ms", "operating point", "max req/s at SLA",
              "P99 ms at offered rate", "uJ", "W", "clamps"]  # fmt: skip


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
        for r in records:
            if r["stream"] != s:
                continue
            r = _at_sla(r, min(c["sla_p99_ms"] for c in r["capacity"]))
            style = {"alpha": 1.0} if r["feasible"] else {"alpha": 0.25}
            ax.scatter(r["capacity_rps"], r["energy_unit_pj"] / 1e6, **style,
                       marker="o" if r["feasible"] else "x")  # fmt: skip
            note = _label(r) if r["feasible"] else f"{_label(r)}: {r['broken'][0]}"
            ax.annotate(note, (r["capacity_rps"], r["energy_unit_pj"] / 1e6), fontsize=5,
                        alpha=style["alpha"])  # fmt: skip
        generation = any(r["generation"] for r in records if r["stream"] == s)
        unit = "token" if generation else "inf."
        if budget_w and not generation:  # the budget: energy x rate = power, a hyperbola
            top = max((_at_sla(r, min(c["sla_p99_ms"] for c in r["capacity"]))["capacity_rps"]
                       for r in records if r["stream"] == s), default=0.0)  # fmt: skip
            if top > 0:
                xs = [top * (i + 1) / 50 for i in range(50)]
                ax.plot(xs, [budget_w / x * 1e6 for x in xs], color="grey", linestyle="--",
                        linewidth=0.8, label=f"{budget_w:g} W at that rate")  # fmt: skip
                ax.set_ylim(0, max(r["energy_per_unit_pj"]["total_pj"] for r in records
                                    if r["stream"] == s) / 1e6 * 2)  # fmt: skip
                ax.legend(fontsize=7)
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
                            "infeasible points faded, with the constraint they break; dashed, "
                            "the energy at which that rate draws the power budget.",
}  # fmt: skip


def study_summary(folder: Path) -> dict | None:
    """What a report that includes a study shows of it (its introduction, the frontier's table
    and its plots, whose files are relative to ``folder``), or None when ``folder`` holds no
    study."""
    path = folder / STUDY_FILE
    return json.loads(path.read_text())["summary"] if path.is_file() else None


def write_serving_report(name: str, records: list[dict], out: Path,
                         budget_w: float | None = None, notes: list[str] | None = None,
                         ) -> dict[str, Path]:  # fmt: skip
    """Write the report of the study ``name`` into ``out``; return the files."""
    out.mkdir(parents=True, exist_ok=True)
    front = frontier(records)
    front_ids = {_key(r) for r in front}
    rows = _rows(records, front_ids)
    front_rows = _front_rows(front)
    intro = (f"{len(records)} operating points (configuration x clock x stream x batching "
             f"policy). Service times and energy from the device model behind the study's "
             f"memory; clock voltages from serving.power_budget.VF_POINTS (assumptions). "
             f"Feasible at an SLA: the P99 at the offered rate meets it"
             + (f" and the average power stays within {budget_w:g} W" if budget_w else "")
             + ". Energy per unit: per inference, or per output token for generation "
             "streams.")  # fmt: skip
    paths = {"json": out / STUDY_FILE, "markdown": out / "report.md",
             "html": out / "report.html"}  # fmt: skip
    plots = _plots(records, out, budget_w)
    summary = {"intro": intro, "head": FRONT_HEAD, "frontier_rows": front_rows,
               "plots": [{"name": k, "file": p.name, "caption": CAPTIONS[k]}
                         for k, p in plots.items()]}  # fmt: skip
    paths["json"].write_text(json.dumps({"name": name, "summary": summary, "records": records},
                                        indent=1))  # fmt: skip
    md = [f"# Serving report: {md_escape(name)}", "", md_escape(intro), ""]
    md += [f"- {md_escape(n)}" for n in notes or []]
    md += ["", "## Pareto frontier (feasible points)", "", *_md_table(FRONT_HEAD, front_rows), "",
           "## Every operating point", "", *_md_table(HEAD, rows)]  # fmt: skip
    for key, path in plots.items():
        md += ["", f"## {key.replace('_', ' ').capitalize()}", "", CAPTIONS[key], "",
               f"![{key}]({path.name})"]  # fmt: skip
    paths["markdown"].write_text("\n".join(md) + "\n")
    body = [f"<h1>Serving report: {html.escape(name)}</h1>", f"<p>{html.escape(intro)}</p>"]
    body += [f"<ul>{''.join(f'<li>{html.escape(n)}</li>' for n in notes or [])}</ul>"]
    body += ["<h2>Pareto frontier (feasible points)</h2>", _html_table(FRONT_HEAD, front_rows),
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
    return ["| " + " | ".join(map(md_escape, head)) + " |", "|" + "---|" * len(head),
            *("| " + " | ".join(map(md_escape, row)) + " |" for row in rows)]  # fmt: skip


def _html_table(head: list[str], rows: list[list[str]]) -> str:
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
                   for row in rows)  # fmt: skip
    return f"<table><tr>{cells}</tr>{body}</table>"
