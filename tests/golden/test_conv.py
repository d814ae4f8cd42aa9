"""golden/conv.py: a convolution descriptor's reference output is the convolution computed by its
definition (a loop over the kernel on the zero-point-padded input), for strides, pads,
dilations, kernel sizes and ragged channel counts."""

from __future__ import annotations

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig
from systolic.contract.conv import Conv
from systolic.golden.conv import conv_reference

from tests.helpers import random_conv


def _direct(conv: Conv, x, w, za: int, zb: int) -> np.ndarray:
    """The convolution by its definition, a loop over the kernel on the zero-point-padded input:
    ``pixels x out_channels``."""
    top, left, bottom, right = conv.pads
    (kh, kw), (sh, sw), (dh, dw) = conv.kernel, conv.stride, conv.dilation
    xp = np.pad(x - za, ((0, 0), (top, bottom), (left, right), (0, 0)))
    oh, ow = conv.out
    out = np.zeros((conv.batch, oh, ow, conv.out_channels), dtype=np.int64)
    for ky in range(kh):
        for kx in range(kw):
            win = xp[:, ky * dh : ky * dh + sh * (oh - 1) + 1 : sh,
                     kx * dw : kx * dw + sw * (ow - 1) + 1 : sw, :]  # fmt: skip
            out += win @ (w[:, ky, kx, :] - zb).T
    return out.reshape(-1, conv.out_channels)


@pytest.mark.parametrize("kernel", [1, 3, 5, 7])
def test_the_device_gemm_is_the_convolution(kernel, seed):
    """The device's A (expanded, zero-point padding, slice-major K) times its B (padded lanes at
    the weights' zero point) is the convolution computed by its definition, for every stride,
    padding, dilation and ragged channel count drawn; on 4- and 3-row arrays."""
    rng = np.random.default_rng([seed, kernel, 1])
    print(f"seed {seed}")
    for rows in (4, 3):
        config = ArrayConfig("ws", rows, 2, zero_points=True)
        for _ in range(4):
            conv = random_conv(rng, kernel)
            x = rng.integers(-128, 128, (conv.batch, conv.height, conv.width, conv.channels))
            w = rng.integers(-128, 128, (conv.out_channels, kernel, kernel, conv.channels))
            za, zb = (int(v) for v in rng.integers(-20, 20, 2))
            got = conv_reference(config, conv, x, w, za, zb)
            np.testing.assert_array_equal(got, _direct(conv, x, w, za, zb), err_msg=str(conv))
