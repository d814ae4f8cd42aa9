"""Operand data for tests and experiments: random matrices and the corner values of a width."""

from __future__ import annotations

import numpy as np
from systolic.contract.config import ArrayConfig, value_range

from .bf16 import bf16_bits

__all__ = [
    "DataKind",
    "corner_matrix",
    "corner_values",
    "random_matrix",
    "random_operands",
]


def corner_values(width: int, signed: bool) -> list[int]:
    """0, 1, the extremes and (signed) -1: INT_MIN, INT_MAX, or UINT_MAX for unsigned."""
    lo, hi = value_range(width, signed)
    return sorted({0, 1, lo, hi} | ({-1} if signed else set()))


def random_matrix(
    rng: np.random.Generator, shape: tuple[int, int], width: int, signed: bool
) -> np.ndarray:
    """Uniform over the whole operand range."""
    lo, hi = value_range(width, signed)
    return rng.integers(lo, hi, size=shape, endpoint=True, dtype=np.int64)


def corner_matrix(
    rng: np.random.Generator, shape: tuple[int, int], width: int, signed: bool
) -> np.ndarray:
    """Every element a corner value, chosen at random (so over a few matrices every pair meets)."""
    corners = np.array(corner_values(width, signed), dtype=np.int64)
    return rng.choice(corners, size=shape)


class DataKind:
    """What operand data looks like: ``random`` (uniform over the range), ``zeros``,
    ``sparse:P`` (uniform, then each element zero with probability ``P``) or ``narrow:B``
    (uniform over the values of ``B`` bits, small values in a wide operand; for bf16, ``B``
    significand bits kept of 8)."""

    def __init__(self, text: str = "random"):
        self.narrow_bits = self._narrow(text)
        self.zero_fraction = 0.0 if self.narrow_bits else self._parse(text)
        self.text = text

    @staticmethod
    def _narrow(text: str) -> int | None:
        if not text.startswith("narrow:"):
            return None
        bits = text.removeprefix("narrow:")
        if not bits.isdigit() or not 1 <= int(bits) <= 32:
            raise ValueError(f"data 'narrow:B' needs a number of bits B in 1 to 32, not {text!r}")
        return int(bits)

    @staticmethod
    def _parse(text: str) -> float:
        if text == "random":
            return 0.0
        if text == "zeros":
            return 1.0
        if text.startswith("sparse:"):
            try:
                p = float(text.removeprefix("sparse:"))
            except ValueError:
                p = -1.0
            if 0.0 <= p <= 1.0:
                return p
            raise ValueError(f"data 'sparse:P' needs a fraction of zeros P in [0, 1], not {text!r}")
        raise ValueError(f"data must be 'random', 'zeros', 'sparse:P' or 'narrow:B', not {text!r}")

    def __repr__(self) -> str:
        return f"DataKind({self.text!r})"

    def matrix(self, rng, shape, width: int, signed: bool) -> np.ndarray:
        if self.narrow_bits is not None:
            width = min(width, self.narrow_bits)
        values = random_matrix(rng, shape, width, signed)
        if self.zero_fraction:
            values[rng.random(shape) < self.zero_fraction] = 0
        return values

    def bf16_matrix(self, rng, shape) -> np.ndarray:
        """bf16 bit patterns of standard normal values (zeros as this kind says)."""
        values = rng.standard_normal(shape)
        if self.zero_fraction:
            values[rng.random(shape) < self.zero_fraction] = 0.0
        bits = bf16_bits(values)
        if self.narrow_bits is not None and self.narrow_bits < 8:  # 7 stored bits + hidden one
            bits &= ~((1 << (8 - self.narrow_bits)) - 1)
        return bits

    def operand(self, rng, shape, config: ArrayConfig, which: str) -> np.ndarray:
        """Operand ``which`` (``"a"`` or ``"b"``) of ``config``: integers in its range, or bf16
        bit patterns of normal values for ``number="bf16"``."""
        if config.number == "bf16":
            return self.bf16_matrix(rng, shape)
        return self.matrix(rng, shape, getattr(config, f"{which}_width"),
                           getattr(config, f"{which}_signed"))  # fmt: skip


def random_operands(
    rng: np.random.Generator,
    config: ArrayConfig,
    shapes: list[tuple[int, int, int]],
    data: DataKind | None = None,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(A, B)`` for each ``(M, K, N)`` in the operand ranges of ``config`` (uniform random
    unless ``data`` says otherwise)."""
    data = data or DataKind()
    return [
        (data.operand(rng, (m, k), config, "a"), data.operand(rng, (k, n), config, "b"))
        for m, k, n in shapes
    ]
