"""workloads/library.py: published operation counts, batch and sequence scaling, SCALE-Sim
topologies with their quirks."""

from __future__ import annotations

import pytest
from systolic.workloads.library import WorkloadError, cnn, read_scalesim_topology, transformer


def test_cnn_workloads_match_published_operation_counts():
    # Howard et al. 2017, table 1 and section 4.2: MobileNet-v1 1.0-224 has 569 M mult-adds.
    assert cnn("mobilenet-v1", 1).macs == pytest.approx(569e6, rel=0.005)
    # ResNet-50 (torchvision v1.5, stride on the 3x3): about 4.1 G multiply-accumulates.
    assert cnn("resnet50", 1).macs == pytest.approx(4.1e9, rel=0.01)
    assert cnn("resnet50", 8).macs == 8 * cnn("resnet50", 1).macs


def test_transformer_workload_scales_with_batch_and_sequence():
    one = transformer("bert-base", 1, 128)
    # per block: 4 d^2 T (QKV, output) + 2 d ffn T (FFN) + 2 T^2 d (attention), 12 blocks
    d, ffn, t = 768, 3072, 128
    assert one.macs == 12 * (4 * d * d * t + 2 * d * ffn * t + 2 * t * t * d)
    assert transformer("bert-base", 4, 128).macs == 4 * one.macs
    with pytest.raises(WorkloadError, match="seq must be a positive integer"):
        transformer("bert-base", 1, 0)


def test_scalesim_conv_topology_with_its_quirks(tmp_path):
    path = tmp_path / "net.csv"
    path.write_text(
        "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, "
        "Num Filter, Strides,\n"
        "Conv1, 224, 224, 7, 7, 3, 64, 2,\n"  # trailing comma
        "Conv2, 56, 56, 3, 3, 64, 64, 1\n"  # no trailing comma
        "\n"
        "CB2a_DP, 56, 56, 3, 3, 64, 1, 1, 1:2,\n"  # depthwise, with a sparsity column
    )
    w = read_scalesim_topology(path, batch=2)
    conv1, conv2, dp = w.gemms
    out1 = (224 - 7 + 2 + 1) // 2  # ceil((224 - 7 + 2) / 2) = 110: SCALE-Sim pads nothing
    assert (conv1.m, conv1.k, conv1.n) == (2 * out1 * out1, 7 * 7 * 3, 64)
    assert (conv2.m, conv2.k, conv2.n) == (2 * 54 * 54, 9 * 64, 64)
    assert (dp.m, dp.k, dp.n, dp.count) == (2 * 54 * 54, 9, 1, 64)


def test_scalesim_gemm_topology(tmp_path):
    path = tmp_path / "gemms.csv"
    path.write_text("Layer, M, N, K,\nqkv, 128, 2304, 768,\n")
    (g,) = read_scalesim_topology(path).gemms
    assert (g.name, g.m, g.k, g.n) == ("qkv", 128, 768, 2304)


def test_scalesim_topology_errors_name_the_line(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("Layer, M, N, K,\nok, 1, 2, 3,\nbad, 1, 2,\n")
    with pytest.raises(WorkloadError, match=r"bad.csv:3: expected a layer name and 7 numbers"):
        read_scalesim_topology(path)
    path.write_text("Layer, M, N, K,\nneg, 1, -2, 3,\n")
    with pytest.raises(WorkloadError, match=r"bad.csv:2: values must be positive"):
        read_scalesim_topology(path)


def test_a_transformer_block_has_its_operators_in_order():
    """BERT-base at batch 2, 128 tokens: per block, a softmax over 2 x 12 heads of 128 x 128
    scores, GELU over the 256 x 3072 up-projection, two residual adds and layer norms over
    256 x 768, and a bias after each of the four weight GEMMs; twelve blocks in turn."""
    w = transformer("bert-base", 2, 128)
    ops = {o.name: o for o in w.operators}
    assert ops["softmax"].elements == 2 * 12 * 128 * 128 and ops["softmax"].count == 12
    assert ops["gelu"].elements == 256 * 3072 and ops["gelu"].gemm is None
    assert ops["attn_residual"].inputs == 2 * 256 * 768
    assert [o.gemm for o in w.operators if o.op == "Bias"] == ["qkv", "out_proj", "ffn_up",
                                                               "ffn_down"]  # fmt: skip
    steps = [(x.name, runs) for x, runs in w.steps()]
    assert len(steps) == 12 * 16
    assert steps[:5] == [("qkv", 1), ("qkv_bias", 1), ("scores", 24), ("softmax", 1),
                         ("context", 24)]  # fmt: skip
    decode = transformer("gpt2-small", 4, 512, "decode")
    soft = next(o for o in decode.operators if o.op == "Softmax")
    assert soft.elements == 4 * 12 * 1 * 512  # one query against the cache of 512


def test_a_cnn_has_its_residual_adds_and_pools():
    """ResNet-50: 16 bottlenecks, each ending in a residual add and a ReLU; a max pool after the
    stem and a global average pool before the classifier."""
    w = cnn("resnet50", 1)
    ops = {o.name: o for o in w.operators}
    assert sum(o.count for o in w.operators if o.op == "Add") == 16
    assert ops["maxpool"].elements == 56 * 56 * 64 and ops["maxpool"].window == 9
    assert ops["avgpool"].window == 49 and ops["softmax"].elements == 1000
    assert [x.name for x, _ in w.steps()][:6] == [
        "conv1",
        "conv1_bias",
        "conv1_relu",
        "maxpool",
        "l1_reduce_first",
        "l1_reduce_first_bias",
    ]
    mobilenet = cnn("mobilenet-v1", 2)
    # ReLU6 after each of the 27 convolutions: the stem and 13 depthwise-pointwise pairs, the
    # seventh pair's shape repeated five times (19 distinct)
    clips = [o for o in mobilenet.operators if o.op == "Clip"]
    assert len(clips) == 1 + 2 * 9 and sum(o.count for o in clips) == 1 + 2 * 13


def test_a_schedule_that_does_not_run_each_step_its_count_is_refused():
    from systolic.workloads.library import Gemm, Operator, Workload

    gemms = (Gemm("fc", 4, 8, 8, count=2),)
    ops = (Operator("act", "Relu", 32, 32, gemm="fc"),)
    bad = Workload("w", "w", "gemm", 1, None, gemms, operators=ops,
                   schedule=(("fc", 1), ("act", 1)))  # fmt: skip
    with pytest.raises(WorkloadError, match=r"the schedule runs fc \(1 of 2\) times"):
        bad.steps()
    unknown = Workload("w", "w", "gemm", 1, None, gemms, operators=ops,
                       schedule=(("fc", 2), ("gelu", 1)))  # fmt: skip
    with pytest.raises(WorkloadError, match="the schedule names 'gelu'"):
        unknown.steps()
