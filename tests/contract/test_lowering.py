"""contract/lowering.py: how the driver runs a convolution. Every piece is a descriptor the
device takes; the pieces do the convolution's multiply-accumulates, no more and no fewer; the
ways follow the rule the module states."""

from __future__ import annotations

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig
from systolic.contract.conv import Conv
from systolic.contract.dma import Refusal, check_descriptor, place
from systolic.contract.interface import DIM_BITS
from systolic.contract.lowering import lower_conv

from tests.helpers import random_conv

STAGING = ArrayConfig("ws", 4, 4, a_depth=512, b_depth=512, c_depth=512, stage_depth=512)
PLAIN = ArrayConfig("ws", 4, 4, a_depth=512, b_depth=512, c_depth=512)
TRANSPOSED = [ArrayConfig(d, 3, 2, a_depth=512, b_depth=512, c_depth=512, stage_depth=512)
              for d in ("os", "is")]  # A's tile: 3 and 2 channels a slice  # fmt: skip


def _macs(conv: Conv) -> int:
    """The convolution's multiply-accumulates, from its definition."""
    oh, ow = conv.out
    return (conv.batch * oh * ow * conv.out_channels * conv.kernel[0] * conv.kernel[1]
            * conv.channels // conv.groups)  # fmt: skip


def _check(config: ArrayConfig, conv: Conv):
    pieces = lower_conv(config, conv)
    assert sum(np.prod(p.useful) * p.times for p in pieces) == _macs(conv), (conv, pieces)
    for p in pieces:
        d = place(config, *p.gemm, conv=p.conv)
        assert check_descriptor(config, d)[0] is Refusal.NONE, (conv, p)
        assert np.prod(p.gemm) >= np.prod(p.useful)
    return pieces


def test_random_convolutions_lower_to_descriptors_the_device_takes(seed):
    rng = np.random.default_rng([seed, 11])
    print(f"seed {seed}")
    for _ in range(20):
        conv = random_conv(rng, int(rng.choice([1, 3, 5, 7])))
        for config in (STAGING, PLAIN, *TRANSPOSED):
            pieces = _check(config, conv)
            if not config.stage_depth:
                assert all(p.conv is None for p in pieces)


def test_the_ways():
    three = Conv(1, 8, 8, 8, 8, (3, 3), (1, 1), (1, 1, 1, 1))
    assert [p.way for p in _check(STAGING, three)] == ["conv"]
    assert [p.way for p in _check(PLAIN, three)] == ["im2col"]
    one = Conv(1, 8, 8, 8, 8)
    assert [p.way for p in _check(STAGING, one)] == ["gemm"]
    strided = Conv(1, 8, 8, 8, 8, stride=(2, 2))
    assert [p.way for p in _check(STAGING, strided)] == ["im2col"]
    stem = Conv(1, 8, 8, 1, 8, (3, 3), pads=(1, 1, 1, 1))  # 1 channel of a 4-channel slice
    assert [p.way for p in _check(STAGING, stem)] == ["im2col"]


def test_depthwise_runs_a_slice_at_a_time_or_a_channel_at_a_time():
    dw = Conv(1, 8, 8, 10, 10, (3, 3), pads=(1, 1, 1, 1), groups=10)
    pieces = _check(STAGING, dw)
    assert [(p.way, p.conv.channels, p.times) for p in pieces] == [("conv", 4, 2), ("conv", 2, 1)]
    assert [(p.way, p.gemm, p.times) for p in _check(PLAIN, dw)] == [("im2col", (64, 9, 1), 10)]
    grouped = Conv(1, 8, 8, 8, 12, (3, 3), pads=(1, 1, 1, 1), groups=2)
    assert [(p.way, p.conv.channels, p.times) for p in _check(STAGING, grouped)] == [
        ("conv", 4, 2)]  # fmt: skip


@pytest.mark.parametrize("batch", [3, 7])
def test_a_batch_past_the_m_field_runs_as_descriptors_of_whole_images(batch):
    size = 160  # 25,600 output pixels an image: two images fit a descriptor's M, three do not
    conv = Conv(batch, size, size, 4, 4, (3, 3), pads=(1, 1, 1, 1))
    config = ArrayConfig("ws", 4, 4, a_depth=2048, b_depth=512, c_depth=2048, stage_depth=2048)
    pieces = _check(config, conv)
    assert all(p.way == "conv" and p.gemm[0] < 1 << DIM_BITS for p in pieces)
    assert sum(p.conv.batch * p.times for p in pieces) == batch
    assert max(p.conv.batch for p in pieces) == 2
