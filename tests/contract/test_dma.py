"""contract/dma.py: DRAM images, bursts, descriptor refusals and the chunk jobs of every loop
order, each checked against a property or a hand-worked case rather than its own code."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig
from systolic.contract.dma import (
    LOOP_ORDERS,
    PLACEMENT_ALIGN,
    Descriptor,
    Refusal,
    Region,
    bursts,
    check_descriptor,
    containers,
    descriptor_values,
    from_image,
    image,
    jobs,
    place,
    reads_what_writes,
    spans,
    transfers,
    word_layout,
)
from systolic.contract.layouts import footprint


def test_image_by_hand():
    # WS 2x2 int8: A words run along K, two elements (2 bytes, container 2); A is 3 x 3, so
    # tile row 0 holds A[:, 0:2] and tile row 1 A[:, 2:3] zero-padded; stride 8 bytes
    config = ArrayConfig("ws", 2, 2)
    a = np.array([[1, 2, 3], [4, 5, 6], [-1, -2, -3]])
    blob = image(a, word_layout(config, "a"), 2, 8)
    want = bytes([1, 2, 4, 5, 0xFF, 0xFE, 0, 0, 3, 0, 6, 0, 0xFD, 0])
    assert blob == want


@pytest.mark.parametrize(
    "config",
    [ArrayConfig("ws", 3, 5), ArrayConfig("os", 4, 2, a_width=4, b_width=4, acc_width=16),
     ArrayConfig("is", 2, 3, a_width=6, b_width=5, a_signed=False, acc_width=64),
     ArrayConfig("ws", 4, 4, requant=True, out_width=4, out_signed=False)],
    ids=lambda c: c.name,
)  # fmt: skip
def test_images_round_trip(config, seed):
    rng = np.random.default_rng(seed)
    cont = containers(config)
    for kind in "abcp":
        word = word_layout(config, kind)
        lo, hi = (
            (-(1 << (word.width - 1)), 1 << (word.width - 1))
            if word.signed
            else (0, 1 << word.width)
        )
        shape = (int(rng.integers(1, 12)), int(rng.integers(1, 12)))
        mat = rng.integers(lo, hi, shape, dtype=np.int64) if word.width < 64 else rng.integers(
            -(1 << 62), 1 << 62, shape)  # fmt: skip
        tiles = math.ceil((shape[1] if word.rowwise else shape[0]) / word.tile)
        lines = shape[0] if word.rowwise else shape[1]
        stride = cont[kind] * (lines + int(rng.integers(0, 3)))
        blob = image(mat, word, cont[kind], stride)
        assert len(blob) == (tiles - 1) * stride + lines * cont[kind]
        np.testing.assert_array_equal(from_image(blob, word, cont[kind], stride, shape), mat)


def test_bursts_split_at_their_size_and_cover_the_run():
    assert bursts(0, 64, 16, 2) == [(0, 2), (32, 2)]
    assert bursts(48, 64, 16, 2) == [(48, 1), (64, 2), (96, 1)]
    rng = np.random.default_rng(0)
    for _ in range(200):
        beat = int(2 ** rng.integers(0, 7))
        burst = int(2 ** rng.integers(0, 5))
        address = int(rng.integers(0, 10_000)) * beat
        nbytes = int(rng.integers(1, 200)) * beat
        out = bursts(address, nbytes, beat, burst)
        assert out[0][0] == address and sum(b for _, b in out) * beat == nbytes
        for (a0, b0), (a1, _) in itertools.pairwise(out):
            assert a0 + b0 * beat == a1  # contiguous
        for a, b in out:
            assert 1 <= b <= burst and a // 4096 == (a + b * beat - 1) // 4096  # no 4 KB crossing


def _descriptor(config, m, k, n, chunk, order="nmk", **kw):
    cont = containers(config)

    def region(kind, shape, base):
        kind = "p" if kind == "c" else kind  # outputs at accumulator width (no requant)
        word = word_layout(config, kind)
        lines = shape[0] if word.rowwise else shape[1]
        return Region(base, lines * cont[kind])

    return Descriptor(m, k, n, chunk, region("a", (m, k), 0), region("b", (k, n), 1 << 20),
                      region("c", (m, n), 2 << 20), region("p", (m, n), 3 << 20), order=order,
                      **kw)  # fmt: skip


@pytest.mark.parametrize(
    "change, refusal",
    [
        ({"m": 0}, Refusal.DIMENSION),
        ({"k": 1 << 16}, Refusal.DIMENSION),
        ({"order": "mkk"}, Refusal.ORDER),
        ({"accumulate": True, "requant": True}, Refusal.MODE),
        ({"chunk": (0, 8, 8)}, Refusal.CHUNK),
        ({"chunk": (8, 6, 8)}, Refusal.CHUNK),  # K chunks along A's words: multiples of rows 4
        ({"chunk": (64, 8, 8)}, Refusal.CHUNK),  # 64 A words... past the 48-word bank
        ({"a": Region(3, 64)}, Refusal.ALIGNMENT),
        ({"b": Region(1 << 20, 6)}, Refusal.STRIDE),
        ({"c": Region(2 << 20, 4 * 16)}, Refusal.STRIDE),  # C tile rows hold 32 words of 16 B
        ({"c": Region((1 << 32) - 64, 32 * 16)}, Refusal.RANGE),
        ({"requant": True, "q_addr": (1 << 32) - 64}, Refusal.RANGE),  # the table too
        ({"requant": True, "q_addr": -64}, Refusal.ALIGNMENT),  # 4 entries of 16 B a word
        ({"bias": True}, Refusal.MODE),  # the fused path's parts need requant
        ({"clamp": (0, 6)}, Refusal.MODE),
        ({"float_scale": True}, Refusal.MODE),  # a float scale is a mode of the fused path
        ({"requant": True, "clamp": (7, 6)}, Refusal.CLAMP),
        ({"a": Region(0, 1 << 32)}, Refusal.STRIDE),  # no wider than its 32-bit field
    ],
)
def test_descriptors_are_refused_with_their_reason(change, refusal):
    config = ArrayConfig("ws", 4, 4, a_depth=48, b_depth=48, c_depth=48, requant=True,
                         requant_float=True)  # fmt: skip
    good = _descriptor(config, 32, 16, 16, (8, 8, 8))
    assert check_descriptor(config, good) == (Refusal.NONE, "")
    fields = {f: getattr(good, f) for f in good.__dataclass_fields__} | change
    code, why = check_descriptor(config, Descriptor(**fields))
    assert code == refusal and why, (code, why)


def test_a_float_scale_needs_a_device_that_has_the_field():
    """Only a device built with ``requant_float`` has the descriptor's ``float_scale`` bit: on
    another, posting one is an error, not a descriptor silently run in fixed point."""
    fixed = ArrayConfig("ws", 4, 4, requant=True)
    floats = dataclasses.replace(fixed, requant_float=True)
    d = place(floats, 8, 8, 8, requant=True, float_scale=True)
    assert descriptor_values(floats, d)["float_scale"] == 1
    assert "float_scale" not in descriptor_values(fixed, dataclasses.replace(d, float_scale=False))
    with pytest.raises(ValueError, match="float_scale needs a device built with requant_float"):
        descriptor_values(fixed, d)
    assert not place(floats, 8, 8, 8, float_scale=True).float_scale  # only when requantizing


@pytest.mark.parametrize("order", LOOP_ORDERS)
@pytest.mark.parametrize("dataflow", ["ws", "os", "is"])
def test_jobs_cover_the_gemm_and_keep_partial_sums(order, dataflow):
    config = ArrayConfig(dataflow, 2, 3, a_depth=64, b_depth=64, c_depth=64)
    m, k, n = 7, 10, 8
    g = {"ws": (1, 2, 3), "os": (2, 1, 3), "is": (3, 2, 1)}[dataflow]
    chunk = (2 * g[0] if g[0] > 1 else 3, 2 * g[1] if g[1] > 1 else 4, 2 * g[2] if g[2] > 1 else 3)
    d = _descriptor(config, m, k, n, chunk, order)
    assert check_descriptor(config, d)[0] is Refusal.NONE
    js = jobs(config, d)
    seen = np.zeros((m, k, n), dtype=int)
    sums = {}  # (m0, n0) -> K rows accumulated so far, as C's bank or partial sums hold them
    resident = None  # the output chunk C's bank holds
    for j in js:
        ch = j.chunk
        seen[ch.m0 : ch.m1, ch.k0 : ch.k1, ch.n0 : ch.n1] += 1
        key = (ch.m0, ch.n0)
        before = sums.get(key, 0)
        assert before == ch.k0, "K chunks of one output chunk run in order"
        # partial sums come back from DRAM exactly when the bank does not hold them already
        assert j.c_in == ("p" if before > 0 and resident != key else None)
        assert j.accumulate == (before > 0)
        sums[key] = ch.k1
        resident = None if j.store else key
        if j.store == "c":
            assert ch.k1 == k
    assert (seen == 1).all(), "every MAC in exactly one job"
    stores = [j for j in js if j.store == "c"]
    assert len(stores) == math.ceil(m / chunk[0]) * math.ceil(n / chunk[2])
    spills = [j for j in js if j.store == "p"]
    assert bool(spills) == (order[-1] != "k"), "partial sums leave only when K is not innermost"
    assert len(spills) == sum(1 for j in js if j.c_in == "p")


def test_jobs_reuse_what_the_previous_job_left():
    # M innermost with K in one chunk: the B chunk stays while M chunks go by (weight reuse)
    config = ArrayConfig("ws", 2, 2, a_depth=64, b_depth=64, c_depth=64)
    d = _descriptor(config, 8, 4, 4, (2, 4, 2), "nkm")
    js = jobs(config, d)
    assert [j.load_b for j in js] == [True, False, False, False, True, False, False, False]
    assert all(j.load_a for j in js) and all(j.store == "c" for j in js)
    assert [j.banks["b"] for j in js] == [0] * 4 + [1] * 4
    assert [j.banks["c"] for j in js] == [0, 1] * 4


def test_transfers_move_each_chunk_footprint():
    for dataflow, order in itertools.product(["ws", "os", "is"], LOOP_ORDERS):
        config = ArrayConfig(dataflow, 3, 2, a_depth=96, b_depth=96, c_depth=96)
        d = _descriptor(config, 9, 8, 7, (6, 4, 4) if dataflow != "is" else (4, 6, 6), order)
        if check_descriptor(config, d)[0] is not Refusal.NONE:
            continue
        cont = containers(config)
        for j in jobs(config, d):
            loads, stores = transfers(config, d, j)
            need = footprint(config, *j.chunk.shape)
            kinds = list(dict.fromkeys(t.kind for t in loads))  # a load in parts counts once
            ab = [x for x, on in (("a", j.load_a), ("b", j.load_b)) if on]
            assert sorted(kinds[: len(ab)]) == ab  # A and B first, in either order
            assert kinds[len(ab) :] == ([j.c_in] if j.c_in else [])
            for kind in kinds:  # its parts: the first opens the bank, the last closes it
                parts = [t for t in loads if t.kind == kind]
                assert [t.opens for t in parts] == [True] + [False] * (len(parts) - 1)
                assert [t.closes for t in parts] == [False] * (len(parts) - 1) + [True]
                buf = "c" if kind == "p" else kind
                assert sum(t.words for t in parts) == need[buf]
            for t in loads + stores:
                buf = "c" if t.kind == "p" else t.kind
                assert t.bank == j.banks[buf]
                if t.opens and t.closes:
                    assert t.words == need[buf]
                region = {"a": d.a, "b": d.b, "c": d.c, "p": d.p}[t.kind]
                for address, words in t.segments:
                    assert (address - region.addr) % region.stride + words * cont[t.kind] <= (
                        region.stride)  # a segment stays inside its tile row  # fmt: skip


def test_a_load_splits_only_when_its_first_tile_row_is_the_smaller():
    """WS 4x4, chunks of K = 8 and N = 8: B's first tile row (its first column of tiles) is 8
    words, A is 2 words a row of M (two K tiles). At M = 4 (8 against 8) the two load whole, A
    first; at M = 5 (8 against 10) B's first 8 words, then A, then B's other 8."""
    config = ArrayConfig("ws", 4, 4)
    for m, want in (
        (4, [("a", 8, True, True), ("b", 16, True, True)]),
        (5, [("b", 8, True, False), ("a", 10, True, True), ("b", 8, False, True)]),
    ):
        d = _descriptor(config, m, 8, 8, (m, 8, 8))
        assert check_descriptor(config, d)[0] is Refusal.NONE
        (job,) = jobs(config, d)
        loads, _ = transfers(config, d, job)
        assert [(t.kind, t.words, t.opens, t.closes) for t in loads] == want, m


def _bytes_moved(config, d, loads: bool) -> set[int]:
    """Every DRAM byte the jobs of ``d`` load (or store), from their transfers' segments."""
    cont = containers(config)
    fmt = {"a": "a", "b": "b", "c": "p", "p": "p"}  # loads of C come in at accumulator width
    out = set()
    for job in jobs(config, d):
        ls, ss = transfers(config, d, job)
        for t in ls if loads else ss:
            size = cont[fmt[t.kind]] if loads else cont[
                "c" if t.kind == "c" and config.requant and d.requant else "p"]  # fmt: skip
            for addr, words in t.segments:
                out.update(range(addr, addr + words * size))
    return out


def test_a_later_descriptor_depends_on_every_byte_an_earlier_one_writes(seed):
    # spans bound the bytes the transfers move, reaching the first and the last; the dependency
    # the device waits on holds whenever a byte the later one loads is one the earlier stores,
    # and never when their spans are apart
    rng = np.random.default_rng(seed)
    print(f"seed {seed}")
    for _ in range(60):
        dataflow = str(rng.choice(["ws", "os", "is"]))
        config = ArrayConfig(dataflow, int(rng.integers(2, 4)), int(rng.integers(2, 4)),
                             a_depth=32, b_depth=32, c_depth=32)  # fmt: skip
        m, k, n = (int(x) for x in rng.integers(1, 20, 3))
        order = str(rng.choice(LOOP_ORDERS))
        earlier = place(config, m, k, n, order=order)
        spans_e = spans(config, earlier)
        stored = _bytes_moved(config, earlier, loads=False)
        assert stored <= set().union(*(range(*spans_e[k]) for k in spans_e if k in "cp"))
        # the later GEMM somewhere from 0 to past the earlier's end, accumulating or not
        end = max(hi for _, hi in spans_e.values())
        base = int(rng.integers(0, end // PLACEMENT_ALIGN + 2)) * PLACEMENT_ALIGN
        m2, k2, n2 = (int(x) for x in rng.integers(1, 20, 3))
        later = place(config, m2, k2, n2, order=str(rng.choice(LOOP_ORDERS)), base=base,
                      accumulate=bool(rng.integers(2)))  # fmt: skip
        for kind, (lo, hi) in spans(config, later).items():
            moved = {b for b in _bytes_moved(config, later, loads=True)
                     if lo <= b < hi}  # fmt: skip
            if kind in "ab" or (kind == "c" and later.accumulate):
                assert lo in moved and hi - 1 in moved, kind
        loaded = _bytes_moved(config, later, loads=True)
        if loaded & stored:
            assert reads_what_writes(config, later, earlier)
        reads = spans(config, later)
        if not later.accumulate:
            reads.pop("c")
        apart = all(r1 <= w0 or w1 <= r0 for r0, r1 in reads.values()
                    for kind, (w0, w1) in spans_e.items() if kind in "cp")  # fmt: skip
        assert reads_what_writes(config, later, earlier) is not apart
