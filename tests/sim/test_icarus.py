"""The generated Verilog under a second simulator, Icarus Verilog: the same cocotb bench
(tb/device_tb.py, programming the device over AXI4-Lite), the same DRAM model and the same
checks: C bit-exact against golden/ and every counter equal to the device model's."""

from __future__ import annotations

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig
from systolic.contract.dma import LOOP_ORDERS
from systolic.contract.memory import Dram
from systolic.golden.data import random_operands
from systolic.golden.reference import reference, requantized_reference
from systolic.golden.requant import RequantParams
from systolic.models.device import predict_device
from systolic.sim.simulate import Quantization, run_gemms

CONFIGS = [
    ArrayConfig("os", 2, 2, a_depth=16, b_depth=16, c_depth=16),
    ArrayConfig("is", 2, 3, zero_points=True, requant=True, a_signed=False, bus_width=64),
]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.name)
def test_the_device_under_icarus_matches_golden_and_the_model(config, seed):
    rng = np.random.default_rng([seed, 7])
    shapes = [(5, 9, 3), (4, 4, 7)]
    operands = random_operands(rng, config, shapes)
    quant = None
    if config.requant:
        quant = [Quantization(int(rng.integers(0, 30)), int(rng.integers(-20, 20)),
                              RequantParams(rng.integers(1 << 29, 1 << 31, n),
                                            rng.integers(-8, 2, n), 3, True))
                 for _, _, n in shapes]  # fmt: skip
    memory = Dram(4, latency=9)
    runs = run_gemms(config, operands, memory=memory, order=list(LOOP_ORDERS[:2]), quant=quant,
                     simulator="icarus", name="icarus", timeout=600)  # fmt: skip
    for i, ((a, b), res) in enumerate(zip(operands, runs, strict=True)):
        if quant:
            q = quant[i]
            expected = requantized_reference(config, a, b, q.a_zero, q.b_zero, q.params)
        else:
            expected = reference(config, a, b)
        assert res.error == 0
        np.testing.assert_array_equal(res.c, expected)
        assert dict(res.counters) == dict(predict_device(config, res.descriptor, memory))
