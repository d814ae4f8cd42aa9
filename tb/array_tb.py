"""cocotb tests of a bare systolic mesh (run by tests/rtl/test_array.py through sim/build.py).

The design's ArrayConfig arrives as JSON in ``SYSTOLIC_CONFIG`` and the random seed in
``SYSTOLIC_SEED``; every test logs the seed, and the same seed replays the same data.
"""

from __future__ import annotations

import os
import zlib

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge
from systolic.contract.config import ArrayConfig, Dataflow
from systolic.golden.data import corner_matrix, random_matrix
from systolic.rtl.generate import design

from .array_schedule import Schedule, Tile, input_ports, schedule_tiles
from .packing import unpack

CONFIG = ArrayConfig.from_json(os.environ["SYSTOLIC_CONFIG"])
SEED = int(os.environ.get("SYSTOLIC_SEED", "0"))


def _rng(test_name: str) -> np.random.Generator:
    """One independent stream per test, fixed by SYSTOLIC_SEED."""
    return np.random.default_rng([SEED, zlib.crc32(test_name.encode())])


def _tile(rng, make, stream_len: int) -> Tile:
    """An array-sized tile; ``stream_len`` is the free dimension (M for WS, N for IS, K for OS)."""
    cfg = CONFIG
    m, k, n = {
        Dataflow.WS: (stream_len, cfg.rows, cfg.cols),
        Dataflow.IS: (cfg.cols, cfg.rows, stream_len),
        Dataflow.OS: (cfg.rows, stream_len, cfg.cols),
    }[cfg.dataflow]
    return Tile(
        make(rng, (m, k), cfg.a_width, cfg.a_signed), make(rng, (k, n), cfg.b_width, cfg.b_signed)
    )


async def _reset(dut) -> None:
    for port in input_ports(CONFIG):
        getattr(dut, f"{port}__valid").value = 0
        getattr(dut, f"{port}__payload").value = 0
    dut.rst.value = 1
    for _ in range(2):
        await FallingEdge(dut.clk)
    dut.rst.value = 0


async def play(dut, sched: Schedule) -> list[tuple[int, list[int]]]:
    """Drive ``sched`` one cycle per falling edge and collect every valid output with its cycle.

    Cycle ``t`` is the clock period ending in the ``t``-th rising edge after reset: its inputs are
    written at the falling edge before that rising edge, and the outputs read there are the values
    of cycle ``t`` (registers updated by the previous rising edge).
    """
    layout = design(CONFIG, "array").result_layout(CONFIG)
    ports = input_ports(CONFIG)
    seen = []
    for t in range(sched.cycles + 4):  # a few more cycles: no output may come late or extra
        if int(dut.result__valid.value):
            seen.append((t, unpack(layout, dut.result__payload.value.to_unsigned())))
        drive = sched.inputs[t] if t < len(sched.inputs) else {}
        for port in ports:
            valid, payload = drive.get(port, (0, 0))
            getattr(dut, f"{port}__valid").value = valid
            if valid:
                getattr(dut, f"{port}__payload").value = payload
        await FallingEdge(dut.clk)
    return seen


def _compare(sched: Schedule, seen) -> None:
    expected = sched.expected
    for (t_exp, v_exp), (t_got, v_got) in zip(expected, seen, strict=False):
        assert (t_got, v_got) == (t_exp, v_exp), (
            f"{CONFIG.name} seed {SEED}: expected {v_exp} in cycle {t_exp}, got {v_got} in cycle "
            f"{t_got}"
        )
    assert len(seen) == len(expected), (
        f"{CONFIG.name} seed {SEED}: expected {len(expected)} outputs, got {len(seen)}"
    )


def _latency_formula() -> int:
    """The documented latencies, written out here rather than read from the generator."""
    if CONFIG.dataflow is Dataflow.OS:
        return CONFIG.cols  # from the `last` step to result row 0
    return CONFIG.rows + CONFIG.cols - 1  # from a stream vector to its result vector


async def _run(dut, tiles, rng=None, bubble_rate=0.0) -> None:
    await _reset(dut)
    sched = schedule_tiles(CONFIG, tiles, rng, bubble_rate)
    seen = await play(dut, sched)
    _compare(sched, seen)
    assert seen[0][0] - sched.first_input == _latency_formula(), (
        f"{CONFIG.name}: first output {seen[0][0] - sched.first_input} cycles after the first "
        f"input, documented latency {_latency_formula()}"
    )


@cocotb.test()
async def single_tile(dut):
    """One tile, the free dimension as long as the array: the documented latency exactly."""
    rng = _rng("single_tile")
    dut._log.info("config %s, seed %d", CONFIG.name, SEED)
    await _run(dut, [_tile(rng, random_matrix, max(CONFIG.rows, CONFIG.cols))])


@cocotb.test()
async def random_tiles(dut):
    """Back-to-back tiles of random data, lengths 1 to 3x the array, random idle cycles."""
    rng = _rng("random_tiles")
    dut._log.info("config %s, seed %d", CONFIG.name, SEED)
    longest = 3 * max(CONFIG.rows, CONFIG.cols)
    tiles = [
        _tile(rng, random_matrix, int(rng.integers(1, longest, endpoint=True))) for _ in range(6)
    ]
    await _run(dut, tiles, rng, bubble_rate=0.2)


@cocotb.test()
async def corner_values(dut):
    """Tiles made only of 0, 1, -1, INT_MIN, INT_MAX (UINT_MAX unsigned), in random pairings."""
    rng = _rng("corner_values")
    dut._log.info("config %s, seed %d", CONFIG.name, SEED)
    tiles = [_tile(rng, corner_matrix, 2 * max(CONFIG.rows, CONFIG.cols) + 1) for _ in range(4)]
    await _run(dut, tiles)
