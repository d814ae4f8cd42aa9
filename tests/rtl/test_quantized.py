"""The device's quantized paths (rtl/device.py, rtl/requant.py): zero points at the array's edge,
the requantization unit's corners, and every precision preset, bit-exact."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from systolic.contract.config import PRECISIONS, ArrayConfig
from systolic.contract.dma import Refusal, check_descriptor, place
from systolic.contract.memory import DEFAULT_MEMORY
from systolic.golden.data import random_operands
from systolic.golden.reference import reference, requantized_reference
from systolic.golden.requant import (
    INT32_MAX,
    INT32_MIN,
    RequantParams,
    quantize_multiplier,
    requantize_float,
)
from systolic.models.device import predict_device
from systolic.quant.calibrate import output_params
from systolic.sim.simulate import Quantization, run_gemm, run_gemms

from ..sim.test_device import CONFIGS as DEVICE_CONFIGS

#: 16-bit operands and a 32-bit accumulator: any int32 value is reachable as an accumulator.
#: With the vector unit: tests/sim/test_vector.py runs it on the same build. Both modes of
#: requantization: fixed point and onnxruntime's float32 scales.
RQ = ArrayConfig("ws", 2, 4, a_width=16, b_width=16, acc_width=32, requant=True, vector=True,
                 requant_float=True)  # fmt: skip


RQ_U8 = ArrayConfig("os", 2, 3, a_width=16, b_width=16, acc_width=32, requant=True,
                    out_signed=False, requant_float=True)  # fmt: skip


def _accumulators_as_gemm(targets: list[int], channels: int):
    """A and B with ``(A @ B)[i, j] == targets[i]`` (mod 2**32) for every channel ``j``:
    ``acc = -32768 * (a0 + a1) + a2 + a3``."""
    rows = []
    for t in targets:
        for r in (t % 32768, t % 32768 - 32768, t % 32768 - 65536):
            s = -(t - r) // 32768
            if -65536 <= s <= 65534:
                break
        a0 = max(-32768, min(32767, s))
        rows.append([a0, s - a0, r // 2, r - r // 2])
    a = np.array(rows, dtype=np.int64)
    b = np.tile(np.array([[-32768], [-32768], [1], [1]]), (1, channels))
    assert ((a @ b - np.array(targets)[:, None]) % (1 << 32) == 0).all()
    return a, b


def _float_corner_params(channels: int, rng) -> RequantParams:
    """onnxruntime's float32 scales at their corners: zero, the smallest subnormal, exactly 1/2
    (every odd accumulator a tie), one, past saturation, tiny powers of two; then random."""
    corners = [0.0, 1e-45, 0.5, 1.0, 2.0**20, 2.0**-31, 2.0**-24, 0.75]
    extra = channels - len(corners)
    scales = corners + (rng.uniform(0.5, 1, extra) * 2.0 ** rng.integers(-30, 2, extra)).tolist()
    return RequantParams.from_float_scales(np.array(scales[:channels], np.float32))


def _corner_params(channels: int, rng) -> RequantParams:
    multipliers = [0, 1, 1 << 30, INT32_MAX, (1 << 30) + 12345, 1 << 30, 1 << 30, INT32_MAX]
    shifts = [0, 0, -1, 0, -31, 31, 7, -7]
    extra = channels - len(multipliers)
    multipliers += rng.integers(1 << 30, 1 << 31, extra).tolist()
    shifts += rng.integers(-31, 8, extra).tolist()
    return RequantParams(np.array(multipliers[:channels]), np.array(shifts[:channels]))


@pytest.mark.parametrize("config", [RQ, RQ_U8], ids=lambda c: c.name)
def test_requantization_corners_bit_exact(config, seed):
    """Largest and smallest multipliers and shifts, ties, saturation at both ends."""
    rng = np.random.default_rng(seed)
    channels = 10
    targets = [
        INT32_MIN,
        INT32_MAX,
        0,
        1,
        -1,
        2,
        -2,
        3,
        -3,
        5,
        -5,
        1 << 20,
        -(1 << 20),
        (1 << 30) + 1,
        -(1 << 30) - 1,
    ] + rng.integers(-(1 << 31), 1 << 31, 9).tolist()
    a, b = _accumulators_as_gemm(targets, channels)
    base = _corner_params(channels, rng)
    cases = [
        Quantization(params=base),
        Quantization(
            params=RequantParams(
                base.multiplier, base.shift, out_zero=-7 if config.out_signed else 200, relu=True
            )
        ),  # fmt: skip
    ]
    lo, hi = (-128, 127) if config.out_signed else (0, 255)
    # biases at the int32 extremes (the sums wrap) and small ones, random clamps in the range
    extremes = np.array([INT32_MAX, INT32_MIN, 1, -1, 1 << 30, -(1 << 30)])
    bias = np.concatenate([extremes, rng.integers(-(1 << 20), 1 << 20, channels - 6)])
    clamp = tuple(sorted(int(x) for x in rng.integers(lo, hi + 1, 2)))
    fused = [
        RequantParams(base.multiplier, base.shift, bias=bias),
        RequantParams(base.multiplier, base.shift, out_zero=lo + 9, bias=bias, clamp=clamp),
        RequantParams(base.multiplier, base.shift, out_zero=lo + 20, relu=True,
                      clamp=(lo + 5, lo + 30)),  # ReLU narrows it to [lo + 20, lo + 30]
    ]  # fmt: skip
    cases += [Quantization(params=p) for p in fused]
    floats = _float_corner_params(channels, rng)  # the same again, scaled in float32
    cases += [Quantization(params=floats)] + [
        Quantization(params=dataclasses.replace(p, multiplier=floats.multiplier,
                                                shift=floats.shift, float_scale=True))
        for p in fused]  # fmt: skip
    results = run_gemms(config, [(a, b)] * len(cases), quant=cases)
    acc = reference(config, a, b)
    assert (acc == np.array(targets)[:, None]).all()
    for case, res in zip(cases, results, strict=True):
        expected = requantized_reference(config, a, b, 0, 0, case.params)
        diff = np.argwhere(res.c != expected)
        assert not diff.size, [(targets[i], j, res.c[i, j], expected[i, j]) for i, j in diff[:5]]
        floor, top = case.params.bounds(config) or (lo, hi)
        assert expected.min() == floor and expected.max() == top  # both ends reached
    assert case.params.bounds(config) == (lo + 20, lo + 30)


def test_fused_path_refusals_on_the_device(seed):
    """A bias, a clamp or a float scale without requantization, and a clamp upside down, are
    refused by the device as the contract says, moving nothing; the next descriptor runs."""
    config = RQ  # built above
    rng = np.random.default_rng(seed)
    good = place(config, 5, 4, 6, requant=True, bias=True, clamp=(-3, 40))
    floats = dataclasses.replace(good, requant=False, bias=False, clamp=None, float_scale=True)
    refused = [
        (Refusal.MODE, dataclasses.replace(good, requant=False, clamp=None)),
        (Refusal.MODE, floats),
        (Refusal.CLAMP, dataclasses.replace(good, clamp=(41, 40))),
    ]
    for code, d in refused:
        assert check_descriptor(config, d)[0] is code, code
    operands = random_operands(rng, config, [(5, 4, 6)] * 4)
    acc = reference(config, *operands[3])
    span = int(np.abs(acc).max()) + 1
    params = output_params(acc, 8, True)
    params = dataclasses.replace(params, bias=rng.integers(-span, span + 1, 6), clamp=(-3, 40))
    quant = [None, None, None, Quantization(params=params)]
    codes = [code for code, _ in refused] + [Refusal.NONE]
    res = run_gemms(config, operands, descriptors=[d for _, d in refused] + [good], quant=quant)
    for code, r in zip(codes, res, strict=True):
        assert r.error == int(code), (code, r.error)
        assert dict(predict_device(config, r.descriptor, DEFAULT_MEMORY)) == r.counters, code
    assert np.array_equal(res[3].c, requantized_reference(config, *operands[3], 0, 0, params))


@pytest.mark.parametrize(
    "config",
    # hardware other tests build: the CLI's requantizing WS (raw accumulators out here) and
    # tests/sim/test_device.py's OS and IS, whose 24-word buffers chunk these shapes
    [ArrayConfig("ws", 2, 3, a_signed=False, zero_points=True, requant=True),
     DEVICE_CONFIGS[1], DEVICE_CONFIGS[2]],
    ids=lambda c: c.name,
)  # fmt: skip
def test_extreme_zero_points_bit_exact(config, seed):
    rng = np.random.default_rng(seed)
    lo_a, hi_a = (0, (1 << config.a_width) - 1) if not config.a_signed else (
        -(1 << (config.a_width - 1)), (1 << (config.a_width - 1)) - 1)  # fmt: skip
    lo_b, hi_b = -(1 << (config.b_width - 1)), (1 << (config.b_width - 1)) - 1
    shapes = [(9, 13, 7), (5, 20, 11), (8, 8, 8)]
    operands = random_operands(rng, config, shapes)
    zeros = [(hi_a, lo_b), (lo_a, hi_b), (int(rng.integers(lo_a, hi_a)), 0)]
    results = run_gemms(config, operands, quant=[Quantization(za, zb) for za, zb in zeros])
    for (a, b), (za, zb), res in zip(operands, zeros, results, strict=True):
        expected = reference(config, a, b, za, zb)
        assert np.array_equal(res.c, expected), (za, zb)
        assert res.errors == 0


def test_zero_points_and_requantization_together(seed):
    # tests/sim/test_device.py's configuration (no build of its own): 24-word buffers tile this
    config = ArrayConfig("is", 2, 3, a_depth=24, b_depth=24, c_depth=24, zero_points=True,
                         requant=True, a_signed=False, out_signed=False, bus_width=64,
                         max_burst=2)  # fmt: skip
    rng = np.random.default_rng(seed)
    ((a, b),) = random_operands(rng, config, [(11, 9, 7)])
    za, zb = int(rng.integers(0, 256)), int(rng.integers(-128, 128))
    acc = reference(config, a, b, za, zb)
    scales = [quantize_multiplier(255 / (2 * np.abs(acc[:, j]).max() + 1)) for j in range(7)]
    params = RequantParams(np.array([m for m, _ in scales]), np.array([s for _, s in scales]),
                         out_zero=128)  # fmt: skip
    res = run_gemm(config, a, b, quant=Quantization(za, zb, params))
    assert np.array_equal(res.c, requantized_reference(config, a, b, za, zb, params))


#: int8, the default, runs in every other test
@pytest.mark.parametrize("precision, dataflow", [("int4", "ws"), ("int16", "is")])
def test_every_precision_bit_exact(precision, dataflow, seed):
    bits, acc = PRECISIONS[precision]
    config = ArrayConfig(dataflow, 3, 4, a_width=bits, b_width=bits, acc_width=acc)
    rng = np.random.default_rng(seed)
    operands = random_operands(rng, config, [(10, 17, 9), (4, 33, 5)])
    for (a, b), res in zip(operands, run_gemms(config, operands), strict=True):
        assert np.array_equal(res.c, reference(config, a, b))


def _float_scaler(out_width: int, out_signed: bool):
    """A unit around :func:`rtl.requant.scale_float`: ``x`` scaled by the float32 ``bits``,
    plus ``zero``, clamped to the output range."""
    from amaranth import Elaboratable, Module, Signal, signed
    from systolic.contract.config import value_range
    from systolic.rtl.requant import clamp, scale_float

    lo, hi = value_range(out_width, out_signed)

    class Scaler(Elaboratable):
        def __init__(self):
            self.x, self.bits = Signal(signed(32)), Signal(32)
            self.zero, self.out = Signal(signed(18)), Signal(signed(18))

        def elaborate(self, platform):
            m = Module()
            y = clamp(m, scale_float(m, self.x, self.bits, "f") + self.zero, lo, hi, "c")
            m.d.comb += self.out.eq(y)
            return m

    return Scaler()


@pytest.mark.parametrize(("out_width", "out_signed"), [(8, False), (8, True), (16, True)])
def test_the_float_scaler_rounds_as_onnxruntime(seed, out_width, out_signed):
    """The hardware's float requantization (the device's float_scale mode) alone, against
    golden's :func:`requantize_float` (itself equal to onnxruntime's): accumulators across
    int32, past 2**24 and at its extremes, scales across float32's range, exactly 1/2 (ties),
    powers of two and random; zero points across the output range."""
    from amaranth.sim import Simulator
    from systolic.contract.config import value_range

    rng = np.random.default_rng(seed)
    lo, hi = value_range(out_width, out_signed)
    n = 600
    x = np.concatenate([
        rng.integers(-(1 << 31), 1 << 31, n // 3), rng.integers(-300, 300, n // 3),
        rng.integers(-(1 << 26), 1 << 26, n - 2 * (n // 3) - 6),
        [-(1 << 31), (1 << 31) - 1, 0, (1 << 24) + 1, -(1 << 24) - 3, 16777217],
    ]).astype(np.int64)  # fmt: skip
    rest = n - 2 * (n // 4)
    scale = np.concatenate([
        np.float32(2.0) ** rng.integers(-40, 10, n // 4),
        np.full(n // 4, 0.5, np.float32),
        rng.uniform(0.5, 1, rest) * np.float32(2.0) ** rng.integers(-30, 4, rest),
    ]).astype(np.float32)  # fmt: skip
    zero = rng.integers(lo, hi + 1, n)
    dut = _float_scaler(out_width, out_signed)
    got = []

    async def bench(ctx):
        for xi, si, zi in zip(x, scale.view(np.uint32), zero, strict=True):
            ctx.set(dut.x, int(xi))
            ctx.set(dut.bits, int(si))
            ctx.set(dut.zero, int(zi))
            got.append(ctx.get(dut.out))

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    want = [int(requantize_float(np.array([xi]), np.array([si]), int(zi), out_width,
                                 out_signed)[0])
            for xi, si, zi in zip(x, scale, zero, strict=True)]  # fmt: skip
    wrong = [
        (int(a), float(s), int(z), g, w)
        for a, s, z, g, w in zip(x, scale, zero, got, want, strict=True)
        if g != w
    ]
    assert not wrong, wrong[:5]
