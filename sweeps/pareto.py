"""Pareto fronts of sweep points: throughput up, latency and energy per inference down.

Points compete when they run the same model at the same sequence length (the batch is a choice
the architect makes, so it is part of the trade-off, not of the grouping).
"""

from __future__ import annotations

from collections import defaultdict

__all__ = ["OBJECTIVES", "dominates", "group_key", "pareto_front"]

#: Figure -> +1 if more is better, -1 if less is better.
OBJECTIVES = {"throughput_inf_s": +1, "latency_s": -1, "energy_per_inference_pj": -1}


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
    """The records no other record of their group dominates (failed records never count)."""
    groups = defaultdict(list)
    for r in records:
        if r.get("status", "ok") == "ok":
            groups[group_key(r)].append(r)
    front = []
    for members in groups.values():
        front += [
            r
            for r in members
            if not any(dominates(o, r, objectives) for o in members if o is not r)
        ]
    return front
