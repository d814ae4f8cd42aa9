"""The device's on-chip memories: where each SRAM sits, its shape and its ports.

One table for the generator, which builds each entry as its own module behind the conventional
synchronous SRAM interface of :class:`Sram` (so a foundry or OpenRAM macro can replace it), and
for synthesis, which treats those modules as macros priced by the memory model instead of
mapping them to flip-flops.
"""

from __future__ import annotations

from dataclasses import dataclass

from .config import ArrayConfig
from .interface import BIAS_BITS, MULTIPLIER_BITS, SHIFT_BITS, TOPS
from .layouts import layouts

__all__ = ["QUANT_ENTRY_BITS", "SRAM_KINDS", "Sram", "memories", "sram_module"]

#: The kinds of memory, by (read ports, port 0 transparent): the stem of their modules' names.
SRAM_KINDS = {(1, False): "systolic_sram_1r1w", (2, True): "systolic_sram_2r1w"}

#: Bits of one output channel's parameters in the parameter buffer: its requantization and its
#: bias.
QUANT_ENTRY_BITS = MULTIPLIER_BITS + SHIFT_BITS + BIAS_BITS


@dataclass(frozen=True)
class Sram:
    """A synchronous SRAM of ``depth`` words of ``width`` bits at instance ``path`` below the
    device's top module (``"a_buffer.bank0"``).

    Ports: ``clk``, one write port (``w_en``, ``w_addr``, ``w_data``) and ``reads`` read ports
    (``r<i>_en``, ``r<i>_addr``, ``r<i>_data``). A read's data appears the cycle after its
    enable and holds while the enable is low. A read of the address being written in the same
    cycle returns the old word, except on read port 0 of a ``transparent`` memory, which
    returns the new one (the accumulator's read-modify-write relies on it).
    """

    path: str
    depth: int
    width: int
    reads: int = 1
    transparent: bool = False

    @property
    def bits(self) -> int:
        return self.depth * self.width

    @property
    def addr_bits(self) -> int:
        return max(1, (self.depth - 1).bit_length())

    @property
    def module(self) -> str:
        """The Verilog module of this memory (:func:`sram_module`)."""
        return sram_module(self.width, self.depth, self.reads, self.transparent)

    @property
    def parent(self) -> str:
        """The module that instantiates it in the device's Verilog."""
        return f"{TOPS['device']}.{self.path.rpartition('.')[0]}"


def sram_module(width: int, depth: int, reads: int = 1, transparent: bool = False) -> str:
    """The module name of a memory: one module per kind and shape, as memory compilers make them
    (``systolic_sram_1r1w_w16_d1024``)."""
    if (reads, transparent) not in SRAM_KINDS:
        raise ValueError(f"no SRAM kind with {reads} read ports and transparent={transparent}; "
                         f"the kinds are {sorted(SRAM_KINDS)}")  # fmt: skip
    return f"{SRAM_KINDS[reads, transparent]}_w{width}_d{depth}"


def memories(config: ArrayConfig) -> list[Sram]:
    """Every SRAM of the device of ``config``: two banks per operand and accumulator buffer (one
    filled or drained while the array uses the other), the requantization parameters, and the
    convolutions' staging buffer."""
    words = layouts(config)
    found = []
    for name, depth in (("a", config.a_depth), ("b", config.b_depth), ("c", config.c_depth)):
        c = name == "c"  # the accumulator: read-modify-write, plus the store's read port
        for bank in (0, 1):
            found.append(Sram(f"{name}_buffer.bank{bank}", depth, words[name].bits,
                              reads=2 if c else 1, transparent=c))  # fmt: skip
    if config.requant:
        found.append(Sram("q_buffer.sram", config.q_depth, QUANT_ENTRY_BITS * config.cols))
    if config.stage_depth:  # the convolution expander's staging buffer (rtl/expander.py)
        found.append(Sram("expander.staging", config.stage_depth, words["a"].bits))
    return found
