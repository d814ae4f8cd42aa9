"""quant/ort_device.py: a model quantized by onnxruntime, every quantized layer run by the
simulated device (float32 scales in the fused output path), each output element equal to
onnxruntime's."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import onnx
import pytest
from systolic.quant.ort_check import check_model, fused, ort_layers, quantize_with_ort
from systolic.quant.ort_device import device_config, device_outputs

from ..helpers import float_onnx
from ..sim.test_conv import CONFIGS as CONV_CONFIGS

#: tests/sim/test_conv.py's devices (float scales, a staging buffer): WS s8 in and out, OS u8.
DEVICES = {True: CONV_CONFIGS["ws-3x2-zp-rq"], False: CONV_CONFIGS["os-3x2-zp-rq"]}


def device_for(in_signed: bool, out_signed: bool):
    assert in_signed == out_signed  # a model's activations are u8 or s8 throughout
    return DEVICES[in_signed]


def _residual_model(rng) -> onnx.ModelProto:
    """A float CNN with biases: a padded 3x3 convolution, ReLU, a depthwise 3x3 one added to
    it (a residual), ReLU, global average pooling, a dense layer."""
    from onnx import helper

    weights = {"w1": rng.normal(0, 0.3, (6, 3, 3, 3)), "b1": rng.normal(0, 0.1, 6),
               "w2": rng.normal(0, 0.3, (6, 1, 3, 3)), "b2": rng.normal(0, 0.1, 6),
               "w3": rng.normal(0, 0.3, (6, 5)), "b3": rng.normal(0, 0.1, 5)}  # fmt: skip
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], group=6),
             helper.make_node("Add", ["c2", "r1"], ["s"]), helper.make_node("Relu", ["s"], ["r2"]),
             helper.make_node("GlobalAveragePool", ["r2"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "w3", "b3"], ["y"])]  # fmt: skip
    return float_onnx("residual", nodes, weights, ["n", 3, 6, 6], ["n", 5])


@pytest.mark.long
@pytest.mark.parametrize(("fmt", "per_channel", "signed"),
                         [("QDQ", True, False), ("QOperator", False, True)])  # fmt: skip
def test_every_quantized_layer_on_the_device_equals_onnxruntime(tmp_path, seed, fmt, per_channel,
                                                                signed):  # fmt: skip
    """Both formats, both granularities, u8 (on OS) and s8 (on WS) activations: every element
    of every convolution (the depthwise one a slice of channels at a time) and of the dense
    layer, computed by the RTL, equals onnxruntime's; the residual add and the pooling run on
    the host (onnxruntime's arithmetic, golden.requant)."""
    rng = np.random.default_rng(seed)
    print(f"seed {seed}")
    src = tmp_path / "residual.onnx"
    onnx.save(_residual_model(rng), src)
    model = quantize_with_ort(src, tmp_path / "q.onnx", rng.normal(0, 1, (8, 3, 6, 6)), fmt=fmt,
                              per_channel=per_channel, signed_activations=signed)  # fmt: skip
    x = rng.normal(0, 1, (2, 3, 6, 6)).astype(np.float32)
    checks, host = check_model(fused(model), {"x": x}, device_for)
    for c in checks:
        print(f"{c.name:28} {c.op:24} golden {c.equal}/{c.elements} device {c.device}")
    print("host:", ", ".join(host))
    on_device = [c for c in checks if c.device is not None]
    assert sorted(c.op for c in on_device) == ["QGemm", "QLinearConv", "QLinearConv"]
    assert all(c.device == c.equal == c.elements > 0 for c in on_device)
    assert all(c.exact for c in checks)


def test_layers_the_device_cannot_take_are_refused_by_name(tmp_path, seed, monkeypatch):
    """Before any simulation, naming the layer: weights whose zero points differ by channel
    (the device subtracts one per descriptor); a convolution whose rows do not fit the staging
    buffer; a matrix product with more channels than the parameter table holds; one past the
    simulated DRAM."""
    rng = np.random.default_rng(seed)
    src = tmp_path / "residual.onnx"
    onnx.save(_residual_model(rng), src)
    model = quantize_with_ort(src, tmp_path / "q.onnx", rng.normal(0, 1, (4, 3, 6, 6)),
                              fmt="QOperator", per_channel=True)  # fmt: skip
    layers, _ = ort_layers(model)
    layer = layers[0]
    zeros = layer.w_zero.copy()
    zeros[0] = 3
    odd = replace(layer, w_zero=zeros)
    x = np.zeros((1, 3, 6, 6), np.uint8)
    with pytest.raises(ValueError, match=f"QLinearConv {layer.name!r}: its weights' zero points"):
        device_outputs([odd], {layer.input: x}, device_config())
    with pytest.raises(ValueError, match=f"QLinearConv {layer.name!r} on ws-2x2-au8"):
        device_outputs([layer], {layer.input: x}, device_config("ws", 2, 2, depth=4))
    dense = layers[-1]  # 6 inputs: 600 channels, past 256 table words of 2 channels
    wide = replace(dense, weights=np.ones((6, 600), np.int64), w_zero=np.zeros(600, np.int64),
                   bias=np.zeros(600, np.int64), scale=np.ones(600, np.float32))  # fmt: skip
    with pytest.raises(ValueError, match=rf"QGemm {dense.name!r} on ws-2x2-au8.*: 600 output "
                                         "channels exceed the parameter buffer"):  # fmt: skip
        device_outputs([wide], {dense.input: np.zeros((1, 6), np.uint8)},
                       device_config("ws", 2, 2))  # fmt: skip
    from systolic.sim import simulate

    monkeypatch.setattr(simulate, "DRAM_BYTES", 4096)  # the layer's regions need more
    with pytest.raises(ValueError, match=rf"QGemm {dense.name!r}: GEMM 0 \(9x6x5\) does not "
                                         "fit the simulated DRAM"):  # fmt: skip
        device_outputs([dense], {dense.input: np.zeros((9, 6), np.uint8)}, device_config())
    with pytest.raises(ValueError, match="dataflow must be one of"):
        device_config("xs")
