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
- plus the output zero point, then the activation: a clamp to ``[lo, hi]`` within the output
  range (ReLU clamps at the zero point, ReLU6 also at the zero point plus 6 over the output
  scale), or saturation to the output range.

A per-channel int32 bias, when given, is added to the accumulator first, wrapping in 32 bits (as
the runtimes' ``acc += bias`` does on int32): the fused output path of TFLite's and ONNX's
quantized convolutions and matrix products.

onnxruntime requantizes in float instead (:func:`requantize_float`; its CPU kernels' one routine,
MLAS's ``MlasRequantizeOutput``, behind QLinearConv, QLinearMatMul and QGemm, on x86-64 and
ARM alike): the scale is one float32 per output channel, ``fl32(fl32(s_x * s_w) / s_y)``
(:func:`float_scale`); the accumulator plus the bias (wrapping in 32 bits) becomes a float32
(rounded to nearest even past 2**24), is multiplied by it in float32, clamped to the output
range less the zero point, rounded half to even, and the zero point added. Read from
onnxruntime's sources and checked against its ``InferenceSession`` (tests/golden/test_requant.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from systolic.contract.config import ArrayConfig, value_range
from systolic.contract.interface import SHIFT_RANGE

__all__ = [
    "FLOAT_INFINITY_BITS",
    "INT32_MAX",
    "INT32_MIN",
    "RequantParams",
    "ACTIVATIONS",
    "activation_bounds",
    "activation_clamp",
    "float_scale",
    "fma32",
    "ort_add",
    "ort_global_average_pool",
    "quantize_multiplier",
    "requantize",
    "requantize_float",
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


def activation_bounds(out_zero: int, out_width: int, out_signed: bool, relu: bool = False,
                      clamp: tuple[int, int] | None = None) -> tuple[int, int] | None:  # fmt: skip
    """The activation clamp the hardware applies: ``clamp`` (output integers) narrowed by ReLU
    (nothing below ``out_zero``) and by the output range; None without either (saturation
    only)."""
    if not relu and clamp is None:
        return None
    lo, hi = value_range(out_width, out_signed)
    if clamp is not None:
        lo, hi = max(lo, int(clamp[0])), min(hi, int(clamp[1]))
    if relu:
        lo = max(lo, int(out_zero))
    return lo, hi


#: Activations the fused output path applies, as real ranges (ONNX's Relu, and Clip(0, 6),
#: which is how ReLU6 reaches ONNX).
ACTIVATIONS = {"relu": (0.0, math.inf), "relu6": (0.0, 6.0)}


def activation_clamp(activation, scale: float, out_zero: int, out_width: int,
                     out_signed: bool) -> tuple[int, int]:  # fmt: skip
    """The clamp in output integers of ``activation`` (a name of :data:`ACTIVATIONS` or a real
    ``(lo, hi)``, a Clip's bounds) on an output of ``scale`` and ``out_zero``: each bound
    quantized as TFLite's ``CalculateActivationRangeQuantized`` does (``zero + round(x /
    scale)``), then narrowed to the output range."""
    if isinstance(activation, str):
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {', '.join(ACTIVATIONS)} or a real "
                             f"(lo, hi), not {activation!r}")  # fmt: skip
        lo, hi = ACTIVATIONS[activation]
    else:
        lo, hi = activation
    if not scale > 0 or not lo <= hi:
        raise ValueError(f"an activation needs scale > 0 and lo <= hi, not scale {scale!r}, "
                         f"range {(lo, hi)!r}")  # fmt: skip
    top_lo, top_hi = value_range(out_width, out_signed)

    def q(x: float) -> int:
        if math.isinf(x):
            return top_hi if x > 0 else top_lo
        steps = x / scale  # rounded half away from zero, as C's round does
        return min(
            top_hi, max(top_lo, out_zero + int(math.copysign(math.floor(abs(steps) + 0.5), steps)))
        )

    return q(lo), q(hi)


def requantize(
    acc, multiplier, shift, out_zero: int, out_width: int, out_signed: bool, relu: bool = False,
    bias=None, clamp: tuple[int, int] | None = None,
) -> np.ndarray:  # fmt: skip
    """Requantize int32 accumulators (see module), after adding ``bias``. ``multiplier``,
    ``shift`` and ``bias`` broadcast against ``acc``: per output channel, they run along its
    last axis. ``relu`` and ``clamp`` give the activation (:func:`activation_bounds`)."""
    acc = _wrap32(np.asarray(acc, dtype=np.int64))
    bias = np.zeros(1, np.int64) if bias is None else np.asarray(bias, dtype=np.int64)
    x = _wrap32(acc + bias)  # the bias first, as the runtimes add it
    shift = np.asarray(shift, dtype=np.int64)
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    scaled = srdhm(_wrap32(x << left), multiplier)
    y = rounding_divide_by_pot(scaled, right) + out_zero
    bounds = activation_bounds(out_zero, out_width, out_signed, relu, clamp)
    lo, hi = bounds or value_range(out_width, out_signed)
    return np.clip(y, lo, hi)


def float_scale(x_scale, w_scale, y_scale) -> np.ndarray:
    """onnxruntime's requantization scale per output channel: ``(x_scale * w_scale) / y_scale``,
    each operation rounded to float32 (``w_scale`` one per channel, or one for the tensor)."""
    x, w, y = (np.asarray(v, dtype=np.float32) for v in (x_scale, w_scale, y_scale))
    return np.atleast_1d(((x * w).astype(np.float32) / y).astype(np.float32))


def requantize_float(acc, scale, out_zero: int, out_width: int, out_signed: bool, bias=None,
                     clamp: tuple[int, int] | None = None) -> np.ndarray:  # fmt: skip
    """Requantize int32 accumulators as onnxruntime does (see module): ``scale`` (float32, see
    :func:`float_scale`) and ``bias`` per output channel along the last axis of ``acc``; the
    result clamped to ``clamp`` within the output range, or saturated to it."""
    acc = _wrap32(np.asarray(acc, dtype=np.int64))
    bias = np.zeros(1, np.int64) if bias is None else np.asarray(bias, dtype=np.int64)
    x = _wrap32(acc + bias).astype(np.float32)  # int32 to float32: to nearest, ties to even
    product = (x * np.asarray(scale, dtype=np.float32)).astype(np.float32)
    lo, hi = value_range(out_width, out_signed)
    # clamped before rounding, as the kernel does (the bounds are integers: the same result as
    # after, without converting a float past int64)
    product = np.clip(product, np.float32(lo - out_zero), np.float32(hi - out_zero))
    y = np.rint(product).astype(np.int64) + int(out_zero)  # np.rint: ties to even
    if clamp is not None:
        lo, hi = max(lo, int(clamp[0])), min(hi, int(clamp[1]))
    return np.clip(y, lo, hi)


def fma32(a, b, c) -> np.ndarray:
    """``a * b + c`` rounded once to float32 (a fused multiply-add), exactly: the float64 product
    of float32 values is exact; the float64 sum's error (TwoSum) decides a round-to-odd last bit,
    after which rounding to float32 is the single rounding of the exact value."""
    a, b, c = (np.asarray(v, np.float32).astype(np.float64) for v in (a, b, c))
    product = a * b
    total = product + c
    back = total - c
    error = (product - back) + (c - (total - back))  # total + error == product + c, exactly
    odd = (error != 0) & ((total.view(np.int64) & 1) == 0)
    total = np.where(odd, np.nextafter(total, np.where(error > 0, np.inf, -np.inf)), total)
    return total.astype(np.float32)


def ort_add(a, a_scale, a_zero: int, b, b_scale, b_zero: int, y_scale, y_zero: int,
            out_signed: bool) -> np.ndarray:  # fmt: skip
    """onnxruntime's QLinearAdd of int8 tensors ``a`` and ``b`` (equal shapes) into ``y``'s
    scale and zero point, as its x86-64 AVX2 kernel computes it (MLAS's QLinearAdd: float32 with
    fused multiply-adds, the constant folded first; SSE2-only CPUs differ by an ulp here and
    there): ``ra = sa / sy``, ``rb = sb / sy``, ``k = zy - fma(ra, za, rb * zb)``, then
    ``fma(a, ra, fma(b, rb, k))`` rounded half to even and saturated."""
    f32 = np.float32
    ra = f32(f32(a_scale) / f32(y_scale))
    rb = f32(f32(b_scale) / f32(y_scale))
    k = f32(f32(y_zero) - fma32(ra, f32(a_zero), f32(rb * f32(b_zero))))
    v = fma32(np.asarray(a, np.float32), ra, fma32(np.asarray(b, np.float32), rb, k))
    lo, hi = value_range(8, out_signed)
    return np.clip(np.rint(v).astype(np.int64), lo, hi)


def ort_global_average_pool(x, x_scale, x_zero: int, y_scale, y_zero: int,
                            out_signed: bool) -> np.ndarray:  # fmt: skip
    """onnxruntime's QLinearGlobalAveragePool of an NCHW int8 tensor ``x``: each channel's int32
    sum less ``x_zero`` times its ``H * W`` elements, requantized (:func:`requantize_float`) by
    ``x_scale / (y_scale * (H * W))`` in float32; shaped ``N x C x 1 x 1``."""
    x = np.asarray(x, dtype=np.int64)
    n, c, h, w = x.shape
    acc = x.reshape(n, c, h * w).sum(axis=-1) - int(x_zero) * h * w
    scale = np.float32(np.float32(x_scale) / np.float32(np.float32(y_scale) * np.float32(h * w)))
    return requantize_float(acc, scale, y_zero, 8, out_signed).reshape(n, c, 1, 1)


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


#: Bit patterns of float32 scales from which on a scale is not finite.
FLOAT_INFINITY_BITS = 0x7F800000


@dataclass(frozen=True)
class RequantParams:
    """The fused output path of one output tensor: per output channel (column of C) a Q31
    ``multiplier``, a ``shift`` and optionally an int32 ``bias``; one output zero point; the
    activation: ReLU, a ``clamp`` in output integers, both, or neither. With ``float_scale``
    (onnxruntime's arithmetic, :func:`requantize_float`) each ``multiplier`` is the bit pattern
    of a float32 scale, as the parameter table holds it, and ``shift`` is unused (0)."""

    multiplier: np.ndarray
    shift: np.ndarray
    out_zero: int = 0
    relu: bool = False
    bias: np.ndarray | None = None
    clamp: tuple[int, int] | None = None
    float_scale: bool = False

    @classmethod
    def from_scales(cls, real, out_zero: int = 0, relu: bool = False, bias=None,
                    clamp: tuple[int, int] | None = None) -> RequantParams:  # fmt: skip
        """Per-channel multipliers and shifts for the real scales ``real`` (one per channel)."""
        pairs = [quantize_multiplier(float(r)) for r in np.atleast_1d(real)]
        return cls(np.array([m for m, _ in pairs]), np.array([s for _, s in pairs]),
                   int(out_zero), relu, None if bias is None else np.asarray(bias, np.int64),
                   clamp)  # fmt: skip

    @classmethod
    def from_float_scales(cls, scale, out_zero: int = 0, relu: bool = False, bias=None,
                          clamp: tuple[int, int] | None = None) -> RequantParams:  # fmt: skip
        """onnxruntime's requantization by the float32 scales ``scale`` (one per channel,
        :func:`float_scale`; -0.0 held as 0.0, which scales the same)."""
        scale = np.atleast_1d(np.asarray(scale, dtype=np.float32))
        scale = np.where(scale == 0, np.float32(0), scale).astype(np.float32)
        bits = scale.view(np.uint32).astype(np.int64)
        return cls(bits, np.zeros_like(bits), int(out_zero), relu,
                   None if bias is None else np.asarray(bias, np.int64), clamp,
                   float_scale=True)  # fmt: skip

    @property
    def scales(self) -> np.ndarray:
        """The float32 scales of a ``float_scale`` table."""
        return np.asarray(self.multiplier, dtype=np.int64).astype(np.uint32).view(np.float32)

    def bounds(self, config: ArrayConfig) -> tuple[int, int] | None:
        """The clamp the descriptor carries (None: saturation only)."""
        return activation_bounds(self.out_zero, config.out_width, config.out_signed, self.relu,
                                 self.clamp)  # fmt: skip

    def apply(self, config: ArrayConfig, acc) -> np.ndarray:
        """The fused output path on int32 accumulators ``acc`` (channels along the last axis)."""
        if self.float_scale:
            return requantize_float(acc, self.scales, self.out_zero, config.out_width,
                                    config.out_signed, self.bias, self.bounds(config))  # fmt: skip
        return requantize(acc, self.multiplier, self.shift, self.out_zero, config.out_width,
                          config.out_signed, self.relu, self.bias, self.clamp)  # fmt: skip

    def check(self, config: ArrayConfig, channels: int) -> None:
        """Clear errors for parameters the hardware cannot take."""
        m = np.asarray(self.multiplier)
        s = np.asarray(self.shift)
        if m.shape != (channels,) or s.shape != (channels,):
            raise ValueError(f"multiplier and shift need one value per output channel "
                             f"({channels}), not shapes {m.shape} and {s.shape}")  # fmt: skip
        if self.float_scale:
            bad = np.flatnonzero((m < 0) | (m >= FLOAT_INFINITY_BITS))
            if bad.size:
                c = int(bad[0])
                value = np.array([m.flat[c] & 0xFFFFFFFF], np.uint32).view(np.float32)[0]
                raise ValueError(f"float scales must be finite and >= 0 (float32 bit patterns in "
                                 f"[0, {FLOAT_INFINITY_BITS:#x})): channel {c} holds "
                                 f"{int(m.flat[c]) & 0xFFFFFFFF:#x} ({value})")  # fmt: skip
            if not config.requant_float:
                raise ValueError(f"float scales need a device built with requant_float; "
                                 f"{config.name} has none")  # fmt: skip
        elif m.size and (m.min() < 0 or m.max() > INT32_MAX):
            raise ValueError(f"multipliers must be Q31 values in [0, {INT32_MAX}], "
                             f"not [{m.min()}, {m.max()}]")  # fmt: skip
        lo, hi = SHIFT_RANGE
        if s.size and (s.min() < lo or s.max() > hi):
            raise ValueError(f"shifts must be in [{lo}, {hi}], not [{s.min()}, {s.max()}]")
        olo, ohi = value_range(config.out_width, config.out_signed)
        if not olo <= self.out_zero <= ohi:
            raise ValueError(f"out_zero must be in the output range [{olo}, {ohi}], "
                             f"not {self.out_zero}")  # fmt: skip
        if self.bias is not None:
            b = np.asarray(self.bias)
            if b.shape != (channels,):
                raise ValueError(f"bias needs one value per output channel ({channels}), "
                                 f"not shape {b.shape}")  # fmt: skip
            if b.size and (b.min() < INT32_MIN or b.max() > INT32_MAX):
                raise ValueError(f"bias values must be int32, in [{INT32_MIN}, {INT32_MAX}], "
                                 f"not [{b.min()}, {b.max()}]")  # fmt: skip
        if self.clamp is not None:
            lo, hi = self.clamp
            if not olo <= lo <= hi <= ohi:
                raise ValueError(f"clamp = ({lo}, {hi}) must satisfy {olo} <= lo <= hi <= "
                                 f"{ohi} (the output range)")  # fmt: skip
        bounds = self.bounds(config)
        if bounds is not None and bounds[0] > bounds[1]:
            raise ValueError(f"ReLU (nothing below out_zero = {self.out_zero}) and clamp = "
                             f"{self.clamp} leave no output value")  # fmt: skip
        if channels > config.q_depth * config.cols:
            raise ValueError(f"{channels} output channels exceed the parameter buffer "
                             f"(q_depth {config.q_depth} x {config.cols} channels)")  # fmt: skip
