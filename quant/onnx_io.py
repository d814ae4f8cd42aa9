"""Networks to and from ONNX: the playbook writes each trained network as an ONNX file and reads
it back through the workload importer (``workloads/onnx_import.py``), so the model it quantizes is
the one a user's ONNX file would be, weights included; a user's own sequential model of the same
operators can be quantized the same way (``systolic quantize --onnx FILE``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from systolic.workloads.library import WorkloadError
from systolic.workloads.onnx_import import per_channel, read_onnx

from .nets import Conv, Dense, Flatten, Net, Relu

__all__ = ["OPSET", "constants", "net_from_onnx", "write_onnx"]

OPSET = 17
#: The IR version written: opset 17's (onnx 1.23 would write 14, which onnxruntime 1.31, reading
#: up to 13, refuses; quant/ort_check.py quantizes these files with it).
IR_VERSION = 8
#: Operators :func:`net_from_onnx` takes: a chain of these, nothing else.
SEQUENTIAL_OPS = ("Conv", "MatMul", "Gemm", "Relu", "Flatten")


def write_onnx(net: Net, path: str | Path) -> Path:
    """``net`` as an ONNX model with a symbolic batch dimension and float32 weights: a dense
    layer is a MatMul (a Gemm with its bias), a convolution a Conv (its bias its third input)."""
    nodes, inits = [], []
    value = "x"
    for i, layer in enumerate(net.layers):
        out = f"t{i}"
        if isinstance(layer, (Dense, Conv)):
            inits.append(numpy_helper.from_array(layer.w.astype(np.float32), f"w{i}"))
            ins = [value, f"w{i}"]
            if layer.b is not None:
                inits.append(numpy_helper.from_array(layer.b.astype(np.float32), f"b{i}"))
                ins.append(f"b{i}")
        if isinstance(layer, Dense):
            op = "MatMul" if layer.b is None else "Gemm"
            nodes.append(helper.make_node(op, ins, [out], name=f"dense{i}"))
        elif isinstance(layer, Conv):
            p = layer.pad
            nodes.append(helper.make_node("Conv", ins, [out], name=f"conv{i}",
                                          strides=[layer.stride] * 2, pads=[p] * 4,
                                          kernel_shape=list(layer.w.shape[2:])))  # fmt: skip
        elif isinstance(layer, Relu):
            nodes.append(helper.make_node("Relu", [value], [out], name=f"relu{i}"))
        else:
            nodes.append(helper.make_node("Flatten", [value], [out], name=f"flatten{i}", axis=1))
        value = out
    nodes[-1].output[0] = "logits"
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", *net.input_shape])
    y = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", None])
    graph = helper.make_graph(nodes, net.name, [x], [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              ir_version=IR_VERSION)  # fmt: skip
    onnx.checker.check_model(model)
    path = Path(path)
    onnx.save(model, str(path))
    return path


def net_from_onnx(path: str | Path) -> Net:
    """The sequential network of an ONNX file whose nodes are a chain of Conv (square stride,
    symmetric padding, no dilation or groups), MatMul or Gemm (a constant B), each with a
    constant bias or none (a Conv's or a Gemm's third input, or an Add of a constant vector
    right after the layer), Relu and Flatten; a clear error names any other node or
    attribute."""
    path = Path(path)
    graph = read_onnx(path, batch=1)
    by_output = {layer.output: layer for layer in graph.layers}
    model = graph.model
    initialized = {i.name for i in model.graph.initializer}
    inputs = [v for v in model.graph.input if v.name not in initialized]
    if len(inputs) != 1:
        raise WorkloadError(f"{path}: the playbook takes one input tensor, not {len(inputs)}")
    dims = inputs[0].type.tensor_type.shape.dim
    input_shape = tuple(d.dim_value for d in dims[1:])
    constant = constants(model)
    layers = []
    value = inputs[0].name
    for node in model.graph.node:
        where = f"{path}: node {node.name!r} ({node.op_type})"
        if node.op_type == "Constant":
            continue
        if node.op_type == "Add" and layers and isinstance(layers[-1], (Dense, Conv)):
            if node.input[0] != value and node.input[1] == value:
                other = node.input[0]
            elif node.input[0] == value:
                other = node.input[1]
            else:
                raise WorkloadError(f"{where}: not a chain (neither input is the previous "
                                    f"node's output {value!r})")  # fmt: skip
            _add_bias(layers[-1], constant.get(other), where, broadcast=True)
            value = node.output[0]
            continue
        if node.op_type not in SEQUENTIAL_OPS:
            raise WorkloadError(f"{where}: the playbook takes chains of "
                                f"{', '.join(SEQUENTIAL_OPS)} only")  # fmt: skip
        if node.input[0] != value:
            raise WorkloadError(f"{where}: not a chain (its input is {node.input[0]!r}, the "
                                f"previous node's output {value!r})")  # fmt: skip
        value = node.output[0]
        if node.op_type == "Relu":
            layers.append(Relu())
        elif node.op_type == "Flatten":
            layers.append(Flatten())
        else:
            layer = by_output[node.output[0]]
            if layer.weight is None:
                raise WorkloadError(f"{where}: its weights are not constants in the file")
            bias = None
            if len(node.input) > 2 and node.input[2]:
                bias = constant.get(node.input[2])
                if bias is None:
                    raise WorkloadError(f"{where}: its bias is not a constant in the file")
            if node.op_type == "Gemm":
                at = {a.name: helper.get_attribute_value(a) for a in node.attribute}
                if at.get("alpha", 1.0) != 1.0 or (bias is not None and at.get("beta", 1.0) != 1):
                    raise WorkloadError(f"{where}: alpha and beta other than 1 are not "
                                        f"supported")  # fmt: skip
            if node.op_type == "Conv":
                a = layer.attrs
                pads, strides = set(a["pads"]), set(a["strides"])
                plain = (
                    a["group"] == 1
                    and set(a["dilations"]) == {1}
                    and a["auto_pad"] in ("NOTSET", "")
                )
                if not plain or len(pads) > 1 or len(strides) > 1:
                    raise WorkloadError(f"{where}: the playbook takes convolutions of one stride "
                                        f"and padding, no groups or dilation, not {a}")  # fmt: skip
                layers.append(Conv(np.asarray(layer.weight, dtype=np.float64), strides.pop(),
                                   pads.pop()))  # fmt: skip
            else:
                if {a.name: helper.get_attribute_value(a) for a in node.attribute}.get("transA"):
                    raise WorkloadError(f"{where}: transA is not supported")
                layers.append(Dense(np.asarray(layer.weight, dtype=np.float64)))
            if bias is not None:
                _add_bias(layers[-1], bias, where)
    return Net(graph.name, input_shape, layers)


def constants(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """The graph's constant tensors: initializers and Constant nodes' values."""
    out = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant" and node.output:
            value = {a.name: a for a in node.attribute}.get("value")
            if value is not None:
                out[node.output[0]] = numpy_helper.to_array(value.t)
    return out


def _add_bias(layer, bias, where: str, broadcast: bool = False) -> None:
    """Add a constant bias of one value per output channel to ``layer``: a vector of ``Cout``
    (a Conv's or a Gemm's bias input), or, with ``broadcast`` (an Add after the layer), a
    tensor whose channel axis (a dense layer's last, a convolution's third from last) is the
    only one longer than 1."""
    conv = isinstance(layer, Conv)
    channels = layer.w.shape[0] if conv else layer.w.shape[1]
    if bias is None:
        raise WorkloadError(f"{where}: adds a tensor that is not a constant (only a constant "
                            f"bias folds into the layer)")  # fmt: skip
    b = np.asarray(bias, dtype=np.float64)
    fits = per_channel(b.shape, channels, conv) if broadcast else b.shape == (channels,)
    if not fits:
        want = f"{channels}" if not broadcast else (
            f"1 x {channels} x 1 x 1" if conv else f"{channels}")  # fmt: skip
        raise WorkloadError(f"{where}: a bias needs one value per output channel (shape "
                            f"{want}), not shape {b.shape}")  # fmt: skip
    b = b.reshape(-1)
    layer.b = b if layer.b is None else layer.b + b
