"""models/vector.py: the vector unit's cycles derived by hand from its documented timing
(docs/vector.md) on runs small enough to follow, and its traffic."""

from __future__ import annotations

import pytest
from systolic.contract.config import ArrayConfig
from systolic.contract.interface import DEVICE_COUNTERS
from systolic.contract.memory import Dram
from systolic.contract.vector import DIVIDE_CYCLES, place_vector
from systolic.models.vector import predict_vector

CONFIG = ArrayConfig("ws", 2, 2, requant=True, vector=True, bus_width=64)
BUS = 8


@pytest.mark.parametrize("latency", [1, 20, 57])
@pytest.mark.parametrize("beats", [1, 4])
def test_one_run_takes_its_phases_one_after_another(latency, beats):
    """An add of ``beats`` beats on a memory as fast as the bus: setup (cycle 0); X's burst
    requested in cycle 1 and Y's in 2, X's beats from 1 + L, Y's right behind; the read phase
    ends the cycle after the last beat, then a wait cycle; the write burst requested in the
    next, its beats from the cycle after; the response L cycles after the last beat, seen a
    cycle later, and the device finishes the cycle after that."""
    memory = Dram(BUS, latency, 64)
    v = place_vector(CONFIG, "add", (1, 1, beats, BUS))
    got = predict_vector(CONFIG, v, memory)
    last_read = latency + 2 * beats
    first_write = last_read + 3 + 1
    last_write = first_write + beats - 1
    assert got["cycles"] == last_write + latency + 1 + 2
    assert (got["jobs"], got["dram_read_beats_a"], got["dram_read_beats_b"]) == (1, beats, beats)
    assert got["dram_write_bytes"] == beats * BUS


@pytest.mark.parametrize("latency", [1, 20, 60])
def test_an_average_waits_for_its_reciprocal(latency):
    memory = Dram(BUS, latency, 64)
    pool = place_vector(CONFIG, "max_pool", (1, 1, 1, BUS), out=(1, 1))
    avg = place_vector(CONFIG, "average_pool", (1, 1, 1, BUS), out=(1, 1))
    # one beat: read requested in cycle 1, in at 1 + L; the read phase ends at the later of
    # the cycle after it and the reciprocal's cycle, 1 + DIVIDE_CYCLES
    for v, ends in ((pool, latency + 2), (avg, max(latency + 2, 1 + DIVIDE_CYCLES))):
        assert predict_vector(CONFIG, v, memory)["cycles"] == ends + 3 + latency + 3


def test_a_refused_descriptor_counts_nothing():
    v = place_vector(CONFIG, "max", (1, 1, 1, 12))
    assert predict_vector(CONFIG, v, Dram(BUS)) == dict.fromkeys(DEVICE_COUNTERS, 0)
