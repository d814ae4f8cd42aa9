"""Operand data for tests and experiments: random matrices and the corner values of a width."""

from __future__ import annotations

import numpy as np

from .gemm import operand_range

__all__ = ["corner_values", "random_matrix", "corner_matrix"]


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
