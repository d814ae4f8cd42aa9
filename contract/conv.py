"""A convolution as an implicit GEMM: the geometry the DMA's staging and expansion, the models
and the driver share (docs/memory.md, "Convolutions").

An NHWC input ``N x H x W x C`` (a byte an element), an ``O x kh x kw x C/groups`` kernel,
strides, padding and dilation. Group ``g``'s GEMM is ``A_g[M, K] @ B_g[K, N]`` with ``M = N *
OH * OW`` output pixels (image, row, column order), ``K = kh * kw * C/groups`` ordered (kernel
row, kernel column, channel) with the channel fastest (so a run of K is a run of one input
pixel's channels, contiguous in NHWC), and ``N = O/groups``. An element of ``A_g`` is an input
element or, where the window leaves the plane, padding (the input's zero point).

*Staged rows*: the input rows ``(image, iy)`` a stretch of output pixels reads, which an on-chip
expander would fetch once per chunk instead of once per A word; their bytes against the
compulsory traffic (each input element once) is the reuse the design can reach.

*On the device* (WS; :func:`device_gemm` and below): the input is the ``pixels x channels``
matrix (``N * H * W`` pixels in image, row, column order) laid out as a WS A operand, words of
``rows`` channels of one pixel, slice ``s`` (channels ``s * rows ..``) a tile row of its own:
the layout in which a WS layer stores its C (with ``cols == rows``), so layers chain without the
host touching activations. K runs over (channel slice, kernel row, kernel column, channel in the
slice), the channels padded to whole slices: a word of A is one slice of one input pixel, and a
chunk of whole slices reads whole slices. Padded channel lanes hold 0 in DRAM and meet weight
rows of the weights' zero point (or 0), so they add nothing. For each chunk the DMA stages the
input rows its output rows' windows read (every slice of the chunk, each row once) and an
expander writes the A words from them, padding with the input's zero point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .checks import check_integer
from .interface import DIM_BITS

__all__ = [
    "CONV_LIMITS",
    "Conv",
    "a_sources",
    "check_conv",
    "chunk_rows",
    "compulsory_bytes",
    "depthwise_slices",
    "device_a",
    "device_gemm",
    "device_sources",
    "device_weights",
    "implicit_a",
    "input_matrix",
    "slices",
    "stage",
    "stage_bound",
    "staged_bytes",
    "staged_rows",
]


@dataclass(frozen=True)
class Conv:
    """One 2-D convolution's shape; ``pads`` are ``(top, left, bottom, right)``."""

    batch: int
    height: int
    width: int
    channels: int
    out_channels: int
    kernel: tuple[int, int] = (1, 1)
    stride: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1

    def __post_init__(self) -> None:
        for name in ("batch", "height", "width", "channels", "out_channels", "groups"):
            check_integer(name, getattr(self, name), 1)
        for name in ("kernel", "stride", "dilation"):
            for v in getattr(self, name):
                check_integer(name, v, 1)
        for v in self.pads:
            check_integer("pads", v, 0)
        if self.channels % self.groups or self.out_channels % self.groups:
            raise ValueError(f"groups = {self.groups} must divide channels = {self.channels} and "
                             f"out_channels = {self.out_channels}")  # fmt: skip
        if self.out[0] < 1 or self.out[1] < 1:
            raise ValueError(f"a {self.kernel} kernel (dilation {self.dilation}) does not fit a "
                             f"{self.height}x{self.width} plane with pads {self.pads}")  # fmt: skip

    @property
    def out(self) -> tuple[int, int]:
        """``(OH, OW)``."""
        (kh, kw), (sh, sw), (dh, dw) = self.kernel, self.stride, self.dilation
        top, left, bottom, right = self.pads
        return ((self.height + top + bottom - dh * (kh - 1) - 1) // sh + 1,
                (self.width + left + right - dw * (kw - 1) - 1) // sw + 1)  # fmt: skip

    @property
    def gemm(self) -> tuple[int, int, int]:
        """One group's ``(M, K, N)``."""
        oh, ow = self.out
        cin = self.channels // self.groups
        return (self.batch * oh * ow, self.kernel[0] * self.kernel[1] * cin,
                self.out_channels // self.groups)  # fmt: skip


def a_sources(conv: Conv, group: int = 0) -> np.ndarray:
    """Group ``group``'s A as indices into the flat NHWC input (``-1`` where padding)."""
    oh, ow = conv.out
    (kh, kw), (sh, sw), (dh, dw) = conv.kernel, conv.stride, conv.dilation
    top, left = conv.pads[0], conv.pads[1]
    cin = conv.channels // conv.groups
    img, oy, ox = np.meshgrid(np.arange(conv.batch), np.arange(oh), np.arange(ow), indexing="ij")
    ky, kx, c = np.meshgrid(np.arange(kh), np.arange(kw), np.arange(cin), indexing="ij")
    iy = oy.reshape(-1, 1) * sh - top + ky.reshape(1, -1) * dh
    ix = ox.reshape(-1, 1) * sw - left + kx.reshape(1, -1) * dw
    inside = (iy >= 0) & (iy < conv.height) & (ix >= 0) & (ix < conv.width)
    channel = group * cin + c.reshape(1, -1)
    flat = ((img.reshape(-1, 1) * conv.height + iy) * conv.width + ix) * conv.channels + channel
    return np.where(inside, flat, -1)


def implicit_a(conv: Conv, x, zero: int = 0, group: int = 0) -> np.ndarray:
    """Group ``group``'s A from the NHWC input ``x``, padding with ``zero`` (the input's zero
    point): what an address generator fetches and an expander writes, without an im2col copy."""
    x = np.asarray(x, dtype=np.int64)
    shape = (conv.batch, conv.height, conv.width, conv.channels)
    if x.shape != shape:
        raise ValueError(f"x must have shape {shape}, not {x.shape}")
    src = a_sources(conv, group)
    return np.where(src >= 0, x.reshape(-1)[np.maximum(src, 0)], zero)


def staged_rows(conv: Conv, m0: int, m1: int) -> list[tuple[int, int]]:
    """The input rows ``(image, iy)`` output pixels ``m0 .. m1 - 1`` read, in order."""
    oh, ow = conv.out
    kh, sh, dh, top = conv.kernel[0], conv.stride[0], conv.dilation[0], conv.pads[0]
    rows = set()
    first, last = m0 // ow, (m1 - 1) // ow  # output rows, counted over images
    for r in range(first, last + 1):
        img, oy = divmod(r, oh)
        for ky in range(kh):
            iy = oy * sh - top + ky * dh
            if 0 <= iy < conv.height:
                rows.add((img, iy))
    return sorted(rows)


def staged_bytes(conv: Conv, mc: int) -> int:
    """Input bytes fetched when every chunk of ``mc`` output pixels stages its rows once (all
    of one group's channels a row), over every group."""
    m = conv.gemm[0]
    row = conv.width * (conv.channels // conv.groups)
    per_group = sum(len(staged_rows(conv, m0, min(m, m0 + mc))) * row for m0 in range(0, m, mc))
    return per_group * conv.groups


def compulsory_bytes(conv: Conv) -> int:
    """Each input element once."""
    return math.prod((conv.batch, conv.height, conv.width, conv.channels))


# -- on the device -------------------------------------------------------------------------------

#: Largest value of each geometry field a convolution descriptor holds (its bits on the device).
CONV_LIMITS = {"kernel": 15, "stride": 7, "dilation": 7, "pads": 15}


def slices(conv: Conv, tile: int) -> int:
    """Channel slices of ``tile`` channels (the last zero-padded)."""
    return math.ceil(conv.channels / tile)


def device_gemm(conv: Conv, tile: int) -> tuple[int, int, int]:
    """The device's ``(M, K, N)``: K over whole slices of ``tile`` channels."""
    m, _, n = conv.gemm
    return m, conv.kernel[0] * conv.kernel[1] * slices(conv, tile) * tile, n


def device_sources(conv: Conv, tile: int) -> np.ndarray:
    """The device's A (groups 1) as indices into the flat NHWC input: ``-1`` where the window
    leaves the plane (the zero point), ``-2`` on a padded channel lane (0 in DRAM)."""
    oh, ow = conv.out
    (kh, kw), (sh, sw), (dh, dw) = conv.kernel, conv.stride, conv.dilation
    top, left = conv.pads[0], conv.pads[1]
    img, oy, ox = (v.reshape(-1, 1) for v in np.meshgrid(
        np.arange(conv.batch), np.arange(oh), np.arange(ow), indexing="ij"))  # fmt: skip
    s, ky, kx, c = (v.reshape(1, -1) for v in np.meshgrid(
        np.arange(slices(conv, tile)), np.arange(kh), np.arange(kw), np.arange(tile),
        indexing="ij"))  # fmt: skip
    iy, ix = oy * sh - top + ky * dh, ox * sw - left + kx * dw
    channel = s * tile + c
    inside = (iy >= 0) & (iy < conv.height) & (ix >= 0) & (ix < conv.width)
    flat = ((img * conv.height + iy) * conv.width + ix) * conv.channels + channel
    return np.where(channel >= conv.channels, -2, np.where(inside, flat, -1))


def device_a(conv: Conv, x, zero: int, tile: int) -> np.ndarray:
    """The A the device's expander builds from the NHWC input ``x`` (zero point ``zero``)."""
    x = np.asarray(x, dtype=np.int64)
    src = device_sources(conv, tile)
    return np.where(src >= 0, x.reshape(-1)[np.maximum(src, 0)], np.where(src == -1, zero, 0))


def device_weights(conv: Conv, w, tile: int, zero: int = 0) -> np.ndarray:
    """The device's B (``K x N``) from weights ``w`` shaped ``O x kh x kw x C`` (groups 1):
    rows of padded channel lanes hold ``zero`` (the weights' zero point), so they add nothing."""
    w = np.asarray(w, dtype=np.int64)
    kh, kw = conv.kernel
    shape = (conv.out_channels, kh, kw, conv.channels)
    if w.shape != shape:
        raise ValueError(f"w must have shape {shape} (O, kh, kw, C), not {w.shape}")
    s = slices(conv, tile)
    padded = np.full((conv.out_channels, kh, kw, s * tile), zero, dtype=np.int64)
    padded[..., : conv.channels] = w
    # K order: slice, kernel row, kernel column, channel in the slice
    return padded.reshape(conv.out_channels, kh, kw, s, tile).transpose(3, 1, 2, 4, 0).reshape(
        -1, conv.out_channels)  # fmt: skip


def input_matrix(conv: Conv, x) -> np.ndarray:
    """The NHWC input as the ``pixels x channels`` matrix the device reads (its DRAM image is a
    WS A operand's, :func:`contract.dma.image`)."""
    x = np.asarray(x)
    return x.reshape(conv.batch * conv.height * conv.width, conv.channels)


def chunk_rows(conv: Conv, mc: int) -> int | None:
    """Output rows of an M chunk of ``mc`` pixels, or None unless it is whole rows that tile
    each image (``R`` rows dividing OH) or whole images (a multiple of OH rows)."""
    oh, ow = conv.out
    if mc % ow:
        return None
    rows = mc // ow
    return rows if (rows <= oh and oh % rows == 0) or rows % oh == 0 else None


def stage_bound(conv: Conv, tile: int, mc: int, kc: int) -> int:
    """Words of the staging buffer a chunk of ``mc x kc`` may stage at most: its slices times
    the rows its output rows read (``(R - 1) * stride + span``, at most the plane; whole images
    for a chunk of whole images) times the row's pixels; :func:`stage` stages no more."""
    oh, _ = conv.out
    rows = chunk_rows(conv, mc)
    kh, sh, dh = conv.kernel[0], conv.stride[0], conv.dilation[0]
    per_slice = conv.kernel[0] * conv.kernel[1] * tile
    chunk_slices = kc // per_slice
    if rows <= oh:
        staged = min(conv.height, (rows - 1) * sh + (kh - 1) * dh + 1)
    else:
        staged = rows // oh * conv.height
    return chunk_slices * staged * conv.width


def stage(conv: Conv, tile: int, m0: int, m1: int, k0: int, k1: int) -> tuple[int, int, int, int]:
    """What a chunk stages: slices ``s0 .. s1 - 1`` and input pixels ``p0 .. p1 - 1`` (whole
    rows: from the first row its first output row's windows read to the last row its last
    output row's read, clipped to the plane, across images if it spans them)."""
    oh, ow = conv.out
    kh, sh, dh, top = conv.kernel[0], conv.stride[0], conv.dilation[0], conv.pads[0]
    per_slice = conv.kernel[0] * conv.kernel[1] * tile
    first, last = divmod(m0 // ow, oh), divmod((m1 - 1) // ow, oh)
    lo = first[0] * conv.height + min(max(first[1] * sh - top, 0), conv.height - 1)
    hi = last[0] * conv.height + min(max(last[1] * sh - top + (kh - 1) * dh, 0), conv.height - 1)
    return k0 // per_slice, (k1 - 1) // per_slice + 1, lo * conv.width, (hi + 1) * conv.width


def check_conv(conv: Conv, tile: int, gemm: tuple, chunk: tuple, stage_depth: int) -> str:
    """Why the device cannot run ``conv`` as the GEMM ``gemm = (m, k, n)`` in chunks ``chunk``
    (``""`` when it can): groups, a geometry field past :data:`CONV_LIMITS` (the top and left
    pads: the bottom and right are the output's size) or past DIM_BITS, an M or K that is not
    the convolution's (N is the descriptor's own), chunks that are not whole output rows tiling
    the images and whole slices, or a chunk whose staging overflows ``stage_depth`` words."""
    if conv.groups != 1:
        return f"groups = {conv.groups}: the device runs groups 1 (the driver splits groups)"
    for name, top in CONV_LIMITS.items():
        values = getattr(conv, name)[:2]  # bottom and right pads are the output's size
        if max(values) > top:
            return f"{name} = {getattr(conv, name)} must be at most {top} each"
    oh, ow = conv.out
    for name, value in (("batch", conv.batch), ("height", conv.height), ("width", conv.width),
                        ("channels", conv.channels), ("output height", oh),
                        ("output width", ow)):  # fmt: skip
        if value >= 1 << DIM_BITS:
            return f"{name} = {value} must be below {1 << DIM_BITS}"
    want = device_gemm(conv, tile)[:2]  # N is the descriptor's: the device holds no O
    if tuple(gemm[:2]) != want:
        return f"the GEMM's M and K {tuple(gemm[:2])} are not the convolution's {want}"
    mc, kc, _ = chunk
    oh, ow = conv.out
    if chunk_rows(conv, mc) is None:
        return (f"mc = {mc} must be whole output rows of {ow} pixels that tile each image "
                f"(a divisor of OH = {oh} rows) or whole images")  # fmt: skip
    per_slice = conv.kernel[0] * conv.kernel[1] * tile
    if kc % per_slice:
        return f"kc = {kc} must be whole slices of K, multiples of {per_slice}"
    need = stage_bound(conv, tile, mc, kc)
    if need > stage_depth:
        return f"a chunk stages up to {need} words, past stage_depth = {stage_depth}"
    return ""


def depthwise_slices(
    conv: Conv, x, w, tile: int, zero: int = 0
) -> list[tuple[Conv, object, object]]:
    """A depthwise convolution (``groups == channels == out_channels``, ``w`` shaped ``C x kh x
    kw x 1``) as the groups-1 convolutions the device runs, one a slice of ``tile`` channels:
    ``(conv, x, w)`` each, the slice's channels in and out, its weights block-diagonal (``zero``,
    the weights' zero point, off the diagonal, so those terms add nothing). The array does
    ``tile`` times the useful multiply-accumulates (most of them on zeros); the input is read
    once. A driver points
    each at its slice of one tensor (its tile row: same stride); here each gets its own."""
    if not conv.groups == conv.channels == conv.out_channels:
        raise ValueError(f"{conv} is not depthwise (groups = channels = out_channels)")
    x, w = np.asarray(x, dtype=np.int64), np.asarray(w, dtype=np.int64)
    if w.shape != (conv.channels, *conv.kernel, 1):
        raise ValueError(f"w must have shape {(conv.channels, *conv.kernel, 1)}, not {w.shape}")
    out = []
    for c0 in range(0, conv.channels, tile):
        n = min(tile, conv.channels - c0)
        part = Conv(conv.batch, conv.height, conv.width, n, n, conv.kernel, conv.stride,
                    conv.pads, conv.dilation)  # fmt: skip
        dense = np.full((n, *conv.kernel, n), zero, dtype=np.int64)
        for o in range(n):
            dense[o, :, :, o] = w[c0 + o, :, :, 0]
        out.append((part, x[..., c0 : c0 + n], dense))
    return out
