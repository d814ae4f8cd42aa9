"""contract/activity.py: the mesh's register bits per component equal the flops in the Verilog."""

from __future__ import annotations

import pytest
from systolic.contract.activity import datapath_flop_bits
from systolic.contract.config import ArrayConfig
from systolic.rtl.generate import design_verilog
from systolic.sim.probes import probes


@pytest.mark.parametrize(
    "config",
    [ArrayConfig("ws", 4, 3), ArrayConfig("os", 3, 5, a_width=4, b_width=6, acc_width=20),
     ArrayConfig("is", 2, 4, a_width=5, b_width=7, acc_width=24), ArrayConfig("os", 1, 1)],
    ids=lambda c: c.name,
)  # fmt: skip
def test_datapath_flop_bits_match_the_verilog(config):
    found: dict[str, int] = {}
    for probe in probes(config, design_verilog(config)):
        if probe.flop and probe.component in ("pipeline", "accumulator", "stationary", "edge"):
            found[probe.component] = found.get(probe.component, 0) + probe.width
    expected = {k: v for k, v in datapath_flop_bits(config).items() if v}
    assert found == expected
