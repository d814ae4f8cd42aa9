"""ONNX models as workloads: graphs built here with onnx.helper, their GEMMs against shapes and
MAC totals worked out by hand from the layers' definitions."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from systolic.sweeps.results import load_results
from systolic.sweeps.sweep_spec import SpecError, load_spec
from systolic.workloads.library import WorkloadError, cnn
from systolic.workloads.onnx_import import conv_output, onnx_workload, read_onnx

from ..helpers import run_cli


def _init(name, shape, rng=None):
    data = (rng or np.random.default_rng(0)).standard_normal(shape).astype(np.float32)
    return numpy_helper.from_array(data, name)


def _save(tmp_path, name, nodes, inputs, outputs, inits, value_info=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, inits, value_info=list(value_info))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, str(path))
    return path


@pytest.fixture
def small_cnn(tmp_path):
    """3x32x32 images: a strided conv, a depthwise conv, a grouped dilated conv, a SAME-padded
    strided pointwise conv, global pooling and a Gemm classifier with a bias."""
    f = TensorProto.FLOAT
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", strides=[2, 2],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "wdw"], ["c2"], name="dw", group=16, pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["c2", "wg"], ["c3"], name="grouped", group=4,
                         dilations=[2, 2], pads=[2, 2, 2, 2]),
        helper.make_node("Conv", ["c3", "wp"], ["c4"], name="pw", strides=[2, 2],
                         auto_pad="SAME_UPPER"),
        helper.make_node("ConvTranspose", ["c4", "wt"], ["c5"], name="up"),
        helper.make_node("GlobalAveragePool", ["c4"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "wfc", "bfc"], ["y"], name="fc", transB=1),
    ]  # fmt: skip
    inits = [_init("w1", (16, 3, 3, 3)), _init("wdw", (16, 1, 3, 3)), _init("wg", (32, 4, 3, 3)),
             _init("wp", (32, 32, 1, 1)), _init("wt", (32, 8, 2, 2)), _init("wfc", (10, 32)),
             _init("bfc", (10,))]  # fmt: skip
    x = helper.make_tensor_value_info("x", f, ["N", 3, 32, 32])
    y = helper.make_tensor_value_info("y", f, ["N", 10])
    return _save(tmp_path, "small_cnn", nodes, [x], [y], inits)


def test_cnn_gemms_by_hand(small_cnn):
    w = onnx_workload(small_cnn, batch=2)
    got = {g.name: (g.m, g.k, g.n, g.count, g.weights) for g in w.gemms}
    # conv1: (32 + 2 - 3) // 2 + 1 = 16 a side; K = 3 channels x 3 x 3
    # dw: 16 channels, one 3x3 filter each: 16 GEMMs of K 9, N 1
    # grouped: dilation 2 spans 5 pixels, pads 2: (16 + 4 - 5) + 1 = 16; 4 groups of 4 -> 8
    # pw: SAME_UPPER at stride 2: ceil(16 / 2) = 8 a side
    # fc: 32 -> 10, B stored transposed
    assert got == {
        "conv1": (2 * 16 * 16, 27, 16, 1, True),
        "dw": (2 * 16 * 16, 9, 1, 16, True),
        "grouped": (2 * 16 * 16, 36, 8, 4, True),
        "pw": (2 * 8 * 8, 32, 32, 1, True),
        "fc": (2, 32, 10, 1, True),
    }
    macs = 512 * 27 * 16 + 512 * 9 * 16 + 512 * 36 * 8 * 4 + 128 * 32 * 32 + 2 * 32 * 10
    assert w.macs == macs
    # every other node is listed, never dropped: ConvTranspose has MACs the array does not run
    assert dict(w.unsupported_ops) == {"ConvTranspose": 1}
    assert dict(w.host_ops) == {"Flatten": 1, "GlobalAveragePool": 1, "Relu": 1}
    assert w.family == "onnx" and w.name == "small_cnn b2" and w.seq is None


def test_weights_are_read_in_k_by_n_layout(small_cnn):
    graph = read_onnx(small_cnn, batch=1)
    model = onnx.load(str(small_cnn))
    stored = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    fc = next(layer for layer in graph.layers if layer.node == "fc")
    np.testing.assert_array_equal(fc.weight, stored["wfc"].T)  # transB: K x N
    conv = next(layer for layer in graph.layers if layer.node == "grouped")
    np.testing.assert_array_equal(conv.weight, stored["wg"])
    assert conv.attrs["group"] == 4 and conv.attrs["out"] == (16, 16)


def _block(tmp_path, d=64, heads=4, ffn=256, dims=("batch", "seq")):
    """One pre-norm-free transformer encoder block with symbolic batch and sequence."""
    dh = d // heads
    f = TensorProto.FLOAT
    shape = helper.make_tensor
    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q"], name="q_proj"),
        helper.make_node("MatMul", ["x", "wk"], ["k"], name="k_proj"),
        helper.make_node("MatMul", ["x", "wv"], ["v"], name="v_proj"),
        helper.make_node("Reshape", ["q", "heads"], ["q4"]),
        helper.make_node("Reshape", ["k", "heads"], ["k4"]),
        helper.make_node("Reshape", ["v", "heads"], ["v4"]),
        helper.make_node("Transpose", ["q4"], ["qh"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["v4"], ["vh"], perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["qh", "kt"], ["s"], name="scores"),
        helper.make_node("Softmax", ["s"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "vh"], ["ctx"], name="context"),
        helper.make_node("Transpose", ["ctx"], ["ct"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ct", "merged"], ["cm"]),
        helper.make_node("MatMul", ["cm", "wo"], ["o"], name="out_proj"),
        helper.make_node("Add", ["o", "x"], ["res"]),
        helper.make_node("LayerNormalization", ["res", "gamma", "beta"], ["ln"], axis=-1),
        helper.make_node("MatMul", ["ln", "w1"], ["h"], name="ffn_up"),
        helper.make_node("Relu", ["h"], ["hr"]),
        helper.make_node("MatMul", ["hr", "w2"], ["y"], name="ffn_down"),
    ]  # fmt: skip
    inits = [_init(n, (d, d)) for n in ("wq", "wk", "wv", "wo")] + [
        _init("w1", (d, ffn)), _init("w2", (ffn, d)), _init("gamma", (d,)), _init("beta", (d,)),
        shape("heads", TensorProto.INT64, [4], [0, 0, heads, dh]),
        shape("merged", TensorProto.INT64, [3], [0, 0, d]),
    ]  # fmt: skip
    x = helper.make_tensor_value_info("x", f, [dims[0], dims[1], d])
    y = helper.make_tensor_value_info("y", f, [dims[0], dims[1], d])
    return _save(tmp_path, "block", nodes, [x], [y], inits)


def test_transformer_block_by_hand(tmp_path):
    b, s, d, h, ffn = 2, 24, 64, 4, 256
    w = onnx_workload(_block(tmp_path, d, h, ffn), batch=b, seq=s)
    got = [(g.name, g.m, g.k, g.n, g.count, g.weights) for g in w.gemms]
    tokens, dh = b * s, d // h
    assert got == [
        ("q_proj", tokens, d, d, 1, True),
        ("k_proj", tokens, d, d, 1, True),
        ("v_proj", tokens, d, d, 1, True),
        ("scores", s, dh, s, b * h, False),  # Q K^T per sequence and head
        ("context", s, s, dh, b * h, False),
        ("out_proj", tokens, d, d, 1, True),
        ("ffn_up", tokens, d, ffn, 1, True),
        ("ffn_down", tokens, ffn, d, 1, True),
    ]
    assert w.macs == 4 * tokens * d * d + 2 * b * h * s * s * dh + 2 * tokens * d * ffn
    assert w.name == "block b2 s24" and w.seq == s
    assert dict(w.host_ops) == {"Add": 1, "LayerNormalization": 1, "Relu": 1, "Reshape": 4,
                                "Softmax": 1, "Transpose": 4}  # fmt: skip


def test_symbolic_dimensions_need_values(tmp_path):
    path = _block(tmp_path, dims=("batch", "ctx_len"))
    with pytest.raises(WorkloadError, match=r"x:ctx_len.*dims"):
        onnx_workload(path, batch=1, seq=16)
    w = onnx_workload(path, batch=1, dims={"ctx_len": 16})
    assert w.gemms[3].shape == (16, 16, 16)


def test_bad_files_are_named(tmp_path):
    with pytest.raises(WorkloadError, match="no such ONNX file"):
        onnx_workload(tmp_path / "missing.onnx")
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x00not a protobuf\xff" * 8)
    with pytest.raises(WorkloadError, match="junk.onnx"):
        onnx_workload(junk)


@pytest.mark.parametrize(
    "size, kernel, stride, dilation, pads, auto, expected",
    [
        (32, 3, 2, 1, (1, 1), "NOTSET", 16),
        (7, 3, 1, 3, (0, 0), "NOTSET", 1),  # dilated kernel spans 7
        (10, 3, 3, 1, (5, 5), "VALID", 3),  # VALID ignores pads: (10 - 3) // 3 + 1
        (15, 5, 4, 1, (0, 0), "SAME_LOWER", 4),  # ceil(15 / 4)
    ],
)
def test_conv_output_extent(size, kernel, stride, dilation, pads, auto, expected):
    assert conv_output(size, kernel, stride, dilation, pads, auto) == expected


def test_spec_takes_onnx_workloads(tmp_path, small_cnn):
    _block(tmp_path)
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "configs: {dataflow: [ws], array: [4x4], precision: [int8]}\n"
        "workloads:\n"
        "  - onnx: small_cnn.onnx\n    batch: [1, 4]\n"
        "  - onnx: block.onnx\n    batch: 2\n    seq: [8, 16]\n"
    )
    sweep = load_spec(spec)
    assert [w.name for w in sweep.workloads] == [
        "small_cnn b1", "small_cnn b4", "block b2 s8", "block b2 s16"]  # fmt: skip
    spec.write_text(
        "configs: {dataflow: [ws], array: [4x4], precision: [int8]}\n"
        "workloads:\n"
        "  - onnx: block.onnx\n    batch: 2\n    dims: {seq: 0}\n"
    )
    with pytest.raises(SpecError, match=r"s.yaml:5: workloads.0.dims.seq: must be an integer"):
        load_spec(spec)
    spec.write_text(
        "configs: {dataflow: [ws], array: [4x4], precision: [int8]}\n"
        "workloads:\n  - onnx: nothere.onnx\n"
    )
    with pytest.raises(SpecError, match=r"workloads.0: .*no such ONNX file"):
        load_spec(spec)


def test_sweep_reports_the_operators_off_the_array(tmp_path, small_cnn):
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "configs: {dataflow: [ws, os], array: [4x4], precision: [int8]}\n"
        "workloads:\n  - onnx: small_cnn.onnx\n    batch: [1]\n"
        "evaluate: {rtl: none}\n"
    )
    out = tmp_path / "out"
    r = run_cli("sweep", str(spec), "--out", str(out))
    assert r.returncode == 0, r.stderr
    records = load_results(out / "results.jsonl")
    assert len(records) == 2
    expected = onnx_workload(small_cnn, batch=1).macs
    for rec in records:
        assert rec["status"] == "ok" and rec["macs"] == expected
    md = (out / "report.md").read_text()
    assert "## Operators not on the array" in md and "## Whole inference" in md
    assert "| small\\_cnn | ConvTranspose x1 | Flatten x1, GlobalAveragePool x1, Relu x1 |" in md


LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def test_a_fixed_batch_file_is_re_shaped_to_the_batch_it_is_named_for():
    """light_resnet50 (the onnx wheel's, input 1x3x224x224) at batch 4: its flatten's constant
    [1, 2048] follows the batch, and the GEMMs are the workload library's ResNet-50 at batch 4
    (written from the paper's layer table, not from the file), MAC for MAC."""
    path = LIGHT / "light_resnet50.onnx"
    one, four = onnx_workload(path), onnx_workload(path, batch=4)
    assert (one.name, one.batch, four.name, four.batch) == (
        "light_resnet50 b1", 1, "light_resnet50 b4", 4)  # fmt: skip
    reference = cnn("resnet50", 4)
    assert four.macs == reference.macs == 4 * one.macs
    fc = [g for g in four.gemms if g.n == 1000]
    assert [(g.m, g.k) for g in fc] == [(4, 2048)]


def test_a_fixed_batch_that_cannot_be_re_shaped_is_refused_naming_the_input(tmp_path):
    """A Reshape to a constant [2, 4] pins the rows of the next MatMul whatever the batch: at
    batch 3 the work would not scale, so the file is refused in one line naming its input."""
    f = TensorProto.FLOAT
    shape = numpy_helper.from_array(np.array([2, 4], dtype=np.int64), "shape")
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["r"]),
             helper.make_node("MatMul", ["r", "w"], ["y"], name="mm")]  # fmt: skip
    x = helper.make_tensor_value_info("x", f, [1, 8])
    y = helper.make_tensor_value_info("y", f, [2, 3])
    path = _save(tmp_path, "pinned", nodes, [x], [y], [shape, _init("w", (4, 3))])
    assert onnx_workload(path).gemms[0].shape == (2, 4, 3)
    with pytest.raises(WorkloadError) as e:
        onnx_workload(path, batch=3)
    assert str(e.value) == (
        f"{path}: input 'x' has a fixed batch of 1 (shape 1x8); re-shaped to batch 3, its work "
        f"does not scale with the batch (24 MACs against 24 at batch 1); export it with a "
        f"symbolic batch, or sweep batch: [1]")  # fmt: skip


def test_a_symbolic_leading_dimension_takes_the_batch_whatever_its_name(tmp_path):
    f = TensorProto.FLOAT
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")]
    x = helper.make_tensor_value_info("x", f, ["dyn_0", 8])
    y = helper.make_tensor_value_info("y", f, ["dyn_0", 3])
    path = _save(tmp_path, "anyname", nodes, [x], [y], [_init("w", (8, 3))])
    w = onnx_workload(path, batch=5)
    assert (w.name, w.batch, w.gemms[0].shape) == ("anyname b5", 5, (5, 8, 3))


def test_every_operator_of_resnet50_is_placed_with_its_shape():
    """light_resnet50 at batch 4 on a device with the fused output path: ResNet-50 has 53
    convolutions, each followed by a BatchNormalization (its bias once folded), one classifier
    with a bias, a ReLU after each of the 33 convolutions that are not a bottleneck's last or
    its projection (fused), and 16 residual sums each followed by a ReLU (on the host); the max
    pool reads the stem's 4 x 64 x 112 x 112 outputs through 3 x 3 windows."""
    from systolic.contract.config import ArrayConfig
    from systolic.models.inference import placement

    w = onnx_workload(LIGHT / "light_resnet50.onnx", batch=4)
    config = ArrayConfig("ws", 16, 16, requant=True)
    where: dict = {}
    for op, _ in w.steps():
        if not hasattr(op, "op"):
            continue
        key = (op.op, placement(op.op, config, op.gemm is not None))
        where[key] = where.get(key, 0) + 1
    assert {k: v for k, v in where.items() if k[1] != "folded"} == {
        ("Bias", "fused"): 54, ("Relu", "fused"): 33, ("Relu", "host"): 16, ("Sum", "host"): 16,
        ("MaxPool", "host"): 1, ("AveragePool", "host"): 1, ("Softmax", "host"): 1}  # fmt: skip
    (pool,) = [o for o in w.operators if o.op == "MaxPool"]
    assert (pool.elements, pool.inputs, pool.window) == (4 * 64 * 56 * 56, 4 * 64 * 112**2, 9)
    (gap,) = [o for o in w.operators if o.op == "AveragePool"]
    assert (gap.elements, gap.window) == (4 * 2048, 49)
    sums = sorted({o.elements // 4 for o in w.operators if o.op == "Sum"})
    assert sums == [7 * 7 * 2048, 14 * 14 * 1024, 28 * 28 * 512, 56 * 56 * 256]
    # the geometry a vector unit's descriptor needs, NCHW read as NHWC
    assert (pool.tensor, pool.pool) == ((4, 112, 112, 64), (3, 3, 2, 2, 1, 1, 56, 56))
    assert (gap.tensor, gap.pool) == ((4, 7, 7, 2048), (7, 7, 1, 1, 0, 0, 1, 1))
    assert {o.tensor for o in w.operators if o.op == "Sum"} == {
        (4, 56, 56, 256), (4, 28, 28, 512), (4, 14, 14, 1024), (4, 7, 7, 2048)}  # fmt: skip
    vector = ArrayConfig("ws", 16, 16, requant=True, vector=True)
    on_unit = {o.op for o in w.operators if placement(o.op, vector, o.gemm is not None, True)
               == "vector"}  # fmt: skip
    assert on_unit == {"Sum", "MaxPool", "AveragePool"}


def _placed(path, config):
    from systolic.models.inference import placement

    return [(o.name, o.op, placement(o.op, config, o.gemm is not None))
            for o, _ in onnx_workload(path).steps() if hasattr(o, "op")]  # fmt: skip


def test_only_a_layers_own_bias_and_activation_fuse(tmp_path):
    """After a convolution of 4 channels: a constant of one value per channel (4 x 1 x 1) is its
    bias; a ReLU then fuses too; a BatchNormalization after the ReLU cannot fold into the
    weights, and a constant of the output's whole shape is no bias: both run on the host."""
    from systolic.contract.config import ArrayConfig

    f = TensorProto.FLOAT
    x = helper.make_tensor_value_info("x", f, [1, 2, 8, 8])
    y = helper.make_tensor_value_info("y", f, [1, 4, 8, 8])
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c", "b"], ["cb"], name="add_bias"),
             helper.make_node("Relu", ["cb"], ["r"], name="relu"),
             helper.make_node("BatchNormalization", ["r", "s", "t", "mu", "var"], ["n"],
                              name="bn"),
             helper.make_node("Add", ["n", "pos"], ["y"], name="add_plane")]  # fmt: skip
    inits = [_init("w", (4, 2, 3, 3)), _init("b", (4, 1, 1)), _init("pos", (1, 4, 8, 8)),
             *(_init(k, (4,)) for k in ("s", "t", "mu", "var"))]  # fmt: skip
    path = _save(tmp_path, "order", nodes, [x], [y], inits)
    placed = _placed(path, ArrayConfig("ws", 4, 4, requant=True))
    assert placed == [
        ("add_bias", "Bias", "fused"),
        ("relu", "Relu", "fused"),
        ("bn", "BatchNormalization", "host"),
        ("add_plane", "Add", "host"),
    ]
    # a per-channel vector of 4 added to an NCHW output broadcasts along its width: no bias
    nodes[1] = helper.make_node("Add", ["c", "b4"], ["cb"], name="add_bias")
    path = _save(tmp_path, "width", nodes, [x], [y], [*inits, _init("b4", (4,))])
    assert _placed(path, ArrayConfig("ws", 4, 4, requant=True))[0] == ("add_bias", "Add", "host")


def test_pooling_geometry_is_read_at_asymmetric_attributes(tmp_path):
    """A MaxPool with a 3x2 kernel, strides (2, 1) and pads top 1, left 0, bottom 0, right 1
    on a 1x16x9x7 input: (9 + 1 + 0 - 3) // 2 + 1 = 4 rows, (7 + 0 + 1 - 2) // 1 + 1 = 7
    columns; an AveragePool that counts its padding, which the vector unit does not, gets no
    geometry (it stays on the host); a Sum of the two same-shape tensors does, and the ReLU
    that alone reads it follows it."""
    f = TensorProto.FLOAT
    nodes = [
        helper.make_node("MaxPool", ["x"], ["m"], name="mp", kernel_shape=[3, 2],
                         strides=[2, 1], pads=[1, 0, 0, 1]),
        helper.make_node("AveragePool", ["x"], ["a"], name="ap", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1], count_include_pad=1),
        helper.make_node("Sum", ["x", "a"], ["s"], name="sum"),
        helper.make_node("Relu", ["s"], ["r"], name="relu"),
        helper.make_node("Conv", ["r", "w"], ["y"], name="conv"),
    ]  # fmt: skip
    x = helper.make_tensor_value_info("x", f, [1, 16, 9, 7])
    outs = [
        helper.make_tensor_value_info("m", f, [1, 16, 4, 7]),
        helper.make_tensor_value_info("y", f, [1, 16, 9, 7]),
    ]
    path = _save(tmp_path, "pools", nodes, [x], outs, [_init("w", (16, 16, 1, 1))])
    ops = {o.name: o for o in onnx_workload(path).operators}
    assert (ops["mp"].tensor, ops["mp"].pool) == ((1, 9, 7, 16), (3, 2, 2, 1, 1, 0, 4, 7))
    assert (ops["ap"].tensor, ops["ap"].pool) == (None, None)
    assert (ops["sum"].tensor, ops["relu"].follows) == ((1, 9, 7, 16), "sum")


def test_resnet50_convolutions_carry_the_library_geometry():
    """light_resnet50 (the onnx wheel's real topology, nobody here wrote it) at batch 2: every
    Conv carries a geometry whose GEMM is its own; the multiset of (input size, channels, out
    channels, kernel, stride, pads) over its 53 convolutions and the classifier's MACs match
    the library's ResNet-50 (which puts the stride on the 3x3, v1.5, or on the 1x1 reduce,
    v1: only the stride's place differs, so the comparison leaves strides out of the 1x1s and
    3x3s of a stage's first block and compares the totals)."""
    from collections import Counter

    w = onnx_workload(LIGHT / "light_resnet50.onnx", batch=2)
    convs = [g for g in w.gemms if g.conv is not None]
    assert len(convs) == 53
    for g in convs:
        assert g.conv.gemm == g.shape and g.count == g.conv.groups, g.name
    onnx_macs = sum(g.macs for g in convs)
    library = [g for g in cnn("resnet50", 2).gemms if g.name != "fc"]
    assert onnx_macs == pytest.approx(sum(g.macs for g in library), rel=0.03)
    kinds = Counter((g.conv.kernel, g.conv.channels, g.conv.out_channels) for g in convs)
    want = Counter()
    for g in library:
        want[(g.conv.kernel, g.conv.channels, g.conv.out_channels)] += g.count
    assert kinds == want


@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
def test_a_model_quantized_by_onnxruntime_reads_as_its_float_model(tmp_path, fmt):
    """onnxruntime's quantize_static output, QDQ (Q/DQ pairs around float operators) and
    QOperator (QLinearConv, QGemm): the same GEMMs as the float model (shapes, MACs, trained
    weights), each layer's bias an operator the output path may absorb; of the Q/DQ nodes only
    the input's quantization and the output's dequantization are left to the host (the rest
    are the operators' own requantization, or fold into the constants)."""
    from systolic.quant.nets import Conv, Dense, Flatten, Net, Relu
    from systolic.quant.onnx_io import write_onnx
    from systolic.quant.ort_check import quantize_with_ort

    rng = np.random.default_rng(3)
    net = Net("q", (3, 8, 8), [
        Conv(rng.normal(0, 0.3, (8, 3, 3, 3)), pad=1, b=rng.normal(0, 0.1, 8)), Relu(),
        Conv(rng.normal(0, 0.2, (6, 8, 3, 3)), stride=2, b=rng.normal(0, 0.1, 6)), Relu(),
        Flatten(), Dense(rng.normal(0, 0.1, (6 * 3 * 3, 10)), b=rng.normal(0, 0.1, 10)),
    ])  # fmt: skip
    src = write_onnx(net, tmp_path / "f.onnx")
    quantize_with_ort(src, tmp_path / "q.onnx", rng.normal(0, 1, (8, 3, 8, 8)), fmt=fmt,
                      per_channel=True)  # fmt: skip
    plain, quantized = read_onnx(src, batch=2), read_onnx(tmp_path / "q.onnx", batch=2)
    assert [(x.gemm.shape, x.gemm.weights, x.gemm.count) for x in quantized.layers] == [
        (x.gemm.shape, x.gemm.weights, x.gemm.count) for x in plain.layers]  # fmt: skip
    assert [x.gemm.conv for x in quantized.layers] == [x.gemm.conv for x in plain.layers]
    assert quantized.macs == plain.macs
    assert not quantized.unsupported_ops
    assert quantized.host_ops == Counter({"QuantizeLinear": 1, "Flatten": 1,
                                          "DequantizeLinear": 1})  # fmt: skip
    biases = [o.gemm for o in quantized.operators if o.op == "Bias"]
    assert biases == [x.node for x in quantized.layers]
