"""The vector unit's operators on quantized tensors, bit-exact: what runs between the GEMMs
(residual adds, elementwise max, pooling) as TensorFlow Lite's reference kernels compute it on
8-bit tensors, NHWC.

- **Add** of two tensors of different scales (a residual): each input, its zero point removed,
  is shifted left by :data:`ADD_LEFT_SHIFT` and scaled to twice the larger input scale by its
  own Q31 multiplier and shift; the sum is scaled to the output's and gets its zero point; then
  the activation clamp. Each scaling is :func:`golden.requant.srdhm` then
  :func:`golden.requant.rounding_divide_by_pot`, the requantization's own steps.
- **Max** of two tensors of one scale: elementwise, then the clamp.
- **Max and average pooling** over ``kh x kw`` windows at a stride, with padding that no window
  reads (a window at the edge covers fewer elements); the average rounds half away from zero
  over the elements it covers. **Global average pooling** is the average over the whole plane.

Tensors are integer arrays ``N x H x W x C``; an operator's result is in its output's range.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from systolic.contract.checks import is_number
from systolic.contract.config import value_range
from systolic.contract.vector import ADD_LEFT_SHIFT

from .requant import quantize_multiplier, rounding_divide_by_pot, srdhm

__all__ = [
    "ADD_LEFT_SHIFT",
    "AddParams",
    "add",
    "average_pool",
    "descriptor_reference",
    "global_average_pool",
    "max_pool",
    "maximum",
]


def _scale(x, multiplier, shift) -> np.ndarray:
    """``x * multiplier / 2**31 * 2**shift`` as the runtimes round it (``shift <= 0``)."""
    return rounding_divide_by_pot(srdhm(x, multiplier), -np.asarray(shift, dtype=np.int64))


@dataclass(frozen=True)
class AddParams:
    """The integer parameters of ``z = x + y`` on tensors of real scales ``x_scale``,
    ``y_scale`` and ``z_scale``: each input's zero point, Q31 multiplier and shift, the output's
    multiplier, shift and zero point (TFLite's ``PrepareGeneralSubOp``)."""

    x_zero: int
    x_multiplier: int
    x_shift: int
    y_zero: int
    y_multiplier: int
    y_shift: int
    out_multiplier: int
    out_shift: int
    out_zero: int

    @classmethod
    def from_scales(cls, x_scale: float, x_zero: int, y_scale: float, y_zero: int,
                    z_scale: float, z_zero: int) -> AddParams:  # fmt: skip
        for name, value in (("x_scale", x_scale), ("y_scale", y_scale), ("z_scale", z_scale)):
            if not (is_number(value) and math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive real scale, not {value!r}")
        twice = 2 * float(max(x_scale, y_scale))
        xm, xs = quantize_multiplier(float(x_scale) / twice)
        ym, ys = quantize_multiplier(float(y_scale) / twice)
        real = twice / ((1 << ADD_LEFT_SHIFT) * float(z_scale))
        if real >= 1:  # the kernels scale the sum down only
            raise ValueError(
                f"z_scale = {z_scale!r} must be above twice the larger input "
                f"scale over 2**{ADD_LEFT_SHIFT} ({twice / (1 << ADD_LEFT_SHIFT):g})"
            )
        om, os_ = quantize_multiplier(real)
        return cls(int(x_zero), xm, xs, int(y_zero), ym, ys, om, os_, int(z_zero))


def add(x, y, params: AddParams, lo: int, hi: int) -> np.ndarray:
    """``x + y`` (same shape) into the output's integers, clamped to ``[lo, hi]`` (the output
    range, or narrower: a fused ReLU)."""
    x = np.asarray(x, dtype=np.int64) - params.x_zero
    y = np.asarray(y, dtype=np.int64) - params.y_zero
    sx = _scale(x << ADD_LEFT_SHIFT, params.x_multiplier, params.x_shift)
    sy = _scale(y << ADD_LEFT_SHIFT, params.y_multiplier, params.y_shift)
    z = _scale(sx + sy, params.out_multiplier, params.out_shift) + params.out_zero
    return np.clip(z, lo, hi)


def maximum(x, y, lo: int, hi: int) -> np.ndarray:
    """Elementwise ``max(x, y)`` of two tensors of one scale, clamped to ``[lo, hi]``."""
    return np.clip(np.maximum(np.asarray(x, np.int64), np.asarray(y, np.int64)), lo, hi)


def _windows(x: np.ndarray, kernel: tuple[int, int], stride: tuple[int, int],
             pads: tuple[int, int, int, int]):  # fmt: skip
    """Each output pixel's window of ``x`` (NHWC) as a masked array: ``(values, covered)`` of
    shape ``N x OH x OW x kh*kw x C``, padding not covered. ``pads`` is ``(top, left, bottom,
    right)``."""
    n, h, w, c = x.shape
    kh, kw = kernel
    sh, sw = stride
    top, left, bottom, right = pads
    oh = (h + top + bottom - kh) // sh + 1
    ow = (w + left + right - kw) // sw + 1
    if oh < 1 or ow < 1:
        raise ValueError(f"a {kh}x{kw} window does not fit a {h}x{w} plane with pads {pads}")
    padded = np.zeros((n, h + top + bottom, w + left + right, c), dtype=np.int64)
    covered = np.zeros(padded.shape[1:3], dtype=bool)
    padded[:, top : top + h, left : left + w] = x
    covered[top : top + h, left : left + w] = True
    values = np.stack([padded[:, i : i + sh * oh : sh, j : j + sw * ow : sw]
                       for i in range(kh) for j in range(kw)], axis=3)  # fmt: skip
    mask = np.stack([covered[i : i + sh * oh : sh, j : j + sw * ow : sw]
                     for i in range(kh) for j in range(kw)], axis=2)  # fmt: skip
    return values, mask[None, :, :, :, None]


def max_pool(x, kernel: tuple[int, int], stride: tuple[int, int],
             pads: tuple[int, int, int, int], lo: int, hi: int) -> np.ndarray:  # fmt: skip
    """The largest element each window covers, clamped to ``[lo, hi]``."""
    values, mask = _windows(np.asarray(x, dtype=np.int64), kernel, stride, pads)
    lowest = np.iinfo(np.int64).min
    return np.clip(np.where(mask, values, lowest).max(axis=3), lo, hi)


def _average(total: np.ndarray, count) -> np.ndarray:
    """``total / count`` rounded half away from zero (TFLite's quantized average)."""
    count = np.asarray(count, dtype=np.int64)
    half = count // 2
    up = (total + half) // count
    down = -((-total + half) // count)
    return np.where(total >= 0, up, down)


def average_pool(x, kernel: tuple[int, int], stride: tuple[int, int],
                 pads: tuple[int, int, int, int], lo: int, hi: int) -> np.ndarray:  # fmt: skip
    """The average of the elements each window covers (padding not counted), clamped."""
    values, mask = _windows(np.asarray(x, dtype=np.int64), kernel, stride, pads)
    total = np.where(mask, values, 0).sum(axis=3)
    count = mask.sum(axis=3)
    return np.clip(_average(total, count), lo, hi)


def global_average_pool(x, lo: int, hi: int) -> np.ndarray:
    """The average over each channel's whole plane: ``N x 1 x 1 x C``."""
    x = np.asarray(x, dtype=np.int64)
    total = x.sum(axis=(1, 2), keepdims=True)
    return np.clip(_average(total, x.shape[1] * x.shape[2]), lo, hi)


def descriptor_reference(config, v, x, y=None) -> np.ndarray:
    """Z of vector descriptor ``v`` (:class:`contract.vector.VectorDescriptor`) on ``config``'s
    device: its operator on ``x`` (and ``y``) with its parameters, zero point and clamp. A
    pooling descriptor names its output's size; the bottom and right padding are what that
    size needs (windows past the plane cover nothing more)."""
    lo, hi = value_range(config.out_width, config.out_signed) if v.clamp is None else v.clamp
    if v.op == "add":
        params = AddParams(v.x_zero, v.x_multiplier, v.x_shift, v.y_zero, v.y_multiplier,
                           v.y_shift, v.z_multiplier, v.z_shift, v.out_zero)  # fmt: skip
        return add(x, y, params, lo, hi)
    if v.op == "max":
        return maximum(x, y, lo, hi)
    _, h, w, _ = np.shape(x)
    (kh, kw), (sh, sw), (top, left), (oh, ow) = v.window, v.stride, v.pads, v.out
    bottom = max(0, (oh - 1) * sh + kh - h - top)
    right = max(0, (ow - 1) * sw + kw - w - left)
    pool = max_pool if v.op == "max_pool" else average_pool
    return pool(x, (kh, kw), (sh, sw), (top, left, bottom, right), lo, hi)[:, :oh, :ow]
