"""The device's SRAMs: an instance of a plain Verilog module per memory, and those modules'
behavioural models.

Each buffer memory is an instance of a module with the interface of
:class:`contract.memories.Sram`, one module per kind and shape (``systolic_sram_1r1w_w16_d1024``),
as a memory compiler would make them. :func:`sram_models` writes their Verilog: the body that
simulators run and FPGA tools infer block RAM from. An ASIC flow swaps each module for a macro
with the same ports; synthesis here treats them as macros.
"""

from __future__ import annotations

from amaranth import ClockSignal, Elaboratable, Instance, Signal
from systolic.contract.config import ArrayConfig
from systolic.contract.memories import Sram, memories, sram_module

__all__ = ["SramMacro", "sram_models"]


class SramMacro(Elaboratable):
    """An instance of the SRAM module of ``depth`` words of ``width`` bits, one write port and
    ``reads`` read ports, port 0 transparent to the write with ``transparent``."""

    def __init__(self, *, width: int, depth: int, reads: int = 1, transparent: bool = False):
        self.module = sram_module(width, depth, reads, transparent)
        abits = max(1, (depth - 1).bit_length())
        self.w_en = Signal(name="w_en")
        self.w_addr = Signal(abits, name="w_addr")
        self.w_data = Signal(width, name="w_data")
        self._reads = [
            (Signal(name=f"r{i}_en"), Signal(abits, name=f"r{i}_addr"),
             Signal(width, name=f"r{i}_data"))
            for i in range(reads)
        ]  # fmt: skip

    def read_port(self, i: int) -> tuple[Signal, Signal, Signal]:
        """``(en, addr, data)`` of read port ``i``."""
        return self._reads[i]

    def elaborate(self, platform):
        ports = {"i_clk": ClockSignal(), "i_w_en": self.w_en, "i_w_addr": self.w_addr,
                 "i_w_data": self.w_data}  # fmt: skip
        for i, (en, addr, data) in enumerate(self._reads):
            ports |= {f"i_r{i}_en": en, f"i_r{i}_addr": addr, f"o_r{i}_data": data}
        return Instance(self.module, **ports)


def _model(sram: Sram) -> str:
    w, d, a, reads = sram.width, sram.depth, sram.addr_bits, sram.reads
    if sram.transparent:
        same_cycle = (
            "Read port 0 returns the word being written to its address in the\n"
            "// same cycle (write first); any other read of it returns the old word."
        )
    else:
        same_cycle = (
            "A read of the address being written in the same cycle returns\n// the old word."
        )
    lines = [
        f"// {sram.module}: a synchronous SRAM of {d} words of {w} bits, one write port",
        f"// and {reads} read port{'s' if reads > 1 else ''}. A read's data appears the cycle "
        "after its enable and holds",
        f"// while the enable is low. {same_cycle}",
        "// The behavioural model (simulation, FPGA block RAM): an ASIC flow replaces this",
        "// module with a macro of the same ports.",
        f"module {sram.module} (",
        "  input wire clk,",
        "  input wire w_en,",
        f"  input wire [{a - 1}:0] w_addr,",
        f"  input wire [{w - 1}:0] w_data,",
    ]
    ports = []
    for i in range(reads):
        ports += [f"  input wire r{i}_en,", f"  input wire [{a - 1}:0] r{i}_addr,",
                  f"  output reg [{w - 1}:0] r{i}_data,"]  # fmt: skip
    ports[-1] = ports[-1].rstrip(",")
    lines += [*ports, ");", f"  reg [{w - 1}:0] mem [0:{d - 1}];", "`ifndef SYNTHESIS",
              "  integer i;", "  initial begin",
              f"    for (i = 0; i < {d}; i = i + 1) mem[i] = {w}'d0;"]  # fmt: skip
    lines += [f"    r{i}_data = {w}'d0;" for i in range(reads)]
    lines += ["  end", "`endif", "  always @(posedge clk) begin",
              "    if (w_en) mem[w_addr] <= w_data;"]  # fmt: skip
    for i in range(reads):
        lines.append(f"    if (r{i}_en) r{i}_data <= mem[r{i}_addr];")
        if sram.transparent and i == 0:
            lines.append("    if (r0_en && w_en && r0_addr == w_addr) r0_data <= w_data;")
    lines += ["  end", "endmodule", ""]
    return "\n".join(lines)


def sram_models(config: ArrayConfig) -> str:
    """Verilog of every SRAM module the device of ``config`` instantiates, each once."""
    modules = {sram.module: sram for sram in memories(config)}
    return "\n".join(_model(sram) for sram in modules.values())
