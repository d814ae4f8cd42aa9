"""Bit-exact reference GEMM: the one place a reference result is computed.

``C[M, N] = A[M, K] @ B[K, N]``, each product exact, the sum wrapped modulo ``2**acc_width``
and read back as two's-complement when ``signed``: what an adder of ``acc_width`` bits that
drops its carry produces, whatever the order of the additions.
"""

from __future__ import annotations

import numpy as np
from systolic.contract.checks import is_integer
from systolic.contract.config import ArrayConfig, Dataflow, value_range
from systolic.contract.plan import chunk_sizes

from .bf16 import bf16_gemm
from .requant import RequantParams

__all__ = [
    "check_operands",
    "check_zero_points",
    "gemm",
    "operand_range",
    "reference",
    "requantized_reference",
    "wrap",
]


#: Smallest and largest value of a ``width``-bit operand.
operand_range = value_range


def wrap(x: np.ndarray, width: int, signed: bool) -> np.ndarray:
    """Reduce integers modulo ``2**width``; sign-extend from bit ``width - 1`` when ``signed``.

    Works on any integer array, including values that wrapped modulo ``2**64`` in int64/uint64
    arithmetic (their residues modulo ``2**width`` are unaffected, as ``width <= 64``).
    """
    u = np.asarray(x).astype(np.uint64)
    if width < 64:
        u = u & np.uint64((1 << width) - 1)
    if not signed:
        return u if width == 64 else u.astype(np.int64)
    if width == 64:
        return u.view(np.int64)
    sign = np.uint64(1 << (width - 1))
    return (u ^ sign).astype(np.int64) - np.int64(1 << (width - 1))


def _check_operand(x: np.ndarray, name: str, width: int, signed: bool) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, not an array of shape {x.shape}")
    if x.dtype.kind not in "iu":  # signed or unsigned integers
        raise TypeError(f"{name} must hold integers, not {x.dtype}")
    lo, hi = operand_range(width, signed)
    if x.size and (x.min() < lo or x.max() > hi):
        kind = "signed" if signed else "unsigned"
        raise ValueError(
            f"{name} holds values outside the {width}-bit {kind} range [{lo}, {hi}]: "
            f"min {x.min()}, max {x.max()}"
        )
    return x.astype(np.int64)


def gemm(
    a: np.ndarray,
    b: np.ndarray,
    *,
    a_width: int,
    a_signed: bool,
    b_width: int,
    b_signed: bool,
    acc_width: int,
) -> np.ndarray:
    """``A @ B`` with operands checked against their widths and the sum wrapped at ``acc_width``.

    Returns int64 values (uint64 for an unsigned 64-bit accumulator).
    """
    a = _check_operand(a, "A", a_width, a_signed)
    b = _check_operand(b, "B", b_width, b_signed)
    if a.shape[1] != b.shape[0]:
        raise ValueError(
            f"A is {a.shape[0]}x{a.shape[1]} but B is {b.shape[0]}x{b.shape[1]}: "
            "A's columns must equal B's rows (K)"
        )
    # Integer matmul wraps modulo 2**64, which preserves the residue modulo 2**acc_width.
    c = a.view(np.uint64) @ b.view(np.uint64)
    return wrap(c, acc_width, a_signed or b_signed)


def reference(
    config: ArrayConfig, a: np.ndarray, b: np.ndarray, a_zero: int = 0, b_zero: int = 0
) -> np.ndarray:
    """The output the array of ``config`` must produce for ``(A - a_zero) @ (B - b_zero)``
    (zero points need ``config.zero_points``)."""
    check_zero_points(config, a_zero, b_zero)
    a, b = check_operands(config, a, b)
    if config.number == "bf16":
        return bf16_gemm(a, b, bf16_order(config, a.shape[0], a.shape[1], b.shape[1]))
    c = (a - a_zero).view(np.uint64) @ (b - b_zero).view(np.uint64)
    return wrap(c, config.acc_width, config.c_signed)


def requantized_reference(
    config: ArrayConfig, a, b, a_zero: int, b_zero: int, params: RequantParams
) -> np.ndarray:
    """The outputs of the fused output path (``config.requant``: bias, requantization,
    activation) on ``(A - a_zero) @ (B - b_zero)``."""
    if not config.requant:
        raise ValueError(f"{config.name} has no requantization unit (requant=False)")
    params.check(config, b.shape[1])
    return params.apply(config, reference(config, a, b, a_zero, b_zero))


def bf16_order(config: ArrayConfig, m: int, k: int, n: int) -> list[tuple[int, int]]:
    """The K ranges the bf16 hardware sums separately and then adds into C in order: tiles of
    ``rows`` (WS, IS: one term per PE row, the last zero-padded), or the host's K chunks (OS:
    a whole command's K in one PE)."""
    if config.dataflow is Dataflow.OS:
        size = chunk_sizes(config, m, k, n)["k"]
        return [(k0, min(k, k0 + size)) for k0 in range(0, k, size)]
    return [(k0, k0 + config.rows) for k0 in range(0, k, config.rows)]


def check_zero_points(config: ArrayConfig, a_zero: int, b_zero: int) -> None:
    """Zero points must be integers in their operand's range, and need ``zero_points``."""
    for name, z, width, signed in (
        ("a_zero", a_zero, config.a_width, config.a_signed),
        ("b_zero", b_zero, config.b_width, config.b_signed),
    ):
        if not is_integer(z):
            raise TypeError(f"{name} must be an integer, not {z!r}")
        lo, hi = operand_range(width, signed)
        if not lo <= z <= hi:
            raise ValueError(f"{name} must be in the operand range [{lo}, {hi}], not {z}")
        if z and not config.zero_points:
            raise ValueError(f"{name} = {z} needs a configuration with zero_points")


def check_operands(
    config: ArrayConfig, a: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``A`` and ``B`` as int64 matrices, after checking shapes and ranges against ``config``."""
    a = _check_operand(a, "A", config.a_width, config.a_signed)
    b = _check_operand(b, "B", config.b_width, config.b_signed)
    if a.shape[1] != b.shape[0]:
        raise ValueError(
            f"A is {a.shape[0]}x{a.shape[1]} but B is {b.shape[0]}x{b.shape[1]}: "
            "A's columns must equal B's rows (K)"
        )
    for name, dim in zip("MKN", (a.shape[0], a.shape[1], b.shape[1]), strict=True):
        if dim < 1:
            raise ValueError(f"GEMM dimension {name} must be at least 1, not {dim}")
    return a, b
