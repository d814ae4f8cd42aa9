"""contract/memory.py: DRAM parameters and the bus rule, checked against arithmetic done here."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from systolic.contract.memory import DRAM_PRESETS, BeatClock, Dram, container_bytes


def test_container_bytes_are_powers_of_two_that_hold_the_bits():
    assert [container_bytes(b) for b in (1, 8, 9, 16, 17, 24, 32, 33, 64, 65, 128, 136)] == [
        1, 1, 2, 2, 4, 4, 4, 8, 8, 16, 16, 32]  # fmt: skip


def test_physical_units_become_cycles():
    d = Dram.physical(25.6, 100, 1.0)
    assert d.bandwidth == Fraction(128, 5) and d.latency == 100
    d = Dram.physical(25.6, 100, 0.8)  # a slower clock sees more bytes per cycle
    assert d.bandwidth == 32 and d.latency == 80
    assert Dram.preset("lpddr4x-4266-x32").bandwidth == Fraction("17.064")
    assert set(DRAM_PRESETS) >= {"lpddr4x-4266-x32", "hbm2e-pc"}


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"bandwidth": 0}, "bandwidth must be in"),
        ({"bandwidth": -3}, "bandwidth must be in"),
        ({"bandwidth": "fast"}, "bandwidth must be a positive number"),
        ({"bandwidth": True}, "bandwidth must be a positive number"),
        ({"bandwidth": 8, "latency": 0}, "latency"),
        ({"bandwidth": 8, "max_requests": 0}, "max_requests"),
    ],
)
def test_bad_parameters_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Dram(**kwargs)
    with pytest.raises(ValueError, match="unknown DRAM preset 'ddr9'"):
        Dram.preset("ddr9")


def test_beats_move_at_the_bandwidth():
    # 8 bytes per cycle, 16-byte beats: one every 2 cycles
    clock = BeatClock.of(Dram(8))
    assert [clock.beat(0, 16) for _ in range(4)] == [0, 2, 4, 6]
    # 32 bytes per cycle, 16-byte beats: the bus allows one a cycle
    clock = BeatClock.of(Dram(32))
    assert [clock.beat(0, 16) for _ in range(4)] == [0, 1, 2, 3]
    # 17 bytes per cycle, 64-byte beats: 64/17 = 3.76 cycles apart, the fraction carried
    clock = BeatClock.of(Dram(17))
    assert [clock.beat(0, 64) for _ in range(6)] == [0, 4, 8, 12, 16, 19]


def test_a_long_run_keeps_a_fractional_rate_exactly():
    clock = BeatClock.of(Dram("17.064"))
    cycles = [clock.beat(0, 64) for _ in range(10_000)]
    # beat j goes at ceil(j * 64 / 17.064)
    assert cycles[-1] == -(-9999 * 64 * 1000 // 17064)


def test_idle_time_is_not_banked():
    clock = BeatClock.of(Dram(8))
    clock.beat(0, 16)
    assert clock.beat(100, 16) == 100  # waits only for its own readiness
    assert clock.beat(100, 16) == 102  # and the next is spaced as ever
    assert clock.beat(0, 16) == 104  # readiness in the past does not let a beat jump ahead


def test_run_is_the_closed_form_of_single_beats(seed):
    rng = np.random.default_rng(seed)
    for _ in range(300):
        bw = Fraction(int(rng.integers(1, 200)), int(rng.integers(1, 50)))
        one, many = BeatClock.of(Dram(bw)), BeatClock.of(Dram(bw))
        t = 0
        for _ in range(5):
            ready, beats, size = t + int(rng.integers(0, 40)), int(rng.integers(1, 30)), int(
                2 ** rng.integers(0, 7))  # fmt: skip
            cycles = [one.beat(ready, size) for _ in range(beats)]
            assert many.run(ready, beats, size) == (cycles[0], cycles[-1]), (bw, ready, beats)
            assert one.v == many.v
            t = cycles[-1]
