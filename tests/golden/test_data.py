"""golden/data.py: the operand data kinds and their errors."""

from __future__ import annotations

import numpy as np
import pytest

from ..helpers import at_most

#: |zeros - expected| over seeds 1-200 (make seeds): mean + 6 sd is 0.0048 at P = 0.3 (worst
#: 0.0035), 0.0027 at 0.9, 0.0006 at 0; the bound, rounded up.
ZEROS_TOLERANCE = 0.005


def test_data_kinds(seed):
    from systolic.golden.data import DataKind

    rng = np.random.default_rng(seed)
    assert not DataKind("zeros").matrix(rng, (50, 60), 8, True).any()
    for p in (0.0, 0.3, 0.9):
        m = DataKind(f"sparse:{p}").matrix(rng, (400, 500), 8, True)
        # Zeros: the fraction P, plus the 1/256 of the rest that a uniform 8-bit draw makes zero.
        expected = p + (1 - p) / 256
        at_most(abs(np.mean(m == 0) - expected), ZEROS_TOLERANCE, f"|zeros - expected| at {p}")
        assert m.min() >= -128 and m.max() <= 127


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("dense", "data must be 'random', 'zeros', 'sparse:P' or 'narrow:B', not 'dense'"),
        ("sparse:1.5", "data 'sparse:P' needs a fraction of zeros P in [0, 1], not 'sparse:1.5'"),
        ("sparse:x", "data 'sparse:P' needs a fraction of zeros P in [0, 1], not 'sparse:x'"),
        ("narrow:0", "data 'narrow:B' needs a number of bits B in 1 to 32, not 'narrow:0'"),
        ("narrow:x", "data 'narrow:B' needs a number of bits B in 1 to 32, not 'narrow:x'"),
    ],
)
def test_bad_data_kinds(text, message):
    from systolic.golden.data import DataKind

    with pytest.raises(ValueError) as info:
        DataKind(text)
    assert str(info.value) == message


def test_narrow_data_keeps_small_values(seed):
    from systolic.golden.bf16 import bf16_bits
    from systolic.golden.data import DataKind

    rng = np.random.default_rng(seed)
    m = DataKind("narrow:4").matrix(rng, (300, 300), 8, True)
    assert m.min() == -8 and m.max() == 7  # every value of 4 signed bits, and no other
    u = DataKind("narrow:3").matrix(rng, (300, 300), 8, False)
    assert u.min() == 0 and u.max() == 7
    wide = DataKind("narrow:12").matrix(rng, (10, 10), 8, True)  # no wider than the operand
    assert wide.min() >= -128 and wide.max() <= 127
    bits = DataKind("narrow:3").bf16_matrix(rng, (50, 50)).astype(np.int64)
    assert not (bits & 0x1F).any()  # 3 of the 8 significand bits kept: 5 low bits clear
    full = bf16_bits(rng.standard_normal((50, 50))).astype(np.int64)
    assert (full & 0x1F).any()
