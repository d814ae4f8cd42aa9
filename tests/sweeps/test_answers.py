"""sweeps/report/answers.py: the who-wins matrices and the answers built on them count every
point of every swept axis once, checked against a brute-force recomputation from the records."""

from __future__ import annotations

import itertools
import re
import statistics
from collections import Counter, defaultdict

import numpy as np
import pytest
from systolic.models.energy import load_coefficients
from systolic.sweeps.report import report_data
from systolic.sweeps.sweep_spec import load_spec
from systolic.workloads.evaluate import model_record, point_id

from ..helpers import write_spec

OBJECTIVES = {"energy per inference": ("energy_per_inference_pj", True),
              "latency": ("latency_s", True)}  # fmt: skip


def _random_sweep(rng, tmp_path) -> list[dict]:
    """A sweep with two or more values on every axis (dataflow, array, precision, depth,
    workload batch and sequence, memory), evaluated by the model as `systolic sweep` orders it;
    some cells get a dataflow equal to another (a tie) or within the tie margin."""
    arrays = rng.choice(["2x2", "4x4", "8x4", "8x8"], 2, replace=False)
    precisions = rng.choice(["int4", "int8", "int16", "bf16"], 2, replace=False)
    depths = sorted(int(d) for d in rng.choice([256, 1024, 4096], 2, replace=False))
    m, k, n = (int(v) for v in rng.integers(4, 80, 3))
    spec = write_spec(
        tmp_path,
        f"""
        name: random
        configs:
          dataflow: [ws, os, is]
          array: [{", ".join(arrays)}]
          precision: [{", ".join(precisions)}]
          depth: {depths}
        workloads:
          - transformer: bert-base
            batch: [1, {int(rng.integers(2, 5))}]
            seq: [16, 32]
          - transformer: gpt2-small
            phase: decode
            batch: [1, 4]
            seq: [64]
          - gemm: {{m: {m}, k: {k}, n: {n}}}
        memory: [lpddr4x-4266-x16, lpddr5-6400-x64]
        """,
    )
    sweep = load_spec(spec)
    coefficients = load_coefficients()
    records = []
    for memory in sweep.memories:
        for config in sweep.configs:
            for w in sweep.workloads:
                r = model_record(config, w, memory, coefficients, "random", 0)
                records.append(r | {"id": point_id(config, w, memory), "kind": "model",
                                    "status": "ok"})  # fmt: skip
    by_cell = defaultdict(list)
    for r in records:
        by_cell[_cell(r)].append(r)
    for rs in by_cell.values():  # ties: equal figures, or within the margin
        if rng.random() < 0.3:
            a, b = rng.choice(len(rs), 2, replace=False)
            for figure in ("energy_per_inference_pj", "latency_s"):
                rs[b][figure] = rs[a][figure] * (1 + rng.choice([0.0, 0.003]))
    return records


def _cell(r: dict) -> tuple:
    """What tells one cell from another: everything about a point but its dataflow."""
    c = {k: v for k, v in r["config"].items() if k != "dataflow"}
    return (r["workload"]["name"], r["memory"]["name"], tuple(sorted(c.items())))


def _family(r: dict) -> str:
    w = r["workload"]
    return ("decode" if "decode" in w["name"] else "prefill") if w["family"] == "transformer" \
        else w["family"]  # fmt: skip


def _brute_force(records: list[dict], figure: str, lower: bool) -> list[tuple]:
    """Every cell at the sweep's first memory, ordered: (workload, margin, value, the dataflows
    that may be named the winner, those that may be named the runner-up); dataflows with equal
    figures may be named in either order."""
    first = records[0]["memory"]["name"]
    cells = defaultdict(dict)
    whole = defaultdict(dict)
    for r in records:
        if r["memory"]["name"] == first:
            cells[_cell(r)][r["dataflow"]] = r[figure]
            whole[_cell(r)][r["dataflow"]] = r
    out = []
    for key, by in cells.items():
        values = sorted(set(by.values()), reverse=not lower)
        best = values[0]
        winners = {d for d, v in by.items() if v == best}
        second = best if len(winners) > 1 else values[1]
        runners = winners if second == best else {d for d, v in by.items() if v == second}
        margin = second / best - 1 if lower else best / second - 1
        lows = set()
        if figure == "energy_per_inference_pj":  # the lowest margin over the ranges' corners
            for w, r in itertools.product(winners, runners - winners or runners):
                a, b = whole[key][w], whole[key][r]
                terms = sorted(a["energy_terms_pj"])  # logic, sram, dram: shared factors
                margins = []
                for pick in itertools.product((0, 1), repeat=len(terms)):
                    f = {t: a["energy_ranges"][t][i] for t, i in zip(terms, pick, strict=True)}
                    # each design's own fit factor on its logic: the winner high, the other low
                    mine = sum(a["energy_terms_pj"][t] * f[t] for t in terms) + a[
                        "energy_terms_pj"
                    ]["logic"] * f["logic"] * (a["energy_ranges"]["fit"][1] - 1)
                    theirs = sum(b["energy_terms_pj"][t] * f[t] for t in terms) + b[
                        "energy_terms_pj"
                    ]["logic"] * f["logic"] * (b["energy_ranges"]["fit"][0] - 1)
                    margins.append(theirs / mine - 1)
                lows.add(min(margins))
        out.append((key[0], margin, best, winners, runners, lows))
    return sorted(out, key=lambda e: e[:3])


def test_every_point_is_counted_once_in_the_matrices_and_answers(seed, tmp_path):
    rng = np.random.default_rng(seed)
    for trial in range(1):  # one random sweep a run; make seeds draws 200
        records = _random_sweep(rng, tmp_path)
        data = report_data(records, "random")
        family = {r["workload"]["name"]: _family(r) for r in records}
        for m in data.matrices[:2]:
            figure, lower = OBJECTIVES[m.title]
            expected = _brute_force(records, figure, lower)
            got = sorted(((name, c.margin, c.value, c.winner, c.runner_up, c.uncertain)
                          for name, row in zip(m.rows, m.cells, strict=True) for c in row
                          if c.winner), key=lambda g: g[:3])  # fmt: skip
            assert len(m.columns) == len(set(m.columns)), m.columns
            assert len(got) == len(expected), (trial, m.title, len(got), len(expected))
            for g, e in zip(got, expected, strict=True):
                assert g[0] == e[0] and g[1] == pytest.approx(e[1], abs=1e-12) and g[2] == e[2]
                # within uncertainty: no tie, but the runner-up wins at some corner
                allowed = {e[1] >= 0.005 and low < 0.005 for low in e[5]} or {False}
                assert g[5] in allowed, (g, e)
            _check_dataflows(got, expected, (trial, m.title))
            _check_answer(data, m, got, family)


def _check_dataflows(got: list[tuple], expected: list[tuple], where) -> None:
    """Each cell's winner and runner-up are ones the brute force allows. Cells of one workload
    with equal figures and margins (depths that change nothing) are told apart by no figure, so
    some pairing of them must match."""
    groups = defaultdict(lambda: ([], []))
    for g, e in zip(got, expected, strict=True):
        key = (g[0], round(g[1], 12), g[2])
        groups[key][0].append((g[3], g[4]))
        groups[key][1].append((e[3], e[4]))
    for key, (mine, allowed) in groups.items():
        assert any(
            all(
                w in ws and r in rs and w != r for (w, r), (ws, rs) in zip(mine, order, strict=True)
            )
            for order in itertools.permutations(allowed)
        ), (where, key, mine, allowed)


def _check_answer(data, m, cells: list[tuple], family: dict) -> None:
    """The answer's counts per family, recounted from the cells (checked above)."""
    answer = next(a for a in data.answers if a.topic == f"Lowest {m.title}")
    assert "Cells split by a_depth, b_depth, c_depth." in answer.text
    for fam in {family[c[0]] for c in cells}:
        mine = [c for c in cells if family[c[0]] == fam]
        ties = sum(c[1] < 0.005 for c in mine)
        undecided = Counter(c[3] for c in mine if c[5])
        wins = Counter(c[3] for c in mine if c[1] >= 0.005 and not c[5])
        if not wins:
            assert f"{fam}: no dataflow wins any of the {len(mine)} cells" in answer.text
            continue
        found = re.search(rf"{fam}: (WS|OS|IS) in (\d+) of (\d+) cells(?: \(([^)]*)\))?"
                          rf"(?:, median margin of its wins (\d+)%)?", answer.text)  # fmt: skip
        assert found, (fam, answer.text)
        top, rest = found.group(1).lower(), found.group(4) or ""
        assert wins[top] == max(wins.values()) == int(found.group(2)), answer.text
        assert int(found.group(3)) == len(mine), answer.text
        decided, _, within = rest.partition("within uncertainty in")
        others = {d.lower(): int(k) for d, k in re.findall(r"(WS|OS|IS) (\d+)", decided)}
        assert others == {d: k for d, k in wins.items() if d != top}, answer.text
        unsure = {d.lower(): int(k) for d, k in re.findall(r"(WS|OS|IS) (\d+)", within)}
        assert unsure == dict(undecided), answer.text
        tied = re.search(r"tie in (\d+)", rest)
        assert (int(tied.group(1)) if tied else 0) == ties, answer.text
        margins = [c[1] for c in mine if c[3] == top and c[1] >= 0.005 and not c[5]]
        assert int(found.group(5)) == round(100 * statistics.median(margins)), answer.text


def test_a_margins_range_keeps_its_sign():
    """Below one percent the report prints tenths: a range reaching -0.4% reads as negative."""
    from systolic.sweeps.report.answers import Cell

    assert Cell("ws", 0.04, 1.0, "os", (-0.004, 0.05)).range_text == "(-0.4 to 5%)"
    assert Cell("os", 0.4, 1.0, "ws", (0.2, 0.9)).range_text == "(20 to 90%)"
    assert Cell("os", 0.4, 1.0, "ws").range_text == ""


def test_within_uncertainty_starts_just_below_the_tie_threshold():
    """A margin whose range's low end falls just below TIE is within uncertainty; at TIE it is
    not; a tie is a tie, not within uncertainty."""
    from systolic.sweeps.report.answers import TIE, Cell

    assert Cell("os", 0.3, 1.0, "ws", (TIE - 1e-9, 0.5)).uncertain
    assert not Cell("os", 0.3, 1.0, "ws", (TIE, 0.5)).uncertain
    assert not Cell("os", TIE / 2, 1.0, "ws", (-0.1, 0.5)).uncertain  # a tie
    assert not Cell("os", 0.3, 1.0, "ws").uncertain  # no range: latency, throughput
