"""The fused output path on the way out of the C buffer: per output channel an int32 bias, a Q31
multiplier and a shift (:mod:`golden.requant` is the reference), then an output zero point and
the activation clamp (or saturation to the output range)."""

from __future__ import annotations

from amaranth import Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data
from systolic.contract.config import ArrayConfig, value_range
from systolic.contract.interface import BIAS_BITS, MULTIPLIER_BITS, SHIFT_BITS

from .array import operand_shape

__all__ = [
    "QUANT_PAIR",
    "clamp",
    "output_path_layout",
    "q_word_layout",
    "requant_word",
    "requantize",
    "scale",
]

#: Per-channel parameters (contract.interface): a Q31 multiplier, a shift and a bias.
QUANT_PAIR = data.StructLayout(
    {
        "multiplier": unsigned(MULTIPLIER_BITS),
        "shift": signed(SHIFT_BITS),
        "bias": signed(BIAS_BITS),
    }  # fmt: skip
)


def output_path_layout(config: ArrayConfig) -> data.StructLayout:
    """A descriptor's settings of the fused output path: the output zero point, whether the
    bias is added, and the activation clamp (``clamp``: on, ``[clamp_lo, clamp_hi]``)."""
    out = operand_shape(config.out_width, config.out_signed)
    return data.StructLayout({"out_zero": out, "bias": 1, "clamp": 1, "clamp_lo": out,
                              "clamp_hi": out})  # fmt: skip


def q_word_layout(config: ArrayConfig) -> data.ArrayLayout:
    """A word of the parameter buffer: the pairs of ``cols`` consecutive output channels."""
    return data.ArrayLayout(QUANT_PAIR, config.cols)


def requant_word(m: Module, cfg: ArrayConfig, raw, pairs, lane, broadcast, path):
    """The ``cols`` outputs of C word ``raw``: element ``j`` by pair ``j`` of the parameter
    word ``pairs``, or every element by pair ``lane`` with ``broadcast`` (IS: a word is one
    channel)."""
    shared = Signal(QUANT_PAIR, name="q_shared")
    with m.Switch(lane):  # a case per lane (a dynamic index is a wide shift)
        for j in range(cfg.cols - 1):
            with m.Case(j):
                m.d.comb += shared.eq(pairs[j])
        with m.Default():  # the last lane (nobody names one past it)
            m.d.comb += shared.eq(pairs[cfg.cols - 1])
    outs = []
    for j in range(cfg.cols):
        pair = Signal(QUANT_PAIR, name=f"q_pair{j}")
        m.d.comb += pair.eq(Mux(broadcast, shared.as_value(), pairs[j].as_value()))
        outs.append(requantize(m, raw[j], pair, path, cfg, f"rq{j}"))
    return outs


def requantize(m: Module, acc, pair, path, cfg: ArrayConfig, name: str):
    """One output: ``acc`` (at most 32 bits) through the fused output path with ``pair``'s
    parameters and ``path``'s settings (:func:`output_path_layout`), as golden/requant.py
    does."""
    x = Signal(signed(32), name=f"{name}_x")
    biased = Signal(signed(32), name=f"{name}_biased")  # wraps in 32 bits
    m.d.comb += [x.eq(acc), biased.eq((x + Mux(path.bias, pair.bias, 0))[:32])]
    rounded = scale(m, biased, pair.multiplier, pair.shift, name)
    lo, hi = value_range(cfg.out_width, cfg.out_signed)
    return clamp(m, rounded + path.out_zero, Mux(path.clamp, path.clamp_lo, lo),
                 Mux(path.clamp, path.clamp_hi, hi), name)  # fmt: skip


def scale(m: Module, x, multiplier, shift, name: str):
    """``x`` (32 bits) times a Q31 ``multiplier`` and a power of two ``shift``, as the runtimes
    round it (:func:`golden.requant.requantize` without bias, zero point and clamp)."""
    left = Signal(5, name=f"{name}_left")
    right = Signal(5, name=f"{name}_right")
    shifted = Signal(signed(32), name=f"{name}_shifted")
    m.d.comb += [
        left.eq(Mux(shift > 0, shift, 0)),
        right.eq(Mux(shift < 0, -shift, 0)),
        shifted.eq((x << left)[:32]),  # wraps in 32 bits
    ]
    # SaturatingRoundingDoublingHighMul: the multiplier is below 2**31, so it never saturates.
    product = Signal(signed(64), name=f"{name}_product")
    nudged = Signal(signed(65), name=f"{name}_nudged")
    high = Signal(signed(33), name=f"{name}_high")
    m.d.comb += [
        product.eq(shifted * multiplier),
        nudged.eq(product + Mux(product >= 0, Const(1 << 30), Const(1 - (1 << 30)))),
        # division by 2**31 truncating toward zero: floor, plus one for an inexact negative
        high.eq((nudged >> 31) + ((nudged < 0) & nudged[:31].any())),
    ]
    # RoundingDivideByPOT: ties away from zero.
    mask = Signal(32, name=f"{name}_mask")
    rounded = Signal(signed(34), name=f"{name}_rounded")
    m.d.comb += [
        mask.eq((Const(1, 33) << right) - 1),
        rounded.eq((high >> right) + ((high & mask) > ((mask >> 1) + (high < 0)))),
    ]
    return rounded


def clamp(m: Module, y, floor, ceiling, name: str):
    """``y`` clamped to ``[floor, ceiling]`` (an output's range, or an activation's)."""
    value = Signal(signed(36), name=f"{name}_y")
    lo = Signal(signed(18), name=f"{name}_floor")
    hi = Signal(signed(18), name=f"{name}_ceiling")
    result = Signal(signed(18), name=f"{name}_out")
    m.d.comb += [
        value.eq(y),
        lo.eq(floor),
        hi.eq(ceiling),
        result.eq(Mux(value < lo, lo, Mux(value > hi, hi, value))),
    ]
    return result
