"""The host's plan of a GEMM: the chunks it splits it into, the commands and the transfers.

A GEMM larger than the buffers is split into chunks that fit them, the way a driver moves tiles
between DRAM and the buffers; chunks along K accumulate in C. The simulation driver
(tb/accelerator_tb.py) and the analytical model read these same functions, so the chunk plan
exists once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .checks import is_integer
from .config import ArrayConfig
from .interface import ADDR_BITS, DIM_BITS
from .layouts import footprint, layouts

__all__ = [
    "Chunk",
    "Step",
    "c_read_requests",
    "check_command",
    "chunk_sizes",
    "granularity",
    "plan",
    "q_words",
    "steps",
]


@dataclass(frozen=True)
class Chunk:
    """One command: ``C[m0:m1, n0:n1] (+)= A[m0:m1, k0:k1] @ B[k0:k1, n0:n1]`` of a GEMM whose
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


@dataclass(frozen=True)
class Step:
    """One command of a GEMM and the host transfers around it: the operand chunks it writes
    first (a driver keeps a chunk the buffer already holds) and whether it reads C after."""

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
    """The commands of an ``m x k x n`` GEMM, N chunks outermost, then M, then K."""
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


def check_command(
    config: ArrayConfig, m: int, k: int, n: int, a_base: int = 0, b_base: int = 0, c_base: int = 0
) -> None:
    """Refuse, with a message naming the field, a command the accelerator cannot execute."""
    dim_max = (1 << DIM_BITS) - 1
    for name, value in (("m", m), ("k", k), ("n", n)):
        if not is_integer(value) or not 1 <= value <= dim_max:
            raise ValueError(
                f"command field {name} must be an integer in 1..{dim_max}, not {value!r}"
            )
    need = footprint(config, m, k, n)
    for buf, base in (("a", a_base), ("b", b_base), ("c", c_base)):
        depth = getattr(config, f"{buf}_depth")
        top = (1 << ADDR_BITS) - 1
        if not is_integer(base) or not 0 <= base <= top:
            raise ValueError(
                f"command field {buf}_base must be an integer in 0..{top}, not {base!r}"
            )
        if base + need[buf] > depth:
            raise ValueError(
                f"command needs {need[buf]} words of the {buf.upper()} buffer from {buf}_base = "
                f"{base}, past its end ({buf}_depth = {depth})"
            )


# -- requantization: the parameter buffer and the C reads that use it --------------------------


def q_words(config: ArrayConfig, multiplier, shift) -> list[list[dict]]:
    """Per-channel parameters as words of the Q buffer: word ``w`` holds channels
    ``w*cols .. w*cols+cols-1`` (zeros past the last channel)."""
    multiplier = np.asarray(multiplier, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    cols = config.cols
    words = []
    for w in range(math.ceil(len(multiplier) / cols)):
        lanes = []
        for j in range(cols):
            ch = w * cols + j
            inside = ch < len(multiplier)
            lanes.append({"multiplier": int(multiplier[ch]) if inside else 0,
                          "shift": int(shift[ch]) if inside else 0})  # fmt: skip
        words.append(lanes)
    return words


def c_read_requests(config: ArrayConfig, chunk: Chunk) -> list[dict]:
    """For each C word of ``chunk``, in address order, where its output channels' parameters
    are: ``q_addr`` and, when every element shares one channel (IS: a word runs along M),
    ``q_broadcast`` with that channel's ``q_lane``. Chunks along N start at a multiple of
    ``cols`` in WS and OS, so a word's channels are one whole Q word there."""
    mc, _, nc = chunk.shape
    lay = layouts(config)["c"]
    cols = config.cols
    requests = []
    if lay.rowwise:  # word (t, i) = C[i, t*cols : t*cols+cols] at address t * mc + i
        for t in range(math.ceil(nc / cols)):
            for _ in range(mc):
                requests.append({"q_addr": (chunk.n0 + t * cols) // cols, "q_lane": 0,
                                 "q_broadcast": 0})  # fmt: skip
    else:  # word (t, n) = C[t*cols : t*cols+cols, n] at address t * nc + n: one channel
        for _ in range(math.ceil(mc / cols)):
            for n in range(nc):
                ch = chunk.n0 + n
                requests.append({"q_addr": ch // cols, "q_lane": ch % cols, "q_broadcast": 1})
    return requests
