"""contract/plan.py: buffers too small for one tile are refused, naming the field."""

from __future__ import annotations

import pytest
from systolic.contract.config import ArrayConfig
from systolic.contract.plan import plan


def test_buffers_too_small_for_one_tile():
    with pytest.raises(ValueError, match=r"b_depth = 3 words cannot hold one tile"):
        plan(ArrayConfig("ws", 4, 4, b_depth=3), 8, 8, 8)
