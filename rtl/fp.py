"""Floating-point datapath of ``number="bf16"``: bf16 x bf16 products, fp32 sums.

The arithmetic golden/bf16.py defines: products exact in fp32 (infinite or zero outside its
normal range), sums rounded to nearest even, subnormals flushed to signed zero, IEEE infinities,
one quiet NaN (``0x7FC00000``). Values are bit patterns (bf16 in 16 bits, fp32 in 32).

:class:`IntegerArithmetic` and :class:`BF16Arithmetic` give the PEs and the accumulator buffer
one interface (multiply, accumulate), so a mesh is generated once for either number format.
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, signed
from systolic.contract.config import ArrayConfig
from systolic.contract.interface import NAN32

__all__ = ["BF16Arithmetic", "IntegerArithmetic", "arithmetic", "bf16_mul", "fp32_add"]


def _pack(sign, exponent, fraction):
    return Cat(fraction, exponent, sign)


def bf16_mul(m: Module, a, b, name: str):
    """fp32 bits of the product of bf16 bits ``a`` and ``b`` (exact, see module)."""
    sa, ea, fa = a[15], a[7:15], a[0:7]
    sb, eb, fb = b[15], b[7:15], b[0:7]
    a_zero, b_zero = ~ea.any(), ~eb.any()  # zero or subnormal: zero
    a_inf, b_inf = (ea == 0xFF) & ~fa.any(), (eb == 0xFF) & ~fb.any()
    a_nan, b_nan = (ea == 0xFF) & fa.any(), (eb == 0xFF) & fb.any()
    sign = Signal(name=f"{name}_sign")
    nan = Signal(name=f"{name}_nan")
    inf = Signal(name=f"{name}_inf")
    zero = Signal(name=f"{name}_zero")
    p = Signal(16, name=f"{name}_p")
    e = Signal(signed(11), name=f"{name}_e")
    frac = Signal(23, name=f"{name}_frac")
    out = Signal(32, name=f"{name}")
    m.d.comb += [
        sign.eq(sa ^ sb),
        nan.eq(a_nan | b_nan | (a_inf & b_zero) | (b_inf & a_zero)),
        inf.eq(a_inf | b_inf),
        zero.eq(a_zero | b_zero),
        p.eq(Cat(fa, 1) * Cat(fb, 1)),  # (1.fa)(1.fb) * 2**14, in [2**14, 2**16)
        e.eq(ea + eb - 127 + p[15]),
        frac.eq(Mux(p[15], Cat(Const(0, 8), p[0:15]), Cat(Const(0, 9), p[0:14]))),
    ]
    with m.If(nan):
        m.d.comb += out.eq(NAN32)
    with m.Elif(inf | (~zero & (e >= 0xFF))):
        m.d.comb += out.eq(_pack(sign, Const(0xFF, 8), Const(0, 23)))
    with m.Elif(zero | (e <= 0)):
        m.d.comb += out.eq(_pack(sign, Const(0, 8), Const(0, 23)))
    with m.Else():
        m.d.comb += out.eq(_pack(sign, e[0:8], frac))
    return out


def fp32_add(m: Module, x, y, name: str):
    """fp32 bits of ``x + y``, rounded to nearest even, subnormals flushed (see module)."""
    sx, ex, fx = x[31], x[23:31], x[0:23]
    sy, ey, fy = y[31], y[23:31], y[0:23]
    x_zero, y_zero = ~ex.any(), ~ey.any()
    x_inf, y_inf = (ex == 0xFF) & ~fx.any(), (ey == 0xFF) & ~fy.any()
    x_nan, y_nan = (ex == 0xFF) & fx.any(), (ey == 0xFF) & fy.any()

    # order by magnitude: L is the larger
    x_big = Signal(name=f"{name}_xbig")
    m.d.comb += x_big.eq(Cat(fx, ex) >= Cat(fy, ey))
    sl, el, ml = (
        Signal(name=f"{name}_sl"),
        Signal(8, name=f"{name}_el"),
        Signal(24, name=f"{name}_ml"),
    )
    ss, es, ms = (
        Signal(name=f"{name}_ss"),
        Signal(8, name=f"{name}_es"),
        Signal(24, name=f"{name}_ms"),
    )
    mx, my = Cat(fx, 1), Cat(fy, 1)
    m.d.comb += [
        sl.eq(Mux(x_big, sx, sy)), el.eq(Mux(x_big, ex, ey)), ml.eq(Mux(x_big, mx, my)),
        ss.eq(Mux(x_big, sy, sx)), es.eq(Mux(x_big, ey, ex)), ms.eq(Mux(x_big, my, mx)),
    ]  # fmt: skip

    # align the smaller to the larger, with guard, round and sticky bits
    d = Signal(5, name=f"{name}_d")
    m.d.comb += d.eq(Mux(el - es > 27, 27, el - es))
    big = Signal(27, name=f"{name}_big")
    small = Signal(27, name=f"{name}_small")
    shifted = Signal(27, name=f"{name}_shifted")
    lost = Signal(name=f"{name}_sticky")
    m.d.comb += [
        big.eq(Cat(Const(0, 3), ml)),
        small.eq(Cat(Const(0, 3), ms)),
        shifted.eq((small >> d)[:27]),
        lost.eq((small & ((Const(1, 28) << d) - 1)[:27]).any()),
    ]
    aligned = Cat(shifted[0] | lost, shifted[1:27])

    # add or subtract, then normalize to a 27-bit significand with the hidden bit at 26
    total = Signal(28, name=f"{name}_total")
    norm = Signal(27, name=f"{name}_norm")
    e = Signal(signed(11), name=f"{name}_e")
    lz = Signal(range(28), name=f"{name}_lz")
    same = ~(sl ^ ss)
    m.d.comb += total.eq(Mux(same, big + aligned, big - aligned))
    count = Const(27, range(28))
    for i in range(27):  # the highest set bit wins
        count = Mux(total[i], 26 - i, count)
    m.d.comb += lz.eq(count)
    with m.If(total[27]):  # carry out of an addition
        m.d.comb += [norm.eq(Cat(total[1] | total[0], total[2:28])), e.eq(el + 1)]
    with m.Else():
        m.d.comb += [norm.eq((total[:27] << lz)[:27]), e.eq(el - lz)]

    # round to nearest, ties to even
    rounded = Signal(25, name=f"{name}_rounded")
    er = Signal(signed(11), name=f"{name}_er")
    up = norm[2] & (norm[1] | norm[0] | norm[3])
    m.d.comb += rounded.eq(norm[3:27] + up)
    m.d.comb += er.eq(e + rounded[24])
    frac = Signal(23, name=f"{name}_frac")
    m.d.comb += frac.eq(Mux(rounded[24], rounded[1:24], rounded[0:23]))

    out = Signal(32, name=name)
    with m.If(x_nan | y_nan | (x_inf & y_inf & (sx != sy))):
        m.d.comb += out.eq(NAN32)
    with m.Elif(x_inf):
        m.d.comb += out.eq(_pack(sx, Const(0xFF, 8), Const(0, 23)))
    with m.Elif(y_inf):
        m.d.comb += out.eq(_pack(sy, Const(0xFF, 8), Const(0, 23)))
    with m.Elif(x_zero & y_zero):
        m.d.comb += out.eq(_pack(sx & sy, Const(0, 8), Const(0, 23)))
    with m.Elif(x_zero):
        m.d.comb += out.eq(y)
    with m.Elif(y_zero):
        m.d.comb += out.eq(x)
    with m.Elif(~total.any()):  # x + (-x)
        m.d.comb += out.eq(0)
    with m.Elif(er >= 0xFF):
        m.d.comb += out.eq(_pack(sl, Const(0xFF, 8), Const(0, 23)))
    with m.Elif(er <= 0):
        m.d.comb += out.eq(_pack(sl, Const(0, 8), Const(0, 23)))
    with m.Else():
        m.d.comb += out.eq(_pack(sl, er[0:8], frac))
    return out


class IntegerArithmetic:
    """Two's-complement products; sums wrap at the accumulator width."""

    @staticmethod
    def multiply(m: Module, a, b, shape, name: str):
        product = Signal(shape, name=name)
        m.d.comb += product.eq(a * b)
        return product

    @staticmethod
    def add(m: Module, x, y, name: str):
        """``x + y`` modulo ``2**len(x)`` (both at the accumulator's width)."""
        return (x + y)[: len(x)]


class BF16Arithmetic:
    """bf16 products exact in fp32; fp32 sums rounded to nearest even."""

    @staticmethod
    def multiply(m: Module, a, b, shape, name: str):
        return bf16_mul(m, a, b, name)

    @staticmethod
    def add(m: Module, x, y, name: str):
        return fp32_add(m, x, y, name)


def arithmetic(config: ArrayConfig):
    """The arithmetic of ``config``'s number format."""
    return BF16Arithmetic if config.number == "bf16" else IntegerArithmetic
