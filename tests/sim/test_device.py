"""The device on DRAM (rtl/device.py under Verilator, with sim/dram.py's DRAM model): bit-exact
GEMMs in every loop order, the DRAM traffic counted three ways (the device, the DRAM model, the
model's bursts), every counter as models/device.py predicts it, and every refusal code answered
as the contract says, with no traffic."""

from __future__ import annotations

import dataclasses
import itertools
from collections import Counter

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig
from systolic.contract.dma import (
    LOOP_ORDERS,
    Refusal,
    Region,
    check_descriptor,
    containers,
    jobs,
    next_base,
    place,
    tile_rows,
    word_layout,
)
from systolic.contract.memory import DEFAULT_MEMORY, Dram
from systolic.contract.plan import granularity
from systolic.golden.data import random_operands
from systolic.golden.reference import reference, requantized_reference
from systolic.golden.requant import RequantParams
from systolic.models.device import predict_device, predict_stream
from systolic.sim.simulate import Quantization, run_gemms

#: OS and IS take zero points (tests/rtl/test_quantized.py runs its extreme zero points on
#: them; here they are 0), so that one build serves both files.
CONFIGS = [
    ArrayConfig("ws", 2, 3, a_depth=24, b_depth=24, c_depth=24),
    ArrayConfig("os", 3, 2, a_depth=24, b_depth=24, c_depth=24, a_width=4, b_width=6,
                a_signed=False, acc_width=20, bus_width=64, zero_points=True),
    ArrayConfig("is", 3, 3, a_depth=24, b_depth=24, c_depth=24, max_burst=2, max_reads=2,
                a_width=4, b_width=6, acc_width=20, zero_points=True),
]  # fmt: skip


#: Wall-clock seconds a device run may take: a hang (a lost beat, a bank never released) fails.
DEADLINE = 120


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.name)
def test_device_gemms_bit_exact_in_every_order(config, seed):
    rng = np.random.default_rng([seed, config.rows, config.cols])
    shapes = [(int(rng.integers(1, 14)), int(rng.integers(1, 14)), int(rng.integers(1, 14)))
              for _ in LOOP_ORDERS]  # fmt: skip
    operands = random_operands(rng, config, shapes)
    memory = Dram("7/3", 9, 4)
    orders = [o for o in LOOP_ORDERS for _ in operands]  # every shape in every order, one process
    runs = run_gemms(config, operands * len(LOOP_ORDERS), order=orders, pad=1, memory=memory,
                     name="orders", timeout=DEADLINE)  # fmt: skip
    for order, (a, b), res in zip(orders, operands * len(LOOP_ORDERS), runs, strict=True):
        where = f"{config.name} {order} {res.shape}"
        assert res.error == 0 and res.descriptor.order == order, where
        np.testing.assert_array_equal(res.c, reference(config, a, b), err_msg=where)
        assert res.counters["jobs"] == len(jobs(config, res.descriptor)), where
        # the model, cycle for cycle: compute, waits and DRAM traffic
        predicted = predict_device(config, res.descriptor, memory)
        assert dict(predicted) == res.counters, where
        for k in "abcq":  # the bytes read: the device's count, the DRAM model's, the model's
            assert res.counters[f"dram_read_bytes_{k}"] == res.dram[f"read_bytes_{k}"] == (
                predicted[f"dram_read_bytes_{k}"]), (where, k)  # fmt: skip
        assert res.counters["dram_write_bytes"] == res.dram["write_bytes_c"] == (
            predicted["dram_write_bytes"]), where  # fmt: skip
        assert predicted.measured_cycles == res.measured_cycles, where
        assert res.dram["protocol_errors"] == 0, where  # bursts, 4 KB pages, WLAST


def test_quantized_and_accumulating_gemms(seed):
    """Zero points, requantization (IS: a C word is one channel), and accumulate into C."""
    rng = np.random.default_rng(seed)
    # the AXI conformance test's configuration (64-bit bus, 2-beat bursts): one build
    config = ArrayConfig("is", 2, 3, a_depth=24, b_depth=24, c_depth=24, zero_points=True,
                         requant=True, a_signed=False, out_signed=False, bus_width=64,
                         max_burst=2)  # fmt: skip
    shapes = [(7, 9, 8), (5, 4, 11)]
    operands = random_operands(rng, config, shapes)
    params = [
        RequantParams(
            rng.integers(1 << 29, 1 << 31, n),
            rng.integers(-8, 3, n),
            int(rng.integers(0, 20)),
            bool(i),
        )
        for i, (_, _, n) in enumerate(shapes)
    ]
    zeros = [(int(rng.integers(0, 50)), int(rng.integers(-20, 20))) for _ in shapes]
    memory = Dram("5/2", 30, 3)
    quant = [Quantization(za, zb, p) for (za, zb), p in zip(zeros, params, strict=True)]
    res = run_gemms(config, operands, quant=quant, order="mkn", memory=memory, timeout=DEADLINE)
    for (a, b), (za, zb), p, r in zip(operands, zeros, params, res, strict=True):
        assert r.error == 0
        np.testing.assert_array_equal(r.c, requantized_reference(config, a, b, za, zb, p))
        assert dict(predict_device(config, r.descriptor, memory)) == r.counters
    # the same device, raw accumulators out (no table to load, no requantization)
    (r,) = run_gemms(config, operands[:1], quant=[Quantization(*zeros[0])], memory=memory,
                     name="raw", timeout=DEADLINE)  # fmt: skip
    (a, b), (za, zb) = operands[0], zeros[0]
    np.testing.assert_array_equal(r.c, reference(config, a, b, za, zb))
    assert dict(predict_device(config, r.descriptor, memory)) == r.counters
    plain = CONFIGS[0]  # built for the tests above
    operands = random_operands(rng, plain, [(6, 7, 5)])
    c0 = rng.integers(-1000, 1000, (6, 5))
    (r,) = run_gemms(plain, operands, c_in=[c0], order="kmn", memory=memory, timeout=DEADLINE)
    ((a, b),) = operands
    np.testing.assert_array_equal(r.c, reference(plain, a, b) + c0)
    assert dict(predict_device(plain, r.descriptor, memory)) == r.counters


def _edge(accepts, lo: int, hi: int) -> int:
    """The least value in ``lo..hi`` that ``accepts`` refuses, ``accepts(lo)`` true and
    ``accepts(hi)`` false (bisection)."""
    assert accepts(lo) and not accepts(hi), (lo, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if accepts(mid) else (lo, mid)
    return hi


def _past_the_products_registers(config) -> list:
    """The check keeps a product only as wide as the bound it meets (the address space, a
    bank's depth) and a sticky bit past it: a span of exactly 2**33 bytes and a chunk of
    exactly 2**bits words for a bank of fewer (``bits``, the depth's width), whose low bits are
    all zero, are refused all the same."""
    word, depth = word_layout(config, "a"), config.a_depth
    assert word.rowwise and config.b_depth >= depth and config.c_depth >= depth
    # A's tile rows: k over the tile; its lines: m (WS at 2 x 3: B and C stay small)
    k = 4 * word.tile + 1  # five tile rows: the span is four strides, 2**33 bytes at 2**31
    wide = dataclasses.replace(place(config, 4, k, 3), a=Region(0, 1 << 31))
    words = 1 << depth.bit_length()  # tile rows x lines, past the depth's bits
    m = words // 4
    deep = dataclasses.replace(place(config, m, 4 * word.tile, 3), chunk=(m, 4 * word.tile, 3))
    assert tile_rows(word, (m, 4 * word.tile)) == (4, m)
    cases = [(Refusal.RANGE, wide), (Refusal.CHUNK, deep)]
    for code, d in cases:
        assert check_descriptor(config, d)[0] is code, (code, d)
    return cases


def test_refusals_at_the_edge_of_the_checks_products(seed):
    """The check multiplies tile rows by strides (the address range) and by lines (a chunk's
    words) bit-serially: descriptors just past each limit, found by bisection against the
    contract's check, are refused with its code, on random shapes and strides that use many of
    the products' bits."""
    config = CONFIGS[0]  # built for the tests above already
    rng = np.random.default_rng(seed)
    print(f"seed {seed}")
    cases = []
    for _ in range(6):
        m, k, n = (int(v) for v in rng.integers(1, 200, 3))
        good = place(config, m, k, n)
        kind = str(rng.choice(list("abc")))
        region = getattr(good, kind)
        stride = region.stride * int(rng.integers(1, 1 << 12))
        step = containers(config)["p" if kind == "c" else kind]  # addresses stay aligned

        # past the 32-bit address space by the least step of the address
        def at(i, kind=kind, good=good, stride=stride, step=step):
            return dataclasses.replace(good, **{kind: Region(i * step, stride)})

        accepted = lambda i: check_descriptor(config, at(i))[0] is Refusal.NONE  # noqa: E731
        if accepted(0):
            cases.append((Refusal.RANGE, at(_edge(accepted, 0, (1 << 32) // step))))
        # a chunk one step (the dimension's granularity) longer than its bank holds
        dim = int(rng.integers(3))
        g = granularity(config)["mkn"[dim]]
        total = (m, k, n)[dim]

        def chunked(j, good=good, dim=dim, g=g, total=total):
            chunk = list(good.chunk)
            chunk[dim] = min(j * g, total)
            return dataclasses.replace(good, chunk=tuple(chunk))

        fits = lambda j: check_descriptor(config, chunked(j))[0] is Refusal.NONE  # noqa: E731
        last = -(-total // g)
        if fits(1) and not fits(last):
            cases.append((Refusal.CHUNK, chunked(_edge(fits, 1, last))))
    assert Counter(code for code, _ in cases)[Refusal.RANGE] == 6, cases
    assert Counter(code for code, _ in cases)[Refusal.CHUNK] >= 3, cases
    cases += _past_the_products_registers(config)
    operands = random_operands(rng, config, [(d.m, d.k, d.n) for _, d in cases])
    res = run_gemms(config, operands, descriptors=[d for _, d in cases], name="product-edges",
                    timeout=DEADLINE)  # fmt: skip
    for (code, d), r in zip(cases, res, strict=True):
        assert check_descriptor(config, d)[0] is code
        assert r.error == int(code), (code, d, r.error)


def test_refused_descriptors_move_nothing():
    config = CONFIGS[0]  # built for the tests above
    good = place(config, 6, 6, 6)
    cases = {
        Refusal.DIMENSION: dataclasses.replace(good, m=0),
        Refusal.ORDER: dataclasses.replace(good, order="kkk"),
        Refusal.CHUNK: dataclasses.replace(good, chunk=(6, 3, 6)),  # K chunks: multiples of 2
        Refusal.ALIGNMENT: dataclasses.replace(good, b=Region(good.b.addr + 1, good.b.stride)),
        Refusal.STRIDE: dataclasses.replace(good, a=Region(good.a.addr, 2)),
        Refusal.RANGE: dataclasses.replace(good, c=Region((1 << 32) - 16, good.c.stride)),
    }
    for code, d in cases.items():
        assert check_descriptor(config, d)[0] is code, code
    rng = np.random.default_rng(0)
    operands = random_operands(rng, config, [(6, 6, 6)] * (len(cases) + 1))
    descriptors = [*cases.values(), good]
    res = run_gemms(config, operands, descriptors=descriptors, name="refusals", timeout=DEADLINE)
    for code, r in zip(itertools.chain(cases, [Refusal.NONE]), res, strict=True):
        assert r.error == int(code), (code, r.error)
        moved = sum(v for k, v in r.dram.items())
        assert dict(predict_device(config, r.descriptor, DEFAULT_MEMORY)) == r.counters, code
        if code is Refusal.NONE:
            assert moved > 0
        else:
            assert moved == 0 and r.counters["jobs"] == 0, code


def test_the_bench_driver_makes_the_accesses_the_model_counts():
    """The simulation's driver posts each descriptor with a write per DESC_* register and the
    doorbell, and completes it reading IRQ_PENDING, STATUS and every counter and clearing the
    interrupt: what contract.host.driver_accesses counts for a driver that reads counters,
    refused descriptors included. Its bus cycles are measured beside."""
    from systolic.contract.host import Host, driver_accesses

    config = CONFIGS[0]  # built for the tests above
    good = place(config, 6, 6, 6)
    refused = dataclasses.replace(good, m=0)
    rng = np.random.default_rng(0)
    operands = random_operands(rng, config, [(6, 6, 6)] * 2)
    res = run_gemms(config, operands, descriptors=[good, refused], name="driver",
                    timeout=DEADLINE)  # fmt: skip
    want = driver_accesses(config, Host(**(Host.preset().to_dict() | {"counters": True})))
    for r in res:
        assert {k: r.driver[k] for k in want} == want
        # each access takes the bench's AXI4-Lite master at least two cycles
        assert r.driver["post_cycles"] >= 2 * want["post"]
        assert r.driver["complete_cycles"] >= 2 * (want["reads"] + want["acks"])


def _stacked(config, shapes, rng) -> list:
    """Descriptors one after another in DRAM, each in a random order and with random chunk
    sizes (several chunks, so that loads, computes and stores overlap)."""
    out, base = [], 0
    g = granularity(config)
    for m, k, n in shapes:
        chunk = tuple(int(rng.integers(1, -(-size // g[d]) + 1)) * g[d] if size > g[d] else size
                      for d, size in zip("mkn", (m, k, n), strict=True))  # fmt: skip
        chunk = tuple(min(c, s) for c, s in zip(chunk, (m, k, n), strict=True))
        d = place(config, m, k, n, order=str(rng.choice(LOOP_ORDERS)), chunk=chunk, base=base)
        if check_descriptor(config, d)[0] is not Refusal.NONE:  # too big a chunk: the largest
            d = place(config, m, k, n, order=d.order, base=base)
        out.append(d)
        base = next_base(config, d)
    return out


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.name)
def test_queued_descriptors_overlap_and_complete_in_order(config, seed):
    """Six descriptors posted at once: they overlap on the device, each bit-exact and done on
    the cycle the model's queue predicts, and the counters the queue leaves are the model's;
    the fourth reads the third's C (it accumulates into it: it waits for the third to
    complete), the fifth is refused in its turn."""
    rng = np.random.default_rng([seed, config.rows, config.cols, 6])
    print(f"seed {seed}")
    shapes = [(int(rng.integers(1, 14)), int(rng.integers(1, 14)), int(rng.integers(1, 14)))
              for _ in range(6)]  # fmt: skip
    shapes[3] = (shapes[2][0], shapes[3][1], shapes[2][2])  # C of the third's shape
    operands = random_operands(rng, config, shapes)
    descriptors = _stacked(config, shapes, rng)
    descriptors[3] = dataclasses.replace(descriptors[3], accumulate=True, c=descriptors[2].c)
    descriptors[4] = dataclasses.replace(descriptors[4], order="xyz")  # refused: ORDER
    memory = Dram("7/3", 9, 4)
    runs = run_gemms(config, operands, descriptors=descriptors, queued=True, memory=memory,
                     name="queued", timeout=DEADLINE)  # fmt: skip
    first = runs[0].posted
    predicted = predict_stream(config, [(r.descriptor, r.posted - first) for r in runs], memory)
    wants = [reference(config, a, b) for a, b in operands]
    wants[3] = wants[3] + wants[2]
    wants[2] = wants[3]  # read back after the fourth accumulated into it
    for i, (res, want, pred) in enumerate(zip(runs, wants, predicted, strict=True)):
        where = f"{config.name} descriptor {i} {res.shape} {res.descriptor.order}"
        assert pred.measured_cycles == res.measured_cycles, where
        if i == 4:
            assert res.error == int(Refusal.ORDER), where
            continue
        assert res.error == 0, where
        np.testing.assert_array_equal(res.c, want, err_msg=where)
    assert runs[-1].counters == predicted.registers
    done = [r.posted + r.measured_cycles for r in runs]  # the cycle each completed
    assert done == sorted(done)  # in order
    # the DRAM model served what the device counted, and no rule broke
    for k in "abcq":
        assert runs[0].dram[f"read_bytes_{k}"] == sum(p[f"dram_read_bytes_{k}"]
                                                      for p in predicted), k  # fmt: skip
    assert runs[0].dram["write_bytes_c"] == sum(p["dram_write_bytes"] for p in predicted)
    assert runs[0].dram["protocol_errors"] == 0


def test_queued_descriptors_overlap_unless_one_reads_what_the_other_writes():
    """The model's queue (which the RTL matches above): the second of two independent GEMMs
    starts while the first still computes, and finishes sooner than after it alone; one that
    accumulates into the first's C starts only once the first has completed."""
    config = CONFIGS[0]
    first = place(config, 12, 24, 12, chunk=(4, 6, 6))
    second = place(config, 12, 24, 12, chunk=(4, 6, 6), base=next_base(config, first))
    chained = dataclasses.replace(second, accumulate=True, c=first.c)
    memory = Dram(8, 10, 4)
    alone = predict_device(config, second, memory)
    one, two = predict_stream(config, [(first, 0), (second, 0)], memory)
    done = [one.measured_cycles, two.accepted + two.measured_cycles]
    assert done[1] - two["cycles"] < done[0]  # it started before the first completed
    assert done[1] - done[0] < alone.measured_cycles
    one, two = predict_stream(config, [(first, 0), (chained, 0)], memory)
    assert two.accepted + two.measured_cycles - two["cycles"] >= one.measured_cycles


def test_queued_requantizing_descriptors_load_their_tables_in_turn(seed):
    """Requantizing GEMMs queued: each one's table loads only once the write side is done with
    the one before (whose final stores read the table's buffer); bit-exact, each completion
    and the queue's counters as the model predicts."""
    rng = np.random.default_rng([seed, 7])
    print(f"seed {seed}")
    config = ArrayConfig("is", 2, 3, a_depth=24, b_depth=24, c_depth=24, zero_points=True,
                         requant=True, a_signed=False, out_signed=False, bus_width=64,
                         max_burst=2)  # fmt: skip
    shapes = [tuple(int(x) for x in rng.integers(1, 12, 3)) for _ in range(4)]
    operands = random_operands(rng, config, shapes)
    quant = [Quantization(int(rng.integers(0, 50)), int(rng.integers(-20, 20)),
                          RequantParams(rng.integers(1 << 29, 1 << 31, n), rng.integers(-8, 3, n),
                                        int(rng.integers(0, 20)), bool(rng.integers(2))))
             for _, _, n in shapes]  # fmt: skip
    memory = Dram("5/2", 12, 3)
    runs = run_gemms(config, operands, quant=quant, queued=True, memory=memory,
                     name="queued-requant", timeout=DEADLINE)  # fmt: skip
    first = runs[0].posted
    predicted = predict_stream(config, [(r.descriptor, r.posted - first) for r in runs], memory)
    for (a, b), q, res, pred in zip(operands, quant, runs, predicted, strict=True):
        assert res.error == 0 and pred.measured_cycles == res.measured_cycles, res.shape
        np.testing.assert_array_equal(
            res.c, requantized_reference(config, a, b, q.a_zero, q.b_zero, q.params)
        )
    assert runs[-1].counters == predicted.registers


def test_a_queue_where_the_next_finishes_computing_before_the_oldest_stores():
    """A GEMM with a long final store, a tiny one behind it (computed before that store ends:
    the compute side must not take the oldest's slot again), then two more: bit-exact, every
    completion and the queue's counters as the model predicts (every check after the first
    finds another descriptor in flight, so they add up over the four)."""
    config = CONFIGS[0]
    rng = np.random.default_rng(34)
    shapes = [(12, 1, 12), (1, 1, 1), (12, 6, 12), (3, 5, 4)]
    operands = random_operands(rng, config, shapes)
    memory = Dram(1, 20, 2)  # a byte a cycle: the first store drags
    runs = run_gemms(config, operands, queued=True, memory=memory, name="queued-order",
                     timeout=DEADLINE)  # fmt: skip
    first = runs[0].posted
    predicted = predict_stream(config, [(r.descriptor, r.posted - first) for r in runs], memory)
    for (a, b), res, pred in zip(operands, runs, predicted, strict=True):
        assert res.error == 0 and pred.measured_cycles == res.measured_cycles, res.shape
        np.testing.assert_array_equal(res.c, reference(config, a, b))
    assert runs[-1].counters == predicted.registers
    # the situations this test is for, on the model (which the RTL equals above): the second
    # finished computing about 400 cycles before the first completed (a trace of the model
    # shows it), and every check after the first found another descriptor in flight
    done = [p.accepted + p.measured_cycles for p in predicted]
    assert done == sorted(done) and predicted[1]["jobs"] == 1
    assert predicted.registers["jobs"] == sum(p["jobs"] for p in predicted)
