"""Calibration: quantization parameters (scale, zero point) from float tensors, and the
requantization parameters that connect two quantized layers.

A real value ``r`` is represented by the integer ``q = clamp(round(r / scale) + zero_point)``
and read back as ``(q - zero_point) * scale``. Ranges are chosen from the data by min/max or by
percentiles (which clip rare outliers to spend the levels on the bulk), per tensor or per channel,
asymmetric (activations, with a zero point) or symmetric (weights, zero point 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from systolic.contract.config import value_range
from systolic.golden.requant import RequantParams

__all__ = ["Scale", "choose_scale", "dequantize", "output_params", "quantize", "requant_params"]


@dataclass(frozen=True)
class Scale:
    """Quantization of a tensor: ``scale`` and ``zero_point`` (scalars, or arrays per channel
    along the last axis), into ``bits``-bit integers, signed or not."""

    scale: np.ndarray
    zero_point: np.ndarray
    bits: int
    signed: bool

    @property
    def range(self) -> tuple[int, int]:
        return value_range(self.bits, self.signed)


def choose_scale(
    x: np.ndarray,
    bits: int = 8,
    signed: bool = True,
    *,
    method: str = "minmax",
    percentile: float = 99.99,
    per_channel: bool = False,
    symmetric: bool = False,
) -> Scale:
    """Scale and zero point for ``x``: from its min and max (``method="minmax"``) or from the
    ``percentile`` and ``100 - percentile`` percentiles; per channel along the last axis or for
    the whole tensor; ``symmetric`` fixes the zero point at 0 (signed integers)."""
    if method not in ("minmax", "percentile"):
        raise ValueError(f"method must be 'minmax' or 'percentile', not {method!r}")
    if not 50 < percentile <= 100:
        raise ValueError(f"percentile must be in (50, 100], not {percentile}")
    if symmetric and not signed:
        raise ValueError("a symmetric scale needs signed integers")
    x = np.asarray(x, dtype=np.float64)
    axis = tuple(range(x.ndim - 1)) if per_channel else None
    if method == "minmax":
        lo, hi = x.min(axis=axis), x.max(axis=axis)
    else:
        lo = np.percentile(x, 100 - percentile, axis=axis)
        hi = np.percentile(x, percentile, axis=axis)
    lo, hi = np.minimum(lo, 0.0), np.maximum(hi, 0.0)  # zero is always exactly representable
    qmin, qmax = value_range(bits, signed)
    if symmetric:
        scale = np.maximum(np.abs(lo), np.abs(hi)) / qmax
        zero = np.zeros_like(scale, dtype=np.int64)
    else:
        scale = (hi - lo) / (qmax - qmin)
        safe = np.where(scale > 0, scale, 1.0)
        zero = np.clip(np.round(qmin - lo / safe), qmin, qmax).astype(np.int64)
    scale = np.where(scale > 0, scale, 1.0)  # an all-zero tensor: any scale will do
    return Scale(np.asarray(scale), np.asarray(zero), bits, signed)


def quantize(x: np.ndarray, s: Scale) -> np.ndarray:
    """Integers representing ``x`` (round half to even, then clamp)."""
    lo, hi = s.range
    return np.clip(np.rint(np.asarray(x) / s.scale) + s.zero_point, lo, hi).astype(np.int64)


def dequantize(q: np.ndarray, s: Scale) -> np.ndarray:
    return (np.asarray(q, dtype=np.float64) - s.zero_point) * s.scale


def requant_params(
    inputs: Scale, weights: Scale, output: Scale, relu: bool = False
) -> RequantParams:
    """The requantization that turns the int32 accumulators of ``inputs @ weights`` (weights
    per output channel) into ``output``'s integers: multiplier and shift per channel for
    ``inputs.scale * weights.scale / output.scale``."""
    if np.ndim(output.zero_point) != 0:
        raise ValueError("the output needs one zero point (a per-tensor scale)")
    real = np.broadcast_to(inputs.scale * weights.scale / output.scale, np.shape(weights.scale))
    return RequantParams.from_scales(real, int(output.zero_point), relu)


def output_params(acc, out_width: int, out_signed: bool, out_zero: int = 0, relu=False):
    """Requantization that maps each channel's (column's) largest accumulator magnitude onto
    the output range: min/max calibration of the outputs, per channel."""
    lo, hi = value_range(out_width, out_signed)
    span = max(min(hi - out_zero, out_zero - lo) if out_signed else hi - out_zero, 1)
    peak = np.abs(np.asarray(acc, dtype=np.int64)).max(axis=0)
    return RequantParams.from_scales(span / np.maximum(peak, 1), out_zero, relu)
