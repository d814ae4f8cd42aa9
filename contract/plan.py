"""Chunks of a GEMM: the sizes that fit the buffers, and the plan the compute model sums.

A GEMM larger than the buffers is split into chunks that fit one bank of each; chunks along K
accumulate in C. The driver picks the sizes with :func:`chunk_sizes` and writes them into the
descriptor (the device's sequencer walks them in the descriptor's loop order,
:func:`contract.dma.jobs`); :func:`steps` is that walk in the order ``nmk`` with the operands a
chunk needs loaded, which the compute-only model (models/cycles.py) and the toggle model sum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .checks import is_integer
from .config import ArrayConfig
from .conv import Conv, device_gemm, slices, stage, stage_bound
from .layouts import footprint, layouts
from .memory import container_bytes

__all__ = [
    "Chunk",
    "conv_chunk_sizes",
    "Step",
    "chunk_sizes",
    "granularity",
    "plan",
    "steps",
]


@dataclass(frozen=True)
class Chunk:
    """One chunk: ``C[m0:m1, n0:n1] (+)= A[m0:m1, k0:k1] @ B[k0:k1, n0:n1]`` of a GEMM whose
    reduction length is ``k_total``."""

    m0: int
    m1: int
    k0: int
    k1: int
    n0: int
    n1: int
    k_total: int

    @property
    def accumulate(self) -> bool:
        """Chunks after the first along K add to what C holds."""
        return self.k0 > 0

    @property
    def last_k(self) -> bool:
        """C holds the finished outputs of this chunk's rows and columns after it."""
        return self.k1 == self.k_total

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.m1 - self.m0, self.k1 - self.k0, self.n1 - self.n0


def granularity(config: ArrayConfig) -> dict[str, int]:
    """Chunk sizes stay multiples of the tile along each dimension an operand's words run along
    (A is ``m x k``, B is ``k x n``; a row-wise word runs along the column dimension)."""
    size = {"m": 1, "k": 1, "n": 1}
    lay = layouts(config)
    for buf, (row_dim, col_dim) in (("a", ("m", "k")), ("b", ("k", "n"))):
        size[col_dim if lay[buf].rowwise else row_dim] = lay[buf].tile
    return size


def chunk_sizes(config: ArrayConfig, m: int, k: int, n: int) -> dict[str, int]:
    """The largest chunk (halving the dimension that overflows most) that fits every buffer."""
    for name, value in (("M", m), ("K", k), ("N", n)):
        if not is_integer(value) or value < 1:
            raise ValueError(f"GEMM dimension {name} must be a positive integer, not {value!r}")
    depth = {"a": config.a_depth, "b": config.b_depth, "c": config.c_depth}
    uses = {"a": ("m", "k"), "b": ("k", "n"), "c": ("m", "n")}
    g = granularity(config)
    size = {"m": m, "k": k, "n": n}
    while True:
        need = footprint(config, size["m"], size["k"], size["n"])
        over = [buf for buf in need if need[buf] > depth[buf]]
        if not over:
            return size
        worst = max(over, key=lambda buf: need[buf] / depth[buf])
        shrinkable = [d for d in uses[worst] if size[d] > g[d]]
        if not shrinkable:
            minimum = footprint(config, g["m"], g["k"], g["n"])[worst]
            raise ValueError(
                f"{worst}_depth = {depth[worst]} words cannot hold one tile of this GEMM; "
                f"the {config.dataflow.value} array needs {worst}_depth >= {minimum}"
            )
        dim = max(shrinkable, key=lambda d: size[d] / g[d])
        size[dim] = max(g[dim], math.ceil(size[dim] / 2 / g[dim]) * g[dim])


def conv_chunk_sizes(config: ArrayConfig, conv: Conv) -> dict[str, int]:
    """The chunk sizes of a convolution on the device (loop order ``nmk``): among those the
    device takes (:func:`contract.conv.check_conv`: whole output rows tiling the images, whole
    slices; multiples of the tiles, :func:`granularity`, unless a whole dimension) that fit the
    banks and the staging buffer, the one that moves the fewest DRAM bytes (larger chunks on a
    tie)."""
    tile = layouts(config)["a"].tile
    m, k, n = device_gemm(conv, tile)
    oh, ow = conv.out
    per_slice = conv.kernel[0] * conv.kernel[1] * tile
    rows = [r for r in range(1, oh + 1) if oh % r == 0]
    rows += [q * oh for q in range(2, conv.batch + 1)]
    g = granularity(config)
    ncs = sorted({min(n, max(g["n"], -(-n // 2**i // g["n"]) * g["n"])) for i in range(12)})
    depth = {"a": config.a_depth, "b": config.b_depth, "c": config.c_depth}
    cont = {b: container_bytes(word.bits) for b, word in layouts(config).items()}
    best = None
    for r in rows:
        mc = r * ow
        if mc % g["m"] and mc < m:
            continue
        staged = sum(stage(conv, tile, m0, min(m, m0 + mc), 0, k)[3]
                     - stage(conv, tile, m0, min(m, m0 + mc), 0, k)[2]
                     for m0 in range(0, m, mc))  # fmt: skip
        for j in range(1, slices(conv, tile) + 1):
            kc = j * per_slice
            if stage_bound(conv, tile, mc, kc) > config.stage_depth:
                break
            if kc % g["k"] and kc < k:
                continue
            for nc in ncs:
                need = footprint(config, min(mc, m), kc, nc)
                if any(need[b] > depth[b] for b in "abc"):
                    continue
                mchunks, kchunks, nchunks = -(-m // mc), -(-k // kc), -(-n // nc)
                a = staged * slices(conv, tile) * (nchunks if mchunks * kchunks > 1 else 1)
                b = layouts(config)["b"].words((k, n)) * (mchunks if kchunks > 1 else 1)
                moved = a * cont["a"] + b * cont["b"]
                key = (moved, -mc, -kc, -nc)
                if best is None or key < best[0]:
                    best = (key, {"m": min(mc, m), "k": kc, "n": nc})
    if best is None:
        raise ValueError(f"no chunk of {conv} fits the banks and stage_depth = "
                         f"{config.stage_depth}: an M chunk is whole output rows of {ow} pixels "
                         f"dividing the image's {oh} rows (or whole images), a multiple of "
                         f"{g['m']} pixels unless all of M, and a K chunk whole slices of "
                         f"{per_slice}; one output row of one slice stages "
                         f"{stage_bound(conv, tile, ow, per_slice)} words")  # fmt: skip
    return best[1]


@dataclass(frozen=True)
class Step:
    """One chunk of a GEMM and the transfers around it: the operand chunks it loads first (a
    chunk the bank already holds stays) and whether C leaves after it."""

    chunk: Chunk
    write_a: bool
    write_b: bool

    @property
    def read_c(self) -> bool:
        return self.chunk.last_k


def steps(config: ArrayConfig, m: int, k: int, n: int) -> list[Step]:
    """The driver's steps for an ``m x k x n`` GEMM, in :func:`plan` order."""
    out = []
    resident_a = resident_b = None
    for ch in plan(config, m, k, n):
        key_a, key_b = (ch.m0, ch.m1, ch.k0, ch.k1), (ch.k0, ch.k1, ch.n0, ch.n1)
        out.append(Step(ch, write_a=key_a != resident_a, write_b=key_b != resident_b))
        resident_a, resident_b = key_a, key_b
    return out


def plan(config: ArrayConfig, m: int, k: int, n: int) -> list[Chunk]:
    """The chunks of an ``m x k x n`` GEMM, N chunks outermost, then M, then K."""
    size = chunk_sizes(config, m, k, n)
    chunks = []
    for n0 in range(0, n, size["n"]):
        for m0 in range(0, m, size["m"]):
            for k0 in range(0, k, size["k"]):
                chunks.append(
                    Chunk(m0, min(m, m0 + size["m"]), k0, min(k, k0 + size["k"]), n0,
                          min(n, n0 + size["n"]), k)
                )  # fmt: skip
    return chunks
