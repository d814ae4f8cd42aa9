"""contract/conv.py: a convolution's implicit A equals the im2col matrix built independently
(numpy's sliding windows over the padded, dilated input), for strides, pads, dilations, groups
and kernel sizes; and the staged rows' traffic against the compulsory."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view
from systolic.contract.conv import Conv, compulsory_bytes, implicit_a, staged_bytes, staged_rows


def _im2col(conv: Conv, x, zero: int, group: int) -> np.ndarray:
    """The reference: pad with the zero point, take every window (dilated), keep the group's
    channels, order K as (kernel row, kernel column, channel)."""
    top, left, bottom, right = conv.pads
    (kh, kw), (sh, sw), (dh, dw) = conv.kernel, conv.stride, conv.dilation
    cin = conv.channels // conv.groups
    xp = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=zero)
    span = (dh * (kh - 1) + 1, dw * (kw - 1) + 1)
    win = sliding_window_view(xp, span, axis=(1, 2))[:, ::sh, ::sw, :, ::dh, ::dw]
    oh, ow = conv.out
    win = win[:, :oh, :ow, group * cin : (group + 1) * cin]  # N, OH, OW, c, kh, kw
    return win.transpose(0, 1, 2, 4, 5, 3).reshape(conv.batch * oh * ow, kh * kw * cin)


@pytest.mark.parametrize("kernel", [1, 3, 5, 7])
def test_the_implicit_a_is_the_im2col_matrix(kernel, seed):
    rng = np.random.default_rng([seed, kernel])
    print(f"seed {seed}")
    for _ in range(6):
        stride, dilation = (tuple(int(v) for v in rng.integers(1, 3, 2)) for _ in range(2))
        pads = tuple(int(v) for v in rng.integers(0, 3, 4))
        groups = int(rng.choice([1, 2, 3]))
        depthwise = rng.random() < 0.3
        cin = groups * int(rng.integers(1, 4))
        span = max(dilation) * (kernel - 1) + 1  # the window fits the plane unpadded
        size = int(rng.integers(span, span + 6))
        conv = Conv(int(rng.integers(1, 3)), size, size + 1, cin,
                    cin if depthwise else groups * int(rng.integers(1, 3)), (kernel, kernel),
                    stride, pads, dilation, cin if depthwise else groups)  # fmt: skip
        x = rng.integers(0, 256, (conv.batch, conv.height, conv.width, conv.channels))
        zero = int(rng.integers(0, 256))
        for g in range(conv.groups):
            a = implicit_a(conv, x, zero, g)
            assert a.shape == conv.gemm[:2]
            np.testing.assert_array_equal(a, _im2col(conv, x, zero, g), err_msg=str(conv))


def test_out_and_refusals():
    assert Conv(1, 224, 224, 3, 64, (7, 7), (2, 2), (3, 3, 3, 3)).out == (112, 112)
    assert Conv(1, 56, 56, 64, 64, (3, 3), (1, 1), (2, 2, 2, 2), (2, 2)).out == (56, 56)
    with pytest.raises(ValueError, match="groups = 3 must divide"):
        Conv(1, 4, 4, 4, 4, groups=3)
    with pytest.raises(ValueError, match="does not fit"):
        Conv(1, 2, 2, 1, 1, (3, 3))


def test_staged_rows_by_hand():
    # 3x3, stride 1, pad 1 on 4 rows of 5: output row 0 reads rows 0-1, row 1 rows 0-2, row 3
    # rows 2-3; the second image's rows follow
    conv = Conv(2, 4, 5, 8, 8, (3, 3), (1, 1), (1, 1, 1, 1))
    assert staged_rows(conv, 0, 5) == [(0, 0), (0, 1)]
    assert staged_rows(conv, 0, 10) == [(0, 0), (0, 1), (0, 2)]
    assert staged_rows(conv, 15, 25) == [(0, 2), (0, 3), (1, 0), (1, 1)]
    assert compulsory_bytes(conv) == 2 * 4 * 5 * 8
    # one chunk of everything stages each row once: the compulsory traffic
    assert staged_bytes(conv, conv.gemm[0]) == compulsory_bytes(conv)
    # chunks of one output row restage the rows their windows share: 2 + 3 + 3 + 2 rows a plane
    assert staged_bytes(conv, 5) == 2 * 10 * 5 * 8
