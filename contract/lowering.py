"""How the driver runs a convolution on a configuration: as the GEMM on its input, as an im2col
GEMM, or as convolution descriptors (docs/memory.md, "Convolutions"). The models, the sweeps and
the experiments read this one rule.

- A 1x1, stride-1, unpadded convolution *is* a GEMM on its input (``pixels x channels``): no
  im2col and no staging.
- On a device with a staging buffer (``stage_depth > 0``), a convolution becomes a convolution
  descriptor (its input staged a row at a time, :func:`contract.dma.staging`), except where
  staging reads more than the windows do: a strided 1x1 (its windows skip rows and columns,
  staging reads them all) and channels filling less than half a slice (the RGB stem: K would be
  mostly padded lanes). Those, a descriptor the device would refuse (a field past its range),
  and a convolution no chunk fits stay im2col GEMMs.
- Without a staging buffer every convolution is an im2col GEMM (its A built by the host in
  DRAM).
- Depthwise (``groups == channels == out_channels``): a descriptor per slice of A's tile
  of channels with block-diagonal weights (the array does the tile times the useful MACs; the
  input is read once), or, im2col, a GEMM per channel (``K = kh * kw``, ``N = 1``). Other groups:
  each group as its own groups-1 convolution.
- A convolution whose M (the batch's output pixels) is past a descriptor's field
  (:data:`contract.interface.DIM_BITS`) runs as descriptors of whole images, as few as fit
  (on a staging device; im2col GEMMs are split along M by the sweeps' driver).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

from .config import ArrayConfig
from .conv import Conv, device_gemm
from .dma import Refusal, check_descriptor, place, word_layout
from .interface import DIM_BITS

__all__ = ["Piece", "lower_conv"]


@dataclass(frozen=True)
class Piece:
    """Descriptors a convolution runs as, ``times`` alike: ``way`` (``"gemm"``, ``"im2col"``
    or ``"conv"``), the GEMM each computes (``gemm``), the convolution whose input it stages
    (``conv``; None when A is a matrix in DRAM), and ``useful``: a shape whose product is the
    convolution's multiply-accumulates the descriptor does (fewer than the GEMM's where
    channels are padded to slices or the weights are block-diagonal); ``diagonal``: its
    weights are block-diagonal (a depthwise slice: ``B[k, o]`` is the weights' zero point
    unless ``k % tile == o``, :func:`contract.conv.depthwise_slices`)."""

    way: str
    gemm: tuple[int, int, int]
    conv: Conv | None
    useful: tuple[int, int, int]
    times: int = 1
    diagonal: bool = False


@functools.lru_cache(maxsize=4096)  # a network's layers repeat, and every point asks
def lower_conv(config: ArrayConfig, conv: Conv, requant: bool = False) -> tuple[Piece, ...]:
    """The descriptors ``conv`` runs as on ``config`` (see the module), with the outputs
    requantized where ``requant`` (the chunks the driver chooses depend on it)."""
    top = (1 << DIM_BITS) - 1
    per_image = conv.gemm[0] // conv.batch
    if config.stage_depth and conv.gemm[0] > top and per_image <= top:
        parts = -(-conv.batch // (top // per_image))
        base, extra = divmod(conv.batch, parts)  # `extra` pieces an image larger
        out: list[Piece] = []
        for images, times in ((base + 1, extra), (base, parts - extra)):
            if times:
                out += [
                    replace(p, times=p.times * times)
                    for p in lower_conv(config, replace(conv, batch=images), requant)
                ]
        return tuple(out)
    tile = word_layout(config, "a").tile
    if conv.groups == conv.channels == conv.out_channels and conv.groups > 1:
        kk = conv.kernel[0] * conv.kernel[1]
        pieces = []
        for c0 in range(0, conv.channels, tile):
            n = min(tile, conv.channels - c0)
            part = replace(conv, channels=n, out_channels=n, groups=1)
            if not _stages(config, part, requant):
                return (Piece("im2col", conv.gemm, None, conv.gemm, conv.channels),)
            useful = (part.gemm[0], kk, n)
            if pieces and pieces[-1].conv == part:
                pieces[-1] = replace(pieces[-1], times=pieces[-1].times + 1)
            else:
                pieces.append(Piece("conv", device_gemm(part, tile), part, useful,
                                    diagonal=True))  # fmt: skip
        return tuple(pieces)
    if conv.groups > 1:
        one = replace(conv, channels=conv.channels // conv.groups,
                      out_channels=conv.out_channels // conv.groups, groups=1)  # fmt: skip
        return tuple(replace(p, times=p.times * conv.groups)
                     for p in lower_conv(config, one, requant))  # fmt: skip
    kernel_one = conv.kernel == (1, 1) and not any(conv.pads)
    if kernel_one and conv.stride == (1, 1):
        return (Piece("gemm", conv.gemm, None, conv.gemm),)
    if not kernel_one and conv.channels * 2 >= tile and _stages(config, conv, requant):
        return (Piece("conv", device_gemm(conv, tile), conv, conv.gemm),)
    return (Piece("im2col", conv.gemm, None, conv.gemm),)


def _stages(config: ArrayConfig, conv: Conv, requant: bool) -> bool:
    """Whether ``config`` runs ``conv`` as a convolution descriptor: it has a staging buffer,
    a chunk fits, and the device takes the descriptor."""
    if not config.stage_depth:
        return False
    try:
        d = place(
            config, *device_gemm(conv, word_layout(config, "a").tile), conv=conv, requant=requant
        )
    except ValueError:  # no chunk fits the banks and the staging buffer
        return False
    return check_descriptor(config, d)[0] is Refusal.NONE
