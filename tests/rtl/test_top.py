"""The accelerator (rtl/top.py) under Verilator: whole GEMMs from the buffers, bit-exact, every
dataflow, with and without stream pauses.

Shapes include ragged ones, dimensions of 1 and GEMMs larger than the buffers (tiled by the host).
Every counter of every command must equal the analytical model's; the sanity checks below hold
for any correct design, whatever the model says."""

from __future__ import annotations

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig, Dataflow
from systolic.contract.layouts import footprint
from systolic.contract.plan import plan
from systolic.golden.data import random_operands
from systolic.golden.reference import reference
from systolic.sim.simulate import run_gemms

from ..configs import DEPTHS
from ..conftest import SEED
from ..helpers import check_against_model

CONFIGS = [
    ArrayConfig(d, r, c, **DEPTHS)
    for d in Dataflow
    for r, c in [(1, 1), (1, 4), (4, 1), (2, 2), (4, 4), (3, 5), (8, 8)]
]


def _shapes(rng, config):
    r, c = config.rows, config.cols
    rand = lambda hi: int(rng.integers(1, hi, endpoint=True))  # noqa: E731
    return [
        (1, 1, 1),
        (r, r, c),  # exactly one tile
        (1, rand(3 * r), rand(3 * c)),
        (rand(3 * r), 1, rand(3 * c)),
        (rand(3 * r), rand(3 * r), 1),
        (rand(4 * r), rand(4 * r), rand(4 * c)),  # ragged
        (rand(4 * r), rand(4 * r), rand(4 * c)),
        (3 * r + 1, 7 * r + 2, 5 * c + 3),  # larger than the buffers
        (50 * r, r, 2 * c),  # chunked along M only: the host keeps B resident
    ]


def _check(config, operands, results):
    for (a, b), res in zip(operands, results, strict=True):
        m, k, n = res.shape
        where = f"{config.name} {m}x{k}x{n}, replay with SYSTOLIC_SEED={SEED}"
        np.testing.assert_array_equal(res.c, reference(config, a, b), err_msg=where)
        assert res.errors == 0, where
        check_against_model(config, res, where)
        cnt = res.counters
        # Every PE does at most one MAC a cycle, and only while a vector streams.
        assert cnt["cycles"] * config.pes >= res.macs, where
        assert cnt["stream_cycles"] * config.pes >= res.macs, where
        parts = ("stream_cycles", "fill_cycles", "stall_cycles", "drain_cycles")
        assert sum(cnt[p] for p in parts) == cnt["cycles"], where
        # Each command reads every operand word it needs at least once and writes every C word.
        need = {key: 0 for key in ("a", "b", "c")}
        for chunk in plan(config, m, k, n):
            for key, words in footprint(config, *chunk.shape).items():
                need[key] += words
        assert cnt["a_reads"] >= need["a"] and cnt["b_reads"] >= need["b"], where
        assert cnt["c_writes"] >= need["c"], where
        # Off-chip: at least every operand word once, and every finished C word exactly once.
        assert res.offchip_words["c"] == sum(
            footprint(config, ch.shape[0], ch.shape[1], ch.shape[2])["c"]
            for ch in plan(config, m, k, n) if ch.last_k
        ), where  # fmt: skip
        if config.dataflow is Dataflow.OS:
            assert cnt["preload_cycles"] == 0, where
        else:
            assert cnt["preload_cycles"] >= config.rows, where


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.name)
def test_gemms_bit_exact(config, seed):
    rng = np.random.default_rng(
        [seed, config.rows, config.cols, list(Dataflow).index(config.dataflow)]
    )
    operands = random_operands(rng, config, _shapes(rng, config))
    _check(config, operands, run_gemms(config, operands, seed=seed))


@pytest.mark.parametrize("dataflow", list(Dataflow), ids=lambda d: d.value)
def test_stream_pauses(dataflow, seed):
    """Random valid/ready pauses on every host stream (half the cycles): still exact."""
    config = ArrayConfig(dataflow, 3, 5, **DEPTHS)
    rng = np.random.default_rng([seed, 99])
    operands = random_operands(rng, config, [(7, 9, 11), (20, 31, 17)])
    _check(config, operands, run_gemms(config, operands, pause=0.5, seed=seed))


@pytest.mark.parametrize("dataflow", list(Dataflow), ids=lambda d: d.value)
def test_narrow_accumulators_wrap_in_the_accelerator(dataflow, seed):
    """Sums past a 12-bit accumulator wrap exactly as two's-complement hardware does, in the
    PEs, across K tiles and across K chunks accumulated in the C buffer."""
    config = ArrayConfig(dataflow, 2, 2, acc_width=12, **DEPTHS)
    rng = np.random.default_rng([seed, 12])
    shapes = [(5, 60, 3), (3, 7, 4), (9, 33, 6)]  # 60 and 33 exceed one K chunk of 48 words
    operands = [(rng.choice([-128, -127, 126, 127], (m, k)), rng.choice([-128, 127], (k, n)))
                for m, k, n in shapes]  # fmt: skip
    wrapped = sum(int((np.abs(a @ b) >= 1 << 11).sum()) for a, b in operands)
    assert wrapped > 0, "the operands must overflow the accumulator"
    results = run_gemms(config, operands, seed=seed)
    assert any(len(r.commands) > 1 for r in results)  # C accumulates across K chunks
    _check(config, operands, results)
