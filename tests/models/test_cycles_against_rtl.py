"""The models (models/device.py, and models/cycles.py chunk by chunk) against the RTL on random
configurations, bus parameters, DRAM parameters, loop orders and batches (Hypothesis)."""

from __future__ import annotations

import os
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from systolic.contract.config import ArrayConfig, Dataflow
from systolic.contract.dma import LOOP_ORDERS
from systolic.contract.memory import Dram
from systolic.golden.data import random_operands
from systolic.golden.reference import reference
from systolic.sim.simulate import run_gemms

from ..conftest import SEED
from ..helpers import check_against_model

EXAMPLES = int(os.environ.get("SYSTOLIC_MODEL_EXAMPLES", "3"))


shapes = st.tuples(*[st.integers(1, 40)] * 3)


@st.composite
def configs_and_shapes(draw):
    rows, cols = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    config = ArrayConfig(
        draw(st.sampled_from(list(Dataflow))), rows, cols,
        a_depth=draw(st.integers(36, 160)), b_depth=draw(st.integers(36, 160)),
        c_depth=draw(st.integers(36, 160)), bus_width=draw(st.sampled_from([64, 128, 256])),
        max_burst=draw(st.sampled_from([1, 2, 4, 16])), max_reads=draw(st.integers(1, 4)),
        max_writes=draw(st.integers(1, 4)),
    )  # fmt: skip
    bandwidth = Fraction(draw(st.integers(1, 40)), draw(st.integers(1, 7)))
    memory = Dram(bandwidth, draw(st.integers(1, 60)), draw(st.integers(1, 16)))
    batch = draw(st.lists(shapes, min_size=1, max_size=6))
    return config, memory, draw(st.sampled_from(LOOP_ORDERS)), batch


@pytest.mark.long
@hypothesis_seed(SEED)  # replayable with SYSTOLIC_SEED, like every randomized test here
@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(configs_and_shapes(), st.integers(0, 2**31 - 1))
def test_model_equals_rtl(case, data_seed):
    config, memory, order, batch = case
    # every drawn shape runs: 36 words hold one tile of any array up to 6 x 6 (the driver
    # raising here would be a bug, not a case to skip)
    rng = np.random.default_rng(data_seed)
    operands = random_operands(rng, config, batch)
    results = run_gemms(config, operands, memory=memory, order=order)
    for (a, b), res in zip(operands, results, strict=True):
        where = f"{config.name} {res.shape} {order} {memory}, data seed {data_seed}"
        np.testing.assert_array_equal(res.c, reference(config, a, b), err_msg=where)
        check_against_model(config, res, where)
