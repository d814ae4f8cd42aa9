"""The partial-sum registers' bit flips of one tile, in compiled code (Numba), for integer meshes.

:mod:`models.toggles` replays the mesh's dataflow to count bit flips; its costliest part is the
partial sums, one running dot product per PE and streamed value: at 256 x 256 a sample's tile
holds millions of them. Built with numpy, that takes a product array, a cumulative sum, a mask
and an XOR pass, each the tile's size in memory; here it is one pass, keeping only each PE's
last value. Sums wrap in 64 bits and are then cut to the accumulator's width, as numpy's
``cumsum`` and mask do, so the counts are the same. (bf16's fp32 sums stay in
:func:`golden.bf16.fp32_running_sums`, the hardware's reference rounding.)
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["output_stationary_flips", "stationary_flips"]


@njit(cache=True, inline="always")
def _ones(v):
    """Set bits of an int64 (its sign bit included)."""
    sign = 1 if v < 0 else 0
    v &= 0x7FFFFFFFFFFFFFFF
    v = v - ((v >> 1) & 0x5555555555555555)
    v = (v & 0x3333333333333333) + ((v >> 2) & 0x3333333333333333)
    v = (v + (v >> 4)) & 0x0F0F0F0F0F0F0F0F
    return ((v * 0x0101010101010101) >> 56) + sign


@njit(cache=True)
def stationary_flips(x, s, prev, mask):
    """A WS/IS tile: PE ``(i, c)`` holds ``sum_{i' <= i} x[t, i'] * s[i', c]`` (wrapped, cut to
    ``mask``) for each streamed ``t``. Returns each PE's flips over the stream, starting from
    ``prev``, and the last values (both ``rows x cols``, int64; ``mask`` -1 for 64-bit sums)."""
    stream, rows = x.shape
    cols = s.shape[1]
    flips = np.zeros((rows, cols), np.int64)
    last = prev.copy()
    acc = np.empty(cols, np.int64)
    for t in range(stream):
        acc[:] = 0
        for i in range(rows):
            xi = x[t, i]
            for c in range(cols):
                acc[c] += xi * s[i, c]
                v = acc[c] & mask
                flips[i, c] += _ones(v ^ last[i, c])
                last[i, c] = v
    return flips, last


@njit(cache=True)
def output_stationary_flips(a, b, prev, mask):
    """An OS tile: PE ``(i, c)`` holds ``sum_{k' <= k} a[i, k'] * b[k', c]`` (wrapped, cut to
    ``mask``) after step ``k``. Returns each PE's flips over the steps, starting from ``prev``,
    and the last values (both ``rows x cols``, int64)."""
    rows, steps = a.shape
    cols = b.shape[1]
    flips = np.zeros((rows, cols), np.int64)
    acc = np.zeros((rows, cols), np.int64)
    last = prev.copy()
    for k in range(steps):
        for i in range(rows):
            ai = a[i, k]
            for c in range(cols):
                acc[i, c] += ai * b[k, c]
                v = acc[i, c] & mask
                flips[i, c] += _ones(v ^ last[i, c])
                last[i, c] = v
    return flips, last
