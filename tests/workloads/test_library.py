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
