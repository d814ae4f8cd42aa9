"""models/inference.py: where operators run, the host's prices and the driver's timeline, each
worked out here by hand."""

from __future__ import annotations

import pytest
from systolic.contract.config import ArrayConfig
from systolic.contract.host import Host
from systolic.contract.memory import DramEnergy
from systolic.models.inference import (
    DriverCosts,
    Step,
    driver_costs,
    host_cost,
    placement,
    timeline,
)

DRAM = DramEnergy(4.0, 5.0, 2.0, 8.0, "test figures")


def test_a_timeline_worked_by_hand():
    """Queue depth 1: post 10 ns, interrupt 5, completion 20. Three descriptors of 100 ns, a
    host operator of 50, one descriptor of 30:

    - post 1 at 10 (runs 10-110), post 2 at 20 (waits, runs 110-210);
    - the queue is full: complete 1 at max(20, 110 + 5) + 20 = 135, post 3 at 145 (210-310);
    - the host operator needs them all: complete 2 at 235, 3 at 335, compute to 385;
    - post 4 at 395 (395-425), complete it at 430 + 20 = 450."""
    steps = [Step(True, 100.0, 3), Step(False, 50.0, 1), Step(True, 30.0, 1)]
    line = timeline(steps, DriverCosts(10.0, 5.0, 20.0), queue_depth=1)
    assert line.total_ns == 450.0
    assert (line.device_ns, line.host_ns, line.driver_ns) == (330.0, 50.0, 4 * 10 + 4 * 20)
    assert line.exposed_ns == 450.0 - 330.0 - 50.0 and line.descriptors == 4


def test_a_deeper_queue_hides_posting_behind_long_descriptors():
    """Two descriptors of 1000 ns behind a queue of 4: the second is posted while the first
    runs and the first's completion happens while the second runs, so only the first post,
    the last interrupt and the last completion show."""
    line = timeline([Step(True, 1000.0, 2)], DriverCosts(10.0, 5.0, 20.0), queue_depth=4)
    assert line.total_ns == 10 + 2000 + 5 + 20
    assert line.exposed_ns == 35.0


def test_the_host_prices_an_operator_by_its_roofline():
    """Softmax over 1,000 int8 elements on the mobile host (8 ops/ns, 17.5 pJ/op, 10 GB/s,
    1 us dispatch): 14 ops an element, 2 to dequantize the input and 4 to quantize the output,
    20,000 ops = 2,500 ns against 2,000 bytes = 200 ns."""
    host = Host.preset("mobile")
    cost = host_cost("Softmax", 1000, 1000, 1, 1, 1, True, host, DRAM)
    assert (cost.ops, cost.bytes) == (20_000, 2_000)
    assert cost.ns == pytest.approx(1000 + 2500)
    assert cost.pj == pytest.approx(20_000 * 17.5 + 8 * 1000 * (4.0 + 5.0))
    # a 3x3 max pool: a compare per element of its window; fp32 tensors (bf16 devices' host
    # side) need no conversion, and at 4 bytes an element the bytes bound it
    pool = host_cost("MaxPool", 1000, 4000, 9, 4, 4, False, host, DRAM)
    assert pool.ops == 1000 * (1 + 9) and pool.ns == pytest.approx(1000 + 20_000 / 10)
    # int32 accumulators in, int8 out, a bias and a ReLU done in the same pass: 1 + 1 + 1 ops
    # an element, 2 + 4 to convert; 4,000 bytes read and 1,000 written
    out = host_cost("Requantize", 1000, 1000, 1, 4, 1, True, host, DRAM, extra=2)
    assert (out.ops, out.bytes) == (1000 * (3 + 2 + 4), 5000)
    assert out.pj == pytest.approx(9000 * 17.5 + 8 * (4000 * 4.0 + 1000 * 5.0))


def test_operators_run_where_the_device_can_take_them():
    plain = ArrayConfig("ws", 4, 4)
    fused = ArrayConfig("ws", 4, 4, requant=True)
    assert placement("Relu", fused, True) == "fused"
    assert placement("Bias", fused, True) == "fused"
    assert placement("Clip", fused, False) == "host"  # not a GEMM's output alone
    assert placement("Relu", plain, True) == "host"  # no fused output path
    assert placement("BatchNormalization", plain, False) == "host"  # alone: not folded
    assert placement("Squeeze", plain, True) == "folded"
    assert placement("Reshape", fused, False) == "folded"
    assert placement("Softmax", fused, True) == "host"


def test_the_driver_costs_its_accesses():
    """A plain device: 18 posted writes; 2 reads, no counters; one acknowledging write."""
    host = Host(**(Host.preset("mobile").to_dict() | {"counters": False}))
    costs = driver_costs(ArrayConfig("ws", 2, 2), host)
    assert costs == DriverCosts(18 * 50.0, 5000.0, 2 * 200.0 + 50.0)
