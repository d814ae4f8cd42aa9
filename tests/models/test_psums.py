"""models/psums.py: the compiled partial-sum flips against the definition, worked in Python
integers: each PE's running dot product wrapped to the accumulator's width, and the bits that
differ from its previous value, counted one by one."""

from __future__ import annotations

import numpy as np
import pytest
from systolic.models.psums import output_stationary_flips, stationary_flips


def _wrap(value: int, acc: int) -> int:
    return value % (1 << acc)


def _flips_by_definition(sums, prev: list[list[int]], acc: int):
    """``sums[t][i][c]`` the PE's value after step ``t``: per PE, the bits that change from
    ``prev`` step by step, and the last values."""
    rows, cols = len(prev), len(prev[0])
    flips = [[0] * cols for _ in range(rows)]
    last = [row[:] for row in prev]
    for step in sums:
        for i in range(rows):
            for c in range(cols):
                v = _wrap(step[i][c], acc)
                flips[i][c] += bin(v ^ last[i][c]).count("1")
                last[i][c] = v
    return flips, last


def _mask(acc: int) -> int:
    return (1 << acc) - 1 if acc < 64 else -1


def _case(rng):
    acc = int(rng.choice([2, 7, 16, 32, 48, 63, 64]))
    width = int(rng.integers(1, 17))
    rows, cols, steps = (int(v) for v in rng.integers(1, 7, 3))
    top = 1 << (width - 1)
    prev = [[int(rng.integers(0, 1 << min(acc, 62))) for _ in range(cols)] for _ in range(rows)]
    return acc, top, rows, cols, steps, prev


def _as_array(prev: list[list[int]]) -> np.ndarray:
    return np.array(prev, dtype=np.uint64).view(np.int64)


def _stationary(rng, top, rows, cols, stream):
    """WS/IS: PE (i, c) sums x[t, j] s[j, c] over the rows j <= i, for each streamed t."""
    x, s = rng.integers(-top, top, (stream, rows)), rng.integers(-top, top, (rows, cols))
    sums = [[[sum(int(x[t, j]) * int(s[j, c]) for j in range(i + 1)) for c in range(cols)]
             for i in range(rows)] for t in range(stream)]  # fmt: skip
    return stationary_flips, x, s, sums


def _output_stationary(rng, top, rows, cols, steps):
    """OS: PE (i, c) sums a[i, j] b[j, c] over the steps j <= k, after each step k."""
    a, b = rng.integers(-top, top, (rows, steps)), rng.integers(-top, top, (steps, cols))
    sums = [[[sum(int(a[i, j]) * int(b[j, c]) for j in range(k + 1)) for c in range(cols)]
             for i in range(rows)] for k in range(steps)]  # fmt: skip
    return output_stationary_flips, a, b, sums


@pytest.mark.parametrize("mesh", [_stationary, _output_stationary], ids=["ws-is", "os"])
@pytest.mark.parametrize("case", range(40))
def test_tile_flips_match_the_definition(mesh, case, seed):
    rng = np.random.default_rng([seed, case])
    acc, top, rows, cols, steps, prev = _case(rng)
    kernel, x, w, sums = mesh(rng, top, rows, cols, steps)
    want_flips, want_last = _flips_by_definition(sums, prev, acc)
    flips, last = kernel(x, w, _as_array(prev), _mask(acc))
    assert flips.tolist() == want_flips
    assert last.view(np.uint64).tolist() == want_last
