"""golden/requant.py: SRDHM, rounding division, multiplier quantization and per-channel
requantization against their definitions, and every invalid parameter refused."""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig
from systolic.golden.reference import reference, requantized_reference
from systolic.golden.requant import (
    INT32_MAX,
    INT32_MIN,
    RequantParams,
    activation_bounds,
    activation_clamp,
    float_scale,
    ort_add,
    ort_global_average_pool,
    quantize_multiplier,
    requantize,
    requantize_float,
    rounding_divide_by_pot,
    srdhm,
)


def _round_half_away(q: Fraction) -> int:
    n = abs(q)
    r = int(n) + (1 if n - int(n) >= Fraction(1, 2) else 0)
    return r if q >= 0 else -r


EDGES = [INT32_MIN, INT32_MIN + 1, -(1 << 30), -3, -2, -1, 0, 1, 2, 3, 1 << 30, INT32_MAX]


def test_srdhm_is_rounded_doubling_high_multiply(seed):
    """gemmlowp's nudge (``1 - 2**30`` below zero) rounds to nearest with ties toward +inf:
    -0.5 goes to 0, not -1, which the runtimes do and so must we."""
    rng = np.random.default_rng(seed)
    values = EDGES + rng.integers(INT32_MIN, INT32_MAX, 200, endpoint=True).tolist()
    # exact ties, a * b an odd multiple of 2**30, both signs: where the nudge decides
    ties = [(1 << 30, 1), (1 << 30, -1), (1 << 30, 5), (-(1 << 30), 7), (3 << 29, 2), (-3, 1 << 30)]
    a = np.array(values * 2 + [x for x, _ in ties])
    b = np.array(values + values[::-1] + [y for _, y in ties])
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
        (RequantParams(ones, ones, bias=ones[:1]), r"bias needs one value per output channel"),
        (RequantParams(ones, ones, bias=ones << 31), r"bias values must be int32"),
        (RequantParams(ones, ones, clamp=(5, 4)), r"clamp = \(5, 4\) must satisfy"),
        (RequantParams(ones, ones, clamp=(0, 128)), r"-128 <= lo <= hi <= 127"),
    ]:
        with pytest.raises(ValueError, match=message):
            requantized_reference(zp, a, a, 0, 0, params)
    with pytest.raises(ValueError, match="has no requantization unit"):
        requantized_reference(plain, a, a, 0, 0, RequantParams(ones, 0 * ones))


def test_float_scale_parameters_requantize_as_onnxruntime_and_refuse_what_the_table_cannot_hold(
    seed,
):
    """``RequantParams.from_float_scales`` holds each scale's float32 bits where the Q31
    multiplier goes (the parameter table's field) and applies :func:`requantize_float`, the
    activation's bounds its clamp; scales the hardware cannot take are refused by name."""
    rng = np.random.default_rng(seed)
    config = ArrayConfig("ws", 2, 4, requant=True, requant_float=True, out_signed=False)
    scales = (np.float32(2) ** rng.uniform(-12, 0, 4).astype(np.float32)).astype(np.float32)
    bias = rng.integers(-1000, 1000, 4)
    params = RequantParams.from_float_scales(scales, 7, relu=True, bias=bias, clamp=(3, 200))
    assert params.multiplier.tolist() == [int(x) for x in scales.view(np.uint32)]
    assert params.scales.tobytes() == scales.tobytes()
    acc = rng.integers(-(1 << 14), 1 << 14, (5, 4))
    want = requantize_float(acc, scales, 7, 8, False, bias, (7, 200))  # ReLU: nothing below 7
    np.testing.assert_array_equal(params.apply(config, acc), want)
    params.check(config, 4)
    # the table's edges: the largest finite scale and zeros of either sign are taken
    edge = RequantParams.from_float_scales(np.float32([3.4028235e38, 0.0, -0.0, 1e-45]))
    edge.check(config, 4)
    assert edge.multiplier.tolist() == [0x7F7FFFFF, 0, 0, 1]
    for bad, channel in [
        (np.float32([1, np.inf, 1, 1]), "channel 1 holds 0x7f800000 (inf)"),
        (np.float32([1, 1, np.nan, 1]), "channel 2 holds 0x7fc00000 (nan)"),
        (np.float32([1, 1, 1, -0.5]), "channel 3 holds 0xbf000000 (-0.5)"),
    ]:
        with pytest.raises(ValueError, match=r"float scales must be finite and >= 0 .*: "
                                             + re.escape(channel)):  # fmt: skip
            RequantParams.from_float_scales(bad).check(config, 4)
    fixed_only = ArrayConfig("ws", 2, 4, requant=True)
    with pytest.raises(ValueError, match="float scales need a device built with requant_float"):
        params.check(fixed_only, 4)
    with pytest.raises(ValueError, match="requant_float needs requant"):
        ArrayConfig("ws", 2, 4, requant_float=True)


def test_requantize_is_per_channel():
    acc = np.array([[100, 100], [-100, -100]])
    out = requantize(acc, np.array([1 << 30, 1 << 30]), np.array([0, -1]), 0, 8, True)
    assert out.tolist() == [[50, 25], [-50, -25]]


def test_the_bias_is_added_before_the_scale_wrapping_in_32_bits():
    half = np.array([1 << 30])  # 0.5
    # (100 + 50) * 0.5 = 75; a bias added after the scale would give 100
    assert requantize([[100]], half, [0], 0, 8, True, bias=[50]).tolist() == [[75]]
    # the sum wraps as int32 arithmetic does: 2**31 - 1 + 2 is -2**31 + 1, then * 0.5 rounds
    wrapped = requantize([[(1 << 31) - 1]], [1 << 30], [-24], 0, 8, True, bias=[2])
    assert wrapped.tolist() == [[round((-(1 << 31) + 1) / 2**25)]]
    # per channel, along the last axis
    two = requantize([[10, 10]], np.array([1 << 30] * 2), [1, 1], 0, 8, True, bias=[-10, 6])
    assert two.tolist() == [[0, 16]]


def test_the_activation_clamps_after_the_zero_point():
    acc = np.arange(-300, 301, 50)[:, None]
    one = ([1 << 30], [1])  # scale 1.0
    out = requantize(acc, *one, 3, 8, True)
    assert out.min() == -128 and out.max() == 127  # saturation only
    relu = requantize(acc, *one, 3, 8, True, relu=True)
    assert relu.min() == 3 and relu.max() == 127
    relu6 = requantize(acc, *one, 3, 8, True, relu=True, clamp=(-128, 3 + 60))  # scale 0.1
    assert relu6.min() == 3 and relu6.max() == 63
    inside = (acc >= 0) & (acc <= 60)
    assert (relu6[inside] == acc[inside] + 3).all()
    assert activation_bounds(3, 8, True) is None
    assert activation_bounds(3, 8, True, relu=True) == (3, 127)
    assert activation_bounds(3, 8, True, relu=True, clamp=(-5, 10)) == (3, 10)
    assert activation_bounds(0, 4, False, clamp=(2, 99)) == (2, 15)


def test_activations_quantize_their_bounds_on_the_output_scale():
    # ReLU6 on an output of scale 0.1 and zero point 3: 6 / 0.1 = 60 steps above the zero
    assert activation_clamp("relu6", 0.1, 3, 8, True) == (3, 63)
    assert activation_clamp("relu6", 6 / 255, 0, 8, False) == (0, 255)
    assert activation_clamp("relu6", 0.01, -128, 8, True) == (-128, 127)  # 600 steps: the top
    assert activation_clamp("relu", 0.5, 10, 8, True) == (10, 127)
    assert activation_clamp((-1.0, 2.0), 0.25, 0, 4, True) == (-4, 7)  # Clip(-1, 2), top 7
    with pytest.raises(ValueError, match="scale > 0 and lo <= hi"):
        activation_clamp((1.0, 0.0), 0.1, 0, 8, True)


def test_activation_bounds_round_half_away_from_zero_and_name_their_choices():
    """C's round, which TFLite's bounds use: Clip(0, 0.5) at scale 1 keeps 1, not 0 (ties to
    even would give 0); -2.5 goes to -3."""
    assert activation_clamp((0.0, 0.5), 1.0, 0, 8, True) == (0, 1)
    assert activation_clamp((-2.5, 0.0), 1.0, 0, 8, True) == (-3, 0)
    with pytest.raises(ValueError, match="activation must be one of relu, relu6"):
        activation_clamp("gelu", 0.1, 0, 8, True)
    ones = np.ones(2, dtype=np.int64)
    config = ArrayConfig("ws", 2, 2, requant=True)
    with pytest.raises(ValueError, match=r"ReLU \(nothing below out_zero = 0\) and clamp"):
        RequantParams(ones, ones, relu=True, clamp=(-128, -10)).check(config, 2)


# -- onnxruntime's float requantization, against onnxruntime itself --------------------------


def _ort_run(nodes, inputs: dict, initializers: dict, output: str, out_type,
             out_shape: tuple) -> np.ndarray:  # fmt: skip
    """Run a graph of ``nodes`` on onnxruntime's CPU provider: ``inputs`` fed, ``initializers``
    constants, one output of numpy type ``out_type`` and shape ``out_shape``."""
    import onnx
    import onnxruntime as ort
    from onnx import helper, numpy_helper

    graph = helper.make_graph(
        nodes, "requant",
        [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
         for k, v in inputs.items()],
        [helper.make_tensor_value_info(output, helper.np_dtype_to_tensor_dtype(
            np.dtype(out_type)), out_shape)],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in initializers.items()],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=9)
    onnx.checker.check_model(model)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run([output], inputs)[0]


def _int8_config(signed_input: bool) -> ArrayConfig:
    return ArrayConfig("ws", 4, 4, a_signed=signed_input, zero_points=True)


#: Weights within +-64, as quantize_static's reduce_range draws them: onnxruntime's u8 x s8
#: kernels on x86 CPUs without VNNI add pairs of raw products in 16 bits, saturating past
#: +-32767 (2 x 255 x 64 stays under), so only within this range is onnxruntime's own
#: arithmetic exact on every x86 machine.
WEIGHT_RANGE = 64


@pytest.mark.parametrize("signed_input", [False, True], ids=["u8", "s8"])
@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
def test_float_requantization_equals_onnxruntimes_qlinearmatmul(seed, signed_input, per_channel):
    """A QLinearMatMul of random operands, zero points and scales: every output element of
    onnxruntime equals golden's accumulators requantized by :func:`requantize_float`."""
    rng = np.random.default_rng(seed)
    m, k, n = 7, 45, 9
    in_type, lo, hi = (np.int8, -128, 128) if signed_input else (np.uint8, 0, 256)
    a = rng.integers(lo, hi, (m, k)).astype(in_type)
    b = rng.integers(-WEIGHT_RANGE, WEIGHT_RANGE + 1, (k, n)).astype(np.int8)
    a_zero, y_zero = (in_type(rng.integers(lo, hi)) for _ in range(2))
    sx = np.float32(rng.uniform(0.01, 0.1))
    sw = rng.uniform(0.002, 0.02, n if per_channel else ()).astype(np.float32)
    sy = np.float32(sx * np.mean(sw) * rng.uniform(100, 400))
    node = __import__("onnx").helper.make_node(
        "QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], ["y"]
    )
    got = _ort_run([node], {"a": a},
                   {"sa": sx, "za": a_zero, "b": b, "sb": sw,
                    "zb": np.zeros(sw.shape, np.int8), "sy": sy, "zy": y_zero},
                   "y", in_type, (m, n))  # fmt: skip
    config = _int8_config(signed_input)
    acc = reference(config, a.astype(np.int64), b.astype(np.int64), int(a_zero), 0)
    want = requantize_float(acc, float_scale(sx, sw, sy), int(y_zero), 8, signed_input)
    assert got.shape == want.shape
    wrong = int((got.astype(np.int64) != want).sum())
    print(f"{got.size - wrong} of {got.size} elements equal; outputs span "
          f"{int(want.min())}..{int(want.max())}")  # fmt: skip
    assert wrong == 0


def test_float_requantization_rounds_ties_to_even_as_onnxruntime_does():
    """Scale exactly 1/2 (1 x 0.5 / 1): every odd accumulator is a tie, which onnxruntime
    rounds to even (-2.5 -> -2, 3.5 -> 4), not away from zero."""
    a = np.arange(-40, 40, dtype=np.int8).reshape(80, 1)
    b = np.ones((1, 1), np.int8)
    node = __import__("onnx").helper.make_node(
        "QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], ["y"]
    )
    got = _ort_run([node], {"a": a},
                   {"sa": np.float32(1), "za": np.int8(0), "b": b, "sb": np.float32(0.5),
                    "zb": np.int8(0), "sy": np.float32(1), "zy": np.int8(0)},
                   "y", np.int8, (80, 1))  # fmt: skip
    want = requantize_float(a.astype(np.int64), float_scale(1, 0.5, 1), 0, 8, True)
    assert (got.astype(np.int64) == want).all()
    assert want[a[:, 0] == -5, 0] == -2 and want[a[:, 0] == 7, 0] == 4  # ties to even


def test_float_requantization_equals_onnxruntimes_qlinearconv_with_a_bias(seed):
    """A padded 3x3 QLinearConv, per-channel weight scales and int32 biases, some past 2**24 (the
    accumulator's conversion to float32 rounds there): onnxruntime's output equals golden's
    convolution accumulators (golden/conv.py, NHWC) requantized by :func:`requantize_float`."""
    from onnx import helper
    from systolic.contract.conv import Conv
    from systolic.golden.conv import conv_reference

    rng = np.random.default_rng(seed)
    c, o, h, w = 5, 6, 6, 7
    x = rng.integers(0, 256, (1, c, h, w)).astype(np.uint8)  # NCHW, as ONNX has it
    wt = rng.integers(-WEIGHT_RANGE, WEIGHT_RANGE + 1, (o, c, 3, 3)).astype(np.int8)
    bias = rng.integers(-(1 << 26), 1 << 26, o).astype(np.int32)
    x_zero, y_zero = np.uint8(rng.integers(0, 256)), np.uint8(rng.integers(0, 256))
    sx = np.float32(rng.uniform(0.01, 0.1))
    sw = rng.uniform(0.002, 0.02, o).astype(np.float32)
    sy = (sx * sw.mean() * rng.uniform(2e4, 8e4)).astype(np.float32)  # the biases dominate
    node = helper.make_node("QLinearConv", ["x", "sx", "zx", "w", "sw", "zw", "sy", "zy", "b"],
                            ["y"], pads=[1, 1, 1, 1])  # fmt: skip
    got = _ort_run([node], {"x": x},
                   {"sx": sx, "zx": x_zero, "w": wt, "sw": sw, "zw": np.zeros(o, np.int8),
                    "sy": sy, "zy": y_zero, "b": bias}, "y", np.uint8, (1, o, h, w))  # fmt: skip
    conv = Conv(1, h, w, c, o, (3, 3), pads=(1, 1, 1, 1))
    acc = conv_reference(_int8_config(False), conv, x.transpose(0, 2, 3, 1).astype(np.int64),
                         wt.transpose(0, 2, 3, 1).astype(np.int64), int(x_zero), 0)  # fmt: skip
    assert (np.abs(acc + bias) > 1 << 24).any()  # the conversion's rounding is exercised
    want = requantize_float(acc, float_scale(sx, sw, sy), int(y_zero), 8, False, bias=bias)
    got = got.reshape(o, h * w).T.astype(np.int64)  # NCHW to pixels x channels
    wrong = int((got != want).sum())
    print(f"{got.size - wrong} of {got.size} elements equal; outputs span "
          f"{int(want.min())}..{int(want.max())}")  # fmt: skip
    assert wrong == 0


#: A residual add's parameters from a quantize_static run (a conv's output plus the previous
#: ReLU's, into the sum's scale): among them one pair of inputs where fused multiply-adds and
#: separate ones give different outputs.
RESIDUAL = (0.046383582055568695, 142, 0.019368140026926994, 0, 0.03031351789832115, 0)


def _ort_add(params, signed: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair of 8-bit inputs through onnxruntime's QLinearAdd (one node of its contrib
    domain): ``(a, b, y)``."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    sa, za, sb, zb, sy, zy = params
    kind, lo = (np.int8, -128) if signed else (np.uint8, 0)
    a, b = (
        v.astype(kind).ravel()
        for v in np.meshgrid(np.arange(lo, lo + 256), np.arange(lo, lo + 256), indexing="ij")
    )
    elem = TensorProto.INT8 if signed else TensorProto.UINT8
    inits = [numpy_helper.from_array(np.asarray(v, dtype), k) for k, v, dtype in (
        ("sa", sa, np.float32), ("za", za, kind), ("sb", sb, np.float32), ("zb", zb, kind),
        ("sy", sy, np.float32), ("zy", zy, kind))]  # fmt: skip
    node = helper.make_node("QLinearAdd", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], ["y"],
                            domain="com.microsoft")  # fmt: skip
    values = [helper.make_tensor_value_info(k, elem, [a.size]) for k in "aby"]
    graph = helper.make_graph([node], "add", values[:2], values[2:], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                    helper.make_opsetid("com.microsoft", 1)],
                              ir_version=9)  # fmt: skip
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return a, b, session.run(["y"], {"a": a, "b": b})[0]


@pytest.mark.parametrize("signed", [False, True], ids=["u8", "s8"])
def test_ort_add_equals_onnxruntimes_qlinearadd_on_every_pair(seed, signed):
    """All 65,536 input pairs, at a residual add's parameters and at random ones: golden's
    :func:`ort_add` equals onnxruntime's QLinearAdd everywhere."""
    rng = np.random.default_rng(seed)
    lo = -128 if signed else 0
    drawn = (*rng.uniform(0.005, 0.1, 1), int(rng.integers(lo, lo + 256)),
             *rng.uniform(0.005, 0.1, 1), int(rng.integers(lo, lo + 256)),
             *rng.uniform(0.01, 0.2, 1), int(rng.integers(lo, lo + 256)))  # fmt: skip
    cases = [drawn] if signed else [RESIDUAL, drawn]
    for params in cases:
        a, b, y = _ort_add(params, signed)
        sa, za, sb, zb, sy, zy = params
        want = ort_add(a, sa, za, b, sb, zb, sy, zy, signed)
        wrong = int((y.astype(np.int64) != want).sum())
        print(f"{params}: {a.size - wrong} of {a.size} equal")
        assert wrong == 0


def test_a_fused_multiply_add_is_what_onnxruntime_does():
    """At the residual add's parameters, separate multiplies and adds (an SSE2 build's order)
    miss onnxruntime on some pair: the check above can tell them apart."""
    a, b, y = _ort_add(RESIDUAL, False)
    sa, za, sb, zb, sy, zy = (np.float32(v) for v in RESIDUAL)
    ra, rb = np.float32(sa / sy), np.float32(sb / sy)
    k = np.float32(zy - np.float32(np.float32(ra * za) + np.float32(rb * zb)))
    v = (k + a.astype(np.float32) * ra).astype(np.float32) + b.astype(np.float32) * rb
    separate = np.clip(np.rint(v.astype(np.float32)), 0, 255).astype(np.int64)
    assert (separate != y).any()
    assert (ort_add(a, *RESIDUAL[:2], b, *RESIDUAL[2:4], *RESIDUAL[4:], False) == y).all()


def test_ort_global_average_pool_equals_onnxruntimes(seed):
    """onnxruntime's QLinearGlobalAveragePool on random 8-bit tensors of random planes, scales
    and zero points: golden's :func:`ort_global_average_pool` equals it on every element."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    for _ in range(20):
        signed = bool(rng.integers(2))
        kind, elem, lo = ((np.int8, TensorProto.INT8, -128) if signed
                          else (np.uint8, TensorProto.UINT8, 0))  # fmt: skip
        shape = (2, 5, int(rng.integers(1, 12)), int(rng.integers(1, 12)))
        x = rng.integers(lo, lo + 256, shape).astype(kind)
        sx, sy = (np.float32(rng.uniform(0.005, 0.1)) for _ in range(2))
        zx, zy = (kind(rng.integers(lo, lo + 256)) for _ in range(2))
        inits = [numpy_helper.from_array(np.asarray(v), k)
                 for k, v in {"sx": sx, "zx": zx, "sy": sy, "zy": zy}.items()]  # fmt: skip
        node = helper.make_node("QLinearGlobalAveragePool", ["x", "sx", "zx", "sy", "zy"],
                                ["y"], domain="com.microsoft", channels_last=0)  # fmt: skip
        graph = helper.make_graph(
            [node], "pool", [helper.make_tensor_value_info("x", elem, list(shape))],
            [helper.make_tensor_value_info("y", elem, [2, 5, 1, 1])], inits)  # fmt: skip
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                        helper.make_opsetid("com.microsoft", 1)],
                                  ir_version=9)  # fmt: skip
        session = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])  # fmt: skip
        got = session.run(["y"], {"x": x})[0].astype(np.int64)
        want = ort_global_average_pool(x, sx, int(zx), sy, int(zy), signed)
        assert (got == want).all(), (shape, sx, zx, sy, zy)
