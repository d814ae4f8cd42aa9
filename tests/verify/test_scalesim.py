"""verify/scalesim.py: the mapping onto SCALE-Sim gives its documented fold formulas, and
`systolic compare --scalesim` shows them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from systolic.contract.config import ArrayConfig
from systolic.verify.scalesim import scalesim_cycles


@pytest.mark.parametrize(
    ("dataflow", "expected"),
    [
        # SCALE-Sim's documented fold costs, on a 4-row x 2-column array, M=10, K=12, N=2, with
        # its total = folds * per-fold - 1. The array is not square and the dimensions differ,
        # so a swapped M, K or N would change every figure.
        ("ws", 3 * (2 * 4 + 2 + 10 - 2) - 1),  # folds ceil(K/4)*ceil(N/2) = 3; 2R + C + M - 2
        ("is", 15 * (2 * 4 + 2 + 2 - 2) - 1),  # folds ceil(K/4)*ceil(M/2) = 15; 2R + C + N - 2
        ("os", 3 * (12 + 4 + 2 - 2) - 1),  # folds ceil(M/4)*ceil(N/2) = 3; K + R + C - 2
    ],
)
def test_mapping_gives_the_documented_cycles(dataflow, expected):
    assert scalesim_cycles(ArrayConfig(dataflow, 4, 2), 10, 12, 2) == expected


def test_compare_shows_the_scalesim_column():
    r = subprocess.run(
        [sys.executable, "-m", "systolic.cli", "compare", "--dataflow", "os", "--rows", "3",
         "--cols", "5", "--a-depth", "48", "--b-depth", "48", "--c-depth", "48", "--m", "10",
         "--k", "12", "--n", "2", "--scalesim", "--json"],  # tests/rtl/test_gemms.py's OS 3x5
        capture_output=True, text=True,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)  # at the two default DRAM settings
    assert len(rows) == 2
    for row in rows:
        # SCALE-Sim's OS: ceil(10/3) * ceil(2/5) = 4 folds of K + R + C - 2 = 18 cycles, less
        # one (a rows-columns swap would give 2 folds, 35)
        assert row["scalesim_cycles"] == 71 and row["differences"] == {}
