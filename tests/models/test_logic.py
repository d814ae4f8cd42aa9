"""models/logic.py and the flag flips of models/toggles.py: the events the logic is priced by."""

from __future__ import annotations

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig
from systolic.models.logic import TERMS, logic_events
from systolic.models.toggles import flag_flips, predict_toggles


@pytest.mark.parametrize("dataflow", ["ws", "os", "is"])
@pytest.mark.parametrize("shape", [(12, 3, 10), (2, 17, 9), (9, 20, 1), (1, 1, 1)])
def test_flag_flips_are_the_pipeline_flips_of_zero_operands(dataflow, shape):
    """With all-zero operands no data bit moves: what the pipeline registers flip is their
    flags, which the toggle model replays tile by tile, stalls included. flag_flips counts
    them from the plan alone."""
    config = ArrayConfig(dataflow, 3, 4, a_depth=16, b_depth=16, c_depth=16)  # several chunks
    m, k, n = shape
    toggles = predict_toggles(config, np.zeros((m, k), np.int64), np.zeros((k, n), np.int64))
    pipeline = sum(v for (c, _), v in toggles.items() if c == "pipeline")
    assert flag_flips(config, m, k, n) == pipeline > 0


def test_every_term_is_counted_once_per_event():
    config = ArrayConfig("os", 2, 3)
    counters = {"cycles": 50, "stream_cycles": 20}
    toggles = {("multiplier", "compute"): 7, ("accumulator", "output"): 11,
               ("pipeline", "activation"): 13, ("edge", "weight"): 17,
               ("buffer", "psum"): 19, ("control", "control"): 23}  # fmt: skip
    events = logic_events(config, counters, toggles, flags=29)
    counts: dict[str, float] = {}
    for term, _, count in events:
        counts[term] = counts.get(term, 0) + count
    assert set(counts) <= set(TERMS)
    assert counts["accumulator"] == counts["adder"] == 11  # the register, and the adder's logic
    assert counts["mac"] == 6 * 20 and counts["flag"] == 29 and counts["edge_mux"] == 17
    # OS: both operands move, the multiplier's flips again; every PE adds a live partial sum
    assert counts["multiplier_both"] == 7 and counts["psum_add"] == 11
    # OS 2x3 int8: PEs of a 10-bit lane, an 8-bit B register and a 32-bit accumulator (300
    # bits), a 10-bit skew register in row 1 and 8 + 32-bit column skews in columns 1 and 2
    # (3 of each): 300 + 10 + 120 = 430 bits; words A 16, B 24, C 96 bits
    assert counts["mesh_clock"] == counts["clock_tree"] == 430 * 50
    assert counts["pe_cycle"] == 6 * 50 and counts["buffer_cycle"] == 136 * 50
    assert counts["device_cycle"] == 50
    with pytest.raises(ValueError, match="unknown activity component 'spare'"):
        logic_events(config, counters, {("spare", "compute"): 1})


def test_a_multiplier_flip_reaches_a_row_of_partial_products_as_wide_as_the_other_operand():
    from systolic.models.logic import multiplier_scale

    assert multiplier_scale(ArrayConfig("ws", 2, 2)) == 1.0  # int8: the fitted width
    assert multiplier_scale(ArrayConfig("ws", 2, 2, a_width=16, b_width=16, acc_width=48)) == 2
    # 8 x 4 bits: a flip of A reaches 4 cells, of B 8; on average 2 * 32 / 12 = 5.33 of 8
    assert multiplier_scale(ArrayConfig("os", 2, 2, b_width=4, acc_width=20)) == pytest.approx(
        2 * 8 * 4 / 12 / 8)  # fmt: skip
    # zero points widen both operands by a bit; bf16 multiplies 8-bit significands
    zp = ArrayConfig("ws", 2, 2, zero_points=True, a_signed=False, b_signed=False)
    assert multiplier_scale(zp) == pytest.approx(9 / 8)
    assert multiplier_scale(ArrayConfig("ws", 2, 2, number="bf16")) == 1.0


def test_bf16_adds_the_float_terms_to_the_multiplier_and_accumulator_flips():
    toggles = {("multiplier", "compute"): 7, ("accumulator", "psum"): 11}
    counters = {"cycles": 10, "stream_cycles": 4}
    counts = {t: c for t, _, c in logic_events(ArrayConfig("ws", 2, 2, number="bf16"), counters,
                                                toggles)}  # fmt: skip
    assert (counts["multiplier_fp"], counts["adder_fp"]) == (7, 11)
    ints = {t for t, _, _ in logic_events(ArrayConfig("ws", 2, 2), counters, toggles)}
    assert not {"multiplier_fp", "adder_fp"} & ints
