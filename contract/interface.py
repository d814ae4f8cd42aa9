"""The accelerator's interface as numbers and names: field widths, counters, top-module names.

The Amaranth generator builds its ports from these; the models, the simulation runtime and the
host's plan read the same values, so no width or counter name is restated anywhere.
"""

from __future__ import annotations

__all__ = [
    "ADDR_BITS",
    "COUNTERS",
    "COUNTER_BITS",
    "DIM_BITS",
    "MULTIPLIER_BITS",
    "NAN32",
    "SHIFT_BITS",
    "SHIFT_RANGE",
    "TOPS",
]

#: Width of every buffer address in commands and streams (buffer depths up to 65536 words).
ADDR_BITS = 16

#: Width of the M, K, N fields of a command.
DIM_BITS = 16

#: Width of every performance counter.
COUNTER_BITS = 48

#: The performance counters, reset when a command is accepted. Every busy cycle is exactly one of
#: stream, fill, stall or drain: ``cycles = stream + fill + stall + drain``.
COUNTERS = {
    "cycles": "cycles from the command's acceptance to done (busy cycles)",
    "stream_cycles": "cycles in which the array took a streamed vector (useful work)",
    "preload_cycles": "cycles in which a stationary row shifted into the array (WS/IS)",
    "fill_cycles": "busy cycles before the first streamed vector",
    "stall_cycles": "busy cycles without a streamed vector between the first and the last one",
    "drain_cycles": "busy cycles after the last streamed vector (pipeline drain, write-back)",
    "a_reads": "words read from the A buffer by the controller",
    "b_reads": "words read from the B buffer by the controller",
    "c_reads": "words read from the C buffer to accumulate into",
    "c_writes": "words written to the C buffer",
}

#: Per-channel requantization parameters: a Q31 multiplier in ``[0, 2**31)`` (unsigned, 31 bits)
#: and a shift in ``SHIFT_RANGE`` (signed, 6 bits; positive shifts left), as golden.requant
#: defines them.
MULTIPLIER_BITS = 31
SHIFT_BITS = 6
SHIFT_RANGE = (-31, 31)

#: The one quiet NaN the bf16 datapath produces (fp32 bits), whatever NaN went in.
NAN32 = 0x7FC00000

#: Verilog top-module name of each design: the bare mesh, and the accelerator around it.
TOPS = {"array": "systolic_array", "accelerator": "systolic_accelerator"}
