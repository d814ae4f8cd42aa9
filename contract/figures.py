"""The figures every account of a GEMM derives from its counters: utilization, reuse, weight words.

One definition serves the model's prediction (models/cycles.py) and the simulation's result
(sim/simulate.py), so the two are always compared on the same formulas.
"""

from __future__ import annotations

from .config import ArrayConfig

__all__ = ["GemmFigures"]


class GemmFigures:
    """Figures derived from a GEMM's counters, shared by the model's prediction and the RTL's
    result (both have ``config``, ``shape``, ``counters`` and ``offchip_words``)."""

    config: ArrayConfig
    shape: tuple[int, int, int]
    counters: dict[str, int]
    offchip_words: dict[str, int]

    @property
    def cycles(self) -> int:
        return self.counters["cycles"]

    @property
    def macs(self) -> int:
        m, k, n = self.shape
        return m * k * n

    @property
    def utilization(self) -> float:
        """Useful MACs per PE-cycle: ``M*K*N / (cycles * rows * cols)``."""
        return self.macs / (self.cycles * self.config.pes) if self.cycles else 0.0

    @property
    def reuse(self) -> dict[str, float]:
        """MACs per word fetched: from the buffers into the array (``array_a``, ``array_b``) and
        from off-chip into the buffers (``offchip_a``, ``offchip_b``)."""
        c, off = self.counters, self.offchip_words

        def per(words: int) -> float:
            return self.macs / words if words else 0.0  # a refused GEMM moved nothing

        return {
            "array_a": per(c["a_reads"]),
            "array_b": per(c["b_reads"]),
            "offchip_a": per(off["a"]),
            "offchip_b": per(off["b"]),
        }

    @property
    def weight_words_off_array(self) -> int:
        """Words of B (weights) read from the B buffer into the array."""
        return self.counters["b_reads"]

    def figures(self) -> dict:
        m, k, n = self.shape
        return {
            "config": self.config.name,
            "m": m, "k": k, "n": n,
            "cycles": self.cycles,
            "utilization": self.utilization,
            "counters": self.counters,
            "offchip_words": self.offchip_words,
            "reuse": self.reuse,
            "weight_words_off_array": self.weight_words_off_array,
        }  # fmt: skip
