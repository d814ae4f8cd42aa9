"""Cycle counts of single commands pinned by the architecture, not by the generator.

Nothing here reads contract/timing.py or a component's property: the formulas below are derived
from the microarchitecture on paper, so a change to any timing term (a bank released a cycle
late, a longer pipeline, a slower drain) fails here even when the model and the RTL, which both
read the contract, move together. Each GEMM is one chunk on the device; the cycles are those
its array's controller is busy with it (the device's ``compute_cycles``) once every word is in:
the model's closed form (:func:`models.cycles.command_counters`) must give them, and the
device, whose chunk starts on loads under way and waits for words to land, at least them.

Derivation, WS and IS (the controller runs ``Y[P,R] = X[P,Q] @ S[Q,R]``; WS: P = M, Q = K,
R = N; IS: P = N, Q = K, R = M). Cycle 0 is the first busy cycle.

- Tiles: ``ceil(Q / rows) * ceil(R / cols)``, each preloaded into one of two banks (tile i into
  bank i % 2) in ``rows`` cycles, one row a cycle, then streamed as P vectors, one a cycle.
- The preload port does one tile at a time; a tile streams from the cycle after its preload's
  last row, and the stream port does one tile at a time.
- A bank may be preloaded again from the cycle after the last read of the vector that used
  it: that vector reaches PE (r, c) r + c cycles after entering, and the preload trails it
  (column c delayed c cycles, row r shifting only once the tile's first row reaches it, r
  cycles in), so it overwrites PE (r, c) no earlier than the vector has passed.
- A buffer read issued in cycle t reaches the mesh in t + 2: the SRAM registers its word, and
  a register at the mesh's edge takes it with its flags. A vector's result leaves the mesh
  ``rows + cols - 1`` cycles after it enters (``rows`` skew-and-PE stages down a column, then
  ``cols - 1`` de-skew stages). A result reaching the C buffer is written two cycles later (its
  old word read, registered, then the sum written), and ``busy`` stays until that write, so the
  cycle count is the cycle the last result reaches the C buffer + 3.

OS (``C[M,N]``; tiles of rows x cols outputs, ``ceil(M / rows) * ceil(N / cols)`` of them):

- Each tile streams its K steps back to back; the next tile may follow at once, except that the
  ``last`` steps of consecutive tiles must be ``rows`` cycles apart (each column drains one
  finished row a cycle over one output path), so ``max(rows - K, 0)`` idle cycles follow each.
- The last step reaches PE row 0 two cycles after its read (as above); row r of the tile leaves
  ``cols + r`` cycles later (r + c skew and PE stages, the accumulator read, ``cols - 1 - c``
  de-skew), the last row ``cols + rows - 1`` later; busy holds until its write, two cycles
  more.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig, Dataflow
from systolic.contract.plan import chunk_sizes
from systolic.golden.data import random_operands
from systolic.golden.reference import reference
from systolic.models.cycles import command_counters
from systolic.models.device import predict_device
from systolic.sim.simulate import run_gemms

from ..configs import DEPTHS
from ..helpers import stream_starts


def stationary_cycles(rows: int, cols: int, p: int, q: int, r: int) -> int:
    """WS/IS: the busy cycles of one command, by the rules of the module docstring."""
    release = 1  # issue cycles from a bank's last read to its next load
    tiles = math.ceil(q / rows) * math.ceil(r / cols)
    last_read = stream_starts(rows, p, tiles, release)[-1] + p - 1
    last_result = last_read + 2 + (rows + cols - 1)
    return last_result + 3


def os_cycles(rows: int, cols: int, m: int, k: int, n: int) -> int:
    """OS: the busy cycles of one command, by the rules of the module docstring."""
    tiles = math.ceil(m / rows) * math.ceil(n / cols)
    gap = max(rows - k, 0)
    last_read = (tiles - 1) * (k + gap) + k - 1
    last_row_out = last_read + 2 + cols + rows - 1
    return last_row_out + 3


def expected_cycles(config: ArrayConfig, m: int, k: int, n: int) -> int:
    rows, cols = config.rows, config.cols
    if config.dataflow is Dataflow.OS:
        return os_cycles(rows, cols, m, k, n)
    if config.dataflow is Dataflow.WS:
        return stationary_cycles(rows, cols, m, k, n)
    return stationary_cycles(rows, cols, n, k, m)


def _grid(config: ArrayConfig) -> list[tuple[int, int, int]]:
    """Shapes around every boundary of the timing: one and several tiles each way, streams
    shorter and longer than the preload-bound threshold ``rows``, K below, at and above
    ``rows``; those that fit the buffers as one command."""
    rows, cols = config.rows, config.cols
    threshold = rows
    streams = sorted({1, threshold - 1, threshold, threshold + 1, 2 * threshold + 1} - {0})
    ks = sorted({1, rows - 1, rows, rows + 1, 2 * rows + 1} - {0})
    if config.dataflow is Dataflow.OS:
        ms, ns = sorted({1, rows, rows + 1, 2 * rows + 1}), sorted({1, cols, cols + 1})
    elif config.dataflow is Dataflow.WS:
        ms, ns = streams, sorted({cols, 2 * cols + 1})
    else:
        ms, ns = sorted({cols, 2 * cols + 1}), streams
    shapes = []
    for m in ms:
        for k in ks:
            for n in ns:
                if chunk_sizes(config, m, k, n) == {"m": m, "k": k, "n": n}:  # one command
                    shapes.append((m, k, n))
    return shapes


def test_the_grid_reaches_every_regime():
    """The grid is not vacuous: on 3x5, back-to-back and preload-bound streams, K below and
    above rows, several tiles, all as single commands."""
    for dataflow in Dataflow:
        shapes = _grid(ArrayConfig(dataflow, 3, 5, **DEPTHS))
        assert len(shapes) >= 12, (dataflow, shapes)
        assert {k < 3 for _, k, _ in shapes} == {True, False}
    ws = _grid(ArrayConfig("ws", 3, 5, **DEPTHS))
    assert {m for m, _, _ in ws} >= {2, 3, 4}  # the threshold: streams as long as the preload


def test_paper_formulas_on_hand_worked_cases():
    """Spot values worked by hand. WS 2x2, M = 1, K = 6, N = 2: three tiles; release W = 2;
    tile 0 preloads 0-1, streams 2; tile 1 preloads 2-3 (bank 1), streams 4; tile 2 reuses
    bank 0, free from 2 + 1 = 3 and the port from 4: preloads 4-5, streams 6; its result
    reaches C in 6 + 2 + 3 = 11, is written in 13, so 14 busy cycles. OS 4x4, M = 30, K = 20,
    N = 17: 40 tiles, last read 39 * 20 + 19 = 799, last row out 799 + 2 + 7 = 808, written in
    810, 811 cycles."""
    assert stationary_cycles(2, 2, 1, 6, 2) == 14
    assert os_cycles(4, 4, 30, 20, 17) == 811


@pytest.mark.parametrize(
    "config",
    [
        ArrayConfig(d, r, c, acc_width=12 if (r, c) == (2, 2) else 32, **DEPTHS)
        for d in Dataflow
        for r, c in [(3, 5), (2, 2)]
    ],  # test_gemms.py's hardware
    ids=lambda c: c.name,
)
def test_cycles_follow_the_architecture(config, seed):
    shapes = _grid(config)
    rng = np.random.default_rng([seed, config.rows, config.cols])
    operands = random_operands(rng, config, shapes)
    for (a, b), res in zip(operands, run_gemms(config, operands), strict=True):
        m, k, n = res.shape
        where = f"{config.name} {m}x{k}x{n}"
        assert res.counters["jobs"] == 1, where
        np.testing.assert_array_equal(res.c, reference(config, a, b), err_msg=where)
        expected = expected_cycles(config, m, k, n)
        # with every word in from its start: what the model's closed form gives
        assert command_counters(config, m, k, n)["cycles"] == expected, where
        # on the device the chunk starts on its loads under way and waits for words to land:
        # at least that, the more exactly as the model follows those waits
        got = res.counters["compute_cycles"]
        assert got >= expected, f"{where}: the array's controller was busy {got} cycles"
        assert got == predict_device(config, res.descriptor, res.memory)["compute_cycles"], where
