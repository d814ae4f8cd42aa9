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
        ("dense", "data must be 'random', 'zeros' or 'sparse:P', not 'dense'"),
        ("sparse:1.5", "data 'sparse:P' needs a fraction of zeros P in [0, 1], not 'sparse:1.5'"),
        ("sparse:x", "data 'sparse:P' needs a fraction of zeros P in [0, 1], not 'sparse:x'"),
    ],
)
def test_bad_data_kinds(text, message):
    from systolic.golden.data import DataKind

    with pytest.raises(ValueError) as info:
        DataKind(text)
    assert str(info.value) == message
