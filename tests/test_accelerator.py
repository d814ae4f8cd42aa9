"""The accelerator under Verilator: whole GEMMs from the buffers, bit-exact, every dataflow.

Shapes include ragged ones, dimensions of 1 and GEMMs larger than the buffers (tiled by the host).
Every counter of every command must equal the analytical model's; the sanity checks below hold
for any correct design, whatever the model says.
"""

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig, Dataflow
from systolic.contract.layouts import footprint
from systolic.contract.plan import check_command, plan
from systolic.golden.data import random_operands
from systolic.golden.reference import reference
from systolic.models.cycles import command_counters, predict
from systolic.sim.build import build_model, run_cocotb
from systolic.sim.simulate import run_gemms

from .conftest import SEED

# Small buffers, so that moderate GEMMs already exceed them and the host must tile.
DEPTHS = dict(a_depth=48, b_depth=48, c_depth=48)
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
    ]


def check_against_model(config, res, where):
    """RTL == model: every counter of every command, the totals and the off-chip words."""
    for cmd in res.commands:
        expected = command_counters(config, *cmd["shape"], cmd["accumulate"])
        assert cmd["counters"] == expected, f"{where}, command {cmd['shape']}"
    pred = predict(config, *res.shape)
    assert res.counters == pred.counters, where
    assert res.offchip_words == pred.offchip_words, where
    assert len(res.commands) == pred.commands, where


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
def test_hardware_flags_malformed_commands(dataflow):
    """Zero dimensions and addresses past a buffer's end raise `error` and still finish
    (see tb/accelerator_tb.py::malformed_commands)."""
    config = ArrayConfig(dataflow, 2, 3, **DEPTHS)
    run = run_cocotb(build_model(config), "systolic.tb.accelerator_tb",
                     testcase="malformed_commands", name="malformed")  # fmt: skip
    assert (run.tests, run.failed) == (1, 0), f"see {run.log}"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (dict(m=0), "command field m must be an integer in 1..65535, not 0"),
        (dict(k=-3), "command field k must be an integer in 1..65535, not -3"),
        (dict(n=70000), "command field n must be an integer in 1..65535, not 70000"),
        (dict(a_base=-1), "command field a_base must be an integer in 0..65535, not -1"),
        (
            dict(b_base=40),
            "command needs 16 words of the B buffer from b_base = 40, past its end (b_depth = 48)",
        ),
        (dict(c_base=45), "command needs 4 words of the C buffer from c_base = 45"),
    ],
)
def test_host_refuses_bad_commands(fields, message):
    # A 4x16x4 GEMM on a 4x4 WS array: A words hold 4 K-elements, so A takes 16/4 * 4 = 16 words;
    # B words hold 4 N-elements, so B takes 1 * 16 = 16 words; C takes 1 * 4 = 4 words.
    config = ArrayConfig("ws", 4, 4, **DEPTHS)
    args = dict(m=4, k=16, n=4) | fields
    with pytest.raises(ValueError) as info:
        check_command(config, **args)
    assert message in str(info.value)
    check_command(config, m=4, k=16, n=4, a_base=32, b_base=32, c_base=44)  # just fits


def test_host_refuses_bad_operands():
    config = ArrayConfig("os", 2, 2, a_width=4, **DEPTHS)
    with pytest.raises(ValueError, match=r"A holds values outside the 4-bit signed range"):
        run_gemms(config, [(np.full((2, 2), 8), np.ones((2, 2), int))])
    with pytest.raises(ValueError, match="A's columns must equal B's rows"):
        run_gemms(config, [(np.ones((2, 3), int), np.ones((2, 2), int))])
    with pytest.raises(ValueError, match="GEMM dimension M must be at least 1"):
        run_gemms(config, [(np.ones((0, 2), int), np.ones((2, 2), int))])


def test_buffers_too_small_for_one_tile():
    with pytest.raises(ValueError, match=r"b_depth = 3 words cannot hold one tile"):
        plan(ArrayConfig("ws", 4, 4, b_depth=3), 8, 8, 8)


@pytest.mark.parametrize(
    "config",
    [ArrayConfig("ws", 3, 4, a_depth=64, b_depth=64, c_depth=64),
     ArrayConfig("os", 4, 3, number="bf16", a_depth=64, b_depth=64, c_depth=64)],
    ids=lambda c: c.name,
)  # fmt: skip
def test_backdoor_loads_equal_the_write_streams(config, seed):
    """Sweeps load A and B through the simulator's backdoor: same outputs, same counters."""
    operands = random_operands(np.random.default_rng(seed), config, [(10, 40, 9), (7, 5, 30)])
    streamed = run_gemms(config, operands)
    loaded = run_gemms(config, operands, backdoor=True)
    for s, b in zip(streamed, loaded, strict=True):
        assert np.array_equal(s.c, b.c)
        assert s.counters == b.counters and s.offchip_words == b.offchip_words
