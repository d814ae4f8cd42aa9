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
from dataclasses import dataclass

import numpy as np
from systolic.contract.config import ArrayConfig, value_range
from systolic.contract.interface import SHIFT_RANGE

__all__ = [
    "INT32_MAX",
    "INT32_MIN",
    "RequantParams",
    "quantize_multiplier",
    "requantize",
    "rounding_divide_by_pot",
    "srdhm",
]

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


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


@dataclass(frozen=True)
class RequantParams:
    """Requantization of one output tensor: per output channel (column of C) a Q31
    ``multiplier`` and a ``shift``; one output zero point; ReLU or not."""

    multiplier: np.ndarray
    shift: np.ndarray
    out_zero: int = 0
    relu: bool = False

    @classmethod
    def from_scales(cls, real, out_zero: int = 0, relu: bool = False) -> RequantParams:
        """Per-channel multipliers and shifts for the real scales ``real`` (one per channel)."""
        pairs = [quantize_multiplier(float(r)) for r in np.atleast_1d(real)]
        return cls(np.array([m for m, _ in pairs]), np.array([s for _, s in pairs]),
                   int(out_zero), relu)  # fmt: skip

    def check(self, config: ArrayConfig, channels: int) -> None:
        """Clear errors for parameters the hardware cannot take."""
        m = np.asarray(self.multiplier)
        s = np.asarray(self.shift)
        if m.shape != (channels,) or s.shape != (channels,):
            raise ValueError(f"multiplier and shift need one value per output channel "
                             f"({channels}), not shapes {m.shape} and {s.shape}")  # fmt: skip
        if m.size and (m.min() < 0 or m.max() > INT32_MAX):
            raise ValueError(f"multipliers must be Q31 values in [0, {INT32_MAX}], "
                             f"not [{m.min()}, {m.max()}]")  # fmt: skip
        lo, hi = SHIFT_RANGE
        if s.size and (s.min() < lo or s.max() > hi):
            raise ValueError(f"shifts must be in [{lo}, {hi}], not [{s.min()}, {s.max()}]")
        olo, ohi = value_range(config.out_width, config.out_signed)
        if not olo <= self.out_zero <= ohi:
            raise ValueError(f"out_zero must be in the output range [{olo}, {ohi}], "
                             f"not {self.out_zero}")  # fmt: skip
        if channels > config.q_depth * config.cols:
            raise ValueError(f"{channels} output channels exceed the parameter buffer "
                             f"(q_depth {config.q_depth} x {config.cols} channels)")  # fmt: skip
