"""Integer quantization arithmetic, bit-exact: zero points and output requantization.

Requantization follows the int8 inference runtimes (TensorFlow Lite's reference kernels, after
gemmlowp): an int32 accumulator ``x`` is scaled by a Q31 ``multiplier`` and a power of two
``shift`` (positive: left, negative: right):

- ``x << max(shift, 0)``, wrapping in 32 bits (the runtimes leave overflow undefined; real
  multipliers are below one, so their shifts are not positive);
- ``SaturatingRoundingDoublingHighMul``: ``x * multiplier / 2**31`` to nearest, saturating the one
  overflow (``INT32_MIN * INT32_MIN``) to ``INT32_MAX``. Its nudge (``2**30``, or ``1 - 2**30``
  below zero, then truncation) is usually described as rounding half away from zero, but an
  exact negative tie goes up (-2.5 -> -2): ties toward +infinity. The runtimes do exactly this,
  so the hardware does too;
- ``RoundingDivideByPOT`` by ``max(-shift, 0)``: ties away from zero;
- plus the output zero point, optional ReLU (clamp at the zero point), saturation to the output
  range.
"""

from __future__ import annotations

import math

import numpy as np

from rtl.config import value_range

__all__ = [
    "INT32_MAX",
    "INT32_MIN",
    "SHIFT_RANGE",
    "quantize_multiplier",
    "requantize",
    "rounding_divide_by_pot",
    "srdhm",
]

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
#: Shifts the hardware takes: left up to 31, right up to 31.
SHIFT_RANGE = (-31, 31)


def _wrap32(x: np.ndarray) -> np.ndarray:
    return ((x.astype(np.int64) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def srdhm(a, b) -> np.ndarray:
    """SaturatingRoundingDoublingHighMul of int32 values: ``a * b / 2**31`` to nearest, ties
    toward +infinity (gemmlowp's nudge), ``INT32_MIN * INT32_MIN`` saturating to ``INT32_MAX``."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    ab = a * b  # |ab| <= 2**62: exact in int64
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    q = ab + nudge
    high = np.where(q >= 0, q >> 31, -((-q) >> 31))  # C division: truncation toward zero
    return np.where((a == INT32_MIN) & (b == INT32_MIN), INT32_MAX, high)


def rounding_divide_by_pot(x, exponent) -> np.ndarray:
    """``x / 2**exponent`` rounded to nearest, ties away from zero (0 <= exponent <= 31)."""
    x = np.asarray(x, dtype=np.int64)
    exponent = np.asarray(exponent, dtype=np.int64)
    mask = (np.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + (remainder > threshold)


def requantize(
    acc, multiplier, shift, out_zero: int, out_width: int, out_signed: bool, relu: bool = False
) -> np.ndarray:
    """Requantize int32 accumulators (see module). ``multiplier`` and ``shift`` broadcast
    against ``acc``: per output channel, they run along its last axis."""
    x = _wrap32(np.asarray(acc, dtype=np.int64))
    shift = np.asarray(shift, dtype=np.int64)
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    scaled = srdhm(_wrap32(x << left), multiplier)
    y = rounding_divide_by_pot(scaled, right) + out_zero
    lo, hi = value_range(out_width, out_signed)
    if relu:
        lo = max(lo, out_zero)
    return np.clip(y, lo, hi)


def quantize_multiplier(real: float) -> tuple[int, int]:
    """``(multiplier, shift)`` with ``real ~= multiplier / 2**31 * 2**shift``, the multiplier in
    [2**30, 2**31) (TFLite's QuantizeMultiplier); ``(0, 0)`` for zero."""
    if real < 0 or not math.isfinite(real):
        raise ValueError(f"a requantization scale must be finite and >= 0, not {real!r}")
    if real == 0:
        return 0, 0
    mantissa, exponent = math.frexp(real)  # real = mantissa * 2**exponent, 0.5 <= mantissa < 1
    q = round(mantissa * (1 << 31))
    if q == 1 << 31:
        q //= 2
        exponent += 1
    if exponent < SHIFT_RANGE[0]:
        return 0, 0  # smaller than the hardware can represent: flushes to zero
    if exponent > SHIFT_RANGE[1]:
        raise ValueError(f"requantization scale {real!r} is too large (shift {exponent} > 31)")
    return q, exponent
