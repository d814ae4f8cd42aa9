"""golden/reference.py: the reference GEMM against plain Python integers, hand-worked
wrap-arounds, corner values and out-of-range operands."""

from __future__ import annotations

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig, value_range
from systolic.golden.data import corner_values
from systolic.golden.reference import gemm, reference, wrap


def _python_gemm(a, b, acc_width, signed):
    """Independent reference: exact Python integers, then two's-complement wrap by hand."""
    out = []
    for row in a.tolist():
        out_row = []
        for col in zip(*b.tolist(), strict=True):
            s = sum(x * y for x, y in zip(row, col, strict=True)) % (1 << acc_width)
            if signed and s >= 1 << (acc_width - 1):
                s -= 1 << acc_width
            out_row.append(s)
        out.append(out_row)
    return out


@pytest.mark.parametrize(
    ("aw", "asg", "bw", "bsg", "acc"),
    [
        (8, True, 8, True, 32),
        (4, False, 4, False, 8),
        (16, True, 16, True, 64),
        (8, False, 4, True, 11),
        (16, False, 16, False, 64),
        (2, True, 16, False, 2),
    ],
)
def test_matches_python_integers(seed, aw, asg, bw, bsg, acc):
    rng = np.random.default_rng(seed)
    lo, hi = value_range(aw, asg)
    a = rng.integers(lo, hi, (5, 7), endpoint=True)
    lo, hi = value_range(bw, bsg)
    b = rng.integers(lo, hi, (7, 3), endpoint=True)
    got = gemm(a, b, a_width=aw, a_signed=asg, b_width=bw, b_signed=bsg, acc_width=acc)
    assert got.tolist() == _python_gemm(a, b, acc, asg or bsg)


@pytest.mark.parametrize(
    "config",
    [
        ArrayConfig("ws", 2, 2, a_signed=False, zero_points=True),  # uint8 - z: signed outputs
        ArrayConfig("os", 2, 2, a_width=4, b_width=4, a_signed=False, b_signed=False,
                    acc_width=9),  # unsigned outputs that wrap
        ArrayConfig("is", 2, 2, a_width=8, b_width=3, a_signed=False, acc_width=12,
                    zero_points=True),
        ArrayConfig("ws", 2, 2, a_width=16, b_width=16, acc_width=20, zero_points=False),
    ],
    ids=lambda c: c.name,
)  # fmt: skip
def test_reference_matches_python_integers(config, seed):
    """``reference()``, which every test compares the hardware with, against exact Python
    integers: zero points subtracted, products summed exactly, then wrapped by hand to the
    accumulator (two's complement when any operand or a zero point makes outputs signed)."""
    rng = np.random.default_rng([seed, config.a_width, config.acc_width])
    alo, ahi = value_range(config.a_width, config.a_signed)
    blo, bhi = value_range(config.b_width, config.b_signed)
    a = rng.integers(alo, ahi, (6, 40), endpoint=True)
    b = rng.integers(blo, bhi, (40, 5), endpoint=True)
    zeros = [(0, 0)]
    if config.zero_points:
        zeros += [
            (int(rng.integers(alo, ahi, endpoint=True)), int(rng.integers(blo, bhi, endpoint=True)))
        ]
    wrapped = 0
    for za, zb in zeros:
        got = reference(config, a, b, za, zb)
        exact = [[sum((x - za) * (y - zb) for x, y in zip(row, col, strict=True))
                  for col in zip(*b.tolist(), strict=True)] for row in a.tolist()]  # fmt: skip
        mod = 1 << config.acc_width
        signed = config.a_signed or config.b_signed or config.zero_points
        want = [[(v % mod) - (mod if signed and v % mod >= mod // 2 else 0) for v in row]
                for row in exact]  # fmt: skip
        assert got.tolist() == want, (za, zb)
        wrapped += sum(v != w for r, q in zip(exact, want, strict=True)
                       for v, w in zip(r, q, strict=True))  # fmt: skip
    if config.acc_width < 2 * max(config.a_width, config.b_width) + 6:
        assert wrapped, "the case must reach the accumulator's wrap-around"


def test_hand_worked_wraps():
    # 127*127 + 127*127 = 32258 = 0x7E02: 8 bits keep 0x02, 16 bits keep 0x7E02.
    a = np.array([[127, 127]])
    b = np.array([[127], [127]])
    kw = dict(a_width=8, a_signed=True, b_width=8, b_signed=True)
    assert gemm(a, b, acc_width=8, **kw).tolist() == [[2]]
    assert gemm(a, b, acc_width=16, **kw).tolist() == [[32258]]
    # 2 * (-128 * -128) = 32768 = 0x8000: as a signed 16-bit value that is -32768.
    a = np.array([[-128, -128]])
    b = np.array([[-128], [-128]])
    assert gemm(a, b, acc_width=16, **kw).tolist() == [[-32768]]
    # Unsigned: 255 * 255 = 65025 = 0xFE01; a 9-bit accumulator keeps 0x001.
    assert gemm(
        np.array([[255]]),
        np.array([[255]]),
        a_width=8,
        a_signed=False,
        b_width=8,
        b_signed=False,
        acc_width=9,
    ).tolist() == [[1]]


def test_wrap_64_bit():
    assert wrap(np.array([-1]), 64, False).tolist() == [2**64 - 1]
    assert wrap(np.array([2**63], dtype=np.uint64), 64, True).tolist() == [-(2**63)]


def test_corner_values():
    assert corner_values(8, True) == [-128, -1, 0, 1, 127]
    assert corner_values(4, False) == [0, 1, 15]


def test_operands_out_of_range_are_rejected():
    kw = dict(a_width=4, a_signed=True, b_width=4, b_signed=False, acc_width=16)
    with pytest.raises(
        ValueError, match=r"A holds values outside the 4-bit signed range \[-8, 7\]"
    ):
        gemm(np.array([[8]]), np.array([[1]]), **kw)
    with pytest.raises(ValueError, match=r"B holds values outside the 4-bit unsigned range"):
        gemm(np.array([[1]]), np.array([[-1]]), **kw)
    with pytest.raises(ValueError, match="A's columns must equal B's rows"):
        gemm(np.zeros((2, 3), int), np.zeros((2, 3), int), **kw)
    with pytest.raises(TypeError, match="A must hold integers"):
        gemm(np.zeros((1, 1)), np.zeros((1, 1), int), **kw)
