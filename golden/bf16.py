"""BF16 GEMM with fp32 accumulation, bit-exact to the hardware: the arithmetic of ``number="bf16"``.

Values travel as bit patterns: bf16 operands in 16 bits, fp32 sums in 32. The rules:

- **Products** ``a * b`` of two bf16 values are exact in fp32 (8-bit significands make a product
  of at most 16 significant bits), except where the exponent leaves fp32's normal range:
  above it the product is infinite, below it zero.
- **Sums** are fp32 additions rounded to nearest, ties to even, one at a time in the array's
  order: within a tile ``((+0 + p_0) + p_1) + ...`` down a column of PEs (WS, IS: one term per
  PE row, ``rows`` terms, zero-padded past K) or along K in a PE (OS, a whole command's K); tile
  and chunk results then add into C in K order, ``C = s_0``, ``C = C + s_1``, ...
- **Subnormals** are flushed to zero, with their sign, on input and on every result (as most
  accelerators do: no subnormal hardware).
- **Infinities** follow IEEE 754: ``inf + -inf`` and ``0 * inf`` are NaN. **NaN** in gives NaN
  out, always the quiet NaN ``0x7FC00000``.
- **Zeros**: ``x + (-x)`` is ``+0``; ``-0 + -0`` is ``-0``.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from systolic.contract.interface import NAN32

__all__ = [
    "NAN32",
    "bf16_bits",
    "bf16_gemm",
    "bits_to_float",
    "fp32_add",
    "fp32_running_sums",
    "from_bf16_bits",
    "product",
]

_EXP_MIN = -126  # smallest normal fp32 exponent


def bf16_bits(values) -> np.ndarray:
    """bf16 bit patterns (as int64) of float values, rounded to nearest even by ml_dtypes."""
    return (
        np.asarray(values, dtype=np.float32)
        .astype(ml_dtypes.bfloat16)
        .view(np.uint16)
        .astype(np.int64)
    )


def from_bf16_bits(bits) -> np.ndarray:
    """float32 values of bf16 bit patterns (exact: bf16 is fp32's upper half)."""
    return (np.asarray(bits, dtype=np.int64) << 16).astype(np.uint32).view(np.float32)


def bits_to_float(bits) -> np.ndarray:
    """float32 values of fp32 bit patterns."""
    return np.asarray(bits, dtype=np.int64).astype(np.uint32).view(np.float32)


def _flush(x: np.ndarray) -> np.ndarray:
    """float64 values rounded to fp32 (nearest even) with subnormal results flushed to signed
    zero and overflow to infinity, as fp32 bit patterns."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        mant, exp = np.frexp(x)  # x = mant * 2**exp, 0.5 <= |mant| < 1
        # round the significand to 24 bits, ties to even, with an unbounded exponent
        scaled = np.rint(mant * (1 << 24))  # np.rint: ties to even
        rounded = np.ldexp(scaled, exp - 24)
        tiny = np.isfinite(rounded) & (rounded != 0) & (np.abs(rounded) < 2.0**_EXP_MIN)
        rounded = np.where(tiny, np.copysign(0.0, x), rounded)
        f32 = rounded.astype(np.float32)  # exact, or +-inf past the range
    bits = f32.view(np.uint32).astype(np.int64)
    return np.where(np.isnan(x), NAN32, bits)


def _value(bits32) -> np.ndarray:
    """float64 of fp32 bit patterns, subnormal inputs flushed to signed zero."""
    with np.errstate(invalid="ignore"):  # NaN payloads
        f = bits_to_float(bits32).astype(np.float64)
    tiny = (f != 0) & np.isfinite(f) & (np.abs(f) < 2.0**_EXP_MIN)
    return np.where(tiny, np.copysign(0.0, f), f)


def fp32_add(x_bits, y_bits) -> np.ndarray:
    """fp32 addition of bit patterns, nearest even, flushing subnormals (see module).

    The float64 sum of two fp32 values, rounded once more to fp32, is the correctly rounded
    fp32 sum (53 >= 2 * 24 + 2 bits: no double-rounding error)."""
    x, y = _value(x_bits), _value(y_bits)
    with np.errstate(invalid="ignore"):
        total = x + y
    both_negative_zero = (x == 0) & (y == 0) & np.signbit(x) & np.signbit(y)
    total = np.where((total == 0) & ~both_negative_zero, 0.0, total)  # x + -x is +0
    return _flush(total)


def fp32_running_sums(terms, axis: int = 0) -> np.ndarray:
    """The running fp32 sums ``+0 + t_0``, ``(+0 + t_0) + t_1``, ... of fp32 bit patterns along
    ``axis``, each step a :func:`fp32_add`.

    Where every step stays finite and no result is subnormal, those steps are IEEE 754 float32
    additions (round to nearest even; ``x + (-x)`` is ``+0`` and ``-0 + -0`` is ``-0`` there
    too; no input is subnormal, since :func:`product` and :func:`fp32_add` never return one),
    and numpy accumulates float32 one term after another: one vectorized pass. Otherwise the
    sums are taken step by step."""
    terms = np.moveaxis(np.asarray(terms, dtype=np.int64), axis, 0)
    values = terms.astype(np.uint32).view(np.float32)
    with np.errstate(all="ignore"):
        sums = np.add.accumulate(np.concatenate([np.zeros_like(values[:1]), values]), axis=0,
                                 dtype=np.float32)[1:]  # fmt: skip
    if np.isfinite(sums).all() and not ((sums != 0) & (np.abs(sums) < 2.0**_EXP_MIN)).any():
        out = sums.view(np.uint32).astype(np.int64)
    else:
        out = np.empty_like(terms)
        total = np.zeros(terms.shape[1:], dtype=np.int64)  # +0
        for i, term in enumerate(terms):
            total = fp32_add(total, term)
            out[i] = total
    return np.moveaxis(out, 0, axis)


def product(a_bits, b_bits) -> np.ndarray:
    """fp32 bit patterns of bf16 products (exact, or inf / zero out of range)."""
    a = _value(np.asarray(a_bits, dtype=np.int64) << 16)
    b = _value(np.asarray(b_bits, dtype=np.int64) << 16)
    with np.errstate(invalid="ignore", over="ignore"):
        return _flush(a * b)  # exact in float64; only the range can change it


def bf16_gemm(a_bits: np.ndarray, b_bits: np.ndarray, order: list[tuple[int, int]]) -> np.ndarray:
    """``A @ B`` of bf16 bit patterns as fp32 bit patterns, summing K in ``order``: a list of
    ``(k0, k1)`` ranges, each summed from ``+0`` term by term, the ranges then added into C
    one after another (see module and :mod:`contract.plan` for the hardware's order)."""
    a_bits = np.asarray(a_bits, dtype=np.int64)
    b_bits = np.asarray(b_bits, dtype=np.int64)
    m, n = a_bits.shape[0], b_bits.shape[1]
    c = None
    for k0, k1 in order:
        s = np.zeros((m, n), dtype=np.int64)  # +0
        for k in range(k0, k1):
            if k < a_bits.shape[1]:
                p = product(a_bits[:, k][:, None], b_bits[k, :][None, :])
            else:
                p = np.zeros((m, n), dtype=np.int64)  # zero padding of a ragged tile
            s = fp32_add(s, p)
        c = s if c is None else fp32_add(c, s)
    return c
