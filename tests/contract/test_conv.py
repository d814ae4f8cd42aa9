"""contract/conv.py: a convolution's implicit A equals the im2col matrix built independently
(numpy's sliding windows over the padded, dilated input), for strides, pads, dilations, groups
and kernel sizes; and the staged rows' traffic against the compulsory."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view
from systolic.contract.config import ArrayConfig
from systolic.contract.conv import Conv, compulsory_bytes, implicit_a, staged_bytes, staged_rows

from tests.helpers import random_conv


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


# -- on the device --------------------------------------------------------------------------------


def test_each_chunk_stages_what_its_a_reads_and_no_more_than_its_bound(seed):
    """For random convolutions and every chunk size the device takes: every input element a
    chunk's A reads lies in the slices and rows it stages, the first and the last row staged are
    rows its windows read (:func:`staged_rows`, derived separately) unless the run is clipped
    to the plane's edge there (a window that starts in the padding may step over the plane's
    first rows: a stride or a dilation skips them), and the words staged stay within
    :func:`stage_bound`."""
    from systolic.contract.conv import chunk_rows, device_gemm, device_sources, stage, stage_bound

    rng = np.random.default_rng([seed, 2])
    print(f"seed {seed}")
    checked = 0
    for _ in range(12):
        conv = random_conv(rng, int(rng.choice([1, 3, 5])))
        tile = int(rng.integers(2, 5))
        m, k, _ = device_gemm(conv, tile)
        src = device_sources(conv, tile)
        per_slice = conv.kernel[0] * conv.kernel[1] * tile
        oh, ow = conv.out
        for mc in [r * ow for r in range(1, m // ow + 1) if chunk_rows(conv, r * ow)]:
            for kc in range(per_slice, k + 1, per_slice):
                for m0 in range(0, m, mc):
                    for k0 in range(0, k, kc):
                        m1, k1 = min(m, m0 + mc), min(k, k0 + kc)
                        s0, s1, p0, p1 = stage(conv, tile, m0, m1, k0, k1)
                        assert (s1 - s0) * (p1 - p0) <= stage_bound(conv, tile, mc, kc)
                        read = src[m0:m1, k0:k1]
                        read = read[read >= 0]
                        pixel, channel = read // conv.channels, read % conv.channels
                        assert np.all((pixel >= p0) & (pixel < p1)), (conv, tile, m0, mc)
                        assert np.all((channel // tile >= s0) & (channel // tile < s1))
                        rows = [i * conv.height + y for i, y in staged_rows(conv, m0, m1)]
                        lo, hi = p0 // conv.width, p1 // conv.width - 1
                        if rows:  # tight, but where the run is clipped to a plane's edge
                            assert rows[0] == lo or lo % conv.height == 0, (conv, m0, m1)
                            assert rows[-1] == hi or hi % conv.height == conv.height - 1
                        checked += 1
    assert checked > 50
    print(f"{checked} chunks checked")


def test_the_device_refuses_what_it_cannot_run():
    from systolic.contract.config import ArrayConfig
    from systolic.contract.conv import device_gemm
    from systolic.contract.dma import Refusal, check_descriptor, place

    config = ArrayConfig("ws", 4, 4, stage_depth=256)
    conv = Conv(1, 8, 8, 8, 4, (3, 3), (1, 1), (1, 1, 1, 1))
    gemm = device_gemm(conv, 4)
    assert gemm == (64, 72, 4)

    def why(chunk=None, c=conv, g=gemm, cfg=config):
        return check_descriptor(cfg, place(cfg, *g, conv=c, chunk=chunk))

    assert why() == (Refusal.NONE, "")
    assert why((24, 36, 4)) == (
        Refusal.CONV,
        "mc = 24 must be whole output rows of 8 pixels "
        "that tile each image (a divisor of OH = 8 rows) or whole images",
    )
    assert why((16, 24, 4)) == (Refusal.CONV, "kc = 24 must be whole slices of K, multiples of 36")
    # four output rows read six input rows of 8 pixels, 2 slices: 96 words
    assert why((32, 72, 4), cfg=ArrayConfig("ws", 4, 4, stage_depth=95)) == (
        Refusal.CONV,
        "a chunk stages up to 96 words, past stage_depth = 95",
    )
    assert why(g=(64, 64, 4), chunk=(8, 32, 4))[0] is Refusal.CONV
    assert why((8, 72, 4), cfg=ArrayConfig("ws", 4, 4)) == (
        Refusal.CONV,
        "a convolution needs a staging buffer (stage_depth > 0)",
    )
    grouped = Conv(1, 8, 8, 8, 4, (3, 3), groups=2)
    assert why(c=grouped, g=device_gemm(grouped, 4), chunk=(6, 36, 2))[1].startswith("groups = 2")


@pytest.mark.parametrize("dataflow", ["ws", "os", "is"])
def test_a_convolution_input_is_checked_in_its_own_words(dataflow):
    """The input's region holds slices of a pixel's channels on every dataflow (OS and IS A
    words hold pixels): a 2x2 input of 10 channels has 4 pixels a tile row, whatever A's
    words are, so the driver's placement is accepted and its span is the input's."""
    from systolic.contract.conv import device_gemm
    from systolic.contract.dma import Refusal, check_descriptor, containers, place, spans

    rows, cols = (4, 2) if dataflow == "is" else (4, 5)  # a slice: 4 channels (IS: cols, 2)
    config = ArrayConfig(dataflow, rows, cols, stage_depth=64)
    tile = 2 if dataflow == "is" else 4
    conv = Conv(1, 2, 2, 10, 4, (1, 1), pads=(1, 1, 1, 1))
    d = place(config, *device_gemm(conv, tile), conv=conv)
    assert check_descriptor(config, d)[0] is Refusal.NONE
    first, past = spans(config, d)["a"]
    slices = -(-10 // tile)  # each a tile row of the 4 pixels
    assert past - first == (slices - 1) * d.a.stride + 4 * containers(config)["a"]
