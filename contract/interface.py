"""The accelerator's interface as numbers and names: field widths, counters, top-module names.

The Amaranth generator builds its ports from these; the models, the simulation runtime and the
host's plan read the same values, so no width or counter name is restated anywhere.
"""

from __future__ import annotations

__all__ = [
    "ADDR_BITS",
    "COUNTERS",
    "COUNTER_BITS",
    "DEVICE_COUNTERS",
    "DIM_BITS",
    "BIAS_BITS",
    "MULTIPLIER_BITS",
    "NAN32",
    "SHIFT_BITS",
    "SHIFT_RANGE",
    "TIMED_COUNTERS",
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

#: The device's counters for one descriptor (a whole GEMM from DRAM): its cycles, the compute
#: counters above summed over its chunks (``compute_cycles`` is their ``cycles``), how long each
#: side waited for the other, and the DRAM traffic per buffer, counted at the AXI handshakes.
#: Zeroed when a descriptor is checked on an otherwise idle device: descriptors queued behind
#: one another add up (docs/memory.md), ``cycles`` then counting those in which any runs.
DEVICE_COUNTERS = {
    "cycles": "cycles from the descriptor's start to done",
    "jobs": "chunks computed",
    "compute_cycles": "busy cycles of the array's controller, summed over the chunks",
    **{
        name: text + ", summed over the chunks"
        for name, text in COUNTERS.items()
        if name != "cycles"
    },  # fmt: skip
    "array_wait_cycles": "cycles a chunk waited to start: its loads not under way, or its C "
    "bank not its own (memory bound)",
    "dma_wait_cycles": "cycles the read engine waited for a bank to be released",
    **{f"dram_read_beats_{b}": f"read beats of {b.upper()}" for b in "abcq"},
    **{f"dram_read_bytes_{b}": f"bytes read for {b.upper()}" for b in "abcq"},
    "dram_write_beats": "write beats (C and partial sums)",
    "dram_write_bytes": "bytes written",
}

#: The device counters the memory's timing moves: the cycles and waits, and the array's busy
#: cycles before and between its vectors (a chunk computes on its operands as they land,
#: docs/memory.md). The others count work and traffic, whatever the memory.
TIMED_COUNTERS = ("cycles", "array_wait_cycles", "dma_wait_cycles", "compute_cycles",
                  "fill_cycles", "stall_cycles")  # fmt: skip

#: Per-channel requantization parameters: a Q31 multiplier in ``[0, 2**31)`` (unsigned, 31 bits)
#: and a shift in ``SHIFT_RANGE`` (signed, 6 bits; positive shifts left), as golden.requant
#: defines them.
MULTIPLIER_BITS = 31
SHIFT_BITS = 6
SHIFT_RANGE = (-31, 31)
#: The fused output path's per-channel bias: a signed int32 added to the accumulator before
#: requantization, as TFLite's and ONNX QLinearConv's kernels add theirs.
BIAS_BITS = 32

#: The one quiet NaN the bf16 datapath produces (fp32 bits), whatever NaN went in.
NAN32 = 0x7FC00000

#: Verilog top-module name of each design: the bare mesh and the device around it that streams
#: GEMMs from DRAM (the accelerator).
TOPS = {
    "array": "systolic_array",
    "device": "systolic_device",
}
