"""The accelerator (the device of rtl/device.py on the DRAM model) under Verilator: whole GEMMs
from DRAM, bit-exact, every dataflow, arrays from 1x1 up.

Shapes include ragged ones, dimensions of 1 and GEMMs larger than the buffers (chunked by the
device's sequencer). Every counter must equal the models'; the sanity checks below hold for any
correct design, whatever the models say."""

from __future__ import annotations

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig, Dataflow
from systolic.contract.dma import containers, jobs
from systolic.contract.layouts import footprint
from systolic.golden.data import random_operands
from systolic.golden.reference import reference
from systolic.sim.simulate import run_gemms

from ..configs import DEPTHS
from ..conftest import SEED
from ..helpers import check_against_model

#: The 2x2 arrays have 12-bit accumulators that random int8 data wraps: the same hardware as
#: test_narrow_accumulators_wrap_in_the_device and test_timing.py (one build each); 1x1 and
#: 3x5 keep 32 bits, which nothing here wraps.
CONFIGS = [
    ArrayConfig(d, r, c, acc_width=12 if (r, c) == (2, 2) else 32, **DEPTHS)
    for d in Dataflow
    for r, c in [(1, 1), (2, 2), (3, 5)]  # 2x2 and 3x5 are built for test_timing.py too
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
        (3 * r + 1, 7 * r + 2, 5 * c + 3),  # larger than the buffers
        (50 * r, r, 2 * c),  # chunked along M only: B stays resident
    ]


def _check(config, operands, results):
    for (a, b), res in zip(operands, results, strict=True):
        m, k, n = res.shape
        where = f"{config.name} {m}x{k}x{n}, replay with SYSTOLIC_SEED={SEED}"
        np.testing.assert_array_equal(res.c, reference(config, a, b), err_msg=where)
        assert res.error == 0, where
        check_against_model(config, res, where)
        cnt = res.counters
        # Every PE does at most one MAC a cycle, and only while a vector streams.
        assert cnt["compute_cycles"] * config.pes >= res.macs, where
        assert cnt["stream_cycles"] * config.pes >= res.macs, where
        assert cnt["cycles"] >= cnt["compute_cycles"] + 1, where  # loads come first
        parts = ("stream_cycles", "fill_cycles", "stall_cycles", "drain_cycles")
        assert sum(cnt[p] for p in parts) == cnt["compute_cycles"], where
        # Each chunk reads every operand word it needs at least once and writes every C word.
        need = dict.fromkeys("abc", 0)
        for job in jobs(config, res.descriptor):
            for key, words in footprint(config, *job.chunk.shape).items():
                need[key] += words
        assert cnt["a_reads"] >= need["a"] and cnt["b_reads"] >= need["b"], where
        assert cnt["c_writes"] >= need["c"], where
        # DRAM: every operand word at least once; every C word out once (K is innermost)
        words = footprint(config, m, k, n)
        off = res.offchip_words
        assert off["a"] >= words["a"] and off["b"] >= words["b"], where
        if res.descriptor.chunk[1] >= k:  # K in one chunk, innermost: B stays for every M chunk
            assert off["b"] == words["b"], where
        assert off["p_out"] == off["c_in"] == 0, where
        assert off["c"] == words["c"], where
        assert res.dram["write_bytes_c"] == words["c"] * containers(config)["p"], where
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
    _check(config, operands, run_gemms(config, operands))


@pytest.mark.parametrize("dataflow", list(Dataflow), ids=lambda d: d.value)
def test_narrow_accumulators_wrap_in_the_device(dataflow, seed):
    """Sums past a 12-bit accumulator wrap exactly as two's-complement hardware does, in the
    PEs, across K tiles and across K chunks accumulated in the C buffer."""
    config = ArrayConfig(dataflow, 2, 2, acc_width=12, **DEPTHS)
    rng = np.random.default_rng([seed, 12])
    shapes = [(5, 60, 3), (3, 7, 4), (9, 33, 6)]  # 60 and 33 exceed one K chunk
    operands = [(rng.choice([-128, -127, 126, 127], (m, k)), rng.choice([-128, 127], (k, n)))
                for m, k, n in shapes]  # fmt: skip
    wrapped = sum(int((np.abs(a @ b) >= 1 << 11).sum()) for a, b in operands)
    assert wrapped > 0, "the operands must overflow the accumulator"
    results = run_gemms(config, operands)
    assert any(r.descriptor.chunk[1] < r.shape[1] for r in results)  # K spans chunks
    for (a, b), res in zip(operands, results, strict=True):
        where = f"{config.name} {res.shape}"
        np.testing.assert_array_equal(res.c, reference(config, a, b), err_msg=where)
        check_against_model(config, res, where)
