"""ONNX models as workloads: the array's operators (MatMul, Gemm, Conv) lowered to GEMMs, with
shapes from the graph, and every other operator listed, never dropped.

- **MatMul**: numpy's ``matmul``. A constant (initializer) B of two dimensions is a weight
  matrix: the rows of every leading dimension of A become M. Otherwise the leading dimensions
  broadcast and each is one GEMM of the count (attention's ``Q K^T`` per batch and head), with
  B an activation (``weights=False``) unless it is a constant.
- **Gemm**: ``op(A) @ op(B)`` with ``transA``/``transB``; its bias ``C`` is not array work.
- **Conv** (1-D, 2-D, 3-D): im2col, one row per output pixel, with strides, padding (explicit
  or ``auto_pad``), dilations and groups: ``group`` GEMMs of ``K = Cin/group x kernel``,
  ``N = Cout/group``; depthwise (``group = Cin``) is ``Cin`` GEMMs of ``N`` = the channel
  multiplier, as the workload library lowers MobileNet. Its bias is not array work. A 2-D
  Conv's GEMM carries its geometry (``Gemm.conv``, ``auto_pad`` made explicit), so a device
  with a staging buffer runs it as the driver lowers it (:func:`contract.lowering.lower_conv`).

Symbolic dimensions (``dim_param``) of the graph's inputs take values from ``dims``; the
common names of the batch and sequence dimensions take ``batch`` and ``seq``, and so does the
leading dimension of the batch inputs (:func:`batch_inputs`) whatever its name. A batch input
whose leading dimension is fixed at another size is re-shaped to ``batch`` and the graph's shapes
inferred again, if its work then scales with the batch exactly; otherwise the file is refused,
naming the input and its size: a workload's batch is always the batch its GEMMs carry. The other
shapes come from the file's value info or ONNX shape inference (with data propagation, for the
Reshape targets that attention computes). Every other node is recorded by operator type: those that
hold multiply-accumulates the array could run (ConvTranspose, Einsum, recurrent cells, the
quantized operators) as *unsupported*, the rest as *host* operators; both cost no array time and
both are reported.

Every node but a Constant is also an :class:`workloads.library.Operator` of the workload (a Conv's
or a Gemm's bias as one of type ``Bias``; so are an Add of one constant per output channel right
after a layer, and a BatchNormalization right after one, which deployment tools fold into the
layer's weights and bias), with the elements it
writes and reads from the graph's shapes (0 where a shape is unknown) and, where it takes a GEMM's
output alone (directly, or through a BatchNormalization, a bias or an activation that does),
that GEMM; the workload's schedule is the graph's node order. The model decides where each runs
(:mod:`models.inference`).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper, shape_inference
from systolic.contract.conv import Conv
from systolic.workloads.library import Gemm, Operator, Workload, WorkloadError

__all__ = [
    "ARRAY_OPS",
    "BATCH_NAMES",
    "SEQ_NAMES",
    "UNSUPPORTED_OPS",
    "Graph",
    "attributes",
    "batch_inputs",
    "Layer",
    "onnx_workload",
    "read_onnx",
]

#: Operators lowered to the array: how each reads as a GEMM (``"matmul"``, ``"gemm"``, ``"conv"``)
#: and the input positions of its A (X), its B (W) and its bias (None: none). The quantized
#: ones (onnxruntime's QOperator format, and QGemm from its contrib domain) are the same GEMMs.
ARRAY_INPUTS = {
    "MatMul": ("matmul", 0, 1, None), "Gemm": ("gemm", 0, 1, 2), "Conv": ("conv", 0, 1, 2),
    "QLinearMatMul": ("matmul", 0, 3, None), "MatMulInteger": ("matmul", 0, 1, None),
    "QGemm": ("gemm", 0, 3, 6), "QLinearConv": ("conv", 0, 3, 8),
    "ConvInteger": ("conv", 0, 1, None),
}  # fmt: skip
ARRAY_OPS = tuple(ARRAY_INPUTS)
#: Operators with multiply-accumulates that are not lowered to the array (reported as such).
UNSUPPORTED_OPS = frozenset({
    "ConvTranspose", "Einsum", "LSTM", "GRU", "RNN", "Attention", "DeformConv",
})  # fmt: skip
#: Names of symbolic dimensions that ``batch`` and ``seq`` fill (lower case; ``dims`` any).
BATCH_NAMES = frozenset({"batch", "batch_size", "n", "b", "batchsize", "unk__batch"})
SEQ_NAMES = frozenset({"seq", "seq_len", "sequence", "sequence_length", "seqlen", "tokens",
                       "num_tokens", "s", "t"})  # fmt: skip


@dataclass(frozen=True)
class Layer:
    """One array operator of the graph: its node, its GEMM and, when the file holds them, its
    weights as stored (MatMul/Gemm: ``K x N`` after any transpose; Conv: ``Cout x Cin/group x
    kernel``) with the Conv attributes the playbook needs."""

    node: str
    op: str
    gemm: Gemm
    weight: np.ndarray | None = None
    attrs: dict = field(default_factory=dict)
    inputs: tuple[str, ...] = ()
    output: str = ""


@dataclass
class Graph:
    """An ONNX model read for the array: its layers in graph order, the nodes that are not
    array work by operator type, and the values its symbolic dimensions took."""

    name: str
    layers: list[Layer]
    host_ops: Counter
    unsupported_ops: Counter
    dims: dict[str, int]
    model: onnx.ModelProto
    operators: list[Operator] = field(default_factory=list)
    schedule: list[tuple[str, int]] = field(default_factory=list)

    @property
    def macs(self) -> int:
        return sum(layer.gemm.macs for layer in self.layers)


def attributes(node) -> dict:
    """A node's attributes by name, as Python values."""
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _load(path: Path) -> onnx.ModelProto:
    try:
        return onnx.load(str(path))
    except FileNotFoundError:
        raise WorkloadError(f"{path}: no such ONNX file") from None
    except Exception as e:  # protobuf's DecodeError and friends: not an ONNX model
        problem = f"{type(e).__name__}: {e}"
        raise WorkloadError(f"{path}: not a readable ONNX model ({problem})") from None


def _bind(model: onnx.ModelProto, path: Path, dims: dict[str, int]) -> dict[str, int]:
    """Fix the graph inputs' symbolic dimensions in place; the values each name took."""
    inits = {i.name for i in model.graph.initializer}
    used: dict[str, int] = {}
    missing = []
    for value in model.graph.input:
        if value.name in inits:
            continue
        for d in value.type.tensor_type.shape.dim:
            if d.HasField("dim_value"):
                continue
            name = d.dim_param
            key = dims.get(name, dims.get(name.lower()))
            if key is None:
                missing.append(f"{value.name}:{name or '?'}")
                continue
            d.Clear()
            d.dim_value = key
            used[name] = key
    if missing:
        raise WorkloadError(
            f"{path}: symbolic input dimensions without a value: {', '.join(missing)} (give "
            f"batch/seq, or dims: {{NAME: VALUE}})"
        )
    return used


def batch_inputs(model: onnx.ModelProto) -> list:
    """The graph inputs that carry the batch: data inputs (not initializers) of two or more
    dimensions whose leading dimension is the first such input's (the same name or size)."""
    inits = {i.name for i in model.graph.initializer}
    data = [v for v in model.graph.input
            if v.name not in inits and len(v.type.tensor_type.shape.dim) >= 2]  # fmt: skip
    if not data:
        return []
    lead = data[0].type.tensor_type.shape.dim[0]

    def same(d) -> bool:
        if lead.HasField("dim_value"):
            return d.HasField("dim_value") and d.dim_value == lead.dim_value
        return not d.HasField("dim_value") and d.dim_param == lead.dim_param

    return [v for v in data if same(v.type.tensor_type.shape.dim[0])]


def _fixed_batch(model: onnx.ModelProto) -> int | None:
    """The batch inputs' leading size when it is fixed, else None."""
    inputs = batch_inputs(model)
    lead = inputs[0].type.tensor_type.shape.dim[0] if inputs else None
    return lead.dim_value if lead is not None and lead.HasField("dim_value") else None


def _rebatch(model: onnx.ModelProto, fixed: int, batch: int) -> None:
    """Give the batch inputs a leading size of ``batch`` instead of ``fixed``, and so the
    constant targets of Reshape nodes that lead with ``fixed`` (a classifier's flatten to
    ``[1, features]``); forget every inferred shape. The caller checks that the work scales."""
    for value in batch_inputs(model):
        value.type.tensor_type.shape.dim[0].dim_value = batch
    targets = {n.input[1] for n in model.graph.node if n.op_type == "Reshape" and len(n.input) > 1}
    tensors = [i for i in model.graph.initializer if i.name in targets]
    tensors += [a.t for n in model.graph.node if n.op_type == "Constant" and n.output[0] in targets
                for a in n.attribute if a.name == "value"]  # fmt: skip
    for tensor in tensors:
        shape = numpy_helper.to_array(tensor).copy()
        if shape.ndim == 1 and shape.size and shape[0] == fixed:
            shape[0] = batch
            tensor.CopyFrom(numpy_helper.from_array(shape, tensor.name))
    del model.graph.value_info[:]
    for value in model.graph.output:
        value.type.tensor_type.ClearField("shape")


def _dims_text(value) -> str:
    return "x".join(str(d.dim_value) if d.HasField("dim_value") else d.dim_param or "?"
                    for d in value.type.tensor_type.shape.dim)  # fmt: skip


def _shapes(model: onnx.ModelProto, path: Path) -> dict[str, tuple]:
    """Every value's shape: the file's, completed by shape inference (``None`` where unknown)."""
    try:
        inferred = shape_inference.infer_shapes(model, data_prop=True)
    except Exception as e:  # onnx's InferenceError: an inconsistent graph
        raise WorkloadError(f"{path}: ONNX shape inference failed: {e}") from None
    g = inferred.graph
    shapes = {}
    for value in [*g.input, *g.value_info, *g.output]:
        t = value.type.tensor_type
        if t.HasField("shape"):
            shapes[value.name] = tuple(
                d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim
            )
    for init in model.graph.initializer:
        shapes[init.name] = tuple(init.dims)
    return shapes


def _known(shape, node, which: str, path: Path) -> tuple[int, ...]:
    if shape is None or any(d is None for d in shape):
        raise WorkloadError(f"{path}: node {node.name or node.op_type!r} ({node.op_type}): the "
                            f"shape of its {which} is unknown ({shape}); give the graph value "
                            f"info or the symbolic dimensions' values")  # fmt: skip
    return tuple(int(d) for d in shape)


def _matmul(node, shapes, weights, path, ia: int = 0, ib: int = 1) -> tuple:
    a = _known(shapes.get(node.input[ia]), node, "input A", path)
    b = _known(shapes.get(node.input[ib]), node, "input B", path)
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    m, k = a2[-2:]
    kb, n = b2[-2:]
    if k != kb:
        raise WorkloadError(f"{path}: MatMul {node.name!r}: inner dimensions differ "
                            f"(A {a}, B {b})")  # fmt: skip
    w = weights.get(node.input[ib])
    if len(b2) == 2 and w is not None:  # a weight matrix: every leading row of A is a row of M
        return Gemm(node.name, math.prod(a2[:-1]), k, n), w.reshape(k, n)
    try:
        lead = np.broadcast_shapes(a2[:-2], b2[:-2])
    except ValueError:
        raise WorkloadError(f"{path}: MatMul {node.name!r}: batch dimensions of A {a} and B {b} "
                            f"do not broadcast") from None  # fmt: skip
    return Gemm(node.name, m, k, n, math.prod(lead), weights=w is not None), w


def _gemm(node, shapes, weights, path, ia: int = 0, ib: int = 1) -> tuple:
    at = attributes(node)
    a = _known(shapes.get(node.input[ia]), node, "input A", path)
    b = _known(shapes.get(node.input[ib]), node, "input B", path)
    m, k = a[::-1] if at.get("transA", 0) else a
    kb, n = b[::-1] if at.get("transB", 0) else b
    if k != kb:
        flags = f"transA {at.get('transA', 0)}, transB {at.get('transB', 0)}"
        raise WorkloadError(f"{path}: Gemm {node.name!r}: inner dimensions differ (A {a}, "
                            f"B {b}, {flags})")  # fmt: skip
    w = weights.get(node.input[ib])
    if w is not None and at.get("transB", 0):
        w = w.T
    return Gemm(node.name, m, k, n, weights=w is not None), w


def conv_output(size: int, kernel: int, stride: int, dilation: int, pads: tuple[int, int],
                auto_pad: str) -> int:  # fmt: skip
    """One spatial output extent of an ONNX Conv."""
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        return -(-size // stride)
    if auto_pad == "VALID":
        pads = (0, 0)
    return (size + pads[0] + pads[1] - dilation * (kernel - 1) - 1) // stride + 1


def _geometry(batch, spatial, cin, cout, kernel, strides, dilations, pads, auto_pad, group,
              out) -> Conv | None:  # fmt: skip
    """A 2-D Conv's geometry (:class:`contract.conv.Conv`; ONNX's NCHW read as the device's
    NHWC), its ``auto_pad`` made explicit; None for 1-D and 3-D convolutions (im2col only)."""
    if len(spatial) != 2:
        return None
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        pads = []
        for i in range(2):
            total = max((out[i] - 1) * strides[i] + dilations[i] * (kernel[i] - 1) + 1
                        - spatial[i], 0)  # fmt: skip
            small, large = total // 2, total - total // 2
            pads.append((small, large) if auto_pad == "SAME_UPPER" else (large, small))
        pads = (pads[0][0], pads[1][0], pads[0][1], pads[1][1])
    elif auto_pad == "VALID":
        pads = (0, 0, 0, 0)
    conv = Conv(batch, spatial[0], spatial[1], cin, cout, tuple(kernel), tuple(strides),
                tuple(pads), tuple(dilations), group)  # fmt: skip
    assert conv.out == tuple(out), (conv, out)
    return conv


def _conv(node, shapes, weights, path, ix: int = 0, iw: int = 1) -> tuple:
    at = attributes(node)
    x = _known(shapes.get(node.input[ix]), node, "input X", path)
    w_shape = _known(shapes.get(node.input[iw]), node, "weights W", path)
    batch, cin, spatial = x[0], x[1], x[2:]
    cout, cin_g, kernel = w_shape[0], w_shape[1], w_shape[2:]
    nd = len(spatial)
    group = int(at.get("group", 1))
    strides = tuple(at.get("strides", [1] * nd))
    dilations = tuple(at.get("dilations", [1] * nd))
    pads = tuple(at.get("pads", [0] * 2 * nd))
    auto_pad = at.get("auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else str(auto_pad)
    if cin % group or cout % group or cin // group != cin_g:
        raise WorkloadError(f"{path}: Conv {node.name!r}: {cin} input and {cout} output channels "
                            f"do not split into {group} groups of weights {w_shape}")  # fmt: skip
    out = tuple(conv_output(spatial[i], kernel[i], strides[i], dilations[i],
                            (pads[i], pads[i + nd]), auto_pad) for i in range(nd))  # fmt: skip
    if min(out) < 1:
        raise WorkloadError(f"{path}: Conv {node.name!r}: kernel {kernel} with dilation "
                            f"{dilations} does not fit input {spatial}, pads {pads}")  # fmt: skip
    gemm = Gemm(node.name, batch * math.prod(out), cin_g * math.prod(kernel), cout // group, group,
                conv=_geometry(batch, spatial, cin, cout, kernel, strides, dilations, pads,
                               auto_pad, group, out))  # fmt: skip
    attrs = {"strides": strides, "dilations": dilations, "pads": pads, "auto_pad": auto_pad,
             "group": group, "out": out}  # fmt: skip
    return gemm, weights.get(node.input[iw]), attrs


def read_onnx(path: str | Path, batch: int | None = None, seq: int | None = None,
              dims: dict[str, int] | None = None) -> Graph:  # fmt: skip
    """Read ``path`` with its symbolic input dimensions bound (see module)."""
    path = Path(path)
    model = _load(path)
    values: dict[str, int] = {}
    if batch is not None:
        values |= dict.fromkeys(BATCH_NAMES, batch)
        for value in batch_inputs(model):  # the leading dimension, whatever its name
            lead = value.type.tensor_type.shape.dim[0]
            if not lead.HasField("dim_value") and lead.dim_param:
                values[lead.dim_param] = batch
    if seq is not None:
        values |= dict.fromkeys(SEQ_NAMES, seq)
    values |= dict(dims or {})
    fixed = _fixed_batch(model)
    rebatched = batch is not None and fixed is not None and fixed != batch
    if rebatched:
        first = batch_inputs(model)[0]
        refusal = (f"{path}: input {first.name!r} has a fixed batch of {fixed} (shape "
                   f"{_dims_text(first)}); re-shaped to batch {batch},")  # fmt: skip
        _rebatch(model, fixed, batch)
    bound = _bind(model, path, values)
    try:
        shapes = _shapes(model, path)
    except WorkloadError as e:
        if rebatched:
            raise WorkloadError(f"{refusal} its shapes do not infer ({e}); export it with a "
                                f"symbolic batch, or sweep batch: [{fixed}]") from None  # fmt: skip
        raise
    weights = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    for node in model.graph.node:  # Constant nodes hold weights too
        if node.op_type == "Constant" and node.output:
            value = attributes(node).get("value")
            if value is not None:
                weights[node.output[0]] = numpy_helper.to_array(value)
    _fold_qdq(model, weights)
    layers, host, unsupported = [], Counter(), Counter()
    seen: set[str] = set()
    ops = _Operators(model, shapes, weights, seen)
    for i, node in enumerate(model.graph.node):
        if not node.name or node.name in seen:
            node.name = ops.unique(f"{node.name or node.op_type.lower()}_{i}")
        seen.add(node.name)
        attrs: dict = {}
        kind, ia, ib, bias = ARRAY_INPUTS.get(node.op_type, (None, 0, 0, None))
        if kind == "matmul":
            gemm, w = _matmul(node, shapes, weights, path, ia, ib)
        elif kind == "gemm":
            gemm, w = _gemm(node, shapes, weights, path, ia, ib)
        elif kind == "conv":
            gemm, w, attrs = _conv(node, shapes, weights, path, ia, ib)
        else:
            if node.op_type != "Constant":
                (unsupported if node.op_type in UNSUPPORTED_OPS else host)[node.op_type] += 1
                ops.node(node)
            continue
        layers.append(Layer(node.name, node.op_type, gemm, w, attrs, tuple(node.input),
                            node.output[0]))  # fmt: skip
        ops.gemm(node, gemm, kind == "conv", bias)
    if not layers:
        raise WorkloadError(f"{path}: no MatMul, Gemm or Conv node: nothing runs on the array")
    graph = Graph(model.graph.name or path.stem, layers, host, unsupported, bound, model,
                  ops.operators, ops.schedule)  # fmt: skip
    if rebatched:  # the re-shaped graph must do exactly batch / fixed times the file's work
        as_is = read_onnx(path, fixed, seq, dims)
        if graph.macs * fixed != as_is.macs * batch:
            raise WorkloadError(f"{refusal} its work does not scale with the batch ({graph.macs:,} "
                                f"MACs against {as_is.macs:,} at batch {fixed}); export it with a "
                                f"symbolic batch, or sweep batch: [{fixed}]")  # fmt: skip
    return graph


def _fold_qdq(model: onnx.ModelProto, weights: dict) -> None:
    """A quantized model's QuantizeLinear and DequantizeLinear nodes as the device runs them,
    in place: a dequantized constant (a QDQ model's weights and biases) is that constant; a
    pair inside the graph (a QDQ model's, around each operator) is the producing operator's
    requantization, which the output path does, so its consumers read the producer's tensor;
    only the input's quantization and the output's dequantization stay, host operators."""
    inputs = {v.name for v in model.graph.input}
    outputs = {v.name for v in model.graph.output}
    alias: dict[str, str] = {}

    def source(name: str) -> str:
        while name in alias:
            name = alias[name]
        return name

    kept = []
    for node in model.graph.node:
        for i, name in enumerate(node.input):
            node.input[i] = source(name)
        op = node.op_type
        if op == "DequantizeLinear" and node.input[0] in weights:
            weights[node.output[0]] = weights[node.input[0]]  # its integers: the shapes count
            continue
        inside = (op == "QuantizeLinear" and node.input[0] not in inputs) or (
            op == "DequantizeLinear" and node.output[0] not in outputs)  # fmt: skip
        if inside:
            alias[node.output[0]] = node.input[0]
            continue
        kept.append(node)
    del model.graph.node[:]
    model.graph.node.extend(kept)


def onnx_workload(path: str | Path, batch: int | None = None, seq: int | None = None,
                  dims: dict[str, int] | None = None) -> Workload:  # fmt: skip
    """The GEMMs of one inference of an ONNX model at ``batch`` (None: the file's fixed batch)
    (see module); the operators that are not array work are in the workload's ``host_ops`` and
    ``unsupported_ops``."""
    path = Path(path)
    graph = read_onnx(path, batch, seq, dims)
    if batch is None:
        batch = _fixed_batch(graph.model) or 1
    uses_seq = any(name.lower() in SEQ_NAMES for name in graph.dims)
    name = f"{path.stem} b{batch}" + (f" s{seq}" if uses_seq and seq is not None else "")
    return Workload(name, path.stem, "onnx", batch, seq if uses_seq else None,
                    tuple(layer.gemm for layer in graph.layers),
                    host_ops=tuple(sorted(graph.host_ops.items())),
                    unsupported_ops=tuple(sorted(graph.unsupported_ops.items())),
                    operators=tuple(graph.operators),
                    schedule=tuple(graph.schedule))  # fmt: skip


#: Activations a GEMM's output path can take after its bias (models.inference decides which
#: run there).
_ACTIVATIONS = frozenset({"Relu", "Clip"})
#: Pooling operators' windows: from their kernel (``kernel_shape``) or their whole input plane.
_POOLS = frozenset({"MaxPool", "AveragePool", "LpPool"})
_GLOBAL_POOLS = frozenset({"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"})


def per_channel(shape: tuple[int, ...], channels: int, conv: bool) -> bool:
    """A tensor of ``shape`` added to a layer's output holds one value per output channel, on
    the channel axis a broadcast puts it on (a convolution's third from last, as in ``C x 1 x
    1``; a dense layer's last)."""
    if not channels or math.prod(shape) != channels:
        return False
    axis = len(shape) - 3 if conv else len(shape) - 1
    return axis >= 0 and shape[axis] == channels


@dataclass(frozen=True)
class _Owned:
    """A tensor that is a GEMM's output alone, through what its output path can take: the GEMM,
    its operator type and output channels, and whether an activation has been applied (after
    one, only activations follow: a bias comes before requantization, a clamp after it)."""

    gemm: str
    op: str
    channels: int
    activated: bool = False


class _Operators:
    """Builds a graph's operators and schedule node by node (see module)."""

    def __init__(self, model: onnx.ModelProto, shapes: dict, weights: dict, names: set[str]):
        self.shapes, self.constants, self.names = shapes, set(weights), names
        self.consumers = Counter(x for n in model.graph.node for x in n.input if x)
        self.consumers.update(v.name for v in model.graph.output)
        self.owner: dict[str, _Owned] = {}
        self.sole: dict[str, str] = {}  # a tensor one node reads -> the operator that wrote it
        self.operators: list[Operator] = []
        self.schedule: list[tuple[str, int]] = []

    def _size(self, name: str) -> int:
        shape = self.shapes.get(name)
        if shape is None or any(d is None for d in shape):
            return 0
        return math.prod(shape)

    def unique(self, name: str) -> str:
        """``name``, suffixed until no node or operator has it."""
        out, i = name, 1
        while out in self.names:
            out, i = f"{name}_{i}", i + 1
        self.names.add(out)
        return out

    def _add(self, name: str, op: str, output: str, inputs: list[str], window: int = 1,
             owned: _Owned | None = None, geometry: tuple = (None, None)) -> None:  # fmt: skip
        elements = self._size(output)
        read = sum(self._size(x) for x in inputs if x and x not in self.constants)
        gemm = owned.gemm if owned is not None else None
        # an activation of an operator's output that nothing else reads: the operator's clamp
        follows = self.sole.get(inputs[0]) if op in _ACTIVATIONS and inputs else None
        self.operators.append(Operator(name, op, elements, read, window, 1, gemm, *geometry,
                                       follows))  # fmt: skip
        if self.consumers.get(output) == 1:
            self.sole[output] = name
        self.schedule.append((name, 1))
        if owned is not None and self.consumers[output] == 1:
            activated = owned.activated or op in _ACTIVATIONS
            self.owner[output] = _Owned(owned.gemm, owned.op, owned.channels, activated)

    def gemm(self, node, gemm: Gemm, conv: bool, bias: int | None) -> None:
        """An array operator's GEMM (``conv``: a convolution, channels along axis 1), and its
        bias (input ``bias``, when given) as an operator the output path may absorb."""
        self.schedule.append((node.name, gemm.count))
        output = node.output[0]
        shape = self.shapes.get(output) or ()
        channels = (shape[1] if conv else shape[-1]) if shape else 0
        if bias is not None and len(node.input) > bias and node.input[bias]:
            name = self.unique(f"{node.name}_bias")
            self.operators.append(Operator(name, "Bias", self._size(output),
                                           self._size(output), 1, 1, node.name))  # fmt: skip
            self.schedule.append((name, 1))
        if self.consumers[output] == 1:
            self.owner[output] = _Owned(node.name, "Conv" if conv else node.op_type, channels)

    def _per_channel(self, constant: str, owned: _Owned) -> bool:
        shape = self.shapes.get(constant)
        return shape is not None and per_channel(shape, owned.channels, owned.op == "Conv")

    def node(self, node) -> None:
        op, output = node.op_type, node.output[0] if node.output else ""
        inputs = [x for x in node.input if x]
        owned = self.owner.get(inputs[0]) if inputs else None
        window = 1
        if op == "Add" and len(inputs) == 2:
            owned = next((self.owner[x] for x in inputs if x in self.owner), None)
            other = next((x for x in inputs if x in self.constants), None)
            if owned is not None and other is not None and not owned.activated and (
                    self._per_channel(other, owned)):  # fmt: skip
                op = "Bias"  # a constant per channel added after a layer: its bias
            else:
                owned = None
        elif op == "BatchNormalization" and owned is not None and not owned.activated:
            op = "Bias"  # deployment tools fold its scale into the weights, its shift into the bias
        elif op in _POOLS:
            window = math.prod(attributes(node).get("kernel_shape", [1]))
        elif op in _GLOBAL_POOLS or op.startswith("Reduce"):
            out = self._size(output)
            window = self._size(inputs[0]) // out if out else 1
        if op not in _ACTIVATIONS and op != "Bias":
            owned = None
        self._add(node.name, op, output, inputs, window, owned, self._geometry(node, op, output))

    def _nhwc(self, name: str) -> tuple[int, int, int, int] | None:
        """A 4-D NCHW tensor as ``(N, H, W, C)``; another rank flattened to rows of its last
        axis; None when its shape is not known."""
        shape = self.shapes.get(name)
        if not shape or not all(isinstance(s, int) and s > 0 for s in shape):
            return None
        if len(shape) == 4:
            return (shape[0], shape[2], shape[3], shape[1])
        return (1, 1, math.prod(shape[:-1]), shape[-1])

    def _geometry(self, node, op: str, output: str) -> tuple:
        """``(tensor, pool)`` of :class:`workloads.library.Operator` where a vector unit could
        run the node (two inputs of one shape, or a 2-D pooling it computes: no dilation, no
        ceil mode, padding not counted), else ``(None, None)``."""
        inputs = [x for x in node.input if x]
        if op in ("Add", "Sum", "Max"):
            if len(inputs) != 2 or any(x in self.constants for x in inputs) or (
                    self.shapes.get(inputs[0]) != self.shapes.get(inputs[1])):  # fmt: skip
                return None, None
            return self._nhwc(inputs[0]), None
        tensor, out = self._nhwc(inputs[0]) if inputs else None, self._nhwc(output)
        if tensor is None or out is None or len(self.shapes.get(output, ())) != 4:
            return None, None
        if op == "GlobalAveragePool":
            return tensor, (tensor[1], tensor[2], 1, 1, 0, 0, 1, 1)
        a = attributes(node)
        kernel = list(a.get("kernel_shape", []))
        if (op not in ("MaxPool", "AveragePool") or len(kernel) != 2 or a.get("ceil_mode", 0)
                or any(d != 1 for d in a.get("dilations", [1, 1]))
                or a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET")):  # fmt: skip
            return None, None
        pads = list(a.get("pads", [0, 0, 0, 0]))
        if op == "AveragePool" and a.get("count_include_pad", 0) and any(pads):
            return None, None
        strides = list(a.get("strides", [1, 1]))
        return tensor, (*kernel, *strides, pads[0], pads[1], out[1], out[2])
