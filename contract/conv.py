"""A convolution as an implicit GEMM (issue 34's first step: the geometry the DMA's address
generator, the model and the driver will share; no hardware reads it yet).

An NHWC input ``N x H x W x C`` (a byte an element), an ``O x kh x kw x C/groups`` kernel,
strides, padding and dilation. Group ``g``'s GEMM is ``A_g[M, K] @ B_g[K, N]`` with ``M = N *
OH * OW`` output pixels (image, row, column order), ``K = kh * kw * C/groups`` ordered (kernel
row, kernel column, channel) with the channel fastest (so a run of K is a run of one input
pixel's channels, contiguous in NHWC), and ``N = O/groups``. An element of ``A_g`` is an input
element or, where the window leaves the plane, padding (the input's zero point).

*Staged rows*: the input rows ``(image, iy)`` a stretch of output pixels reads, which an on-chip
expander would fetch once per chunk instead of once per A word; their bytes against the
compulsory traffic (each input element once) is the reuse the design can reach.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .checks import check_integer

__all__ = ["Conv", "a_sources", "compulsory_bytes", "implicit_a", "staged_bytes", "staged_rows"]


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
