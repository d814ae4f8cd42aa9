"""rtl/arith.py: division by a constant as a multiplication, exact over the whole input range
(checked with the same integer arithmetic the hardware does, against Python's //)."""

from __future__ import annotations

import numpy as np
from systolic.rtl.arith import magic


def test_reciprocal_division_is_exact_for_every_input():
    bits = 17
    x = np.arange(1 << bits, dtype=object)  # big integers: no overflow in the product
    xs = np.arange(1 << bits, dtype=np.int64)
    for d in [*range(1, 65), 96, 100, 255, 384, 511]:
        multiplier, shift = magic(d, bits)
        got = (x * multiplier) >> shift
        assert np.array_equal(got.astype(np.int64), xs // d), d
