"""verify/logic_fit.py: the energy model's logic prices are the fit of the committed gate-level
points, and the model holds the issue's bounds on the points held out of the fit."""

from __future__ import annotations

import tomllib
from collections import defaultdict

import pytest
from systolic.verify.gate_points import POINTS_FILE, read_points
from systolic.verify.logic_fit import LOGIC_FILE, fit, fit_range, gate_pj, precision_ranges

#: Model against gate level on every held-out point (issue 32): the mesh within 15%, the
#: device's whole logic within 20%, the zero-operand floor within 10%, and the OS/WS and IS/WS
#: mesh ratios within 5%.
MESH, LOGIC, FLOOR, RATIO = 0.15, 0.20, 0.10, 0.05


@pytest.fixture(scope="module")
def fitted():
    records = read_points(POINTS_FILE)
    assert any(r["role"] == "train" for r in records), f"no training points in {POINTS_FILE}"
    return fit(records)


def test_the_committed_prices_are_the_fit_of_the_committed_points(fitted):
    """So the prices cannot drift from the data: refitting gives the file's figures."""
    committed = tomllib.loads(LOGIC_FILE.read_text())
    assert committed["price"] == pytest.approx(fitted.prices, rel=1e-5, abs=1e-9)
    low, high, _ = fit_range(fitted)
    assert (committed["range"]["low"], committed["range"]["high"]) == pytest.approx(
        (low, high), abs=1e-4)  # fmt: skip
    for kind, (low, high, _) in precision_ranges(fitted).items():
        entry = committed["precision_range"][kind]
        assert (entry["low"], entry["high"]) == pytest.approx((low, high), abs=1e-4), kind


def _held(fitted) -> list[dict]:
    held = [r for r in fitted.records if r["role"] == "held-out"]
    assert held, "no held-out points"
    return held


def test_the_model_holds_its_bounds_on_every_held_out_point(fitted):
    for r in _held(fitted):
        mesh, logic = fitted.error(r, "mesh"), fitted.error(r, "logic")
        bound = FLOOR if r["data"] == "zeros" else MESH
        assert abs(mesh) <= bound, (r["key"], f"mesh {mesh:+.1%}")
        assert abs(logic) <= (FLOOR if r["data"] == "zeros" else LOGIC), (r["key"], logic)


def test_the_dataflows_mesh_ratios_hold_on_the_held_out_arrays(fitted):
    """OS over WS and IS over WS, same array and data: the model's ratio within 5% of the gate
    level's, on every dataflow's held-out device."""
    by = defaultdict(dict)
    for r in _held(fitted):
        c = r["config"]
        by[(c["rows"], c["cols"], r["data"])][c["dataflow"]] = r
    pairs = 0
    for key, runs in by.items():
        if "ws" not in runs:
            continue
        for other in ("os", "is"):
            if other in runs:
                gate = gate_pj(runs[other], "mesh") / gate_pj(runs["ws"], "mesh")
                model = fitted.model_pj(runs[other], "mesh") / fitted.model_pj(runs["ws"], "mesh")
                assert model / gate - 1 == pytest.approx(0, abs=RATIO), (key, other, model, gate)
                pairs += 1
    assert pairs >= 4


def test_every_dataflow_is_fitted_and_held_out(fitted):
    train = {r["config"]["dataflow"] for r in fitted.records if r["role"] == "train"}
    held = {r["config"]["dataflow"] for r in _held(fitted)}
    assert train == held == {"ws", "os", "is"}


def test_the_node_scalings_range_is_the_published_datapath_over_the_scaled_fit():
    """The technology's node range: Horowitz's 45 nm multiply and add (0.2 + 0.1 pJ) over the
    compute energy per MAC the model gives a random int8 GEMM (recomputed here from the
    report's compute traffic, at the nominal figures)."""
    import numpy as np
    from systolic.contract.config import ArrayConfig
    from systolic.models.energy import load_coefficients, model_energy
    from systolic.verify.logic_fit import node_range

    co = load_coefficients()
    rng = np.random.default_rng(0)
    a, b = rng.integers(-128, 128, (128, 256)), rng.integers(-128, 128, (256, 128))
    report = model_energy(ArrayConfig("ws", 16, 16), a, b, co)
    per_mac = report.traffic["compute"]["array"] / report.macs
    low, high, _ = node_range()
    assert (low, high) == pytest.approx((0.3 / per_mac, 1.0))
    assert co.node_range == pytest.approx((low, high), abs=1e-4)
    assert low < 1  # the synthesized, scaled datapath costs more than the full-custom one


#: int16 and bf16 (issue 32: "each get gate-level points"): the int8 prices predict int16's
#: mesh (a partial-product flip priced by its multiplier's width, models.logic); the float terms
#: are fitted to the bf16 points of one tile's reduction, those of a long one check them. Their
#: bound is wider than the int8 held-out points': measured at the commit of this line, WS and
#: IS int16 on random data -15% to -24%, WS and IS bf16 on 50%-sparse data of a long
#: reduction -19% and -21%; the answers carry each precision's own range (logic_osu018.toml's
#: precision_range). OS bf16 has no checking point (tests/verify/test_gate_points.py).
PRECISION = 0.30


def test_int16_and_bf16_points_hold_the_mesh_bound(fitted):
    checked = [r for r in fitted.records if r["role"] == "precision"
               and not (r["config"]["number"] == "bf16" and r["label"] == "K <= rows")]  # fmt: skip
    assert {r["config"]["number"] for r in checked} == {"int", "bf16"}
    for r in checked:
        c = r["config"]
        precision = "bf16" if c["number"] == "bf16" else f"int{c['a_width']}"
        error = fitted.error(r, "mesh")
        assert abs(error) <= PRECISION, (r["key"], precision, error)
