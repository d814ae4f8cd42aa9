"""sim/simulate.py: operands checked before any build, and backdoor loads equal to the write
streams."""

from __future__ import annotations

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig
from systolic.golden.data import random_operands
from systolic.sim.simulate import run_gemms

from ..configs import DEPTHS


def test_host_refuses_bad_operands():
    config = ArrayConfig("os", 2, 2, a_width=4, **DEPTHS)
    with pytest.raises(ValueError, match=r"A holds values outside the 4-bit signed range"):
        run_gemms(config, [(np.full((2, 2), 8), np.ones((2, 2), int))])
    with pytest.raises(ValueError, match="A's columns must equal B's rows"):
        run_gemms(config, [(np.ones((2, 3), int), np.ones((2, 2), int))])
    with pytest.raises(ValueError, match="GEMM dimension M must be at least 1"):
        run_gemms(config, [(np.ones((0, 2), int), np.ones((2, 2), int))])


@pytest.mark.parametrize(
    "config",
    # models that tests/rtl/test_top.py and test_fp.py build too
    [ArrayConfig("ws", 3, 5, **DEPTHS),
     ArrayConfig("os", 2, 3, number="bf16", a_depth=64, b_depth=64, c_depth=64)],
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
