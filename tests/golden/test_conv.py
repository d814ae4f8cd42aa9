"""golden/conv.py: a convolution descriptor's reference output is the convolution computed by its
definition (a loop over the kernel on the zero-point-padded input), for strides, pads,
dilations, kernel sizes and ragged channel counts."""

from __future__ import annotations

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig
from systolic.golden.conv import conv_reference

from tests.helpers import direct_conv, random_conv


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
            np.testing.assert_array_equal(got, direct_conv(conv, x, w, za, zb), err_msg=str(conv))
