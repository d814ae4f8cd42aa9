"""Write the report: markdown and a self-contained HTML page from one set of templates.

The templates (templates/report.md.j2, report.html.j2) lay out a :class:`ReportData`. The
HTML opens with the answers and the who-wins matrices, draws the main plots with Plotly
(interactive; plotly.js embedded once, so the page needs no network) and embeds the other
plots as PNG data URLs; the Markdown keeps every plot as a PNG file beside it.
"""

from __future__ import annotations

import base64
import csv
from pathlib import Path

import jinja2
import yaml
from systolic.serving.study_report import study_summary
from systolic.workloads.markdown import md_escape

from ..results import SPEC_COPY, load_results
from .content import SERVING_FOLDER, TABLE_ROWS, ReportData, report_data
from .interactive import interactive_plots, plotly_js
from .plots import PLOTS, write_plots

__all__ = ["render", "write_report"]

_ENV = {
    kind: jinja2.Environment(
        loader=jinja2.PackageLoader("systolic.sweeps.report", "templates"),
        autoescape=kind == "html",
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    for kind in ("md", "html")
}
_ENV["md"].filters["md"] = md_escape  # what came from a spec or a result, in Markdown
for _env in _ENV.values():
    _env.globals["table_rows"] = TABLE_ROWS  # the longest table of points shown
    _env.globals["zip"] = zip

#: PNG plots the HTML replaces by an interactive one.
_REPLACED = {"pareto": "pareto_interactive", "weights": "weights_interactive"}


def sections(data: ReportData, interactive: list[dict], figures: list[dict]) -> list[tuple]:
    """``(anchor, title)`` of each section the report has, in page order (the contents)."""
    present = [
        ("answers", "Answers", True),
        ("who-wins", "Who wins where", bool(data.matrices)),
        ("pareto", "Pareto front", True),
        ("memory", "Memory", bool(data.memory_lines)),
        ("weight-bandwidth", "Weight bandwidth", data.weight_bandwidth is not None),
        ("refetch", "Refetch", data.buffer_pressure is not None),
        ("area", "Area and clock", data.synthesis is not None),
        ("efficiency", "Efficiency", data.efficiency is not None),
        ("serving", "Serving", data.serving is not None),
        ("precision", "Precision", data.precision is not None),
        ("loop-order", "Loop order", data.loop_orders is not None),
        ("inference", "Whole inference", data.inference is not None),
        ("operators", "Operators", data.operators is not None),
        ("plots", "More plots", bool(figures)),
        ("findings", "More findings", bool(data.summary)),
        ("points", "Every point", True),
        ("failures", "Failures", data.failures is not None),
    ]
    return [(anchor, title) for anchor, title, shown in present if shown]


def render(data: ReportData, plots: dict[str, Path], kind: str, base: Path | None = None) -> str:
    """The report as ``kind`` (``"md"`` or ``"html"``) text; ``base``: the folder the serving
    plots' paths are relative to."""
    base = base or Path(".")
    interactive = interactive_plots(data.points, data.front_ids) if kind == "html" else []
    drawn = {f["name"] for f in interactive}
    figures = [
        {"name": name, "title": name.replace("_", " ").capitalize(), "caption": PLOTS[name][1],
         "file": path.name,
         "png": base64.b64encode(path.read_bytes()).decode() if kind == "html" else ""}
        for name, path in plots.items() if _REPLACED.get(name) not in drawn
    ]  # fmt: skip
    serving = [p | {"png": base64.b64encode((base / p["file"]).read_bytes()).decode()
                    if kind == "html" else ""} for p in data.serving_plots]  # fmt: skip
    memory = next(iter(p.get("memory", {}).get("name") for p in data.points), "-")
    return _ENV[kind].get_template(f"report.{kind}.j2").render(
        data=data, figures=figures, serving_figures=serving, interactive=interactive,
        plotly_js=plotly_js() if interactive else "", first_memory=memory,
        sections=sections(data, interactive, figures))  # fmt: skip


def _sweep_name(results: Path) -> str:
    """The name of the spec the results come from (its copy beside them), else their folder's."""
    copy = results.parent / SPEC_COPY
    try:
        name = yaml.safe_load(copy.read_text()).get("name") if copy.is_file() else None
    except (yaml.YAMLError, AttributeError):
        name = None
    return str(name) if name is not None else results.parent.name


def write_report(results: Path, out: Path | None = None) -> dict[str, Path]:
    """Write ``report.md``, ``report.html``, the PNG plots and ``points.csv`` (the table of every
    point) next to ``results``."""
    out = out or results.parent
    out.mkdir(parents=True, exist_ok=True)
    records = load_results(results)
    if not records:
        raise ValueError(f"{results}: no results to report")
    serving = study_summary(results.parent / SERVING_FOLDER)
    data = report_data(records, _sweep_name(results), serving)
    plots = write_plots(data, out)
    paths = {"markdown": out / "report.md", "html": out / "report.html", "csv": out / "points.csv"}
    with open(paths["csv"], "w", newline="") as f:
        table = csv.writer(f)
        table.writerow(data.points_table.head)
        table.writerows(data.points_table.rows)
    for kind, path in (("md", paths["markdown"]), ("html", paths["html"])):
        path.write_text(render(data, plots, kind, results.parent))
    return paths | plots
