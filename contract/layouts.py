"""How matrices lie in the accelerator's buffers: one word is one array-edge vector.

The one table of buffer words: which dimension a word of A, B or C runs along, how many
elements it holds, and their width. The generator sizes its memories from it, the host's plan
and the simulation driver pack matrices with it, and the energy model prices accesses by it.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from .config import ArrayConfig, Dataflow

__all__ = ["BufferWord", "footprint", "from_words", "input_word", "layouts", "to_words"]


@dataclass(frozen=True)
class BufferWord:
    """A buffer word: ``tile`` consecutive elements of ``width`` bits (two's complement when
    ``signed``), and how a matrix lies in such words.

    ``rowwise``: word ``(t, i) = mat[i, t*tile : t*tile+tile]`` at address ``t * rows(mat) + i``;
    otherwise word ``(t, j) = mat[t*tile : t*tile+tile, j]`` at ``t * cols(mat) + j``. The last
    word of a ragged tile is zero-padded.
    """

    tile: int
    rowwise: bool
    width: int = 0
    signed: bool = False

    @property
    def bits(self) -> int:
        """Bits of one word."""
        return self.tile * self.width

    def words(self, shape: tuple[int, int]) -> int:
        """Words a ``shape`` matrix takes."""
        rows, cols = shape
        if self.rowwise:
            return math.ceil(cols / self.tile) * rows
        return math.ceil(rows / self.tile) * cols


def layouts(config: ArrayConfig) -> dict[str, BufferWord]:
    """The words of the A, B and C buffers of ``config`` (derivations in rtl.controller).

    - WS: A along K (``rows`` long, a row of A per word), B along N (``cols``), C along N;
    - IS: A along M (``cols``, a column of A), B along K (``rows``), C along M;
    - OS: A along M (``rows``), B along N (``cols``), C along N.

    A and B at their operand widths, C at the accumulator width.
    """
    return dict(_layouts(config))


@functools.lru_cache(maxsize=1024)  # the models ask for them per chunk and per transfer
def _layouts(config: ArrayConfig) -> tuple[tuple[str, BufferWord], ...]:
    r, c = config.rows, config.cols
    tiles = {
        Dataflow.WS: ((r, True), (c, True), (c, True)),
        Dataflow.IS: ((c, False), (r, False), (c, False)),
        Dataflow.OS: ((r, False), (c, True), (c, True)),
    }[config.dataflow]
    elements = (
        (config.a_width, config.a_signed),
        (config.b_width, config.b_signed),
        (config.acc_width, config.c_signed),
    )
    return tuple(
        (name, BufferWord(tile, rowwise, width, signed))
        for name, (tile, rowwise), (width, signed) in zip("abc", tiles, elements, strict=True)
    )


def input_word(config: ArrayConfig) -> BufferWord:
    """The words of a convolution's input in DRAM and in the staging buffer (contract.conv):
    one slice of an A word's ``tile`` channels of one pixel, whatever the dataflow (WS's A word
    itself; OS and IS expand them into A words of ``tile`` pixels of one channel)."""
    a = layouts(config)["a"]
    return BufferWord(a.tile, True, a.width, a.signed)


def to_words(mat: np.ndarray, layout: BufferWord) -> np.ndarray:
    """``mat`` as buffer words: an array of shape ``(words, tile)``, in address order."""
    mat = np.asarray(mat)
    if not layout.rowwise:
        return to_words(mat.T, BufferWord(layout.tile, True))
    rows, cols = mat.shape
    tiles = math.ceil(cols / layout.tile)
    padded = np.zeros((rows, tiles * layout.tile), dtype=mat.dtype)
    padded[:, :cols] = mat
    # (rows, tiles, tile) -> (tiles, rows, tile): tile-major, then row.
    return padded.reshape(rows, tiles, layout.tile).transpose(1, 0, 2).reshape(-1, layout.tile)


def from_words(words: np.ndarray, layout: BufferWord, shape: tuple[int, int]) -> np.ndarray:
    """Inverse of :func:`to_words`: the ``shape`` matrix held in ``words``."""
    if not layout.rowwise:
        return from_words(words, BufferWord(layout.tile, True), shape[::-1]).T
    rows, cols = shape
    tiles = math.ceil(cols / layout.tile)
    w = np.asarray(words).reshape(tiles, rows, layout.tile).transpose(1, 0, 2)
    return w.reshape(rows, tiles * layout.tile)[:, :cols]


def footprint(config: ArrayConfig, m: int, k: int, n: int) -> dict[str, int]:
    """Words each buffer needs for one command on an ``m x k x n`` GEMM."""
    lay = layouts(config)
    return {
        "a": lay["a"].words((m, k)),
        "b": lay["b"].words((k, n)),
        "c": lay["c"].words((m, n)),
    }
