"""Calibration: quantization parameters (scale, zero point) from float tensors, and the
requantization parameters that connect two quantized layers.

A real value ``r`` is represented by the integer ``q = clamp(round(r / scale) + zero_point)``
and read back as ``(q - zero_point) * scale``. Ranges are chosen from the data, per tensor or per
channel, asymmetric (activations, with a zero point) or symmetric (weights, zero point 0), by:

- ``minmax``: the whole range, every value representable;
- ``percentile``: the ``percentile`` and ``100 - percentile`` percentiles, clipping rare
  outliers to spend the levels on the bulk;
- ``mse``: the range, shrunk from min/max by a factor searched on a grid, whose quantization
  (rounding plus clipping) has the least mean squared error on the data;
- ``entropy``: the clipping threshold of the magnitude whose quantized distribution is closest
  to the data's in Kullback-Leibler divergence (the histogram method of TensorRT's int8
  calibration, Migacz 2017).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from systolic.contract.config import value_range
from systolic.golden.requant import INT32_MAX, INT32_MIN, RequantParams

__all__ = [
    "METHODS",
    "Scale",
    "choose_scale",
    "dequantize",
    "fake_quantize",
    "output_params",
    "quantize",
    "quantize_bias",
    "requant_params",
    "sqnr_db",
]

METHODS = ("minmax", "percentile", "mse", "entropy")
#: Shrink factors of the min/max range that ``mse`` tries.
MSE_GRID = np.linspace(0.2, 1.0, 81)
#: Histogram bins of the magnitude for ``entropy``.
ENTROPY_BINS = 2048


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
    """Scale and zero point for ``x`` by ``method`` (see module); per channel along the last axis
    or for the whole tensor; ``symmetric`` fixes the zero point at 0 (signed integers)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
    if not 50 < percentile <= 100:
        raise ValueError(f"percentile must be in (50, 100], not {percentile}")
    if symmetric and not signed:
        raise ValueError("a symmetric scale needs signed integers")
    x = np.asarray(x, dtype=np.float64)
    axis = tuple(range(x.ndim - 1)) if per_channel else None
    if method == "percentile":
        lo = np.percentile(x, 100 - percentile, axis=axis)
        hi = np.percentile(x, percentile, axis=axis)
    else:
        lo, hi = x.min(axis=axis), x.max(axis=axis)
    lo, hi = np.minimum(lo, 0.0), np.maximum(hi, 0.0)  # zero is always exactly representable
    if method in ("mse", "entropy"):
        columns = x.reshape(-1, x.shape[-1]).T if per_channel else [x.ravel()]
        search = _mse_factor if method == "mse" else _entropy_factor
        factor = np.array([search(c, a, b, bits, signed, symmetric)
                           for c, a, b in zip(columns, np.atleast_1d(lo), np.atleast_1d(hi),
                                              strict=True)])  # fmt: skip
        factor = factor if per_channel else factor[0]
        lo, hi = lo * factor, hi * factor
    return _scale_of(lo, hi, bits, signed, symmetric)


def _scale_of(lo, hi, bits: int, signed: bool, symmetric: bool) -> Scale:
    """The scale and zero point that map ``[lo, hi]`` (which holds zero) onto the integers."""
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


def _mse_factor(x, lo, hi, bits, signed, symmetric) -> float:
    """The shrink factor of ``[lo, hi]`` with the least squared error of quantizing ``x``."""
    if hi - lo <= 0:
        return 1.0
    errors = []
    for f in MSE_GRID:
        s = _scale_of(np.asarray(lo * f), np.asarray(hi * f), bits, signed, symmetric)
        errors.append(np.mean((dequantize(quantize(x, s), s) - x) ** 2))
    return float(MSE_GRID[int(np.argmin(errors))])


def _entropy_factor(x, lo, hi, bits, signed, symmetric) -> float:
    """The clipping threshold of ``|x|`` whose ``levels``-level quantization of the histogram
    diverges least from it (KL), as a fraction of the largest magnitude."""
    peak = max(-lo, hi)
    if peak <= 0:
        return 1.0
    qmin, qmax = value_range(bits, signed)
    # the levels that cover one sign of the range: all of them for non-negative data
    levels = qmax - qmin + 1 if lo >= 0 else (qmax + 1 if symmetric or signed else qmax - qmin + 1)
    levels = max(2, min(levels, ENTROPY_BINS // 2))
    hist, _ = np.histogram(np.abs(x), bins=ENTROPY_BINS, range=(0.0, peak))
    hist = hist.astype(np.float64)
    best, best_kl = ENTROPY_BINS, np.inf
    for i in range(levels, ENTROPY_BINS + 1):
        p = hist[:i].copy()
        p[-1] += hist[i:].sum()  # the clipped outliers land in the last kept bin
        group = (np.arange(i) * levels) // i
        nonzero = hist[:i] > 0
        mass = np.bincount(group, weights=hist[:i], minlength=levels)
        count = np.bincount(group, weights=nonzero, minlength=levels)
        q = np.where(nonzero, mass[group] / np.maximum(count[group], 1), 0.0)
        if p.sum() == 0 or q.sum() == 0:
            continue
        p /= p.sum()
        q /= q.sum()
        keep = p > 0
        kl = float(np.sum(p[keep] * np.log(p[keep] / np.maximum(q[keep], 1e-12))))
        if kl < best_kl:
            best, best_kl = i, kl
    return best / ENTROPY_BINS


def quantize(x: np.ndarray, s: Scale) -> np.ndarray:
    """Integers representing ``x`` (round half to even, then clamp)."""
    lo, hi = s.range
    return np.clip(np.rint(np.asarray(x) / s.scale) + s.zero_point, lo, hi).astype(np.int64)


def dequantize(q: np.ndarray, s: Scale) -> np.ndarray:
    return (np.asarray(q, dtype=np.float64) - s.zero_point) * s.scale


def fake_quantize(x: np.ndarray, s: Scale) -> np.ndarray:
    """``x`` as the integers represent it: quantized and read back (the float model of a
    quantized tensor, for quantization-aware training and the deployment checks)."""
    return dequantize(quantize(x, s), s)


def sqnr_db(reference: np.ndarray, approx: np.ndarray) -> float:
    """Signal-to-quantization-noise ratio of ``approx`` against ``reference``, in dB."""
    ref = np.asarray(reference, dtype=np.float64)
    noise = np.sum((np.asarray(approx, dtype=np.float64) - ref) ** 2)
    signal = np.sum(ref**2)
    if noise == 0:
        return float("inf")
    return float(10 * np.log10(signal / noise)) if signal > 0 else float("-inf")


def requant_params(
    inputs: Scale, weights: Scale, output: Scale, relu: bool = False, bias=None
) -> RequantParams:
    """The fused output path that turns the int32 accumulators of ``inputs @ weights``
    (weights per output channel) plus ``bias`` (int32, :func:`quantize_bias`) into
    ``output``'s integers: multiplier and shift per channel for
    ``inputs.scale * weights.scale / output.scale``."""
    if np.ndim(output.zero_point) != 0:
        raise ValueError("the output needs one zero point (a per-tensor scale)")
    real = np.broadcast_to(inputs.scale * weights.scale / output.scale, np.shape(weights.scale))
    return RequantParams.from_scales(real, int(output.zero_point), relu, bias)


def quantize_bias(bias, inputs: Scale, weights: Scale) -> np.ndarray:
    """A float bias as the int32 the accumulators of ``inputs @ weights`` add: at the scale
    ``inputs.scale * weights.scale`` (per output channel), zero point 0, rounded to nearest and
    saturated to int32 (TFLite's and ONNX's convention)."""
    scale = np.broadcast_to(inputs.scale * weights.scale, np.shape(bias))
    q = np.round(np.asarray(bias, dtype=np.float64) / scale)
    return np.clip(q, INT32_MIN, INT32_MAX).astype(np.int64)


def output_params(acc, out_width: int, out_signed: bool, out_zero: int = 0, relu=False,
                  float_scale: bool = False):  # fmt: skip
    """Requantization that maps each channel's (column's) largest accumulator magnitude onto
    the output range: min/max calibration of the outputs, per channel; in Q31 multipliers and
    shifts, or (``float_scale``) in onnxruntime's float32 scales."""
    lo, hi = value_range(out_width, out_signed)
    span = max(min(hi - out_zero, out_zero - lo) if out_signed else hi - out_zero, 1)
    peak = np.abs(np.asarray(acc, dtype=np.int64)).max(axis=0)
    real = span / np.maximum(peak, 1)
    if float_scale:
        return RequantParams.from_float_scales(real.astype(np.float32), out_zero, relu)
    return RequantParams.from_scales(real, out_zero, relu)
