"""experiments/conv_traffic.py: the convolution descriptors' staging cuts the activations' DRAM
traffic of ResNet-50 and MobileNet v1 and keeps ResNet-50's 3x3 layers within 1.5x of the input
read once per pass of the chunk nest (issue 34), with the default 1,024-word banks."""

from __future__ import annotations

from systolic.contract.config import ArrayConfig
from systolic.experiments.conv_traffic import main, network


def test_staging_reads_less_than_im2col_and_the_3x3_layers_stay_within_1_5x():
    config = ArrayConfig("ws", 16, 16, requant=True, stage_depth=8192)
    for name in ("resnet50", "mobilenet-v1"):
        totals, three = network(config, name, 1)
        before, after = totals["before"], totals["after"]
        print(name, before, after)
        assert after["a"] < 0.7 * before["a"]
        assert sum(after.values()) < sum(before.values())
        if name == "resnet50":
            assert 1.0 <= three["a"] / three["compulsory"] <= 1.5, three["layers"]


def test_the_table_prints(capsys):
    assert main(["--stage-depth", "4096"]) == 0
    out = capsys.readouterr().out
    assert out.count(" before ") == out.count(" after ") == 4
