"""Quantized integer arithmetic: the golden requantization against its definition, and the RTL
(zero points at the array edge, the requantization unit on the C read path) against golden."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
from systolic.contract.config import PRECISIONS, ArrayConfig
from systolic.golden.data import random_operands
from systolic.golden.reference import reference, requantized_reference
from systolic.golden.requant import (
    INT32_MAX,
    INT32_MIN,
    RequantParams,
    quantize_multiplier,
    requantize,
    rounding_divide_by_pot,
    srdhm,
)
from systolic.sim.simulate import Quantization, run_gemm, run_gemms


def _round_half_away(q: Fraction) -> int:
    n = abs(q)
    r = int(n) + (1 if n - int(n) >= Fraction(1, 2) else 0)
    return r if q >= 0 else -r


# -- golden against the definitions ------------------------------------------------------------

EDGES = [INT32_MIN, INT32_MIN + 1, -(1 << 30), -3, -2, -1, 0, 1, 2, 3, 1 << 30, INT32_MAX]


def test_srdhm_is_rounded_doubling_high_multiply(seed):
    """gemmlowp's nudge (``1 - 2**30`` below zero) rounds to nearest with ties toward +inf:
    -0.5 goes to 0, not -1, which the runtimes do and so must we."""
    rng = np.random.default_rng(seed)
    values = EDGES + rng.integers(INT32_MIN, INT32_MAX, 200, endpoint=True).tolist()
    a = np.array(values * 2)
    b = np.array(values + values[::-1])
    got = srdhm(a, b)
    for x, y, g in zip(a.tolist(), b.tolist(), got.tolist(), strict=True):
        q = Fraction(x * y, 1 << 31)
        expected = INT32_MAX if x == y == INT32_MIN else math.floor(q + Fraction(1, 2))
        assert g == expected, (x, y)


def test_rounding_divide_by_pot_rounds_ties_away_from_zero(seed):
    rng = np.random.default_rng(seed)
    values = EDGES + rng.integers(INT32_MIN, INT32_MAX, 100, endpoint=True).tolist()
    for e in range(32):
        got = rounding_divide_by_pot(np.array(values), e)
        for x, g in zip(values, got.tolist(), strict=True):
            assert g == _round_half_away(Fraction(x, 1 << e)), (x, e)


def test_quantize_multiplier_represents_the_scale():
    for real in [1e-9, 0.000123, 0.0625, 0.3, 0.5, 0.99999, 1.0, 3.7, 1000.0]:
        q, shift = quantize_multiplier(real)
        assert (1 << 30) <= q < (1 << 31)
        assert abs(q * 2.0 ** (shift - 31) - real) <= real * 2.0**-30
    assert quantize_multiplier(0.0) == (0, 0)
    with pytest.raises(ValueError, match="finite and >= 0"):
        quantize_multiplier(-1.0)


# -- the requantization unit in RTL ------------------------------------------------------------

#: 16-bit operands and a 32-bit accumulator: any int32 value is reachable as an accumulator.
RQ = ArrayConfig("ws", 2, 4, a_width=16, b_width=16, acc_width=32, requant=True)
RQ_U8 = ArrayConfig("os", 2, 3, a_width=16, b_width=16, acc_width=32, requant=True,
                    out_signed=False)  # fmt: skip


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
    results = run_gemms(config, [(a, b)] * len(cases), quant=cases)
    acc = reference(config, a, b)
    assert (acc == np.array(targets)[:, None]).all()
    for case, res in zip(cases, results, strict=True):
        expected = requantized_reference(config, a, b, 0, 0, case.params)
        diff = np.argwhere(res.c != expected)
        assert not diff.size, [(targets[i], j, res.c[i, j], expected[i, j]) for i, j in diff[:5]]
        lo, hi = (-128, 127) if config.out_signed else (0, 255)
        assert expected.min() == (case.params.out_zero if case.params.relu else lo)
        assert expected.max() == hi  # saturated at the top as well


# -- zero points -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "config",
    [ArrayConfig("ws", 3, 4, a_signed=False, zero_points=True),
     ArrayConfig("os", 4, 3, a_signed=False, zero_points=True, a_depth=32, b_depth=32,
                 c_depth=32),
     ArrayConfig("is", 3, 3, zero_points=True, a_width=4, b_width=6, acc_width=20)],
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
    config = ArrayConfig("is", 2, 3, a_signed=False, zero_points=True, requant=True,
                         out_signed=False)  # fmt: skip
    rng = np.random.default_rng(seed)
    ((a, b),) = random_operands(rng, config, [(11, 9, 7)])
    za, zb = int(rng.integers(0, 256)), int(rng.integers(-128, 128))
    acc = reference(config, a, b, za, zb)
    scales = [quantize_multiplier(255 / (2 * np.abs(acc[:, j]).max() + 1)) for j in range(7)]
    params = RequantParams(np.array([m for m, _ in scales]), np.array([s for _, s in scales]),
                         out_zero=128)  # fmt: skip
    res = run_gemm(config, a, b, quant=[Quantization(za, zb, params)])
    assert np.array_equal(res.c, requantized_reference(config, a, b, za, zb, params))


# -- precision modes ---------------------------------------------------------------------------


@pytest.mark.parametrize("precision, dataflow", [("int4", "ws"), ("int8", "os"), ("int16", "is")])
def test_every_precision_bit_exact(precision, dataflow, seed):
    bits, acc = PRECISIONS[precision]
    config = ArrayConfig(dataflow, 3, 4, a_width=bits, b_width=bits, acc_width=acc)
    rng = np.random.default_rng(seed)
    operands = random_operands(rng, config, [(10, 17, 9), (4, 33, 5)])
    for (a, b), res in zip(operands, run_gemms(config, operands), strict=True):
        assert np.array_equal(res.c, reference(config, a, b))


# -- clear errors ------------------------------------------------------------------------------


def test_invalid_quantization_is_refused():
    with pytest.raises(ValueError, match="zero_points need a_width and b_width <= 15"):
        ArrayConfig("ws", 2, 2, a_width=16, zero_points=True)
    with pytest.raises(ValueError, match="requant takes an accumulator of at most 32 bits"):
        ArrayConfig("ws", 2, 2, acc_width=48, requant=True)
    plain = ArrayConfig("ws", 2, 2)
    a = np.zeros((2, 2), dtype=np.int64)
    with pytest.raises(ValueError, match="a_zero = 3 needs a configuration with zero_points"):
        reference(plain, a, a, 3, 0)
    zp = ArrayConfig("ws", 2, 2, a_signed=False, zero_points=True, requant=True)
    with pytest.raises(ValueError, match=r"a_zero must be in the operand range \[0, 255\]"):
        reference(zp, a, a, -1, 0)
    with pytest.raises(ValueError, match=r"b_zero must be in the operand range \[-128, 127\]"):
        reference(zp, a, a, 0, 128)
    ones = np.ones(2, dtype=np.int64)
    for params, message in [
        (RequantParams(ones, ones[:1]), "one value per output channel"),
        (RequantParams(-ones, 0 * ones), r"multipliers must be Q31 values in \[0, 2147483647\]"),
        (RequantParams(ones, 40 * ones), r"shifts must be in \[-31, 31\]"),
        (RequantParams(ones, 0 * ones, out_zero=300), r"out_zero must be in the output range"),
    ]:
        with pytest.raises(ValueError, match=message):
            requantized_reference(zp, a, a, 0, 0, params)
    with pytest.raises(ValueError, match="has no requantization unit"):
        requantized_reference(plain, a, a, 0, 0, RequantParams(ones, 0 * ones))


def test_requantize_is_per_channel():
    acc = np.array([[100, 100], [-100, -100]])
    out = requantize(acc, np.array([1 << 30, 1 << 30]), np.array([0, -1]), 0, 8, True)
    assert out.tolist() == [[50, 25], [-50, -25]]


def test_cli_sim_precision_zero_points_and_requant():
    r = subprocess.run(
        [sys.executable, "-m", "systolic.cli", "sim", "--dataflow", "ws", "--rows", "2",
         "--cols", "3", "--m", "5", "--k", "7", "--n", "4", "--seed", "2", "--precision", "int8",
         "--a-unsigned", "--a-zero", "200", "--b-zero", "-3", "--requant", "--out-zero", "10",
         "--relu", "--json"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["bit_exact"] and out["quant"]["a_zero"] == 200 and out["quant"]["requant"]
    assert out["config"] == "ws-2x3-au8-bi8-acc32-zp-rqi8"


# -- calibration and accuracy retention --------------------------------------------------------


def test_calibration_represents_zero_and_the_range(seed):
    from systolic.golden.calibrate import choose_scale, dequantize, quantize

    rng = np.random.default_rng(seed)
    x = rng.standard_normal((200, 6)) * np.array([0.1, 1, 10, 100, 1000, 1e-3]) + 0.5
    for kwargs in [{}, {"per_channel": True}, {"method": "percentile", "percentile": 99.0},
                   {"per_channel": True, "symmetric": True}]:  # fmt: skip
        s = choose_scale(x, 8, signed=True, **kwargs)
        q = quantize(x, s)
        assert q.min() >= -128 and q.max() <= 127
        assert np.all(dequantize(quantize(np.zeros(6), s), s) == 0)  # zero is exact
        if kwargs.get("method") != "percentile":  # min/max: every value within half a step
            assert np.all(np.abs(dequantize(q, s) - x) <= s.scale / 2 + 1e-12)


def test_accuracy_retention_through_the_rtl():
    from systolic.experiments.accuracy import run_accuracy

    experiment = run_accuracy(test_samples=300, rows=4)
    print(experiment.table())
    assert experiment.float_accuracy > 0.8  # the task is learnable, and not trivially
    by_name = {r.precision: r for r in experiment.results}
    assert all(r.rtl_equals_golden for r in experiment.results)
    assert by_name["int8"].retention >= 0.97 and by_name["bf16"].retention >= 0.98
    assert by_name["int4"].pj_per_mac < by_name["int8"].pj_per_mac
