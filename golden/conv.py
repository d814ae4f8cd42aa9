"""The device's convolutions (contract.conv): the output a convolution descriptor must leave, as
the ``pixels x out_channels`` C of its implicit GEMM."""

from __future__ import annotations

import numpy as np
from systolic.contract.config import ArrayConfig
from systolic.contract.conv import Conv, device_a, device_weights
from systolic.contract.layouts import layouts

from .reference import reference

__all__ = ["conv_reference"]


def conv_reference(config: ArrayConfig, conv: Conv, x, w, a_zero: int = 0,
                   b_zero: int = 0) -> np.ndarray:  # fmt: skip
    """The accumulators of ``conv`` on the NHWC input ``x`` with weights ``w`` (``O x kh x kw x
    C``): :func:`golden.reference.reference` on the A the device's expander builds (padding is
    the input's zero point) and the B the driver lays out (padded channel lanes at the weights'
    zero point)."""
    tile = layouts(config)["a"].tile
    a = device_a(conv, x, a_zero, tile)
    b = device_weights(conv, w, tile, b_zero)
    return reference(config, a, b, a_zero, b_zero)
