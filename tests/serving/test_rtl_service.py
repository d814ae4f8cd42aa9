"""The service times a serving simulation uses are the hardware's: a short stream's batches,
run back to back through the device's descriptor queue under Verilator, take exactly the cycles
(acceptance to done) the service said, and compute C bit-exact."""

from __future__ import annotations

import numpy as np
from systolic.contract.config import ArrayConfig
from systolic.contract.memory import Memory
from systolic.golden.data import random_operands
from systolic.golden.reference import reference
from systolic.serving.batching import Policy, serve
from systolic.serving.service import GemmService
from systolic.serving.traffic import Mix, Poisson, RequestKind, stream
from systolic.sim.simulate import run_gemms
from systolic.workloads.evaluate import gemm_chunk

CONFIG = ArrayConfig("ws", 2, 3, a_depth=24, b_depth=24, c_depth=24)  # the device tests' build


def test_a_streams_batches_take_their_service_times_on_the_rtl(seed):
    clock = 1000.0
    service = GemmService(CONFIG, (3, 8, 5), Memory.preset("lpddr4x-4266-x16"), clock)
    requests = stream(Poisson(2e5), Mix((RequestKind("gemm"),)), 10, seed)
    served = serve(requests, Policy("dynamic", 3, 2e-6), service)
    sizes = [int(b) for b in served.batch_size]
    assert len(set(sizes)) > 1 or len(sizes) > 2, sizes  # batches of more than one shape
    shapes = [service.gemm(b) for b in sizes]
    rng = np.random.default_rng(seed)
    operands = random_operands(rng, CONFIG, shapes)
    results = run_gemms(CONFIG, operands, memory=service.dram,
                        chunk=[gemm_chunk(CONFIG, s, service.dram) for s in shapes],
                        name="serving-batches", timeout=300)  # fmt: skip
    for size, r, (a, b), start, finish in zip(sizes, results, operands, served.batch_start,
                                              served.batch_finish, strict=True):  # fmt: skip
        np.testing.assert_array_equal(r.c, reference(CONFIG, a, b))
        # the batch's time in the serving simulation is the RTL's cycles at the clock
        assert round((finish - start) * clock * 1e6) == r.measured_cycles, (size, r.shape)
