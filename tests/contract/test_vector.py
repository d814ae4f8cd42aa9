"""contract/vector.py: the vector descriptor's fields, checks and walk, against layouts derived
by hand."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig
from systolic.contract.dma import Refusal, descriptor_values, place
from systolic.contract.host import Host, driver_accesses
from systolic.contract.registers import descriptor_writes, register_map
from systolic.contract.vector import (
    AVERAGE_BITS,
    RUN_BEATS,
    check_params,
    check_vector,
    out_shape,
    place_vector,
    runs,
    vector_fields,
    vector_values,
)

CONFIG = ArrayConfig("ws", 2, 2, requant=True, vector=True, bus_width=64)
BUS = 8


def test_the_vector_unit_needs_requantized_byte_outputs():
    with pytest.raises(ValueError, match="vector needs requant"):
        ArrayConfig("ws", 2, 2, vector=True)
    with pytest.raises(ValueError, match="out_width <= 8"):
        ArrayConfig("ws", 2, 2, requant=True, out_width=12, vector=True)
    assert "vector" not in json.loads(ArrayConfig("ws", 2, 2).to_json())  # hashes as before
    assert ArrayConfig.from_json(CONFIG.to_json()) == CONFIG
    assert vector_fields(ArrayConfig("ws", 2, 2, requant=True)) == []


def test_a_pooling_run_reads_the_window_pixels_it_covers():
    # 1 x 3 x 3 x 8 bytes: pixel (r, c) at (3r + c) * 8; a 2x2 window at stride 1
    v = place_vector(CONFIG, "max_pool", (1, 3, 3, BUS), window=(2, 2), out=(2, 2))
    got = list(runs(CONFIG, v))
    assert len(got) == 4
    assert [a for _, a in got[0].reads] == [0, 8, 24, 32]
    assert [a for _, a in got[3].reads] == [32, 40, 56, 64]  # the window at (1, 1)
    assert [r.write - v.z for r in got] == [0, 8, 16, 24]  # output pixels one after another
    assert all(r.count == 4 and r.beats == 1 for r in got)


def test_padding_is_never_read_and_windows_are_clipped():
    # 3x3 windows at stride 2 with a pad of 1 on a 4x4 plane: output (0, 0) covers rows and
    # columns 0..1, output (1, 1) rows and columns 1..3
    v = place_vector(CONFIG, "average_pool", (1, 4, 4, BUS), window=(3, 3), stride=(2, 2),
                     pads=(1, 1), out=(2, 2))  # fmt: skip
    first, _, _, last = runs(CONFIG, v)
    assert [a // BUS for _, a in first.reads] == [0, 1, 4, 5]
    assert [a // BUS for _, a in last.reads] == [5, 6, 7, 9, 10, 11, 13, 14, 15]
    assert (first.count, last.count) == (4, 9)


def test_long_tensors_and_pixels_split_into_runs_of_the_buffer():
    beats = 2 * RUN_BEATS + 8
    v = place_vector(CONFIG, "add", (1, 1, beats, BUS))
    got = list(runs(CONFIG, v))
    assert [r.beats for r in got] == [RUN_BEATS, RUN_BEATS, 8]
    assert got[1].reads == (("a", RUN_BEATS * BUS), ("b", v.y + RUN_BEATS * BUS))
    pool = place_vector(CONFIG, "max_pool", (1, 1, 2, (RUN_BEATS + 1) * BUS), window=(1, 2),
                        out=(1, 1))  # fmt: skip
    got = list(runs(CONFIG, pool))
    assert [r.beats for r in got] == [RUN_BEATS, 1]  # two slices of the pixel's channels
    assert [a for _, a in got[1].reads] == [RUN_BEATS * BUS, (2 * RUN_BEATS + 1) * BUS]


@pytest.mark.parametrize(("change", "code", "named"), [
    ({"clamp": (5, 4)}, Refusal.CLAMP, "clamp"),
    ({"shape": (1, 2, 0, BUS)}, Refusal.DIMENSION, "width"),
    ({"pads": (0, 2)}, Refusal.WINDOW, "pad_left"),
    ({"window": (0, 2)}, Refusal.WINDOW, "pool_h"),
    ({"out": (2, 4)}, Refusal.WINDOW, "out_w"),
    ({"shape": (1, 3, 3, 12)}, Refusal.ALIGNMENT, "channels"),
    ({"z": 4100}, Refusal.ALIGNMENT, "c_addr"),
    ({"x": (1 << 32) - 16}, Refusal.RANGE, "a_addr"),
])  # fmt: skip
def test_refusals_name_their_field(change, code, named):
    v = place_vector(CONFIG, "max_pool", (1, 3, 3, BUS), window=(2, 2), out=(2, 2))
    assert check_vector(CONFIG, v) == (Refusal.NONE, "")
    got, why = check_vector(CONFIG, dataclasses.replace(v, **change))
    assert got is code and named in why


def test_out_shape_and_the_driver_post_the_fields_a_descriptor_sets():
    v = place_vector(CONFIG, "average_pool", (2, 7, 7, BUS), window=(7, 7), out=(1, 1))
    assert out_shape(v) == (2, 1, 1, BUS)
    regs = {r.offset: r.name for r in register_map(CONFIG)}
    posted = [regs[o] for o, _ in descriptor_writes(CONFIG, vector_values(CONFIG, v))]
    assert posted[-1] == "DOORBELL" and "DESC_VECTOR" in posted and "DESC_M" not in posted
    host = Host.preset()
    assert driver_accesses(CONFIG, host, vector=True)["post"] == len(posted)
    gemm = descriptor_writes(CONFIG, descriptor_values(CONFIG, place(CONFIG, 4, 4, 4)))
    assert driver_accesses(CONFIG, host)["post"] == len(gemm)
    assert "DESC_VECTOR" in [regs[o] for o, _ in gemm]  # a GEMM clears the vector bit
    with pytest.raises(ValueError, match="clamp"):
        vector_values(CONFIG, dataclasses.replace(v, clamp=(-500, 0)))


def test_the_averages_reciprocal_is_exact_for_every_count_and_sum():
    """An average divides by ``count`` (1 to 255 x 255) as ``u * m >> (AVERAGE_BITS + l)`` with
    ``l = ceil(log2(count))`` and ``m = ceil(2**(AVERAGE_BITS + l) / count)`` (rtl/vector.py);
    exact for every ``u < 2**AVERAGE_BITS``: checked at the extremes and around every multiple
    of the count near them, where an error would show first."""
    counts = np.arange(1, 255 * 255 + 1, dtype=np.int64)
    l = np.array([int(c - 1).bit_length() for c in counts], dtype=np.int64)  # noqa: E741
    shift = AVERAGE_BITS + l
    m = -((-(np.int64(1) << shift)) // counts)  # ceil
    top = (1 << AVERAGE_BITS) - 1
    for u in (np.zeros_like(counts), np.full_like(counts, top), (top // counts) * counts - 1,
              (top // counts) * counts, counts - 1, counts, 2 * counts - 1):  # fmt: skip
        u = np.clip(u, 0, top)
        np.testing.assert_array_equal((u * m) >> shift, u // counts)


def test_the_driver_refuses_values_its_fields_cannot_hold():
    """Each field at its largest value passes, one past it is refused naming the field (the
    device would see it cut to its bits); shifts scale down only."""
    v = place_vector(CONFIG, "max_pool", (1, 3, 3, BUS), window=(2, 2), out=(2, 2))
    for field, ok, bad, named in (("window", (255, 2), (256, 2), "pool_h"),
                                  ("pads", (0, 255), (0, 256), "pad_left"),
                                  ("out", (65535, 1), (65536, 1), "out_h"),
                                  ("shape", (1, 3, 3, 65535), (1, 3, 3, 65536), "channels"),
                                  ("z_shift", 0, 1, "z_shift"),
                                  ("x_shift", -31, -32, "x_shift")):  # fmt: skip
        check_params(dataclasses.replace(v, **{field: ok}), CONFIG)
        with pytest.raises(ValueError, match=named):
            check_params(dataclasses.replace(v, **{field: bad}), CONFIG)
