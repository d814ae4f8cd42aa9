"""sim/simulate.py: bad input refused by name before any build, and the one entry from Python
running GEMMs through the device bit-exact, equal to the model."""

from __future__ import annotations

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig
from systolic.golden.data import random_operands
from systolic.golden.reference import reference
from systolic.golden.requant import RequantParams
from systolic.sim.simulate import Quantization, run_gemm, run_gemms

from ..configs import DEPTHS
from ..helpers import check_against_model


def test_host_refuses_bad_operands():
    config = ArrayConfig("os", 2, 2, a_width=4, **DEPTHS)
    with pytest.raises(ValueError, match=r"A holds values outside the 4-bit signed range"):
        run_gemms(config, [(np.full((2, 2), 8), np.ones((2, 2), int))])
    with pytest.raises(ValueError, match="A's columns must equal B's rows"):
        run_gemms(config, [(np.ones((2, 3), int), np.ones((2, 2), int))])
    with pytest.raises(ValueError, match="GEMM dimension M must be at least 1"):
        run_gemms(config, [(np.ones((0, 2), int), np.ones((2, 2), int))])


def test_bad_options_are_refused_by_name(tmp_path, monkeypatch):
    """Each refused before anything is built: the build folder stays empty."""
    monkeypatch.setenv("SYSTOLIC_BUILD_DIR", str(tmp_path))
    config = ArrayConfig("ws", 2, 2, **DEPTHS)
    a, b = np.ones((2, 2), int), np.ones((2, 2), int)
    with pytest.raises(ValueError, match="order must be one of nmk, mnk"):
        run_gemm(config, a, b, order="nkk")
    with pytest.raises(TypeError, match="memory must be a contract.memory.Dram"):
        run_gemm(config, a, b, memory=16)
    with pytest.raises(ValueError, match="a_zero = 1 needs a configuration with zero_points"):
        run_gemm(config, a, b, quant=Quantization(1, 0))
    with pytest.raises(ValueError, match="no requantization unit"):
        run_gemm(ArrayConfig("ws", 2, 2, zero_points=True, **DEPTHS), a, b,
                 quant=Quantization(0, 0, _params(2)))  # fmt: skip
    with pytest.raises(ValueError, match=r"c_in\[0\] must be 2x2"):
        run_gemm(config, a, b, c_in=np.zeros((3, 2), int))
    with pytest.raises(ValueError, match="quant has 1 entries for 2 GEMMs"):
        run_gemms(config, [(a, b)] * 2, quant=[None])
    wide = ArrayConfig("ws", 2, 2, a_depth=65536, b_depth=65536, c_depth=65536)
    big = np.zeros((4096, 1024), int)
    with pytest.raises(ValueError, match=r"does not fit the simulated DRAM \(16777216 bytes\)"):
        run_gemm(wide, big, big.T)
    assert not any(tmp_path.iterdir())


def _params(channels: int):
    return RequantParams(np.full(channels, 1 << 30), np.zeros(channels, int))


@pytest.mark.parametrize(
    "config",
    [ArrayConfig("ws", 3, 5, **DEPTHS),
     ArrayConfig("is", 2, 3, number="bf16", a_depth=64, b_depth=64, c_depth=64)],  # test_fp's
    ids=lambda c: c.name,
)  # fmt: skip
def test_gemms_through_the_device_equal_the_model(config, seed):
    """Several chunks each way (K split across chunks included): bit-exact, every counter as
    the model predicts it."""
    operands = random_operands(np.random.default_rng(seed), config, [(10, 40, 9), (7, 5, 30)])
    results = run_gemms(config, operands)
    for (a, b), res in zip(operands, results, strict=True):
        where = f"{config.name} {res.shape}"
        np.testing.assert_array_equal(res.c, reference(config, a, b), err_msg=where)
        check_against_model(config, res, where)
    assert results[0].counters["jobs"] > 1 and results[0].descriptor.chunk[1] < 40
