"""onnxruntime-quantized models, layer by layer, against golden's arithmetic (issue 35).

A model quantized by onnxruntime's ``quantize_static`` in the QOperator format carries its
quantized operators explicitly: each QLinearConv, QLinearMatMul and QGemm is int8 (or uint8)
inputs, int8 weights, zero points, an int32 bias and, per output channel, one float32 scale
(:func:`golden.requant.float_scale`). :func:`ort_layers` reads them; :func:`golden_layer`
computes a layer's output with golden (the exact accumulators of :mod:`golden.conv` or
:mod:`golden.reference`, then onnxruntime's float requantization,
:func:`golden.requant.requantize_float`); :func:`check_model` runs the model on onnxruntime with
every layer's input and output exposed and compares each layer's output, element for element,
with golden's on the very tensor onnxruntime fed it. The other operators (QuantizeLinear at the
input, DequantizeLinear at the output, Flatten, MaxPool on int8, ...) run on the host and are
listed, not checked; except a QLinearAdd of two tensors (a residual add) and a
QLinearGlobalAveragePool, whose float arithmetic is checked against :func:`golden.requant.ort_add`
and :func:`golden.requant.ort_global_average_pool`.

A QDQ model (quantize_static's default format: float operators between QuantizeLinear and
DequantizeLinear pairs) is what onnxruntime's graph optimizer makes of it (:func:`fused`): at
its extended level the pairs around Conv, MatMul and Gemm fold into QLinearConv,
QLinearMatMul and QGemm, the graph onnxruntime runs (its further, layout-only level left out);
that graph is read and checked as a QOperator model.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import onnx
from systolic.contract.config import ArrayConfig
from systolic.contract.conv import Conv
from systolic.golden.conv import conv_reference
from systolic.golden.reference import reference
from systolic.golden.requant import (
    float_scale,
    ort_add,
    ort_global_average_pool,
    requantize_float,
)
from systolic.workloads.onnx_import import attributes

from .onnx_io import constants
from .ort_device import DeviceFor, device_outputs, placed

__all__ = ["CALIBRATIONS", "CHECKED_OPS", "DYNAMIC_OPS", "LayerCheck", "OrtLayer", "check_model",
           "fused", "golden_layer", "ort_layers", "quantize_with_ort"]  # fmt: skip

#: onnxruntime's calibrators, by the names ``quantize_static`` gives them.
CALIBRATIONS = ("MinMax", "Entropy", "Percentile")

#: The operators compared with golden: ``(x, x scale, x zero, w, w scale, w zero, y scale,
#: y zero, bias)`` input positions of each (None: the operator has no such input).
CHECKED_OPS = {
    "QLinearConv": (0, 1, 2, 3, 4, 5, 6, 7, 8),
    "QLinearMatMul": (0, 1, 2, 3, 4, 5, 6, 7, None),
    "QGemm": (0, 1, 2, 3, 4, 5, 7, 8, 6),
}


#: quantize_dynamic's integer products: int32 out, the input quantized as the model runs.
DYNAMIC_OPS = ("MatMulInteger", "ConvInteger")


@dataclass(frozen=True)
class OrtLayer:
    """One quantized layer: its node's name and operator, the tensors it reads and writes,
    ``weights`` (a convolution's ``O x kh x kw x C/groups``, the device's layout; a matrix
    product's ``K x N``), the zero points (``w_zero`` one per output channel), the int32 ``bias``
    (None without), the float32 ``scale`` per output channel, and a convolution's geometry
    (``conv``, channels and groups included; None for a matrix product)."""

    name: str
    op: str
    input: str
    output: str
    weights: np.ndarray
    x_zero: int
    w_zero: np.ndarray
    bias: np.ndarray | None
    scale: np.ndarray
    y_zero: int
    in_signed: bool
    out_signed: bool
    conv: Conv | None


@dataclass(frozen=True)
class LayerCheck:
    """A layer's comparison: its elements, how many of golden's equal onnxruntime's and, when
    the layer ran on the simulated device, how many of the device's do (``device``; None when
    it ran on the host or the check ran without the device)."""

    name: str
    op: str
    elements: int
    equal: int
    device: int | None = None

    @property
    def rate(self) -> float:
        return self.equal / self.elements if self.elements else 1.0

    @property
    def device_rate(self) -> float | None:
        if self.device is None:
            return None
        return self.device / self.elements if self.elements else 1.0

    @property
    def exact(self) -> bool:
        """Every element equal, golden's and (when it ran there) the device's."""
        return self.equal == self.elements and self.device in (None, self.elements)


def quantize_with_ort(src, out, samples: np.ndarray, *, fmt: str = "QDQ",
                      per_channel: bool = False, method: str = "MinMax",
                      signed_activations: bool = False,
                      reduce_range: bool = True) -> onnx.ModelProto:  # fmt: skip
    """The float model at ``src`` quantized by onnxruntime's ``quantize_static`` into ``out``
    (``fmt`` ``"QDQ"`` or ``"QOperator"``; int8 weights, symmetric; u8 or s8 activations;
    calibrated by ``method`` of :data:`CALIBRATIONS` on ``samples``, the model's first input
    one sample per row of its first axis). ``reduce_range`` keeps the weights within +-64: only
    there is onnxruntime's own arithmetic exact on x86 machines without VNNI
    (docs/quantization.md). onnxruntime's logging is kept to itself: its quantizer logs through
    Python's root logger, which installs a handler on it (and one of its modules sets it to
    INFO), so every later library's progress would print; Python's root logger is left as it
    was found."""
    if fmt not in ("QDQ", "QOperator"):
        raise ValueError(f"format must be QDQ or QOperator, not {fmt!r}")
    if method not in CALIBRATIONS:
        raise ValueError(f"calibration must be one of {', '.join(CALIBRATIONS)}, "
                         f"not {method!r}")  # fmt: skip
    name = onnx.load(str(src)).graph.input[0].name
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        root.setLevel(logging.ERROR)
        _quantize_static(src, out, samples, name, fmt, per_channel, method, signed_activations,
                         reduce_range)  # fmt: skip
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    return onnx.load(str(out))


def _quantize_static(src, out, samples, name: str, fmt: str, per_channel: bool, method: str,
                     signed_activations: bool, reduce_range: bool) -> None:  # fmt: skip
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.rows = iter(np.asarray(samples, dtype=np.float32))

        def get_next(self):
            row = next(self.rows, None)
            return None if row is None else {name: row[None]}

    quantize_static(str(src), str(out), Reader(), quant_format=getattr(QuantFormat, fmt),
                    activation_type=QuantType.QInt8 if signed_activations else QuantType.QUInt8,
                    weight_type=QuantType.QInt8, per_channel=per_channel,
                    reduce_range=reduce_range,
                    calibrate_method=getattr(CalibrationMethod, method))  # fmt: skip


def fused(model: onnx.ModelProto) -> onnx.ModelProto:
    """The graph onnxruntime runs for ``model``: its CPU provider's extended optimizations
    applied (a QDQ model's pairs folded into quantized operators; a QOperator model unchanged
    but for constant folding)."""
    import tempfile
    from pathlib import Path

    import onnxruntime as ort

    with tempfile.TemporaryDirectory() as scratch:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        options.optimized_model_filepath = str(Path(scratch) / "fused.onnx")
        try:
            ort.InferenceSession(model.SerializeToString(), options,
                                 providers=["CPUExecutionProvider"])  # fmt: skip
        except Exception as e:  # onnxruntime's own errors (Fail, InvalidGraph, ...)
            raise ValueError(f"onnxruntime could not load the model: {e}") from None
        return onnx.load(options.optimized_model_filepath)


def ort_layers(model: onnx.ModelProto) -> tuple[list[OrtLayer], list[str]]:
    """The model's checked layers (:data:`CHECKED_OPS`), in graph order, and its other nodes
    (``"name (op)"``: run on the host, not checked). A checked operator this reading cannot
    follow, or an integer product of dynamic quantization (:data:`DYNAMIC_OPS`), raises
    ValueError naming the node and the reason."""
    consts = constants(model)
    shapes = _shapes(model)
    layers, host = [], []
    for node in model.graph.node:
        if node.op_type in DYNAMIC_OPS:
            raise ValueError(f"{node.op_type} {node.name or node.output[0]!r}: a product of "
                             f"dynamic quantization (its input's zero point is computed as it "
                             f"runs) is not checked; quantize with quantize_static")  # fmt: skip
        if node.op_type not in CHECKED_OPS:
            host.append(f"{node.name or node.output[0]} ({node.op_type})")
            continue
        layers.append(_layer(node, consts, shapes))
    return layers, host


def _shapes(model: onnx.ModelProto) -> dict[str, tuple]:
    inferred = onnx.shape_inference.infer_shapes(model)
    out = {}
    for v in [*inferred.graph.value_info, *inferred.graph.input, *inferred.graph.output]:
        dims = v.type.tensor_type.shape.dim
        out[v.name] = tuple(d.dim_value if d.HasField("dim_value") else None for d in dims)
    return out


def _layer(node, consts: dict, shapes: dict) -> OrtLayer:
    name = node.name or node.output[0]
    pos = CHECKED_OPS[node.op_type]

    def const(i):
        if i is None or i >= len(node.input) or not node.input[i]:
            return None
        if node.input[i] not in consts:
            raise ValueError(f"{node.op_type} {name!r}: input {node.input[i]!r} is not a constant "
                             f"(its scales, zero points, weights and bias must be)")  # fmt: skip
        return consts[node.input[i]]

    xs, xz, w, ws, wz, ys, yz, bias = (const(i) for i in pos[1:])
    if np.asarray(w).dtype != np.int8:
        raise ValueError(f"{node.op_type} {name!r}: {np.asarray(w).dtype} weights are not "
                         f"supported; the device takes int8 weights (quantize_static's "
                         f"weight_type QInt8)")  # fmt: skip
    at = attributes(node)
    scale = float_scale(xs, ws, ys)
    if node.op_type == "QGemm":
        if at.get("transA", 0):
            raise ValueError(f"QGemm {name!r}: transA is not supported")
        alpha = np.float32(at.get("alpha", 1.0))
        # onnxruntime folds alpha into the scale: fl32(fl32(fl32(alpha * sa) * sb) / sy)
        scale = float_scale((alpha * np.float32(xs)).astype(np.float32), ws, ys)
        if at.get("transB", 0):
            w = w.T
        if yz is None:
            raise ValueError(f"QGemm {name!r}: a float output (no y zero point) is not supported")
    out_channels = w.shape[0] if node.op_type == "QLinearConv" else w.shape[1]
    w_zero = np.broadcast_to(np.asarray(wz, np.int64), (out_channels,)).copy()
    scale = np.broadcast_to(scale, (out_channels,)).astype(np.float32)
    conv = None
    if node.op_type == "QLinearConv":
        conv, w = _conv(node, name, at, shapes.get(node.input[0]), w)
    return OrtLayer(name, node.op_type, node.input[0], node.output[0], w.astype(np.int64),
                    int(np.asarray(xz)), w_zero, None if bias is None else bias.astype(np.int64),
                    scale, int(np.asarray(yz)), np.asarray(xz).dtype == np.int8,
                    np.asarray(yz).dtype == np.int8, conv)  # fmt: skip


def _conv(node, name: str, at: dict, x_shape, w: np.ndarray) -> tuple[Conv, np.ndarray]:
    """A QLinearConv's geometry (NCHW read as NHWC) and its weights as ``O x kh x kw x C/g``.
    Where the model leaves the input's batch, height or width unknown (shape inference stops
    at onnxruntime's own operators, QLinearAdd ...), a batch of one and the least height and
    width the kernel takes: :func:`placed` gives the geometry on the input onnxruntime feeds
    it."""
    if w.ndim != 4 or (x_shape is not None and len(x_shape) != 4):
        raise ValueError(f"QLinearConv {name!r}: only 2-D convolutions are supported (input "
                         f"{x_shape}, weights {w.shape})")  # fmt: skip
    if at.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise ValueError(f"QLinearConv {name!r}: auto_pad is not supported; give pads")
    groups = int(at.get("group", 1))
    kernel, dilation = tuple(w.shape[2:]), tuple(at.get("dilations", (1, 1)))
    least = [d * (k - 1) + 1 for k, d in zip(kernel, dilation, strict=True)]
    batch, channels, height, width = x_shape or (None, None, None, None)
    if channels is not None and channels != w.shape[1] * groups:
        raise ValueError(f"QLinearConv {name!r}: its input's {channels} channels are not its "
                         f"weights' {w.shape[1]} x {groups} groups")  # fmt: skip
    conv = Conv(batch or 1, height or least[0], width or least[1], w.shape[1] * groups,
                w.shape[0], kernel, tuple(at.get("strides", (1, 1))),
                tuple(at.get("pads", (0, 0, 0, 0))), dilation, groups)  # fmt: skip
    return conv, w.transpose(0, 2, 3, 1)


def _config(layer: OrtLayer) -> ArrayConfig:
    """A configuration whose operand ranges hold the layer's (the accumulators are exact)."""
    return ArrayConfig("ws", 4, 4, a_signed=layer.in_signed, zero_points=True)


def golden_layer(layer: OrtLayer, x: np.ndarray) -> np.ndarray:
    """The layer's output on its input ``x`` (onnxruntime's layout: NCHW for a convolution),
    computed by golden, in onnxruntime's layout."""
    config = _config(layer)
    x = np.asarray(x, dtype=np.int64)
    if layer.conv is None:
        lead, k = x.shape[:-1], x.shape[-1]
        a = x.reshape(-1, k)
        acc = np.concatenate([reference(config, a, layer.weights[:, [o]], layer.x_zero,
                                        int(layer.w_zero[o]))
                              for o in range(layer.weights.shape[1])], axis=1)  # fmt: skip
        y = requantize_float(acc, layer.scale, layer.y_zero, 8, layer.out_signed, layer.bias)
        return y.reshape(*lead, -1)
    c = placed(layer, x.shape)
    nhwc = x.transpose(0, 2, 3, 1)
    per_group_in, per_group_out = c.channels // c.groups, c.out_channels // c.groups
    one = Conv(c.batch, c.height, c.width, per_group_in, 1, c.kernel, c.stride, c.pads,
               c.dilation)  # fmt: skip
    columns = []
    for o in range(c.out_channels):  # a column a channel: per-channel weight zero points
        g = o // per_group_out
        columns.append(conv_reference(
            config, one, nhwc[..., g * per_group_in:(g + 1) * per_group_in],
            layer.weights[o:o + 1], layer.x_zero, int(layer.w_zero[o])))  # fmt: skip
    acc = np.concatenate(columns, axis=1)  # pixels x channels
    y = requantize_float(acc, layer.scale, layer.y_zero, 8, layer.out_signed, layer.bias)
    oh, ow = c.out
    return y.reshape(c.batch, oh, ow, c.out_channels).transpose(0, 3, 1, 2)


def check_model(model: onnx.ModelProto, feeds: dict, device: DeviceFor | None = None,
                **bench) -> tuple[list[LayerCheck], list[str]]:  # fmt: skip
    """Run ``model`` on onnxruntime's CPU provider on ``feeds`` with every checked layer's input
    and output exposed; each layer's :class:`LayerCheck` (golden on onnxruntime's input against
    onnxruntime's output; with ``device``, the simulated device's too,
    :func:`quant.ort_device.device_outputs`, ``bench`` its options) and the host's nodes
    (:func:`ort_layers`)."""
    import onnxruntime as ort

    layers, host = ort_layers(model)
    consts = constants(model)
    adds, pools = _adds(model, consts), _pools(model, consts)
    if not layers:
        raise ValueError(f"the model has no {', '.join(CHECKED_OPS)} layer (after onnxruntime's "
                         f"fusion): is it quantized?")  # fmt: skip
    exposed = onnx.ModelProto()
    exposed.CopyFrom(model)
    have = {o.name for o in exposed.graph.output}
    names = list(dict.fromkeys([*(t for layer in layers for t in (layer.input, layer.output)),
                                *(t for add in adds for t in add[1]),
                                *(t for pool in pools for t in pool[1])]))  # fmt: skip
    types = {layer.input: layer.in_signed for layer in layers} | {
        layer.output: layer.out_signed for layer in layers} | {
        t: other[3] for other in adds + pools for t in other[1]}  # fmt: skip
    for t in names:
        if t not in have:
            elem = onnx.TensorProto.INT8 if types[t] else onnx.TensorProto.UINT8
            exposed.graph.output.append(onnx.helper.make_tensor_value_info(t, elem, None))
    try:
        session = ort.InferenceSession(exposed.SerializeToString(),
                                       providers=["CPUExecutionProvider"])  # fmt: skip
        values = dict(zip(names, session.run(names, feeds), strict=True))
    except Exception as e:  # onnxruntime's own errors (Fail, InvalidArgument, ...)
        raise ValueError(f"onnxruntime could not run the model: {e}") from None
    checks = []
    on_device = device_outputs(layers, values, device, **bench) if device else {}
    for layer in layers:
        want = values[layer.output].astype(np.int64)
        got = golden_layer(layer, values[layer.input])
        if got.shape != want.shape:
            raise ValueError(f"{layer.op} {layer.name!r}: golden's output {got.shape} is not "
                             f"onnxruntime's {want.shape}")  # fmt: skip
        ran = on_device.get(layer.name)
        if ran is not None and ran.shape != want.shape:
            raise ValueError(f"{layer.op} {layer.name!r}: the device's output {ran.shape} is not "
                             f"onnxruntime's {want.shape}")  # fmt: skip
        checks.append(LayerCheck(layer.name, layer.op, want.size, int((got == want).sum()),
                                 None if ran is None else int((ran == want).sum())))  # fmt: skip
    for name, (x, y), params, signed in pools:
        got = ort_global_average_pool(values[x], *params, signed)
        want = values[y].astype(np.int64)
        checks.append(LayerCheck(name, "QLinearGlobalAveragePool", want.size,
                                 int((got == want).sum())))  # fmt: skip
    checked = {add[0] for add in adds} | {pool[0] for pool in pools}
    host = [h for h in host if h.rpartition(" (")[0] not in checked]
    for name, (a, b, y), params, signed in adds:
        got = ort_add(values[a], params[0], params[1], values[b], params[2], params[3],
                      params[4], params[5], signed)  # fmt: skip
        want = values[y].astype(np.int64)
        checks.append(LayerCheck(name, "QLinearAdd", want.size, int((got == want).sum())))
    return checks, host


def _pools(model: onnx.ModelProto, consts: dict) -> list:
    """The QLinearGlobalAveragePool nodes (NCHW), checked against
    :func:`golden.requant.ort_global_average_pool`: ``(name, (x, y), (sx, zx, sy, zy),
    signed)``."""
    out = []
    for node in model.graph.node:
        if node.op_type != "QLinearGlobalAveragePool" or attributes(node).get("channels_last", 0):
            continue
        params = [node.input[i] for i in (1, 2, 3, 4)]
        if not all(x in consts for x in params):
            continue
        values = [np.asarray(consts[x]) for x in params]
        out.append((node.name or node.output[0], (node.input[0], node.output[0]),
                    tuple(v.item() for v in values), values[1].dtype == np.int8))  # fmt: skip
    return out


def _adds(model: onnx.ModelProto, consts: dict) -> list:
    """The QLinearAdd nodes of two tensors of one shape (a residual add), checked against
    :func:`golden.requant.ort_add`: ``(name, (a, b, y), (sa, za, sb, zb, sy, zy), signed)``."""
    out = []
    for node in model.graph.node:
        if node.op_type != "QLinearAdd" or len(node.input) < 8:
            continue
        a, b = node.input[0], node.input[3]
        params = [node.input[i] for i in (1, 2, 4, 5, 6, 7)]
        if a in consts or b in consts or not all(x in consts for x in params):
            continue  # a constant operand (a broadcast bias): not a residual add
        values = [consts[x] for x in params]
        signed = np.asarray(values[1]).dtype == np.int8
        out.append((node.name or node.output[0], (a, b, node.output[0]),
                    tuple(np.asarray(v).item() for v in values), signed))  # fmt: skip
    return out
