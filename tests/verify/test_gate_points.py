"""verify/gate_points.py: the plan of gate-level points, and how a point's operands are drawn."""

from __future__ import annotations

from collections import Counter

import numpy as np
from systolic.contract.config import Dataflow
from systolic.models.cycles import predict
from systolic.verify.gate_points import (
    ANNOTATION,
    PLAN,
    POINTS_FILE,
    UNPRICEABLE,
    operands,
    read_points,
)


def test_the_plan_is_the_training_and_held_out_sets_the_fit_needs():
    train = [p for p in PLAN if p.role == "train"]
    # every dataflow at 2x2, 4x4 and 8x8; five kinds of data; three shapes
    assert Counter((p.config.dataflow, p.config.rows, p.config.cols) for p in train) == {
        (d, n, n): 15 for d in Dataflow for n in (2, 4, 8)}  # fmt: skip
    assert {p.data for p in train} == {"random", "zeros", "sparse:0.5", "sparse:0.9", "narrow:3"}
    for p in train:
        m, k, n = p.shape
        counters = predict(p.config, m, k, n).counters
        if p.label == "K <= rows":
            assert k <= p.config.rows
        elif p.label == "K >> rows":
            assert k >= 8 * p.config.rows
        elif p.config.dataflow is not Dataflow.OS:  # a stream shorter than the array stalls
            assert counters["stall_cycles"] > 0, p.key
    held = {(p.config.dataflow, p.config.rows, p.config.cols) for p in PLAN if p.role == "held-out"}
    assert {(d, 16, 16) for d in Dataflow} <= held
    assert any(rows != cols for _, rows, cols in held)  # a non-square array
    precisions = {p.config.precision for p in PLAN if p.role == "precision"}
    assert precisions == {"int16", "bf16"}
    assert len({p.key for p in PLAN}) == len(PLAN)


def test_a_points_operands_are_drawn_again_the_same():
    point = next(p for p in PLAN if p.data == "sparse:0.5" and p.config.rows == 4)
    (a1, b1), (a2, b2) = operands(point), operands(point)
    assert np.array_equal(a1, a2) and np.array_equal(b1, b2)
    assert a1.shape == point.shape[:2] and b1.shape == point.shape[1:]
    assert 0.4 < np.mean(a1 == 0) < 0.6  # about half zeros


def test_the_committed_points_are_the_plans():
    """Every point of the plan is in the data file, once, measured on its device with the
    current annotation (each mesh register's per-bit activity and duty cycle), but those
    OpenSTA cannot price (:data:`UNPRICEABLE`)."""
    records = read_points(POINTS_FILE)
    by_key = {p.key: p for p in PLAN}
    assert len({r["key"] for r in records}) == len(records)
    assert {r["key"] for r in records} == set(by_key) - UNPRICEABLE
    for r in records:
        point = by_key[r["key"]]
        assert r["config"] == point.config.to_dict() and r["seed"] == point.seed
        assert r["annotation"] == ANNOTATION
        assert r["window_cycles"] == r["counters"]["compute_cycles"] > 0
        assert set(r["gate_pj"]) == {"pe_array", "edge", "buffers", "controller", "dma", "control"}
        for name, pj in r["gate_flops_pj"].items():
            assert 0 < pj < r["gate_pj"][name]
