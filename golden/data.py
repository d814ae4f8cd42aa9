"""Operand data for tests and experiments: random matrices and the corner values of a width."""

from __future__ import annotations

import numpy as np

from .gemm import operand_range

TYPE_CHECKING = False
if TYPE_CHECKING:
    from rtl.config import ArrayConfig

__all__ = ["corner_values", "random_matrix", "corner_matrix", "random_operands"]


def corner_values(width: int, signed: bool) -> list[int]:
    """0, 1, the extremes and (signed) -1: INT_MIN, INT_MAX, or UINT_MAX for unsigned."""
    lo, hi = operand_range(width, signed)
    return sorted({0, 1, lo, hi} | ({-1} if signed else set()))


def random_matrix(
    rng: np.random.Generator, shape: tuple[int, int], width: int, signed: bool
) -> np.ndarray:
    """Uniform over the whole operand range."""
    lo, hi = operand_range(width, signed)
    return rng.integers(lo, hi, size=shape, endpoint=True, dtype=np.int64)


def corner_matrix(
    rng: np.random.Generator, shape: tuple[int, int], width: int, signed: bool
) -> np.ndarray:
    """Every element a corner value, chosen at random (so over a few matrices every pair meets)."""
    corners = np.array(corner_values(width, signed), dtype=np.int64)
    return rng.choice(corners, size=shape)


def random_operands(
    rng: np.random.Generator, config: ArrayConfig, shapes: list[tuple[int, int, int]]
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Random ``(A, B)`` for each ``(M, K, N)``, in the operand ranges of ``config``."""
    return [
        (
            random_matrix(rng, (m, k), config.a_width, config.a_signed),
            random_matrix(rng, (k, n), config.b_width, config.b_signed),
        )
        for m, k, n in shapes
    ]
