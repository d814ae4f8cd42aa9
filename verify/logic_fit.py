"""The energy model's logic terms, fitted to gate-level power and checked on points held out.

The points (:mod:`verify.gate_points`, ``models/coefficients/gate_osu018.jsonl``) give
OpenSTA's energy of every component of a device over a GEMM's busy window at 0.18 um. Each
point's events come from :func:`models.logic.logic_events` on the *model's* view of the GEMM
(toggles predicted from its operands, :func:`models.toggles.predict_toggles`, and the model's
counters), so the fit prices exactly what an estimate counts. Two non-negative least-squares
fits on relative error, over the training points only: the mesh (PE array and edge registers)
from the datapath terms, and the rest of the device's logic (buffers' ports, controller, DMA,
queue, control registers) from the others. No node scaling happens here: the prices are
0.18 um picojoules, and the energy model scales them (models/energy.py).

``python -m systolic.verify.logic_fit`` (``make bench-power``) refits, prints the table of
every point (gate level, model, error; training and held out) and, with ``--write``, writes the
prices to ``models/coefficients/logic_osu018.toml``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
from scipy.optimize import nnls
from systolic.contract.config import ArrayConfig
from systolic.models.cycles import predict
from systolic.models.energy import (
    DEFAULT_COEFFICIENTS,
    fit_kind,
    load_coefficients,
    model_energy,
)
from systolic.models.logic import TERMS, logic_events
from systolic.models.toggles import flag_flips, predict_toggles

from .gate_points import POINTS_FILE, Point, operands, read_points

__all__ = ["PARTS", "ROWS", "Fit", "events", "fit", "LOGIC_FILE"]

LOGIC_FILE = Path(__file__).parents[1] / "models" / "coefficients" / "logic_osu018.toml"
#: Each fitted part: the gate-level components, which of their cells (flip-flops, the other
#: logic or all), and the terms that price it. The mesh's registers and its arithmetic are fitted
#: apart, so that each price means what its name says.
PARTS = {
    "mesh_flops": (("pe_array", "edge"), "flops",
                   ("mesh_clock", "pipeline", "stationary", "edge", "accumulator")),
    "mesh_logic": (("pe_array", "edge"), "logic",
                   ("multiplier", "multiplier_both", "partial_product", "partial_product_both",
                    "adder", "mac", "psum_add",
                    "flag", "edge_mux", "stationary_mux", "multiplier_fp", "adder_fp",
                    "clock_tree", "pe_cycle", "pe_cycle_fp")),
    "device": (("buffers", "controller", "dma", "control"), "all",
               ("buffer", "control", "buffer_cycle", "device_cycle")),
}  # fmt: skip
#: The float terms, fitted apart on the bf16 devices' points of one tile's reduction (the
#: int8 prices held), to the mesh's other logic the int8 terms leave unexplained; the bf16
#: points of a long reduction check them.
FLOAT = ("mesh_logic", ("multiplier_fp", "adder_fp", "pe_cycle_fp"), "K <= rows")
#: The rows a user reads: the mesh, and the device's whole logic (the mesh included).
ROWS = {"mesh": ("mesh_flops", "mesh_logic"), "logic": tuple(PARTS)}


def _point(record: dict) -> Point:
    config = ArrayConfig.from_dict(record["config"])
    return Point(config, tuple(record["shape"]), record["data"], record["role"], record["label"])


@cache
def _events(key: str, record_json: str) -> dict[str, float]:
    record = json.loads(record_json)
    point = _point(record)
    assert point.key == key
    a, b = operands(point)
    config = point.config
    counters = predict(config, *point.shape).counters
    totals: dict[str, float] = dict.fromkeys(TERMS, 0.0)
    flags = flag_flips(config, *point.shape)
    for term, _, count in logic_events(config, counters, predict_toggles(config, a, b),
                                       flags=flags):  # fmt: skip
        totals[term] += count
    return totals


def events(record: dict) -> dict[str, float]:
    """Each term's count for a measured point, from the model's view of its GEMM."""
    return _events(record["key"], json.dumps(record, sort_keys=True))


def gate_pj(record: dict, part: str) -> float:
    """The gate-level energy (0.18 um, pJ) of one fitted part (or row) of a point."""
    if part in ROWS:
        return sum(gate_pj(record, p) for p in ROWS[part])
    components, cells, _ = PARTS[part]
    flops = sum(record["gate_flops_pj"][c] for c in components)
    if cells == "flops":
        return flops
    whole = sum(record["gate_pj"][c] for c in components)
    return whole - flops if cells == "logic" else whole


@dataclass
class Fit:
    """Prices (pJ per event at 0.18 um) and, per point, each part's fitted energy."""

    prices: dict[str, float]
    records: list[dict]

    def model_pj(self, record: dict, part: str) -> float:
        if part in ROWS:
            return sum(self.model_pj(record, p) for p in ROWS[part])
        counts = events(record)
        return sum(self.prices[t] * counts[t] for t in PARTS[part][2])

    def error(self, record: dict, part: str) -> float:
        """Model over gate level, minus one."""
        return self.model_pj(record, part) / gate_pj(record, part) - 1


def _nnls(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Non-negative prices minimizing the relative error of ``x @ prices`` against ``y``."""
    scale = x.max(axis=0)
    scale[scale == 0] = 1.0
    solution, _ = nnls(x / scale / y[:, None], np.ones_like(y))
    return solution / scale


def fit(records: list[dict]) -> Fit:
    """Fit every part's prices to the training points among ``records``, then the float terms
    (:data:`FLOAT`) to the bf16 points that train them."""
    train = [r for r in records if r["role"] == "train"]
    prices: dict[str, float] = dict.fromkeys(TERMS, 0.0)
    for part, (_, _, terms) in PARTS.items():
        x = np.array([[events(r)[t] for t in terms] for r in train], dtype=float)
        y = np.array([gate_pj(r, part) for r in train])
        prices |= dict(zip(terms, _nnls(x, y), strict=True))
    part, terms, label = FLOAT
    floats = [r for r in records if r["role"] == "precision" and r["label"] == label
              and r["config"]["number"] == "bf16"]  # fmt: skip
    if floats:
        first = Fit(prices, records)
        x = np.array([[events(r)[t] for t in terms] for r in floats], dtype=float)
        rest = np.array([gate_pj(r, part) - first.model_pj(r, part) for r in floats])
        y = np.array([gate_pj(r, part) for r in floats])
        solution, _ = nnls(x / y[:, None], np.maximum(rest, 0) / y)
        prices |= dict(zip(terms, solution, strict=True))
    return Fit(prices, records)


def precision_ranges(f: Fit) -> dict[str, tuple[float, float, str]]:
    """The fit's range for int16's and bf16's arithmetic, from their points (bf16's that the
    float terms were not fitted to): gate level over model of the device's logic."""
    out = {}
    for kind in ("int16", "bf16"):
        points = [r for r in f.records
                  if r["role"] == "precision" and fit_kind(_point(r).config) == kind
                  and not (kind == "bf16" and r["label"] == FLOAT[2])]  # fmt: skip
        if points:
            ratios = [1 / (1 + f.error(r, "logic")) for r in points]
            out[kind] = (min(1.0, *ratios), max(1.0, *ratios),
                         f"gate level over model, the device's logic on the {len(points)} {kind} "
                         f"points that check it (verify/logic_fit.py)")  # fmt: skip
    return out


def fit_range(f: Fit) -> tuple[float, float, str]:
    """The range of the true logic energy around the model's, from the device's whole logic on
    the held-out points (the training points when none is held out): gate level over model."""
    held = [r for r in f.records if r["role"] == "held-out"]
    role = "held-out" if held else "training"
    ratios = [1 / (1 + f.error(r, "logic")) for r in held or f.records]
    low, high = min(1.0, *ratios), max(1.0, *ratios)
    return low, high, (f"gate level over model, the device's logic on the {len(ratios)} "
                       f"{role} points (verify/logic_fit.py)")  # fmt: skip


#: Horowitz (ISSCC 2014) at 45 nm: an 8-bit multiply 0.2 pJ, a 32-bit add 0.1 pJ.
HOROWITZ_MAC_PJ = 0.3


def node_range() -> tuple[float, float, str]:
    """The node scaling's range: a full-custom 45 nm datapath (Horowitz's published multiply and
    add) against the fitted arithmetic scaled from 0.18 um (the compute energy per MAC of a
    random int8 GEMM on WS 16x16, the technology's nominal figure): the low end; the scaled
    figure itself: the high end."""
    config = ArrayConfig("ws", 16, 16)
    rng = np.random.default_rng(0)
    a, b = rng.integers(-128, 128, (128, 256)), rng.integers(-128, 128, (256, 128))
    report = model_energy(config, a, b, load_coefficients())
    scaled = report.traffic["compute"]["array"] / report.macs
    low = HOROWITZ_MAC_PJ / scaled
    return low, 1.0, (f"Horowitz ISSCC 2014's 45 nm 8-bit multiply and 32-bit add (0.3 pJ) over "
                      f"the fitted arithmetic scaled from 0.18 um ({scaled:.3f} pJ per random "
                      f"int8 MAC, WS 16x16; verify/logic_fit.py): a full-custom datapath, "
                      f"against the synthesized one scaled")  # fmt: skip


def write_node_range(path: Path = DEFAULT_COEFFICIENTS) -> None:
    """Write :func:`node_range` into the technology file's ``logic.node_range``."""
    low, high, source = node_range()
    text = path.read_text()
    line = f'node_range = {{ low = {low:.4f}, high = {high:.4f}, source = "{source}" }}'
    new, n = re.subn(r"^node_range = \{.*\}$", line, text, flags=re.M)
    assert n == 1, f"{path}: no node_range line"
    path.write_text(new)


def write(f: Fit, path: Path = LOGIC_FILE) -> None:
    """Write the fitted prices as the energy model's logic file."""
    train = sum(r["role"] == "train" for r in f.records)
    low, high, source = fit_range(f)
    lines = [
        "# The energy model's logic prices, pJ per event at 0.18 um: written by",
        "# `python -m systolic.verify.logic_fit --write` from gate_osu018.jsonl; do not edit.",
        "",
        'name = "logic_osu018"',
        "node_nm = 180",
        'cell_library = "OSU 0.18 um standard cells at 1.8 V (Debian qflow-tech-osu018)"',
        f'source = "non-negative least squares on relative error over {train} training points '
        f'of OpenSTA per-instance power (verify/logic_fit.py)"',
        f'range = {{ low = {low:.4f}, high = {high:.4f}, source = "{source}" }}',
        "",
        "[precision_range]",
        *(
            f'{kind} = {{ low = {low:.4f}, high = {high:.4f}, source = "{source}" }}'
            for kind, (low, high, source) in precision_ranges(f).items()
        ),
        "",
        "[price]",
        *(f"{term} = {price:.6g}  # {TERMS[term][1]}" for term, price in f.prices.items()),
    ]
    path.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    """Refit the logic terms and print every point: gate level against the fitted model."""
    p = argparse.ArgumentParser(
        prog="python -m systolic.verify.logic_fit", description=main.__doc__
    )
    p.add_argument("--points", type=Path, default=POINTS_FILE)
    p.add_argument("--write", action="store_true", help=f"write the prices to {LOGIC_FILE}")
    args = p.parse_args(argv)
    records = read_points(args.points)
    f = fit(records)
    if args.write:
        write(f)
        write_node_range()
    print("prices at 0.18 um (pJ per event):")
    for term, price in f.prices.items():
        print(f"  {term:<14} {price:10.5f}   {TERMS[term][1]}")
    print(f"\n{'point':<46} {'role':<9} {'mesh gate':>10} {'model':>8} {'logic gate':>11} "
          f"{'model':>8}  (pJ/cycle at 0.18 um)")  # fmt: skip
    for r in records:
        w = r["window_cycles"]
        cells = []
        for part in ROWS:
            cells.append(f"{gate_pj(r, part) / w:>10.1f} {f.error(r, part) * 100:>+7.1f}%")
        print(f"{r['key']:<46} {r['role']:<9} " + " ".join(cells))
    print("\nworst model error by role and dataflow (mesh / the device's logic):")
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in records:
        groups.setdefault((r["role"], r["config"]["dataflow"]), []).append(r)
    for (role, dataflow), rs in sorted(groups.items()):
        worst = [max((f.error(r, part) for r in rs), key=abs) for part in ROWS]
        print(f"  {role:<9} {dataflow}: {len(rs):>3} points, mesh {worst[0]:+.1%}, "
              f"logic {worst[1]:+.1%}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
