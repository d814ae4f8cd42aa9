"""sim/vector.py and the vector unit (rtl/vector.py) under Verilator behind the DRAM model, and
behind cocotbext-axi's AxiRam: random residual adds, maxima and poolings bit-exact against
golden/vector.py, every counter equal to models/vector.py's, the DRAM model's own count of
the traffic equal to the device's, and every refusal answered with its code and no traffic."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig, value_range
from systolic.contract.dma import Refusal
from systolic.contract.interface import DEVICE_COUNTERS
from systolic.contract.memory import Dram
from systolic.contract.vector import RUN_BEATS, check_vector, place_vector
from systolic.golden.reference import reference
from systolic.golden.vector import AddParams, descriptor_reference
from systolic.models.device import predict_device
from systolic.models.vector import predict_vector
from systolic.sim.vector import run_stream, run_vectors

from ..rtl.test_quantized import RQ
from .test_axi_conformance import CONFIGS as PORT_CONFIGS

#: Counters that depend on the memory's timing (AxiRam's is its own).
TIMING = ("cycles",)


def random_ops(rng, config: ArrayConfig, count: int) -> list:
    """``count`` random vector descriptors with their inputs: every operator, windows clipped at
    the edges, clamps, a pixel longer than the run buffer and a tensor of several runs."""
    bus = config.bus_width // 8
    lo, hi = value_range(config.out_width, config.out_signed)
    ops = []
    for i in range(count):
        op = ("add", "max", "max_pool", "average_pool")[i % 4]
        long_pixel = i == count - 1  # a global average over channels past RUN_BEATS beats
        c = bus * (RUN_BEATS + 1) if long_pixel else bus * int(rng.integers(1, 4))
        shape = (int(rng.integers(1, 3)), *(int(s) for s in rng.integers(1, 7, 2)), c)
        if i == 0:  # an elementwise tensor of several runs
            shape = (1, 5, 4, bus * 2)
        fields = {}
        if op == "add":
            scales = rng.uniform(0.01, 0.2, 2)
            zero = rng.integers(lo, hi + 1, 3)
            z_scale = float(rng.uniform(1.05, 1.5) * max(scales))
            p = AddParams.from_scales(scales[0], zero[0], scales[1], zero[1], z_scale, zero[2])
            fields = {f"x_{f}": getattr(p, f"x_{f}") for f in ("zero", "multiplier", "shift")}
            fields |= {f"y_{f}": getattr(p, f"y_{f}") for f in ("zero", "multiplier", "shift")}
            fields |= {"z_multiplier": p.out_multiplier, "z_shift": p.out_shift,
                       "out_zero": p.out_zero}  # fmt: skip
        elif op.endswith("pool"):
            h, w = shape[1:3]
            if long_pixel:
                fields = {"window": (h, w), "stride": (1, 1), "pads": (0, 0), "out": (1, 1)}
            else:
                k = tuple(int(x) for x in rng.integers(1, 4, 2))
                s = tuple(int(x) for x in rng.integers(1, 3, 2))
                pads = tuple(int(rng.integers(0, kk)) for kk in k)
                most = [
                    (size + pad - 1) // st + 1
                    for size, pad, st in zip((h, w), pads, s, strict=True)
                ]
                fields = {"window": k, "stride": s, "pads": pads,
                          "out": tuple(int(rng.integers(1, m + 1)) for m in most)}  # fmt: skip
        if rng.random() < 0.5:
            a, b = sorted(int(x) for x in rng.integers(lo, hi + 1, 2))
            fields["clamp"] = (a, b)
        v = place_vector(config, "average_pool" if long_pixel else op, shape, **fields)
        x = rng.integers(lo, hi + 1, shape)
        y = rng.integers(lo, hi + 1, shape) if not v.pooling else None
        ops.append((v, x, y))
    return ops


def refusals(config: ArrayConfig) -> list:
    """One descriptor per refusal the device answers, each with the code it must give."""
    bus = config.bus_width // 8
    shape = (1, 3, 3, bus)
    pool = place_vector(config, "max_pool", shape, window=(2, 2), stride=(1, 1), out=(2, 2))
    add = place_vector(config, "add", shape)
    cases = [
        (dataclasses.replace(add, clamp=(3, 2)), Refusal.CLAMP),
        (dataclasses.replace(add, shape=(1, 0, 3, bus)), Refusal.DIMENSION),
        (dataclasses.replace(pool, pads=(2, 0)), Refusal.WINDOW),  # a window above the plane
        (dataclasses.replace(pool, out=(4, 2)), Refusal.WINDOW),  # a window past the plane
        (dataclasses.replace(pool, stride=(1, 0)), Refusal.WINDOW),
        (dataclasses.replace(add, shape=(1, 3, 3, bus + 1)), Refusal.ALIGNMENT),
        (dataclasses.replace(add, y=add.y + 1), Refusal.ALIGNMENT),
        (dataclasses.replace(pool, z=(1 << 32) - bus), Refusal.RANGE),
    ]
    out = []
    for v, code in cases:
        assert check_vector(config, v)[0] is code, (v, code)
        x = np.zeros(v.shape, np.int64) if all(v.shape) else np.zeros((1, 0, 3, bus), np.int64)
        out.append((v, x, None if v.pooling else x, code))
    return out


def _memory(rng) -> Dram:
    """A memory slower than the bus, with a fractional beat rate and few requests in flight."""
    return Dram(
        Fraction(int(rng.integers(3, 17)), int(rng.integers(1, 4))),
        int(rng.integers(1, 40)),
        int(rng.integers(1, 6)),
    )


def test_vector_unit_bit_exact_and_counted_exactly(seed):
    """Random operators and every refusal, one simulation behind a random DRAM."""
    rng = np.random.default_rng([seed, 33])
    config = RQ
    ops = random_ops(rng, config, 8)
    # a window of 50,000 pixels and more: the reciprocal's largest counts (and its shifts)
    bus = config.bus_width // 8
    h, w = (int(s) for s in rng.integers(200, 256, 2))
    big = place_vector(config, "average_pool", (1, h, w, bus), window=(h, w), out=(1, 1))
    lo, hi = value_range(config.out_width, config.out_signed)
    ops.append((big, rng.integers(lo, hi + 1, big.shape), None))
    refused = refusals(config)
    memory = _memory(rng)
    jobs = [(v, x, y) for v, x, y in ops] + [(v, x, y) for v, x, y, _ in refused]
    results = run_vectors(config, jobs, memory=memory, name="vector", timeout=600)
    for (v, x, y), r in zip(ops, results, strict=False):
        where = f"{v} behind {memory} (seed {seed})"
        assert r.error == 0, where
        np.testing.assert_array_equal(r.z, descriptor_reference(config, v, x, y), err_msg=where)
        predicted = predict_vector(config, v, memory)
        assert r.counters == dict(predicted), where
        assert r.measured_cycles == predicted.measured_cycles, where
        for op in "ab":  # the DRAM model's own count, by the requests' AxUSER
            assert r.dram[f"read_beats_{op}"] == r.counters[f"dram_read_beats_{op}"], where
        assert r.dram["write_bytes_c"] == r.counters["dram_write_bytes"], where
        assert r.dram["protocol_errors"] == 0, where
    for (v, _, _, code), r in zip(refused, results[len(ops) :], strict=True):
        assert r.error == code, (v, code)
        assert r.counters == dict.fromkeys(DEVICE_COUNTERS, 0), v
        assert r.dram["read_beats_a"] == r.dram["write_beats_c"] == 0, v


@pytest.mark.parametrize("config", PORT_CONFIGS, ids=lambda c: c.name)
def test_vector_unit_behind_cocotbext_axi_ram_with_random_pauses(config, seed):
    """Unsigned outputs, a 64-bit bus and 2-beat bursts behind an independent AXI4 slave."""
    rng = np.random.default_rng([seed, 34])
    ops = random_ops(rng, config, 4)
    results = run_vectors(config, ops, slave="axi-ram", pause=0.4, pause_seed=seed,
                          name="vector-axi-ram", timeout=600)  # fmt: skip
    for (v, x, y), r in zip(ops, results, strict=True):
        where = f"{v} (pauses seeded {seed})"
        assert r.error == 0, where
        np.testing.assert_array_equal(r.z, descriptor_reference(config, v, x, y), err_msg=where)
        predicted = predict_vector(config, v, r.memory)
        work = [k for k in DEVICE_COUNTERS if k not in TIMING]
        assert {k: r.counters[k] for k in work} == {k: predicted[k] for k in work}, where


def test_vector_descriptors_queued_between_gemms_run_alone_in_their_turn(seed):
    """GEMMs and vector descriptors posted at once: a vector descriptor waits until every one
    before it has completed and holds the port alone; every result bit-exact, in order, and the
    queue's DRAM traffic what each would move alone."""
    rng = np.random.default_rng([seed, 34])
    config = RQ
    ops = random_ops(rng, config, 4)[:2]
    lo, hi = value_range(config.a_width, config.a_signed)
    gemms = [
        (rng.integers(lo, hi + 1, (m, k)), rng.integers(lo, hi + 1, (k, n)))
        for m, k, n in (tuple(int(x) for x in rng.integers(1, 12, 3)) for _ in range(3))
    ]
    far = 1 << 22  # the vectors' tensors past the GEMMs, which lie from address 0
    items, vectors = [], []
    for i in range(3):
        items.append(("gemm", *gemms[i], None))
        if i < 2:
            v, x, y = ops[i]
            at = far * (i + 1)  # each vector's tensors apart: all are in DRAM before any runs
            v = dataclasses.replace(v, x=v.x + at, y=v.y + at, z=v.z + at)
            vectors.append((v, x, y))
            items.append(("vector", v, x, y))
    memory = Dram(8, 7, 4)
    results = run_stream(config, items, memory=memory, name="queued-mixed", timeout=600,
                         queued=True)  # fmt: skip
    want_reads = 0
    for item, r in zip(items, results, strict=True):
        assert r.error == 0, item[0]
        if item[0] == "gemm":
            np.testing.assert_array_equal(r.c, reference(config, item[1], item[2]))
            want_reads += sum(predict_device(config, r.descriptor, memory)[f"dram_read_bytes_{k}"]
                              for k in "abcq")  # fmt: skip
        else:
            np.testing.assert_array_equal(r.z, descriptor_reference(config, *item[1:]))
            want_reads += sum(predict_vector(config, item[1], memory)[f"dram_read_bytes_{k}"]
                              for k in "abcq")  # fmt: skip
    done = [r.measured_cycles for r in results]
    assert all(d > 0 for d in done)
    assert results[0].dram["protocol_errors"] == 0
    assert sum(results[0].dram[f"read_bytes_{k}"] for k in "abcq") == want_reads
