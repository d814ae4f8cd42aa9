"""rtl/sram.py: every memory of contract.memories is an instance of its own SRAM module in the
device's Verilog, with the conventional ports, and nothing else holds a memory."""

from __future__ import annotations

import re

from systolic.contract.config import ArrayConfig
from systolic.contract.memories import memories
from systolic.rtl.generate import design_verilog


def _modules(verilog: str) -> dict[str, str]:
    found = re.findall(r"^module (\\\S+|\w+)\s*\((.*?)^endmodule", verilog, re.M | re.S)
    return {name.lstrip("\\"): body for name, body in found}


def test_each_memory_is_an_instance_of_its_sram_module():
    """WS 2x3 with requantization: A words are a row of A (2 x 8 = 16 bits), B and C words a row
    of B and C (3 x 8 = 24 and 3 x 32 = 96 bits), a parameter word three channels of a 31-bit
    multiplier, a 6-bit shift and a 32-bit bias (207 bits); the C banks have the store's second
    read port."""
    config = ArrayConfig("ws", 2, 3, requant=True, a_depth=40, c_depth=33)
    modules = _modules(design_verilog(config, "device"))
    expected = {("a_buffer.bank0", 16, 40, 1), ("a_buffer.bank1", 16, 40, 1),
                ("b_buffer.bank0", 24, 1024, 1), ("b_buffer.bank1", 24, 1024, 1),
                ("c_buffer.bank0", 96, 33, 2), ("c_buffer.bank1", 96, 33, 2),
                ("q_buffer.sram", 207, 256, 1)}  # fmt: skip
    assert {(s.path, s.width, s.depth, s.reads) for s in memories(config)} == expected
    for sram in memories(config):
        parent = modules[sram.parent]
        instance = sram.path.rpartition(".")[2]
        assert re.search(rf"^\s*{sram.module} {instance} \(", parent, re.M), sram
        ports = modules[sram.module]
        abits = (sram.depth - 1).bit_length()
        assert f"input wire [{abits - 1}:0] w_addr" in ports
        assert f"input wire [{sram.width - 1}:0] w_data" in ports
        for i in range(sram.reads):
            assert f"output reg [{sram.width - 1}:0] r{i}_data" in ports
        assert f"reg [{sram.width - 1}:0] mem [0:{sram.depth - 1}]" in ports
    # the SRAM modules are the only memories of the device's buffers
    instances = sum(body.count(" systolic_sram_") for body in modules.values())
    assert instances == len(expected)
    for name, body in modules.items():
        if "_buffer" in name:  # no memory array of its own
            assert not re.search(r"^\s*reg (\[\d+:0\] )?\S+ \[", body, re.M), name
