"""RTL against the analytical model, point by point: every device counter and the off-chip
words, at each of several DRAM settings. A point is a GEMM's shape or a convolution
(:class:`contract.conv.Conv`, run as a convolution descriptor).

Points sharing a configuration and a memory run in one simulator process; C is checked
bit-exact as well.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from systolic.contract.config import ArrayConfig, Dataflow
from systolic.contract.conv import Conv
from systolic.contract.dma import offchip_words
from systolic.contract.interface import DEVICE_COUNTERS
from systolic.contract.memory import DEFAULT_MEMORY, Dram
from systolic.golden.conv import conv_reference
from systolic.golden.data import random_operands
from systolic.golden.reference import reference
from systolic.models.device import predict_device
from systolic.models.energy import Coefficients, EnergyReport, figures_energy, model_energy
from systolic.sim.simulate import run_convs, run_gemms
from systolic.verify.scalesim import scalesim_cycles

__all__ = ["DEFAULT_MEMORIES", "Comparison", "compare", "default_points", "read_shapes"]

#: The DRAM settings `systolic compare` checks by default: the simulation's default (small GEMMs
#: compute-bound), and a slow, long-latency memory with few requests in flight (memory-bound,
#: with fractional bandwidth and latency the DMA cannot hide).
DEFAULT_MEMORIES = (DEFAULT_MEMORY, Dram("5/2", 100, 4))

_DEPTHS = dict(a_depth=64, b_depth=64, c_depth=64)  # small: many default points need host tiling


def default_points() -> list[tuple[ArrayConfig, tuple[int, int, int]]]:
    """60 points: every dataflow on 2x2, 4x4, 3x5 and 8x8 arrays, with ragged shapes, a
    dimension of 1, exact tiles and GEMMs larger than the buffers."""
    points = []
    for dataflow in Dataflow:
        for rows, cols in [(2, 2), (4, 4), (3, 5), (8, 8)]:
            config = ArrayConfig(dataflow, rows, cols, **_DEPTHS)
            for shape in [
                (rows, rows, cols),
                (1, 3 * rows + 1, 2 * cols - 1),
                (2 * rows + 3, 1, cols + 2),
                (5 * rows + 2, 4 * rows + 3, 3 * cols + 1),
                (40, 37, 29),
            ]:
                points.append((config, shape))
    return points


def read_shapes(path: Path) -> list[tuple[int, int, int]]:
    """GEMM shapes from a text file: one ``M,K,N`` per line; ``#`` starts a comment."""
    shapes = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        parts = [p.strip() for p in text.split(",")]
        try:
            dims = tuple(int(p) for p in parts)
        except ValueError:
            dims = ()
        if len(dims) != 3 or min(dims) < 1:
            raise ValueError(
                f"{path}:{number}: expected three positive integers M,K,N, got {text!r}"
            )
        shapes.append(dims)
    if not shapes:
        raise ValueError(f"{path}: no shapes (one M,K,N per line)")
    return shapes


@dataclass
class Comparison:
    config: ArrayConfig
    shape: tuple[int, int, int]
    memory: Dram
    bit_exact: bool
    rtl: dict[str, int]  # device counters, then off-chip words as offchip_a/b/c/c_in/p_out
    model: dict[str, int]
    scalesim_cycles: int | None = None  # SCALE-Sim's total cycles, when asked for
    energy_rtl: EnergyReport | None = None  # from the RTL's toggles, when asked for
    energy_model: EnergyReport | None = None  # from toggles predicted from the operands
    conv: Conv | None = None  # the convolution, for a convolution descriptor (shape: its GEMM)

    @property
    def energy_error(self) -> float:
        """Model minus RTL of the activity-priced energy (bit flips; the SRAM, DRAM, clock and
        leakage parts follow from counters the model predicts exactly), in percent."""
        rtl = self.energy_rtl.activity
        return 100 * (self.energy_model.activity - rtl) / rtl if rtl else 0.0

    @property
    def differences(self) -> dict[str, int]:
        """Quantity -> model minus RTL, for the quantities that differ."""
        return {k: self.model[k] - self.rtl[k] for k in self.rtl if self.model[k] != self.rtl[k]}

    @property
    def ok(self) -> bool:
        return self.bit_exact and not self.differences

    def as_dict(self) -> dict:
        m, k, n = self.shape
        return {"config": self.config.name, "m": m, "k": k, "n": n,
                "memory": self.memory.to_dict(), "bit_exact": self.bit_exact,
                "rtl": self.rtl, "model": self.model, "differences": self.differences,
                "scalesim_cycles": self.scalesim_cycles} | (
            {"energy_rtl": self.energy_rtl.to_dict(), "energy_model": self.energy_model.to_dict(),
             "energy_error_percent": self.energy_error} if self.energy_rtl else {})  # fmt: skip


def _flat(counters: dict, offchip: dict) -> dict[str, int]:
    return {**{k: counters[k] for k in DEVICE_COUNTERS},
            **{f"offchip_{k}": v for k, v in offchip.items()}}  # fmt: skip


def compare(
    points, *, memories=DEFAULT_MEMORIES, order: str = "nmk", seed: int = 0,
    scalesim: bool = False, progress=None, energy: bool = False,
    coefficients: Coefficients | None = None,
) -> list[Comparison]:  # fmt: skip
    """Run every ``(config, (m, k, n))`` or ``(config, conv)`` point behind each of ``memories``
    on the RTL and the model (and, GEMMs only, on SCALE-Sim); ``energy`` (GEMMs only) runs the
    activity builds and prices measured and predicted toggles."""
    groups = defaultdict(list)
    for config, shape in points:
        if isinstance(shape, Conv) and (energy or scalesim):
            raise ValueError("energy and SCALE-Sim comparisons take GEMMs, not convolutions")
        groups[config].append(shape)
    out = []
    for memory in memories:
        for config, shapes in groups.items():
            out += _compare_group(config, shapes, memory, order, seed, scalesim, progress,
                                  energy, coefficients)  # fmt: skip
    return out


def _compare_group(config, shapes, memory, order, seed, scalesim, progress, energy,
                   coefficients) -> list[Comparison]:  # fmt: skip
    convs = [s for s in shapes if isinstance(s, Conv)]
    out = _compare_convs(config, convs, memory, order, seed, progress) if convs else []
    shapes = [s for s in shapes if not isinstance(s, Conv)]
    if not shapes:
        return out
    rng = np.random.default_rng(seed)
    operands = random_operands(rng, config, shapes)
    results = run_gemms(config, operands, memory=memory, order=order, activity=energy)
    for (a, b), res in zip(operands, results, strict=True):
        pred = predict_device(config, res.descriptor, memory)
        row = Comparison(
            config,
            res.shape,
            memory,
            bool(np.array_equal(res.c, reference(config, a, b))) and res.errors == 0,
            _flat(res.counters, res.offchip_words),
            _flat(pred, offchip_words(config, res.descriptor, pred)),
        )
        if energy:
            row.energy_rtl = figures_energy(res, res.toggles, coefficients, source="toggles")
            row.energy_model = model_energy(config, a, b, coefficients)
        if scalesim:
            row.scalesim_cycles = scalesim_cycles(config, *res.shape)
        out.append(row)
        if progress:
            progress(row)
    return out


def _compare_convs(config, convs, memory, order, seed, progress) -> list[Comparison]:
    """Convolution points: random NHWC inputs and weights, one simulator process."""
    rng = np.random.default_rng(seed)
    data = []
    for conv in convs:  # operands drawn as a GEMM's, reshaped: input pixels x C, O x taps
        kk = conv.kernel[0] * conv.kernel[1]
        pixels = conv.batch * conv.height * conv.width
        ((a, b),) = random_operands(rng, config, [(pixels, conv.channels, conv.out_channels * kk)])
        x = a.reshape(conv.batch, conv.height, conv.width, conv.channels)
        data.append((conv, x, b.T.reshape(conv.out_channels, *conv.kernel, conv.channels)))
    results = run_convs(config, data, memory=memory, order=order)
    out = []
    for (conv, x, w), res in zip(data, results, strict=True):
        pred = predict_device(config, res.descriptor, memory)
        row = Comparison(
            config,
            res.shape,
            memory,
            bool(np.array_equal(res.c, conv_reference(config, conv, x, w))) and res.errors == 0,
            _flat(res.counters, res.offchip_words),
            _flat(pred, offchip_words(config, res.descriptor, pred)),
            conv=conv,
        )
        out.append(row)
        if progress:
            progress(row)
    return out
