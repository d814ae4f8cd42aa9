"""Why the device refuses a descriptor: the error code ``STATUS.error`` reports (GEMM descriptors'
checks in :mod:`contract.dma`, vector descriptors' in :mod:`contract.vector`)."""

from __future__ import annotations

import enum

__all__ = ["Refusal"]


class Refusal(enum.IntEnum):
    """Why a descriptor is refused (the device's error code; 0 is none)."""

    NONE = 0
    DIMENSION = 1  # M, K or N outside 1 .. 2**DIM_BITS - 1
    CHUNK = 2  # a chunk size of zero, off its granularity, or past a bank
    ALIGNMENT = 3  # an address that is not a multiple of its word container
    STRIDE = 4  # a stride that is not a multiple of the container, or shorter than a tile row
    ORDER = 5  # a loop order code past LOOP_ORDERS
    MODE = 6  # accumulate into C with requantization, or a bias or clamp without it
    TABLE = 7  # the requantization table does not fit the Q buffer
    RANGE = 8  # an operand that reaches past the end of the address space
    CLAMP = 9  # an activation clamp whose low bound is above its high bound
    WINDOW = 10  # a vector descriptor's pooling window, stride, padding or output that misfit
    CONV = 11  # a convolution the device cannot run as given (contract.conv.check_conv)
