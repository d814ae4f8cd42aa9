"""The playbook's report, in Markdown and in self-contained HTML (the same blocks rendered
twice), with its figures as PNG files, and the records as JSON."""

from __future__ import annotations

import base64
import html
import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from systolic.workloads.markdown import md_escape  # noqa: E402

__all__ = ["write_report"]


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.2f}%"


def _nj_range(pj) -> str:
    """`` (low to high)`` of an energy range in nJ, or nothing."""
    return f" ({pj[0] / 1e3:.4g} to {pj[1] / 1e3:.4g})" if pj else ""


def _nj(pj) -> str:
    return "-" if pj is None else f"{pj / 1e3:,.1f}"


def _db(x) -> str:
    return "inf" if x == math.inf else f"{x:.1f}"


def _summary(records: list[dict]) -> list:
    head = ["model", "float", "PTQ int8", "PTQ int4", "QAT int8", "QAT int4", "bf16",
            "onnxruntime int8 per-channel", "chosen mix"]  # fmt: skip
    rows = []
    for r in records:
        by = {row["name"].split(" (")[0].split(",")[0]: row for row in r["retention"]}
        keys = ["float", "PTQ int8", "PTQ int4", "QAT int8", "QAT int4", "bf16",
                "onnxruntime int8 per-channel"]  # fmt: skip
        chosen = next(row for row in r["retention"] if row["name"].startswith("chosen"))
        cells = [f"{_pct(by[k]['test'])} ({_pct(by[k]['retention'])}; {_nj(by[k]['energy_pj'])})"
                 if k != "float" else _pct(by[k]["test"]) for k in keys]  # fmt: skip
        cells.append(f"{'/'.join(r['chosen']['precisions'])}: {_pct(chosen['test'])} "
                     f"({_pct(chosen['retention'])}; {_nj(chosen['energy_pj'])})")  # fmt: skip
        rows.append([r["model"], *cells])
    return [("table", head, rows)]


def _plot(record: dict, out: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    mixes = record["mixes"]
    ax.scatter([m["energy_pj"] / 1e3 for m in mixes], [100 * m["val"] for m in mixes],
               c="0.6", s=18, label="every mix (validation)")  # fmt: skip
    front = sorted((m for m in mixes if m["front"]), key=lambda m: m["energy_pj"])
    ax.plot([m["energy_pj"] / 1e3 for m in front], [100 * m["val"] for m in front], "o-",
            c="tab:blue", ms=5, label="Pareto front")  # fmt: skip
    for m in front:
        ax.annotate("/".join(m["precisions"]), (m["energy_pj"] / 1e3, 100 * m["val"]),
                    fontsize=7, xytext=(3, 3), textcoords="offset points")  # fmt: skip
    c = record["chosen"]
    ax.scatter([c["energy_pj"] / 1e3], [100 * c["val"]], marker="*", s=160, c="tab:red",
               zorder=3, label="chosen (cheapest above the floor)")  # fmt: skip
    ax.axhline(100 * record["floor"] * record["float"]["val"], ls="--", c="tab:red", lw=0.8,
               label=f"floor: {100 * record['floor']:g}% of float")  # fmt: skip
    ax.set_xlabel(f"model energy per inference, nJ (batch {record['energy_batch']})")
    ax.set_ylabel("validation accuracy, %")
    ax.set_title(f"{record['name']}: precision mixes")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    path = out / f"{record['name']}-mixes.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _model_blocks(r: dict, out: Path) -> list:
    b = [("h2", f"{r['model']}: {r['name']}")]
    gemms = ", ".join(f"{n} {m}x{k}x{nn}" for n, m, k, nn in r["gemms"])
    b.append(("p", f"Data: {r['task']}, split {r['splits'][0]}/{r['splits'][1]}/"
                   f"{r['splits'][2]} (train/validation/test). Network {r['source']}; written "
                   f"to {Path(r['onnx']).name} and read back "
                   f"({'identical logits' if r['onnx_identical'] else 'DIFFERENT logits'}); as "
                   f"GEMMs per sample (MxKxN): {gemms}; {r['macs']:,} MACs."))  # fmt: skip
    b.append(("h3", "Accuracy retention and energy"))
    b.append(("p", f"Test accuracy; retention is against float; energy from the model per "
                   f"sample at batch {r['energy_batch']} on the {r['rows']}x{r['rows']} WS "
                   f"array, each layer in its own mode."))  # fmt: skip
    b.append(("table", ["deployment", "test accuracy", "retention", "nJ/inference"],
              [[row["name"], _pct(row["test"]), _pct(row["retention"]),
                _nj(row["energy_pj"]) + _nj_range(row.get("energy_range_pj"))]
               for row in r["retention"]]))  # fmt: skip
    b.append(("h3", "Deployment checks (chosen mix)"))
    b.append(("list", [f"{'PASS' if c['passed'] else 'FAIL'} {c['name']}: {c['detail']}"
                       for c in r["checks"]]))  # fmt: skip
    if r.get("rtl_energy"):
        e = r["rtl_energy"]
        b.append(("p", f"Energy on the {e['samples']} simulated samples: "
                       f"{_nj(e['rtl_toggles_pj'])} nJ per sample from RTL toggles, "
                       f"{_nj(e['model_pj'])} nJ from the model at batch "
                       f"{e['samples']}."))  # fmt: skip
    b.append(("h3", "Calibration"))
    b.append(("p", f"Each activation range method, weights per tensor or per channel (min/max, "
                   f"symmetric), on {min(512, r['splits'][0])} training samples. Chosen on "
                   f"validation: int8 [{r['recipes'][8]}], int4 [{r['recipes'][4]}]."))  # fmt: skip
    f_test = r["float"]["test"]

    def kept(acc) -> str:  # retention against float
        return _pct(acc / f_test) if f_test else "-"

    b.append(("table", ["bits", "recipe", "validation", "test", "retention"],
              [[str(c["bits"]), c["recipe"], _pct(c["val"]), _pct(c["test"]),
                kept(c["test"])] for c in r["calibration"]]))  # fmt: skip
    b.append(("p", "Calibration-set size: test accuracy over random draws of the set, with the "
                   "chosen recipe."))  # fmt: skip
    b.append(("table", ["bits", "samples", "mean", "min", "max", "mean retention"],
              [[str(s["bits"]), str(s["samples"]), _pct(s["mean"]), _pct(s["min"]),
                _pct(s["max"]), kept(s["mean"])] for s in r["cal_sizes"]]))  # fmt: skip
    o = r["outliers"]
    kurt = ", ".join(f"{k:.1f}" for k in o["kurtosis"])
    b.append(("p", f"Outliers: the array layers' inputs have excess kurtosis {kurt}; layer "
                   f"{o['layer']} is the most heavy-tailed (max {o['max']:.3g}, 99.99th "
                   f"percentile {o['p99_99']:.3g}). Its range by each method, the share of test "
                   f"values clipped, that tensor's SQNR, and test accuracy with only this "
                   f"layer's range changed:"))  # fmt: skip
    b.append(("table", ["bits", "method", "range max", "clipped", "SQNR dB", "test", "retention"],
              [[str(x["bits"]), x["method"], f"{x['range_max']:.3g}", _pct(x["clipped"]),
                _db(x["sqnr_db"]), _pct(x["test"]), kept(x["test"])]
               for x in o["rows"]]))  # fmt: skip
    b.append(("h3", "Mixed precision"))
    b.append(("p", f"Sensitivity: validation accuracy change (points) with one layer at int4 or "
                   f"bf16 and the rest int8 (all int8: {_pct(r['base_val'])})."))  # fmt: skip
    b.append(("table", ["layer", "GEMM per sample", "int4", "bf16"],
              [[str(s["layer"]), "x".join(map(str, s["shape"])), f"{100 * s['int4']:+.2f}",
                f"{100 * s['bf16']:+.2f}"] for s in r["sensitivity"]]))  # fmt: skip
    plot = _plot(r, out)
    b.append(("img", plot.name, f"{r['name']}: accuracy against energy of every mix", plot))
    front = sorted((m for m in r["mixes"] if m["front"]), key=lambda m: m["energy_pj"])
    b.append(("p", f"Pareto front of {len(r['mixes'])} mixes (validation accuracy against model "
                   f"energy); chosen: {'/'.join(r['chosen']['precisions'])}, the cheapest at or "
                   f"above {100 * r['floor']:g}% of float on validation."))  # fmt: skip
    b.append(("table", ["mix", "validation", "test", "nJ/inference"],
              [["/".join(m["precisions"]), _pct(m["val"]), _pct(m["test"]), _nj(m["energy_pj"])]
               for m in front]))  # fmt: skip
    return b


def _markdown(blocks) -> str:
    lines = []
    for kind, *rest in blocks:
        if kind in ("h1", "h2", "h3"):
            lines += ["#" * int(kind[1]) + " " + md_escape(rest[0]), ""]
        elif kind == "p":
            lines += [md_escape(rest[0]), ""]
        elif kind == "list":
            lines += [f"- {md_escape(item)}" for item in rest[0]] + [""]
        elif kind == "table":
            head, rows = rest
            lines += ["| " + " | ".join(map(md_escape, head)) + " |", "|" + "---|" * len(head)]
            lines += ["| " + " | ".join(map(md_escape, row)) + " |" for row in rows] + [""]
        elif kind == "img":
            lines += [f"![{rest[1]}]({rest[0]})", ""]
    return "\n".join(lines)


_STYLE = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;line-height:1.4}"
          "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;"
          "padding:3px 8px;text-align:left}th{background:#eee}img{max-width:100%}")  # fmt: skip


def _html(blocks, title: str) -> str:
    e = html.escape
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{e(title)}</title>"
             f"<style>{_STYLE}</style></head><body>"]  # fmt: skip
    for kind, *rest in blocks:
        if kind in ("h1", "h2", "h3"):
            parts.append(f"<{kind}>{e(rest[0])}</{kind}>")
        elif kind == "p":
            parts.append(f"<p>{e(rest[0])}</p>")
        elif kind == "list":
            parts.append("<ul>" + "".join(f"<li>{e(i)}</li>" for i in rest[0]) + "</ul>")
        elif kind == "table":
            head, rows = rest
            parts.append("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr>"
                         + "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>"
                                   for row in rows) + "</table>")  # fmt: skip
        elif kind == "img":
            data = base64.b64encode(Path(rest[2]).read_bytes()).decode()
            parts.append(f"<img alt='{e(rest[1])}' src='data:image/png;base64,{data}'>")
    return "".join(parts) + "</body></html>"


def write_report(records: list[dict], out: Path) -> tuple[Path, Path]:
    """``quantize.md``, ``quantize.html`` and ``quantize.json`` in ``out``."""
    out = Path(out)
    failed = [f"{r['model']}: {c['name']}" for r in records for c in r["checks"]
              if not c["passed"]]  # fmt: skip
    blocks = [("h1", "Quantization playbook"),
              ("p", "Each network trained in float, written to ONNX and read back, calibrated, "
                    "fine-tuned with quantization in the loop, mixed per layer and checked "
                    "through the simulated RTL. Choices are made on validation data, accuracy "
                    "is reported on test data. Procedure and reading: docs/quantization.md."),
              ("p", "Deployment checks: " + ("all passed." if not failed else
                                             "FAILED: " + "; ".join(failed) + ".")),
              ("h2", "Summary"),
              ("p", "Test accuracy (retention against float; model nJ per inference) of each "
                    "deployment.")]  # fmt: skip
    blocks += _summary(records)
    for r in records:
        blocks += _model_blocks(r, out)
    md = out / "quantize.md"
    md.write_text(_markdown(blocks))
    page = out / "quantize.html"
    page.write_text(_html(blocks, "Quantization playbook"))
    (out / "quantize.json").write_text(json.dumps(records, indent=1, default=_json))
    return md, page


def _json(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, tuple):
        return list(value)
    return str(value)
