"""workloads/pareto.py: fronts on hand-made points, ties included."""

from __future__ import annotations

import random

from systolic.workloads.pareto import dominates, pareto_front


def _p(name, throughput, latency, energy, model="m"):
    return {"id": name, "workload": {"model": model, "seq": None}, "throughput_inf_s": throughput,
            "latency_s": latency, "energy_per_inference_pj": energy}  # fmt: skip


def test_pareto_front_on_hand_made_points():
    points = [
        _p("fast", 100, 1.0, 50),  # best latency and throughput
        _p("frugal", 10, 5.0, 10),  # best energy
        _p("middle", 50, 2.0, 30),  # a trade-off: on the front
        _p("worse", 40, 2.5, 35),  # dominated by middle
        _p("tie", 50, 2.0, 30),  # equal to middle: neither dominates
        _p("other", 1, 100.0, 1000, model="n"),  # alone in its group: on its front
    ]
    assert dominates(points[2], points[3]) and not dominates(points[2], points[4])
    assert sorted(p["id"] for p in pareto_front(points)) == [
        "fast", "frugal", "middle", "other", "tie"]  # fmt: skip


def test_pareto_front_equals_its_definition_on_random_points(seed):
    """The sort-based front against the definition, record by record against every other, on
    random points with many ties (values drawn from few levels)."""
    rng = random.Random(seed)
    points = [_p(str(i), rng.randint(1, 6), rng.randint(1, 6), rng.randint(1, 6),
                 model=rng.choice("xy")) for i in range(400)]  # fmt: skip
    expected = [
        p for p in points
        if not any(dominates(o, p) for o in points if o is not p and o["workload"] == p["workload"])
    ]  # fmt: skip
    assert pareto_front(points) == expected
