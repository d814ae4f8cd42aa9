"""The report's first screen: short answers to the questions a sweep can answer, each with its
numbers, the points they come from and the section that holds the evidence; and the "who wins
where" matrices (workload rows against array x precision columns, each cell the winning
dataflow and its margin over the runner-up), one per objective."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass

from systolic.contract.config import ArrayConfig
from systolic.models.uncertainty import FIT, margin_range

__all__ = [
    "OBJECTIVES",
    "TIE",
    "Answer",
    "Cell",
    "Matrix",
    "answers",
    "family_of",
    "matrices",
    "Tally",
    "tally",
]

#: The matrices' objectives: figure, what it is, whether lower is better, unit, scale.
OBJECTIVES = (
    ("energy_per_inference_pj", "energy per inference", True),
    ("latency_s", "latency", True),
    ("throughput_inf_s", "throughput", False),
    ("throughput_per_mm2", "throughput per mm^2", False),
)


@dataclass(frozen=True)
class Answer:
    """One line of the summary: the question, the answer with its numbers, and the anchor of
    the section with the evidence."""

    topic: str
    text: str
    anchor: str


#: A cell whose runner-up is within this fraction of the winner is a tie.
TIE = 0.005


def _percent(x: float) -> str:
    return f"{100 * x:.1f}" if abs(x) < 0.01 else f"{100 * x:.0f}"


@dataclass(frozen=True)
class Cell:
    winner: str  # "ws", "os", "is"; "" where the sweep has no point
    margin: float | None  # runner-up's figure over the winner's, minus one (None: one dataflow)
    value: float = 0.0
    runner_up: str = ""
    #: energy cells: the margin's range over the uncertain terms' ranges (models.uncertainty)
    margin_range: tuple[float, float] | None = None

    @property
    def tie(self) -> bool:
        """The runner-up is within :data:`TIE` of the winner: neither wins."""
        return self.margin is not None and self.margin < TIE

    @property
    def range_text(self) -> str:
        """The margin's range as the report prints it, ``(-0.4 to 12%)``: whole percents, and
        tenths below one percent, so that a sign is never lost to rounding."""
        if self.margin_range is None:
            return ""
        low, high = (_percent(x) for x in self.margin_range)
        return f"({low} to {high}%)"

    @property
    def uncertain(self) -> bool:
        """Not a tie, but within uncertainty: at some corner of the energy figures' ranges the
        runner-up would win."""
        return not self.tie and self.margin_range is not None and self.margin_range[0] < TIE


@dataclass(frozen=True)
class Matrix:
    """Who wins where for one objective: a cell per workload and column, where a column is an
    array and precision at one value of every other axis the points vary on (``settings``
    names those axes), so that each point is in exactly one cell."""

    figure: str
    title: str
    anchor: str
    columns: list[str]  # "8x8 int8", "8x8 int8 depth 4096", ...
    rows: list[str]  # workload names
    cells: list[list[Cell]]
    settings: tuple[str, ...] = ()
    duplicates: int = 0  # points equal to another on every axis, counted once

    def wins(self) -> Counter:
        return Counter(c.winner for row in self.cells for c in row if c.winner and not c.tie)


def family_of(p: dict) -> str:
    """The workload family a reader asks about: transformer prefill and decode apart."""
    w = p["workload"]
    if w["family"] == "transformer":
        return "decode" if "decode" in w["name"] else "prefill"
    return w["family"]


def _row_key(p: dict):
    w = p["workload"]
    return (family_of(p), w["model"], w.get("seq") or 0, w["batch"], w["name"])


def _column_key(p: dict):
    order = {"int4": 0, "int8": 1, "int16": 2, "bf16": 3}
    return (p["pes"], p["array"], order.get(p["precision"], 9), p["precision"])


#: Configuration fields that the row, the column and the dataflow already tell apart.
_PLACED = ("dataflow", "rows", "cols")


def _axes(p: dict) -> dict:
    """Every value of a point that could tell it from another in the same cell and dataflow:
    its configuration (beyond the array and dataflow) and its clock."""
    config = ArrayConfig.OMITTED | p["config"]  # a field left out is at its default
    return {k: v for k, v in config.items() if k not in _PLACED} | {
        "clock_mhz": p["clock_mhz"]}  # fmt: skip


def _settings(points: list[dict]) -> tuple[str, ...]:
    """The axes on which points of one row, column and dataflow differ: each must split the
    columns, or the points would share a cell."""
    seen: dict[tuple, dict] = {}
    varying: set[str] = set()
    for p in points:
        key = (_row_key(p), _column_key(p), p["dataflow"])
        axes = _axes(p)
        if key in seen:
            varying |= {k for k in axes if axes[k] != seen[key].get(k)}
        else:
            seen[key] = axes
    return tuple(sorted(varying))


def _setting_label(p: dict, settings: tuple[str, ...]) -> str:
    axes = _axes(p)
    parts = []
    depths = [k for k in ("a_depth", "b_depth", "c_depth") if k in settings]
    if len(depths) == 3 and len({axes[k] for k in depths}) == 1:
        parts.append(f"depth {axes['a_depth']}")
    else:
        depths = []
    for k in settings:
        if k not in depths:
            name = "clock" if k == "clock_mhz" else k.replace("_", " ")
            unit = " MHz" if k == "clock_mhz" else ""
            parts.append(f"{name} {axes[k]:g}{unit}" if isinstance(axes[k], float)
                         else f"{name} {axes[k]}")  # fmt: skip
    return " ".join(parts)


def _rank(by: dict[str, float], lower: bool, points: dict[str, dict] | None = None) -> Cell:
    """The cell of one workload and column: the best dataflow, its runner-up and margin; for
    energy (``points`` by dataflow), the margin's range over the energy terms' ranges."""
    ranked = sorted(by.items(), key=lambda kv: kv[1] if lower else -kv[1])
    if not ranked:
        return Cell("", None)
    (win, best), rest = ranked[0], ranked[1:]
    margin = spread = None
    if rest and best:
        second = rest[0][1]
        if lower:
            margin = second / best - 1
        elif second:
            margin = best / second - 1
        if points and all("energy_terms_pj" in points[d] for d in (win, rest[0][0])):
            ranges = {t: tuple(r) for t, r in points[win]["energy_ranges"].items()}
            other = points[rest[0][0]]
            spread = margin_range(points[win]["energy_terms_pj"], other["energy_terms_pj"],
                                  ranges, tuple(other["energy_ranges"][FIT]))  # fmt: skip
    return Cell(win, margin, best, rest[0][0] if rest else "", spread)


def matrices(points: list[dict]) -> list[Matrix]:
    """One :class:`Matrix` per objective the points carry; every point is in one cell."""
    out = []
    settings = _settings(points)
    rows = sorted({_row_key(p) for p in points})

    def column(p: dict):
        values = tuple(_axes(p)[k] for k in settings)  # one type per axis: in order
        return (*_column_key(p), values, _setting_label(p, settings))

    columns = sorted({column(p) for p in points})
    for figure, title, lower in OBJECTIVES:
        if not any(figure in p for p in points):
            continue
        grid = defaultdict(dict)
        whole = defaultdict(dict)
        duplicates = 0
        for p in points:
            if figure in p:
                by = grid[(_row_key(p), column(p))]
                if p["dataflow"] in by:  # the same point twice (equal on every axis): once
                    duplicates += 1
                    continue
                by[p["dataflow"]] = p[figure]
                whole[(_row_key(p), column(p))][p["dataflow"]] = p
        energy = figure == "energy_per_inference_pj"
        cells = [[_rank(grid.get((r, c), {}), lower, whole.get((r, c)) if energy else None)
                  for c in columns] for r in rows]  # fmt: skip
        names = [" ".join(x for x in (f"{c[1]} {c[3]}", c[5]) if x) for c in columns]
        out.append(Matrix(figure, title, f"wins-{figure}", names, [r[-1] for r in rows], cells,
                          settings, duplicates))  # fmt: skip
    return out


def _energy(pj: float) -> str:
    for unit, scale in (("J", 1e12), ("mJ", 1e9), ("uJ", 1e6), ("nJ", 1e3)):
        if pj >= scale:
            return f"{pj / scale:.3g} {unit}"
    return f"{pj:.3g} pJ"


def _config(p: dict, settings: tuple[str, ...] = ()) -> str:
    label = _setting_label(p, settings)
    return f"{p['dataflow'].upper()} {p['array']} {p['precision']}" + (f" {label}" if label else "")


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _mb(b: float) -> str:
    return f"{b / 1e6:.3g} MB"


@dataclass
class Tally:
    """The cells of some rows of a matrix: wins per dataflow (ties and cells within
    uncertainty apart), and each dataflow's margins, with their ranges where known."""

    wins: Counter
    ties: int
    uncertain: Counter  # winner at the nominal figures, but within uncertainty
    margins: dict[str, list[float]]
    ranges: dict[str, list[tuple[float, float]]]


def tally(m: Matrix, workloads: set[str]) -> Tally:
    """Over the cells of ``workloads``' rows: wins per dataflow (ties and cells within
    uncertainty apart), the ties, and the margins of the cells each dataflow wins."""
    t = Tally(Counter(), 0, Counter(), defaultdict(list), defaultdict(list))
    for name, row in zip(m.rows, m.cells, strict=True):
        if name not in workloads:
            continue
        for c in row:
            if not c.winner:
                continue
            if c.tie:
                t.ties += 1
            elif c.uncertain:
                t.uncertain[c.winner] += 1
            else:
                t.wins[c.winner] += 1
                if c.margin is not None:
                    t.margins[c.winner].append(c.margin)
                if c.margin_range is not None:
                    t.ranges[c.winner].append(c.margin_range)
    return t


def _median_margin(t: Tally, top: str) -> str:
    if not t.margins[top]:
        return ""
    text = f", median margin of its wins {_pct(statistics.median(t.margins[top]))}"
    if t.ranges[top]:
        low = statistics.median(r[0] for r in t.ranges[top])
        high = statistics.median(r[1] for r in t.ranges[top])
        text += f" (within the energy figures' ranges, {_pct(low)} to {_pct(high)})"
    return text


def _dataflow_answers(points: list[dict], grids: list[Matrix]) -> list[Answer]:
    out = []
    families = defaultdict(set)
    for p in points:
        families[family_of(p)].add(p["workload"]["name"])
    for m in grids[:2]:  # energy and latency; throughput at a fixed batch follows latency
        parts = []
        for family in sorted(families):
            t = tally(m, families[family])
            undecided = sum(t.uncertain.values())
            total = sum(t.wins.values()) + t.ties + undecided
            if not total:
                continue
            extra = [f"tie in {t.ties}"] if t.ties else []
            if undecided:
                leaders = ", ".join(f"{d.upper()} {k}" for d, k in t.uncertain.most_common())
                extra.append(f"within uncertainty in {undecided}: {leaders}")
            if not t.wins:
                parts.append(f"{family}: no dataflow wins any of the {total} cells "
                             f"({'; '.join(extra)})")  # fmt: skip
                continue
            (top, n), *others = t.wins.most_common()
            rest = ", ".join([*(f"{d.upper()} {k}" for d, k in others), *extra])
            parts.append(f"{family}: {top.upper()} in {n} of {total} cells"
                         f"{f' ({rest})' if rest else ''}{_median_margin(t, top)}")  # fmt: skip
        if parts:
            where = f" Cells split by {', '.join(m.settings)}." if m.settings else ""
            if m.duplicates:
                where += (f" {m.duplicates} point(s) equal to another on every axis counted "
                          f"once.")  # fmt: skip
            out.append(Answer(f"Lowest {m.title}", "; ".join(parts) + "." + where, m.anchor))
    return out


def _best_configuration(points: list[dict]) -> list[Answer]:
    """Per family, the configuration that is best on energy most often, with an example."""
    out = []
    settings = _settings(points)
    by_family = defaultdict(lambda: defaultdict(list))
    for p in points:
        by_family[family_of(p)][p["workload"]["name"]].append(p)
    parts = []
    for family, workloads in sorted(by_family.items()):
        winners = Counter()
        example = None
        for pts in workloads.values():
            best = min(pts, key=lambda p: p["energy_per_inference_pj"])
            winners[_config(best, settings)] += 1
            if example is None or best["workload"]["batch"] > example["workload"]["batch"]:
                example = best
        name, n = winners.most_common(1)[0]
        parts.append(f"{family}: {name} ({n} of {len(workloads)} workloads; e.g. "
                     f"{example['workload']['name']} at "
                     f"{_energy(example['energy_per_inference_pj'])})")  # fmt: skip
    if parts:
        out.append(Answer("Best configuration on energy", "; ".join(parts) + ".", "pareto"))
    return out


def _weight_answers(points: list[dict]) -> list[Answer]:
    best: dict[str, dict] = {}
    for p in points:
        w = p.get("weight_bytes_per_inference")
        if w and (p["workload"]["name"] not in best or
                  w < best[p["workload"]["name"]]["weight_bytes_per_inference"]):  # fmt: skip
            best[p["workload"]["name"]] = p
    if not best:
        return []
    by_model = defaultdict(lambda: defaultdict(list))
    for p in best.values():
        w = p["workload"]
        by_model[(family_of(p), w["model"])][w.get("seq") or 0].append(p)
    parts = []
    for _, by_seq in sorted(by_model.items()):
        pts = next((v for _, v in sorted(by_seq.items()) if len(v) > 1), None)  # shortest seq
        if pts is None:
            continue
        lo = min(pts, key=lambda p: p["workload"]["batch"])
        hi = max(pts, key=lambda p: p["workload"]["batch"])
        gbps = lo["memory"]["gb_per_s"]
        cap = gbps * 1e9 / lo["weight_bytes_per_inference"]
        parts.append(f"{lo['workload']['name']} reads {_mb(lo['weight_bytes_per_inference'])} of "
                     f"weights per inference (at {gbps:g} GB/s that alone caps "
                     f"{cap:,.0f} inf/s), {hi['workload']['name']} "
                     f"{_mb(hi['weight_bytes_per_inference'])}")  # fmt: skip
    if not parts:
        return []
    return [Answer("Off-array weight bandwidth", "; ".join(parts[:4]) + ".", "weight-bandwidth")]


def _bound_answers(points: list[dict]) -> list[Answer]:
    counts = defaultdict(lambda: [0, 0])
    for p in points:
        counts[family_of(p)][0] += p.get("bound") == "memory"
        counts[family_of(p)][1] += 1
    if not counts:
        return []
    memory = points[0].get("memory", {}).get("name", "the first memory")
    text = ", ".join(f"{f} {b} of {n}" for f, (b, n) in sorted(counts.items()))
    return [Answer("Memory- or compute-bound",
                   f"Points memory-bound behind {memory}: {text}.", "memory")]  # fmt: skip


def answers(points: list[dict], grids: list[Matrix], *, precision_lines: list[str],
            rtl_line: str | None, serving_line: str | None, synthesis_line: str | None,
            inference_line: str | None = None) -> list[Answer]:  # fmt: skip
    """The summary, in the order a reader asks (see module)."""
    out = _dataflow_answers(points, grids) + _best_configuration(points)
    out += _weight_answers(points) + _bound_answers(points)
    if inference_line:
        out.append(Answer("Whole inference", inference_line, "inference"))
    if serving_line:
        out.append(Answer("Serving at the SLA", serving_line, "serving"))
    if precision_lines:
        out.append(Answer("What lower precision buys", " ".join(precision_lines), "precision"))
    if synthesis_line:
        out.append(Answer("Area and Fmax", synthesis_line, "area"))
    if rtl_line:
        out.append(Answer("Model against RTL", rtl_line, "points"))
    return out
