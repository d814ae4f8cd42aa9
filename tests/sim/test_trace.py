"""The timeline (contract/trace.py): the simulation's log of the engines' handshakes against
models/device.py's account, event for event, and its Chrome trace-event form."""

from __future__ import annotations

import json

import numpy as np
from systolic.contract.config import ArrayConfig
from systolic.contract.dma import jobs
from systolic.contract.memory import Dram
from systolic.contract.trace import chrome_trace, trace_order
from systolic.golden.data import random_operands
from systolic.golden.reference import reference
from systolic.golden.requant import RequantParams
from systolic.models.device import trace_device
from systolic.sim.simulate import Quantization, run_gemms

#: Configurations tests/sim/test_device.py builds too (no build of their own).
WS = ArrayConfig("ws", 2, 3, a_depth=24, b_depth=24, c_depth=24)
IS_REQUANT = ArrayConfig("is", 2, 3, a_depth=24, b_depth=24, c_depth=24, zero_points=True,
                         requant=True, a_signed=False, out_signed=False, bus_width=64,
                         max_burst=2)  # fmt: skip


def _check(config, res, memory):
    where = f"{config.name} {res.descriptor.order} {res.shape}"
    rtl = sorted(res.trace, key=trace_order)
    assert rtl == sorted(trace_device(config, res.descriptor, memory), key=trace_order), where
    # independent of both: the chunk walk says how many loads, computes and stores there are
    walk = jobs(config, res.descriptor)
    names = [name for _, name, _ in rtl]
    loads = sum(j.load_a + j.load_b + (j.c_in is not None) for j in walk) + res.descriptor.requant
    assert names.count("load") == names.count("loaded") == loads, where
    assert names.count("compute") == names.count("computed") == len(walk), where
    stores = sum(j.store is not None for j in walk)
    assert names.count("store") == names.count("stored") == stores, where
    # the Chrome form: spans on one track never overlap; the array's spans are the chunks
    trace = json.loads(json.dumps(chrome_trace(rtl, label=config.name)))
    by_track: dict[int, list] = {}
    for e in trace["traceEvents"]:
        if e["ph"] == "X":
            by_track.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"]))
    for track, spans in by_track.items():
        spans.sort()
        pairs = zip(spans, spans[1:], strict=False)
        assert all(a[1] <= b[0] + 1e-9 for a, b in pairs), (where, track)
    chunks = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] == "compute"]
    assert len(chunks) == len(walk), where


def test_timeline_event_for_event_against_the_model(seed):
    rng = np.random.default_rng(seed)
    memory = Dram("7/3", 9, 4)
    shapes = [(7, 9, 8), (5, 13, 4), (3, 4, 13)]
    operands = random_operands(rng, WS, shapes)
    orders = ["nmk", "knm", "mkn"]
    for res in run_gemms(WS, operands, order=orders, memory=memory, trace=True, name="trace"):
        _check(WS, res, memory)
    # the requantization table's load, and partial sums through DRAM
    shapes = [(6, 9, 8)]
    operands = random_operands(rng, IS_REQUANT, shapes)
    params = RequantParams(rng.integers(1 << 29, 1 << 31, 8), rng.integers(-8, 3, 8), 3, False)
    (res,) = run_gemms(IS_REQUANT, operands, quant=[Quantization(2, -1, params)], order="nkm",
                       memory=memory, trace=True, name="trace")  # fmt: skip
    assert any(what == "q0" for _, _, what in res.trace)
    _check(IS_REQUANT, res, memory)


def test_a_chunk_computes_while_its_operands_land(seed):
    """A chunk starts once its A and B loads are under way, not once they are in, and the
    operand whose chunk has fewer words loads first: behind a slow DRAM the RTL's first
    compute starts before its loads end, in the order the word counts give (counted here from
    the shapes), bit-exact, every event where the model puts it."""
    rng = np.random.default_rng(seed)
    memory = Dram(1, 30, 4)  # a word of A or B lands every two or three cycles
    # WS 2x3, one chunk each: A words ceil(K / 2) * M, B words ceil(N / 3) * K
    # A 8 < B 24 words: A first; A 24 > B 6 words: B first; A 8 = B 8 words: A first
    shapes = [(2, 8, 9), (8, 6, 3), (2, 8, 3)]
    operands = random_operands(rng, WS, shapes)
    runs = run_gemms(WS, operands, memory=memory, chunk=shapes, trace=True, name="trace")
    for (m, k, n), (a, b), res in zip(shapes, operands, runs, strict=True):
        where = f"{WS.name} {(m, k, n)}"
        np.testing.assert_array_equal(res.c, reference(WS, a, b), err_msg=where)
        _check(WS, res, memory)
        events = sorted(res.trace, key=trace_order)
        first = "b" if -(-n // WS.cols) * k < -(-k // WS.rows) * m else "a"
        loads = [what[0] for _, name, what in events if name == "load"]
        assert loads == [first, "b" if first == "a" else "a"], where
        start = next(t for t, name, _ in events if name == "compute")
        last_in = max(t for t, name, _ in events if name == "loaded")
        assert start < last_in, f"{where}: the compute waited for every word ({start})"


def test_a_bank_loaded_again_is_read_only_once_its_new_words_land(seed):
    """Behind a DRAM whose latency is longer than a chunk's compute, chunk after chunk starts on
    a B bank whose next load has begun but whose new words are not in (the chunk before ends
    first): each read waits for the new words, not for the count the bank's last load left.
    Bit-exact, and the chunks do start before their B loads end."""
    rng = np.random.default_rng(seed)
    memory = Dram(16, 60, 64)
    # 6 chunks along K, innermost: A and B loaded again for each, C accumulating in one bank
    ((a, b),) = random_operands(rng, WS, [(2, 48, 3)])
    (res,) = run_gemms(WS, [(a, b)], memory=memory, chunk=[(2, 8, 3)], trace=True, name="trace")
    np.testing.assert_array_equal(res.c, reference(WS, a, b))
    _check(WS, res, memory)
    events = sorted(res.trace, key=trace_order)
    starts = [t for t, name, _ in events if name == "compute"]
    b_in = [t for t, name, what in events if name == "loaded" and what.startswith("b")]
    assert sum(s < done for s, done in zip(starts, b_in, strict=True)) >= 4, (starts, b_in)
