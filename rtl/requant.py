"""The fused output path on the way out of the C buffer: per output channel an int32 bias, a Q31
multiplier and a shift (:mod:`golden.requant` is the reference), then an output zero point and
the activation clamp (or saturation to the output range). A device with ``requant_float`` also
scales by a float32 per channel as onnxruntime does (:func:`scale_float`), when a descriptor
asks (``float_scale``): the multiplier's 31 bits then hold the scale's (its sign is 0)."""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data
from systolic.contract.config import ArrayConfig, value_range
from systolic.contract.interface import BIAS_BITS, MULTIPLIER_BITS, SHIFT_BITS

from .array import operand_shape

__all__ = [
    "FLOAT_SATURATE",
    "QUANT_PAIR",
    "clamp",
    "output_path_layout",
    "q_word_layout",
    "requant_word",
    "requantize",
    "scale",
    "scale_float",
]

#: :func:`scale_float`'s results saturate at +-2**17: past any output range plus any output
#: zero point (outputs are at most 16 bits), so the clamp after it sees what onnxruntime's
#: float clamp sees.
FLOAT_SATURATE = 1 << 17

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
    bias is added, the activation clamp (``clamp``: on, ``[clamp_lo, clamp_hi]``) and, with
    ``requant_float``, whether the scale is a float32 (``float_scale``)."""
    out = operand_shape(config.out_width, config.out_signed)
    fields = {"out_zero": out, "bias": 1, "clamp": 1, "clamp_lo": out, "clamp_hi": out}
    if config.requant_float:
        fields["float_scale"] = 1
    return data.StructLayout(fields)


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
    if not cfg.requant_float:
        rounded = scale(m, biased, pair.multiplier, pair.shift, name)
    else:  # both arithmetics; the one a descriptor does not use sees 0 (no switching in it).
        # The clamp after either: onnxruntime clamps the product, then rounds to an integer,
        # the same for integer bounds.
        fixed_in = Signal(signed(32), name=f"{name}_fixed_in")
        float_in = Signal(signed(32), name=f"{name}_float_in")
        m.d.comb += [fixed_in.eq(Mux(path.float_scale, 0, biased)),
                     float_in.eq(Mux(path.float_scale, biased, 0))]  # fmt: skip
        rounded = Mux(path.float_scale, scale_float(m, float_in, pair.multiplier, name),
                      scale(m, fixed_in, pair.multiplier, pair.shift, name))  # fmt: skip
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


def _leading_one(m: Module, x, width: int, name: str):
    """The index of ``x``'s highest set bit (0 when ``x`` is 0)."""
    index = Signal(range(width), name=f"{name}_lead")
    for i in range(width):  # later assignments win: the highest set bit
        with m.If(x[i]):
            m.d.comb += index.eq(i)
    return index


def _round_even(m: Module, value, drop, width: int, name: str):
    """``value >> drop`` rounded to nearest, ties to even (``value`` unsigned, ``width`` bits;
    ``drop`` at least 1)."""
    kept = Signal(width, name=f"{name}_kept")
    guard = Signal(name=f"{name}_guard")
    sticky = Signal(name=f"{name}_sticky")
    out = Signal(width + 1, name=f"{name}_even")
    below = drop - 1
    if not isinstance(drop, int):
        below = Signal(len(drop), name=f"{name}_below")  # unsigned: a shift amount
        m.d.comb += below.eq(drop - 1)
    m.d.comb += [
        kept.eq(value >> drop),
        guard.eq((value >> below)[0]),
        sticky.eq((value & ((Const(1, width + 1) << below) - 1)).any()),
        out.eq(kept + (guard & (sticky | kept[0]))),
    ]
    return out


def scale_float(m: Module, x, scale_bits, name: str):
    """``x`` (int32) times a float32 ``scale_bits`` (a positive normal number's bit pattern; a
    zero or subnormal one scales to 0) and rounded to an integer as onnxruntime does
    (:func:`golden.requant.requantize_float` before its zero point and clamp): ``x`` to float32
    to nearest even, the product rounded to float32 to nearest even, then to an integer to
    nearest even; saturated at +-:data:`FLOAT_SATURATE`, where only the clamp after it
    matters."""
    negative = Signal(name=f"{name}_neg")
    magnitude = Signal(32, name=f"{name}_mag")  # |x| <= 2**31
    m.d.comb += [negative.eq(x < 0), magnitude.eq(Mux(x < 0, -x, x))]
    # x as float32: a 24-bit significand mx and the exponent of its leading one
    lead = _leading_one(m, magnitude, 32, f"{name}_x")
    up = Signal(5, name=f"{name}_up")  # a shift left: the significand fills 24 bits
    down = Signal(4, name=f"{name}_down")  # or a shift right, rounding: 1 ... 8 bits
    m.d.comb += [up.eq(Mux(lead <= 23, 23 - lead, 0)), down.eq(Mux(lead > 23, lead - 23, 1))]
    mx = Signal(25, name=f"{name}_mx")
    ex = Signal(range(33), name=f"{name}_ex")
    with m.If(lead <= 23):
        m.d.comb += [mx.eq(magnitude << up), ex.eq(lead)]
    with m.Else():
        rounded = _round_even(m, magnitude, down, 32, f"{name}_cvt")
        with m.If(rounded[24]):  # rounded up to the next power of two
            m.d.comb += [mx.eq(1 << 23), ex.eq(lead + 1)]
        with m.Else():
            m.d.comb += [mx.eq(rounded), ex.eq(lead)]
    # the product of the significands, rounded back to 24 bits
    fraction = Signal(23, name=f"{name}_frac")
    biased = Signal(8, name=f"{name}_bexp")
    m.d.comb += [fraction.eq(scale_bits[:23]), biased.eq(scale_bits[23:31])]
    product = Signal(48, name=f"{name}_prod")
    m.d.comb += product.eq(mx[:24] * Cat(fraction, Const(1, 1)))
    high = Signal(name=f"{name}_phigh")
    m.d.comb += high.eq(product[47])
    mp = Signal(25, name=f"{name}_mp")
    m.d.comb += mp.eq(Mux(high, _round_even(m, product, 24, 48, f"{name}_p24"),
                          _round_even(m, product, 23, 48, f"{name}_p23")))  # fmt: skip
    # value = significand * 2**(exponent - 23), the exponent unbiased
    exponent = Signal(signed(11), name=f"{name}_exp")
    significand = Signal(24, name=f"{name}_sig")
    carry = mp[24]  # rounded up to the next power of two
    m.d.comb += [
        exponent.eq(ex + biased - 127 + high + carry),
        significand.eq(Mux(carry, 1 << 23, mp)),
    ]
    # to an integer, ties to even
    integer = Signal(18, name=f"{name}_int")
    fractional = Signal(5, name=f"{name}_fbits")  # 23 - exponent, where it is used: 7 ... 24
    m.d.comb += fractional.eq(Mux((exponent >= -1) & (exponent < 17), 23 - exponent, 24))
    with m.If(~biased.any() | ~magnitude.any() | (exponent < -1)):
        m.d.comb += integer.eq(0)  # a zero scale or x, or below one half
    with m.Elif(exponent >= 17):
        m.d.comb += integer.eq(FLOAT_SATURATE)
    with m.Else():  # 23 - exponent in 7 ... 24 bits of fraction
        m.d.comb += integer.eq(_round_even(m, significand, fractional, 24, f"{name}_int"))
    result = Signal(signed(19), name=f"{name}_float")
    m.d.comb += result.eq(Mux(negative, -integer, integer))
    return result


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
