"""contract/plan.py: the host refuses commands the accelerator cannot run, and buffers too
small for one tile, naming the field."""

from __future__ import annotations

import pytest
from systolic.contract.config import ArrayConfig
from systolic.contract.plan import check_command, plan

from ..configs import DEPTHS


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (dict(m=0), "command field m must be an integer in 1..65535, not 0"),
        (dict(k=-3), "command field k must be an integer in 1..65535, not -3"),
        (dict(n=70000), "command field n must be an integer in 1..65535, not 70000"),
        (dict(a_base=-1), "command field a_base must be an integer in 0..65535, not -1"),
        (
            dict(b_base=40),
            "command needs 16 words of the B buffer from b_base = 40, past its end (b_depth = 48)",
        ),
        (dict(c_base=45), "command needs 4 words of the C buffer from c_base = 45"),
    ],
)
def test_host_refuses_bad_commands(fields, message):
    # A 4x16x4 GEMM on a 4x4 WS array: A words hold 4 K-elements, so A takes 16/4 * 4 = 16 words;
    # B words hold 4 N-elements, so B takes 1 * 16 = 16 words; C takes 1 * 4 = 4 words.
    config = ArrayConfig("ws", 4, 4, **DEPTHS)
    args = dict(m=4, k=16, n=4) | fields
    with pytest.raises(ValueError) as info:
        check_command(config, **args)
    assert message in str(info.value)
    check_command(config, m=4, k=16, n=4, a_base=32, b_base=32, c_base=44)  # just fits


def test_buffers_too_small_for_one_tile():
    with pytest.raises(ValueError, match=r"b_depth = 3 words cannot hold one tile"):
        plan(ArrayConfig("ws", 4, 4, b_depth=3), 8, 8, 8)
