"""The device against an AXI4 slave that is not ours: cocotbext-axi's AxiRam, every channel
pausing at random. The DRAM model (sim/dram.py) and the device were written together and could
share a misreading of the protocol; AxiRam checks bursts, WLAST, sizes and 4 KB crossings its
own way. C must be bit-exact and every count of work and traffic equal to the model's (the
cycles are AxiRam's: it has its own latency and the pauses are random)."""

from __future__ import annotations

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig
from systolic.contract.dma import LOOP_ORDERS
from systolic.contract.interface import DEVICE_COUNTERS, TIMED_COUNTERS
from systolic.golden.data import random_operands
from systolic.golden.reference import reference, requantized_reference
from systolic.golden.requant import RequantParams
from systolic.models.device import predict_device
from systolic.sim.simulate import Quantization, run_gemms

#: Share of cycles each of AxiRam's five channels is paused.
PAUSE = 0.4

#: One build: a 64-bit bus (partial sums at 32 bits in two beats each, narrow A and B beats),
#: requantized outputs (narrow W beats with partial strobes) and 2-beat bursts; the vector unit
#: (tests/sim/test_vector.py runs it behind the AxiRam on this build).
CONFIGS = [
    ArrayConfig("is", 2, 3, a_depth=24, b_depth=24, c_depth=24, zero_points=True, requant=True,
                a_signed=False, out_signed=False, bus_width=64, max_burst=2, vector=True),
]  # fmt: skip


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.name)
def test_device_behind_cocotbext_axi_ram_with_random_pauses(config, seed):
    rng = np.random.default_rng([seed, config.rows, config.cols])
    shapes = [tuple(int(x) for x in rng.integers(1, 14, 3)) for _ in LOOP_ORDERS]
    operands = random_operands(rng, config, shapes)
    quant = None
    if config.requant:
        quant = [Quantization(int(rng.integers(0, 20)), int(rng.integers(-9, 9)),
                              RequantParams(rng.integers(1 << 29, 1 << 31, n),
                                            rng.integers(-8, 3, n), int(rng.integers(0, 9)),
                                            bool(i % 2)))
                 for i, (_, _, n) in enumerate(shapes)]  # fmt: skip
    runs = run_gemms(config, operands, order=list(LOOP_ORDERS), quant=quant, slave="axi-ram",
                     pause=PAUSE, pause_seed=seed, name="axi-ram", timeout=300)  # fmt: skip
    for i, ((a, b), res) in enumerate(zip(operands, runs, strict=True)):
        where = f"{config.name} {res.descriptor.order} {res.shape} (pauses seeded {seed})"
        assert res.error == 0, where
        if quant:
            q = quant[i]
            expected = requantized_reference(config, a, b, q.a_zero, q.b_zero, q.params)
        else:
            expected = reference(config, a, b)
        np.testing.assert_array_equal(res.c, expected, err_msg=where)
        predicted = predict_device(config, res.descriptor, res.memory)
        work = [k for k in DEVICE_COUNTERS if k not in TIMED_COUNTERS]
        assert {k: res.counters[k] for k in work} == {k: predicted[k] for k in work}, where
        assert res.counters["compute_cycles"] <= res.counters["cycles"], where


def test_partial_sums_wait_for_a_store_whose_aw_the_slave_holds():
    """A store's W beats may all go while the slave still holds its AW; partial sums read back
    from the same bytes must wait for that write too, not only for the answers of the writes
    the slave took (the AxiRam then served the read first and returned the old bytes: a 5x7x7
    GEMM in order nkm, chunks of 3x4x1, its K chunks meeting through DRAM, found by `systolic
    regress` seed 745926941 case 7; of seven pause patterns tried on this build, the old device
    failed three, this one among them)."""
    config = CONFIGS[0]
    rng = np.random.default_rng(7)
    ((a, b),) = random_operands(rng, config, [(5, 7, 7)])
    for pause, pause_seed in ((0.45, 7),):
        (res,) = run_gemms(config, [(a, b)], order="nkm", chunk=[(3, 4, 1)], slave="axi-ram",
                           pause=pause, pause_seed=pause_seed, name="axi-ram",
                           timeout=300)  # fmt: skip
        np.testing.assert_array_equal(res.c, reference(config, a, b),
                                      err_msg=f"pauses {pause} seeded {pause_seed}")  # fmt: skip
