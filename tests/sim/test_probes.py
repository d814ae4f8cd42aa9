"""sim/probes.py and the activity build: hand-counted toggles for 1x1 meshes, and an all-zero
GEMM that flips only flags and control."""

from __future__ import annotations

import numpy as np
from systolic.contract.activity import UNPRICED
from systolic.contract.config import ArrayConfig
from systolic.rtl.generate import design_verilog
from systolic.sim.probes import probes
from systolic.sim.simulate import run_gemm

A_COLUMN = np.array([[3], [5], [6]])  # 0b011, 0b101, 0b110: two bits flip between neighbours


B_ONE = np.array([[1]])


def test_hand_counted_toggles_ws():
    """1x1 WS, C = [3, 5, 6]^T @ [1]: one tile, B = 1 stationary in bank 0."""
    r = run_gemm(ArrayConfig("ws", 1, 1), A_COLUMN, B_ONE, activity=True)
    assert r.toggles[("stationary", "weight")] == 1  # w0: 0 -> 1
    # psum: 0 -> 3 -> 5 -> 6 -> 0 (the lane goes invalid, psum_in + 0): 2 + 2 + 2 + 2
    assert r.toggles[("accumulator", "psum")] == 8
    # east: x 0 -> 3 -> 5 -> 6 (held) = 6, valid up and down = 2, bank flag moves on after the
    # tile = 1
    assert r.toggles[("pipeline", "activation")] == 9
    # mul_a = x: 6; mul_b = w[bank]: 0 -> 1 at preload, 1 -> 0 when the flag selects bank 1
    assert r.toggles[("multiplier", "compute")] == 8
    assert ("edge", "activation") not in r.toggles  # a 1x1 mesh has no skew registers


def test_hand_counted_toggles_is():
    """1x1 IS on the same GEMM: A is stationary, one tile per element of A, back to back;
    B = 1 streams one vector per tile."""
    r = run_gemm(ArrayConfig("is", 1, 1), A_COLUMN, B_ONE, activity=True)
    assert r.counters["stall_cycles"] == 0
    # banks alternate: w0 <- 3 (2 flips), w1 <- 5 (2), w0: 3 -> 6 (2)
    assert r.toggles[("stationary", "activation")] == 6
    # x 0 -> 1, then held (1); valid rises and falls once (2); the bank flag moves after each of
    # the three tiles (3)
    assert r.toggles[("pipeline", "weight")] == 6
    assert r.toggles[("accumulator", "psum")] == 8  # 0 -> 3 -> 5 -> 6 -> 0
    # mul_a: 0 -> 1 (1); mul_b follows the selected bank: 0 -> 3 (w0 loading), 3 -> 5 (w1),
    # 5 -> 6 (w0 again), 6 -> 5 (the flag moves to w1 after the last tile): 2 each
    assert r.toggles[("multiplier", "compute")] == 9


def test_hand_counted_toggles_os():
    """1x1 OS: three tiles of one step each, back to back (K = 1 = drain cycles, no gap)."""
    r = run_gemm(ArrayConfig("os", 1, 1), A_COLUMN, B_ONE, activity=True)
    # east: a 0 -> 3 -> 5 -> 6 = 6, valid up and down = 2, last up and down = 2
    assert r.toggles[("pipeline", "activation")] == 10
    assert r.toggles[("pipeline", "weight")] == 1  # b_out: 0 -> 1, then held
    # acc restarts each tile: 0 -> 3 -> 5 -> 6 -> 0 = 8
    assert r.toggles[("accumulator", "output")] == 8
    assert r.toggles[("multiplier", "compute")] == 7  # mul_a 6, mul_b 1


def test_zero_gemm_flips_only_flags_and_control():
    config = ArrayConfig("ws", 2, 2)  # as tests/sweeps and tests/synth build it
    zeros = np.zeros((4, 4), dtype=np.int64)
    r = run_gemm(config, zeros, zeros, activity=True)
    for key in [("accumulator", "psum"), ("multiplier", "compute"), ("stationary", "weight")]:
        assert r.toggles[key] == 0, key
    assert r.toggles[("pipeline", "activation")] > 0  # valid and bank flags still move


def test_the_compute_side_is_priced_and_the_rest_counted():
    """The memory side (queue, walkers, DMA engines, bank states, control registers, device
    counters) is priced by the words it moves, not by toggles: its registers are probes for
    gate-level power only, as are the inputs; every PE is priced."""
    config = ArrayConfig("ws", 2, 2, requant=True)
    found = probes(config, design_verilog(config, "device"))
    priced = [p for p in found if p.component not in UNPRICED]
    owners = {p.path.split(".")[0] if "." in p.path else "" for p in priced}
    assert owners == {"", "array", "a_buffer", "b_buffer", "c_buffer", "controller"}, owners
    assert {p.path for p in priced if "." not in p.path} == {"counter", "counter_gaps",
                                                            "seen_stream"}  # fmt: skip
    assert {p.path.split(".")[1] for p in priced if p.path.startswith("array.pe_")} == {
        "pe_0_0", "pe_0_1", "pe_1_0", "pe_1_1"}  # fmt: skip
    memory = {p.path.split(".")[0] for p in found if p.component == "memory"}
    assert {"queue", "reader", "writer", "walk_rd", "walk_cp", "walk_wr",
            "control"} <= memory, memory  # fmt: skip
    assert all(p.flop for p in found if p.component == "memory")
    srams = {p.path for p in found if p.component == "sram"}
    # and the C word an update adds to, registered as it leaves its bank (rtl/banks.py)
    assert srams == {f"{k}_buffer.bank{b}.r0_data" for k in "abc" for b in (0, 1)} | {
        f"c_buffer.bank{b}.r1_data" for b in (0, 1)} | {"q_buffer.sram.r0_data",
                                                         "c_buffer.rmw_old"}  # fmt: skip
    inputs = {p.path: p.width for p in found if p.component == "input"}
    assert inputs["m_axi_rdata"] == config.bus_width and inputs["s_axil_wdata"] == 32
    assert not {"clk", "rst"} & set(inputs)
