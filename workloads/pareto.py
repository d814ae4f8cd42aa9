"""Pareto fronts of sweep points: throughput up, latency and energy per inference down.

Points compete when they run the same model at the same sequence length (the batch is a choice
the architect makes, so it is part of the trade-off, not of the grouping).
"""

from __future__ import annotations

from collections import defaultdict

__all__ = ["AREA", "OBJECTIVES", "dominates", "group_key", "objectives_of", "pareto_front"]

#: Figure -> +1 if more is better, -1 if less is better.
OBJECTIVES = {"throughput_inf_s": +1, "latency_s": -1, "energy_per_inference_pj": -1}
#: The objective a synthesized sweep adds (sweeps/synthesis.py): silicon area.
AREA = {"area_mm2": -1}


def objectives_of(records) -> dict[str, int]:
    """:data:`OBJECTIVES`, and area when every successful record has one (``synth: true``)."""
    ok = [r for r in records if r.get("status", "ok") == "ok"]
    return OBJECTIVES | AREA if ok and all("area_mm2" in r for r in ok) else OBJECTIVES


def dominates(a: dict, b: dict, objectives: dict[str, int] = OBJECTIVES) -> bool:
    """``a`` is at least as good as ``b`` in every objective and better in one."""
    better = False
    for key, sign in objectives.items():
        x, y = sign * a[key], sign * b[key]
        if x < y:
            return False
        better |= x > y
    return better


def group_key(record: dict) -> tuple:
    w = record["workload"]
    return w["model"], w.get("seq")


def pareto_front(records: list[dict], objectives: dict[str, int] = OBJECTIVES) -> list[dict]:
    """The records no other record of their group dominates (failed records never count), in
    the order given.

    Sorted best-first on the objectives in turn, a record can only be dominated by one before
    it, and then by one of the front found so far (domination is transitive): the cost is the
    records times the front, not the records squared, which large sweeps need."""
    groups = defaultdict(list)
    for r in records:
        if r.get("status", "ok") == "ok":
            groups[group_key(r)].append(r)
    keep = set()
    for members in groups.values():
        best_first = sorted(members, key=lambda r: [-s * r[k] for k, s in objectives.items()])
        front: list[dict] = []
        for r in best_first:
            if not any(dominates(f, r, objectives) for f in front):
                front.append(r)
        keep.update(id(r) for r in front)
    return [r for r in records if id(r) in keep]
