"""quant/ort_check.py: models quantized by onnxruntime's quantize_static (QOperator and QDQ),
every quantized layer's output equal, element for element, to golden's arithmetic on the tensor
onnxruntime fed it."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from systolic.quant.nets import Conv, Dense, Flatten, Net, Relu
from systolic.quant.onnx_io import write_onnx
from systolic.quant.ort_check import (
    check_model,
    fused,
    golden_layer,
    ort_layers,
    quantize_with_ort,
)

from ..helpers import float_onnx


def _net(rng) -> Net:
    """A small CNN with biases: a padded 3x3 convolution and a strided one, ReLUs, a dense
    layer."""
    return Net("small", (3, 8, 8), [
        Conv(rng.normal(0, 0.3, (8, 3, 3, 3)), pad=1, b=rng.normal(0, 0.1, 8)), Relu(),
        Conv(rng.normal(0, 0.2, (6, 8, 3, 3)), stride=2, b=rng.normal(0, 0.1, 6)), Relu(),
        Flatten(), Dense(rng.normal(0, 0.1, (6 * 3 * 3, 10)), b=rng.normal(0, 0.1, 10)),
    ])  # fmt: skip


def _quantized(tmp_path, rng, per_channel: bool, method: str, fmt: str = "QOperator",
               activations: str = "QUInt8") -> onnx.ModelProto:  # fmt: skip
    src = tmp_path / "small.onnx"
    write_onnx(_net(rng), src)
    samples = rng.normal(0, 1, (16, 3, 8, 8))
    return quantize_with_ort(src, tmp_path / "small.q.onnx", samples, fmt=fmt,
                             per_channel=per_channel, method=method,
                             signed_activations=activations == "QInt8")  # fmt: skip


@pytest.mark.parametrize(("fmt", "activations", "method"), [
    ("QOperator", "QUInt8", "MinMax"), ("QOperator", "QInt8", "Entropy"),
    ("QDQ", "QUInt8", "Entropy"), ("QDQ", "QInt8", "MinMax"),
])  # fmt: skip
@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
def test_every_quantized_layer_equals_golden(tmp_path, seed, fmt, activations, method,
                                             per_channel):  # fmt: skip
    """Each format, activation type and granularity (both calibrators): every element of every
    layer equal. A QDQ model is checked on the graph onnxruntime runs for it (its fused graph,
    whose final outputs equal the QDQ model's own)."""
    import onnxruntime as ort

    rng = np.random.default_rng(seed)
    model = _quantized(tmp_path, rng, per_channel, method, fmt, activations)
    x = rng.normal(0, 1, (4, 3, 8, 8)).astype(np.float32)
    graph = fused(model)
    if fmt == "QDQ":
        outputs = [ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
                   .run(None, {"x": x})[0] for m in (model, graph)]  # fmt: skip
        assert (outputs[0] == outputs[1]).all()
    checks, host = check_model(graph, {"x": x})
    for c in checks:
        print(f"{c.name:28} {c.op:14} {c.equal}/{c.elements}")
    print("host:", ", ".join(host))
    assert [c.op for c in checks] == ["QLinearConv", "QLinearConv", "QGemm"]
    assert all(c.equal == c.elements > 0 for c in checks)
    assert any("QuantizeLinear" in h for h in host)
    layers, _ = ort_layers(graph)
    assert all(layer.bias is not None for layer in layers)  # the biases were quantized
    if per_channel:
        assert len(set(layers[0].scale.tolist())) > 1


def test_quantizing_leaves_pythons_root_logger_as_it_was(tmp_path, seed):
    """onnxruntime's quantizer logs through the root logger (installing a handler, one of its
    modules at INFO): after a quantization the root logger has the handlers and level it had,
    so a later library's INFO lines (Verilator's commands) do not print."""
    import logging

    root = logging.getLogger()
    before = (list(root.handlers), root.level)
    _quantized(tmp_path, np.random.default_rng(seed), False, "MinMax")
    assert (list(root.handlers), root.level) == before


def test_a_wrong_scale_is_seen(tmp_path, seed):
    """The comparison can fail: golden with one channel's scale a float32 step off differs."""
    from dataclasses import replace

    rng = np.random.default_rng(seed)
    model = _quantized(tmp_path, rng, True, "MinMax")
    layers, _ = ort_layers(model)
    conv = layers[0]
    x = rng.integers(0, 256, (4, 3, 8, 8))
    scale = conv.scale.copy()
    scale[0] = np.float32(scale[0] * 1.05)
    bent = replace(conv, scale=scale)
    assert (golden_layer(bent, x) != golden_layer(conv, x)).any()


def test_the_playbooks_bias_quantization_equals_onnxruntimes(tmp_path, seed):
    """The playbook's int32 bias (:func:`quant.calibrate.quantize_bias`: the float bias over
    the input scale times the weight scale, to nearest) at the scales onnxruntime chose equals
    the bias onnxruntime's quantize_static wrote, every channel of every layer, per tensor and
    per channel: the two agree on which scale a bias is at."""
    from systolic.quant.calibrate import Scale, quantize_bias
    from systolic.quant.onnx_io import constants
    from systolic.quant.ort_check import CHECKED_OPS

    rng = np.random.default_rng(seed)
    for per_channel in (False, True):
        model = _quantized(tmp_path, rng, per_channel, "MinMax")
        floats = onnx.load(str(tmp_path / "small.onnx"))
        f_consts, q_consts = constants(floats), constants(model)
        biased = [n for n in floats.graph.node if n.op_type in ("Conv", "Gemm")]
        layers = [n for n in model.graph.node if n.op_type in CHECKED_OPS]
        assert len(biased) == len(layers) == 3
        for f, q in zip(biased, layers, strict=True):
            pos = CHECKED_OPS[q.op_type]
            xs, ws, bias = (q_consts[q.input[pos[i]]] for i in (1, 4, 8))
            ours = quantize_bias(f_consts[f.input[2]], Scale(xs, 0, 8, False),
                                 Scale(ws, 0, 8, True))  # fmt: skip
            np.testing.assert_array_equal(ours, bias, err_msg=f"{q.name} {per_channel}")


def test_an_unreadable_layer_is_refused_by_name():
    """A QLinearConv whose weights are not a constant, and one whose weights are u8 (the
    device's are int8): refused, naming the node."""
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in {
        "sx": np.float32(0.1), "zx": np.uint8(0), "sw": np.float32(0.1), "zw": np.int8(0),
        "sy": np.float32(0.1), "zy": np.uint8(0)}.items()]  # fmt: skip
    node = helper.make_node("QLinearConv", ["x", "sx", "zx", "w", "sw", "zw", "sy", "zy"], ["y"],
                            name="conv7")  # fmt: skip
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 2, 4, 4]),
         helper.make_tensor_value_info("w", TensorProto.INT8, [2, 2, 1, 1])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, [1, 2, 4, 4])], inits)  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(ValueError, match="QLinearConv 'conv7': input 'w' is not a constant"):
        ort_layers(model)
    inits += [numpy_helper.from_array(np.ones((2, 2, 1, 1), np.uint8), "w"),
              numpy_helper.from_array(np.uint8(0), "zw")]  # fmt: skip
    del inits[3]  # the int8 weight zero point, replaced by the u8 one
    graph = helper.make_graph([node], "g", [graph.input[0]], list(graph.output), inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(ValueError, match="QLinearConv 'conv7': uint8 weights are not supported"):
        ort_layers(model)


def test_a_dynamically_quantized_model_is_refused_by_node_name(tmp_path, seed):
    """quantize_dynamic's MatMulInteger (its input quantized as the model runs): refused,
    naming the node, not passed over as a host operator."""
    from onnxruntime.quantization import quantize_dynamic

    rng = np.random.default_rng(seed)
    src = tmp_path / "mlp.onnx"
    write_onnx(Net("mlp", (6,), [Dense(rng.normal(0, 0.3, (6, 5)), b=rng.normal(0, 0.1, 5))]),
               src)  # fmt: skip
    quantize_dynamic(str(src), str(tmp_path / "d.onnx"))
    message = r"MatMulInteger '.+': a product of dynamic quantization .* quantize_static"
    with pytest.raises(ValueError, match=message):
        ort_layers(onnx.load(str(tmp_path / "d.onnx")))


@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
def test_a_residual_block_equals_golden(tmp_path, seed, fmt):
    """A residual block (two padded 3x3 convolutions with biases, the second's output added to
    the first's ReLU, a ReLU, a 1x1 convolution, global average pooling, a dense layer),
    quantized by onnxruntime: the convolutions, the dense layer, the residual add
    (onnxruntime's QLinearAdd, float with fused multiply-adds) and the pooling
    (QLinearGlobalAveragePool) all equal golden's. The 1x1 convolution reads the add's output,
    whose shape ONNX's shape inference leaves unknown (QLinearAdd is onnxruntime's own
    operator): its geometry is the input's onnxruntime feeds it."""
    from onnx import helper

    rng = np.random.default_rng(seed)
    weights = {"w1": rng.normal(0, 0.3, (8, 3, 3, 3)), "b1": rng.normal(0, 0.1, 8),
               "w2": rng.normal(0, 0.2, (8, 8, 3, 3)), "b2": rng.normal(0, 0.1, 8),
               "w3": rng.normal(0, 0.3, (8, 10)), "b3": rng.normal(0, 0.1, 10),
               "w4": rng.normal(0, 0.3, (8, 8, 1, 1)), "b4": rng.normal(0, 0.1, 8)}  # fmt: skip
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c2", "r1"], ["s"]), helper.make_node("Relu", ["s"], ["r2"]),
             helper.make_node("Conv", ["r2", "w4", "b4"], ["c4"]),
             helper.make_node("GlobalAveragePool", ["c4"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "w3", "b3"], ["y"])]  # fmt: skip
    src = tmp_path / "residual.onnx"
    onnx.save(float_onnx("residual", nodes, weights, ["n", 3, 8, 8], ["n", 10]), src)
    model = quantize_with_ort(src, tmp_path / "q.onnx", rng.normal(0, 1, (8, 3, 8, 8)), fmt=fmt,
                              per_channel=True)  # fmt: skip
    checks, host = check_model(fused(model), {"x": rng.normal(0, 1, (4, 3, 8, 8)).astype(
        np.float32)})  # fmt: skip
    for c in checks:
        print(f"{c.name:28} {c.op:14} {c.equal}/{c.elements}")
    print("host:", ", ".join(host))
    assert sorted(c.op for c in checks) == ["QGemm", "QLinearAdd", "QLinearConv", "QLinearConv",
                                            "QLinearConv", "QLinearGlobalAveragePool"]  # fmt: skip
    assert all(c.equal == c.elements > 0 for c in checks)
    assert not any("QLinearAdd" in h or "GlobalAveragePool" in h for h in host)


def test_asymmetric_attributes_are_read_as_given(tmp_path, seed):
    """A convolution with asymmetric pads, unequal strides and a dilation, and a Gemm with its
    weights transposed (transB), quantized by onnxruntime: every layer equal (the attributes
    read at non-default, asymmetric values)."""
    from onnx import helper

    rng = np.random.default_rng(seed)
    weights = {"w1": rng.normal(0, 0.3, (4, 3, 3, 3)), "b1": rng.normal(0, 0.1, 4),
               "w2": rng.normal(0, 0.2, (7, 4 * 4 * 5)), "b2": rng.normal(0, 0.1, 7)}  # fmt: skip
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c"], pads=[0, 1, 2, 0],
                              strides=[2, 1], dilations=[1, 2]),
             helper.make_node("Flatten", ["c"], ["f"]),
             helper.make_node("Gemm", ["f", "w2", "b2"], ["y"], transB=1)]  # fmt: skip
    src = tmp_path / "odd.onnx"
    onnx.save(float_onnx("odd", nodes, weights, ["n", 3, 8, 8], ["n", 7]), src)
    model = quantize_with_ort(src, tmp_path / "q.onnx", rng.normal(0, 1, (8, 3, 8, 8)),
                              fmt="QOperator", per_channel=True)  # fmt: skip
    layers, _ = ort_layers(model)
    assert layers[0].conv.pads == (0, 1, 2, 0) and layers[0].conv.stride == (2, 1)
    assert layers[0].conv.out == (4, 5)
    checks, _ = check_model(model, {"x": rng.normal(0, 1, (2, 3, 8, 8)).astype(np.float32)})
    assert [c.op for c in checks] == ["QLinearConv", "QGemm"]
    assert all(c.equal == c.elements > 0 for c in checks)
