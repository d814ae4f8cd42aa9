"""The vector unit's descriptor, its checks and its walk: residual adds, elementwise max and
pooling on quantized NHWC tensors in DRAM (docs/vector.md), beside the array and through the
same descriptor queue.

A tensor is ``N x H x W x C`` bytes, dense, from its address (an element is the requantized
output's integer in a byte, two's complement or unsigned as the outputs are). The unit walks
*runs*: up to :data:`RUN_BEATS` bus beats of output, each computed from one or more *passes*
that read as many beats of input into its run buffer. An elementwise operator's run is a
stretch of the flat tensor, read from X and then from Y; a pooling run is a stretch of one
output pixel's channels, read once per input pixel its window covers (padding is never read:
the window is clipped to the plane). The RTL (rtl/vector.py), the model (models/vector.py) and
the driver (sim/) read this walk.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from .axi import ADDR_BITS
from .checks import is_integer
from .config import ArrayConfig, value_range
from .interface import DIM_BITS, MULTIPLIER_BITS, SHIFT_BITS, SHIFT_RANGE
from .refusal import Refusal

__all__ = [
    "ADD_LEFT_SHIFT",
    "AVERAGE_BITS",
    "DIVIDE_CYCLES",
    "POOL_BITS",
    "RUN_BEATS",
    "VECTOR_OPS",
    "Run",
    "VectorDescriptor",
    "check_vector",
    "for_tensor",
    "out_shape",
    "place_vector",
    "runs",
    "tensor_bytes",
    "vector_fields",
    "vector_values",
]

#: Operators by code: ``add`` (two tensors of different scales, TFLite's residual add),
#: ``max`` (elementwise, one scale), ``max_pool`` and ``average_pool`` (a global average pool is
#: an average pool whose window is the plane).
VECTOR_OPS = ("add", "max", "max_pool", "average_pool")
#: Bits the residual add shifts its 8-bit inputs left before scaling them (TFLite's 20).
ADD_LEFT_SHIFT = 20
#: Beats of the run buffer: the most output a run computes.
RUN_BEATS = 32
#: Bits of a window field (``pool_*``, ``stride_*``, ``pad_*``): windows up to 255 x 255.
POOL_BITS = 8
#: An average divides a sum of at most 2**AVERAGE_BITS (a byte times a window of at most
#: 2**16 elements, plus half the count): by multiplying with a reciprocal exact below that.
AVERAGE_BITS = 25
#: Cycles the unit takes to compute an average run's reciprocal, from the run's start (a
#: restoring division, a quotient bit a cycle); its writes wait for them.
DIVIDE_CYCLES = 1 + AVERAGE_BITS + 2 * POOL_BITS + 1


@dataclass(frozen=True)
class VectorDescriptor:
    """One vector operator: ``Z = op(X[, Y])`` on ``shape = (N, H, W, C)`` tensors at byte
    addresses ``x``, ``y`` and ``z``.

    Pooling takes ``window = (kh, kw)``, ``stride`` and ``pads = (top, left)`` and writes
    ``out = (OH, OW)`` pixels per image (bottom and right padding follow from them); ``add``
    takes each input's zero point, Q31 multiplier and shift and the output's multiplier and shift
    (:class:`golden.vector.AddParams`). Every operator adds ``out_zero`` (``add``) and clamps to
    ``clamp = (lo, hi)`` or, with None, to the output range.
    """

    op: str
    shape: tuple[int, int, int, int]
    x: int
    y: int = 0
    z: int = 0
    window: tuple[int, int] = (1, 1)
    stride: tuple[int, int] = (1, 1)
    pads: tuple[int, int] = (0, 0)
    out: tuple[int, int] = (0, 0)
    x_zero: int = 0
    x_multiplier: int = 0
    x_shift: int = 0
    y_zero: int = 0
    y_multiplier: int = 0
    y_shift: int = 0
    z_multiplier: int = 0
    z_shift: int = 0
    out_zero: int = 0
    clamp: tuple[int, int] | None = None

    @property
    def op_code(self) -> int:
        return VECTOR_OPS.index(self.op) if self.op in VECTOR_OPS else len(VECTOR_OPS)

    @property
    def pooling(self) -> bool:
        return self.op in ("max_pool", "average_pool")


def out_shape(v: VectorDescriptor) -> tuple[int, int, int, int]:
    """Z's shape: X's for an elementwise operator, ``N x OH x OW x C`` for pooling."""
    n, h, w, c = v.shape
    return (n, *v.out, c) if v.pooling else (n, h, w, c)


def tensor_bytes(shape) -> int:
    return math.prod(shape)


_GEOMETRY = (("batch", DIM_BITS), ("height", DIM_BITS), ("width", DIM_BITS),
             ("channels", DIM_BITS), ("out_h", DIM_BITS), ("out_w", DIM_BITS),
             ("pool_h", POOL_BITS), ("pool_w", POOL_BITS), ("stride_h", POOL_BITS),
             ("stride_w", POOL_BITS), ("pad_top", POOL_BITS), ("pad_left", POOL_BITS))  # fmt: skip


def vector_fields(config: ArrayConfig) -> list[tuple[str, int]]:
    """The fields a vector descriptor sets, ``(name, bits)``: its own, then those it shares with
    a GEMM's (X, Y and Z at ``a_addr``, ``b_addr`` and ``c_addr``; the output zero point and
    the clamp); none without the unit."""
    if not config.vector:
        return []
    out = config.out_width
    fields = [("vector", 1), ("op", 2), *_GEOMETRY]
    for t in "xyz":
        if t != "z":
            fields.append((f"{t}_zero", out))
        fields += [(f"{t}_multiplier", MULTIPLIER_BITS), (f"{t}_shift", SHIFT_BITS)]
    shared = [("a_addr", ADDR_BITS), ("b_addr", ADDR_BITS), ("c_addr", ADDR_BITS),
              ("out_zero", out), ("clamp", 1), ("clamp_lo", out), ("clamp_hi", out)]  # fmt: skip
    return fields + shared


def vector_values(config: ArrayConfig, v: VectorDescriptor) -> dict[str, int]:
    """The fields of :func:`vector_fields` for ``v`` (the clamp's bounds must lie in the output
    range, the only values its fields hold)."""
    top = value_range(config.out_width, config.out_signed)
    lo, hi = top if v.clamp is None else v.clamp
    inside = is_integer(lo) and is_integer(hi) and top[0] <= min(lo, hi) <= max(lo, hi) <= top[1]
    if v.clamp is not None and not inside:
        raise ValueError(f"clamp = {v.clamp!r} must lie in the output range [{top[0]}, {top[1]}]")
    n, h, w, c = v.shape
    values = {"vector": 1, "op": v.op_code, "batch": n, "height": h, "width": w, "channels": c,
              "out_h": v.out[0], "out_w": v.out[1], "pool_h": v.window[0],
              "pool_w": v.window[1], "stride_h": v.stride[0], "stride_w": v.stride[1],
              "pad_top": v.pads[0], "pad_left": v.pads[1], "a_addr": v.x, "b_addr": v.y,
              "c_addr": v.z, "out_zero": v.out_zero, "clamp": int(v.clamp is not None),
              "clamp_lo": lo, "clamp_hi": hi}  # fmt: skip
    for t in "xyz":
        if t != "z":
            values[f"{t}_zero"] = getattr(v, f"{t}_zero")
        for f in ("multiplier", "shift"):
            values[f"{t}_{f}"] = getattr(v, f"{t}_{f}")
    return {name: values[name] for name, _ in vector_fields(config)}


def check_vector(config: ArrayConfig, v: VectorDescriptor) -> tuple[Refusal, str]:
    """The refusal the device gives ``v`` (``Refusal.NONE`` when it runs it), and why; the
    device checks in this order."""
    if v.op not in VECTOR_OPS:
        return Refusal.MODE, f"op must be one of {', '.join(VECTOR_OPS)}, not {v.op!r}"
    if v.clamp is not None and v.clamp[0] > v.clamp[1]:
        return Refusal.CLAMP, f"clamp = {v.clamp!r} must have its low bound at most its high"
    top = (1 << DIM_BITS) - 1
    for name, value in zip(("batch", "height", "width", "channels"), v.shape, strict=True):
        if not is_integer(value) or not 1 <= value <= top:
            return Refusal.DIMENSION, f"{name} must be in 1..{top}, not {value!r}"
    if v.pooling:
        problem = _window_problem(v)
        if problem:
            return Refusal.WINDOW, problem
    bus = config.bus_width // 8
    if v.shape[3] % bus:
        return Refusal.ALIGNMENT, (f"channels = {v.shape[3]} must be a multiple of the bus's "
                                   f"{bus} bytes (a pixel is whole beats)")  # fmt: skip
    for name, addr, _ in _tensors(v):
        if not is_integer(addr) or not 0 <= addr < 1 << ADDR_BITS or addr % bus:
            return Refusal.ALIGNMENT, (f"{name} = {addr!r} must be a multiple of {bus} bytes "
                                       f"in the {ADDR_BITS}-bit address space")  # fmt: skip
    for name, addr, shape in _tensors(v):
        if addr + tensor_bytes(shape) > 1 << ADDR_BITS:
            return Refusal.RANGE, f"{name}'s tensor reaches past the {ADDR_BITS}-bit address space"
    return Refusal.NONE, ""


def _window_problem(v: VectorDescriptor) -> str:
    """Why a pooling window does not fit (every output pixel's window must cover an input)."""
    top = (1 << POOL_BITS) - 1
    named = (("pool_h", v.window[0]), ("pool_w", v.window[1]), ("stride_h", v.stride[0]),
             ("stride_w", v.stride[1]))  # fmt: skip
    for name, value in named:
        if not is_integer(value) or not 1 <= value <= top:
            return f"{name} must be in 1..{top}, not {value!r}"
    for name, value, window in (("pad_top", v.pads[0], v.window[0]),
                                ("pad_left", v.pads[1], v.window[1])):  # fmt: skip
        if not is_integer(value) or not 0 <= value < window:
            return f"{name} must be in 0..{window - 1} (below the window), not {value!r}"
    for name, value, size, stride, pad in (
        ("out_h", v.out[0], v.shape[1], v.stride[0], v.pads[0]),
        ("out_w", v.out[1], v.shape[2], v.stride[1], v.pads[1]),
    ):
        most = (size + pad - 1) // stride + 1  # the last window must start inside the plane
        if not is_integer(value) or not 1 <= value <= min(most, (1 << DIM_BITS) - 1):
            return f"{name} must be in 1..{most} (windows that cover the input), not {value!r}"
    return ""


def _tensors(v: VectorDescriptor) -> list[tuple[str, int, tuple]]:
    """``(field, address, shape)`` of every tensor ``v`` reads or writes."""
    out = [("a_addr (X)", v.x, v.shape)]
    if not v.pooling:
        out.append(("b_addr (Y)", v.y, v.shape))
    return out + [("c_addr (Z)", v.z, out_shape(v))]


def check_params(v: VectorDescriptor, config: ArrayConfig) -> None:
    """Refuse values the descriptor's fields cannot hold (a driver's error, before any register
    is written: the device would see them cut to their bits), naming the field and its range;
    and shifts that scale up (the add's scalings take multipliers below one, as TFLite's)."""
    geometry = dict(zip(("batch", "height", "width", "channels"), v.shape, strict=True))
    geometry |= {"out_h": v.out[0], "out_w": v.out[1], "pool_h": v.window[0],
                 "pool_w": v.window[1], "stride_h": v.stride[0], "stride_w": v.stride[1],
                 "pad_top": v.pads[0], "pad_left": v.pads[1]}  # fmt: skip
    bits = dict(_GEOMETRY)
    for name, value in geometry.items():
        if not is_integer(value) or not 0 <= value < 1 << bits[name]:
            raise ValueError(f"{name} must be in 0..{(1 << bits[name]) - 1} (its field's "
                             f"{bits[name]} bits), not {value!r}")  # fmt: skip
    for name, addr in (("x", v.x), ("y", v.y), ("z", v.z)):
        if not is_integer(addr) or not 0 <= addr < 1 << ADDR_BITS:
            raise ValueError(f"{name} must be a byte address in 0..{(1 << ADDR_BITS) - 1}, "
                             f"not {addr!r}")  # fmt: skip
    lo, hi = value_range(config.out_width, config.out_signed)
    for t in "xy":
        zero = getattr(v, f"{t}_zero")
        if not is_integer(zero) or not lo <= zero <= hi:
            raise ValueError(f"{t}_zero must be in {lo}..{hi}, not {zero!r}")
    if not is_integer(v.out_zero) or not lo <= v.out_zero <= hi:
        raise ValueError(f"out_zero must be in {lo}..{hi}, not {v.out_zero!r}")
    for t in "xyz":
        mult, shift = getattr(v, f"{t}_multiplier"), getattr(v, f"{t}_shift")
        if not is_integer(mult) or not 0 <= mult < 1 << MULTIPLIER_BITS:
            raise ValueError(f"{t}_multiplier must be in 0..{(1 << MULTIPLIER_BITS) - 1}, "
                             f"not {mult!r}")  # fmt: skip
        if not is_integer(shift) or not SHIFT_RANGE[0] <= shift <= 0:
            raise ValueError(f"{t}_shift must be in {SHIFT_RANGE[0]}..0 (a scaling down), "
                             f"not {shift!r}")  # fmt: skip


# -- the walk -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """One run: its passes' reads ``(operand, address)`` in order (operand ``"a"`` reads X,
    ``"b"`` reads Y; every pass reads ``beats`` beats), the output's address, and the elements
    an average divides by (the input pixels the window covers)."""

    reads: tuple[tuple[str, int], ...]
    write: int
    beats: int
    count: int


def _slices(c: int, bus: int) -> list[tuple[int, int]]:
    """``(byte offset, beats)`` of a pixel's channel slices."""
    beats = c // bus
    return [(s * bus, min(RUN_BEATS, beats - s)) for s in range(0, beats, RUN_BEATS)]


def window_rows(o: int, stride: int, pad: int, window: int, size: int) -> tuple[int, int]:
    """The first input row (or column) an output's window covers, and how many."""
    start = o * stride - pad
    first = max(0, start)
    return first, min(size, start + window) - first


def runs(config: ArrayConfig, v: VectorDescriptor) -> Iterator[Run]:
    """The runs of a checked descriptor, in the unit's order: elementwise, the flat tensor in
    stretches of :data:`RUN_BEATS`; pooling, output pixels in NHWC order and, within one, its
    channel slices, each read over the window's input pixels row by row."""
    bus = config.bus_width // 8
    n, h, w, c = v.shape
    if not v.pooling:
        total = tensor_bytes(v.shape) // bus
        for b in range(0, total, RUN_BEATS):
            off = b * bus
            yield Run((("a", v.x + off), ("b", v.y + off)), v.z + off, min(RUN_BEATS, total - b), 1)
        return
    oh, ow = v.out
    for img in range(n):
        for oy in range(oh):
            iy, rows = window_rows(oy, v.stride[0], v.pads[0], v.window[0], h)
            for ox in range(ow):
                ix, cols = window_rows(ox, v.stride[1], v.pads[1], v.window[1], w)
                out_pixel = v.z + ((img * oh + oy) * ow + ox) * c
                for off, beats in _slices(c, bus):
                    reads = tuple(("a", v.x + ((img * h + iy + r) * w + ix + q) * c + off)
                                  for r in range(rows) for q in range(cols))  # fmt: skip
                    yield Run(reads, out_pixel + off, beats, rows * cols)


def place_vector(config: ArrayConfig, op: str, shape: tuple[int, int, int, int],
                 **fields) -> VectorDescriptor:  # fmt: skip
    """The driver's descriptor for ``op`` on ``shape``: X, Y (elementwise) and Z one after
    another from address 0, each from a 4 KB boundary; ``fields`` are the descriptor's others
    (``window``, ``stride``, ``pads``, ``out``, the parameters)."""
    v = VectorDescriptor(op, tuple(shape), 0, **fields)
    size = -(-tensor_bytes(shape) // 4096) * 4096
    y = size if not v.pooling else 0
    z = y + size if not v.pooling else size
    return VectorDescriptor(op, tuple(shape), 0, y, z, **fields)


def for_tensor(config: ArrayConfig, op: str, tensor: tuple[int, int, int, int],
               pool: tuple[int, ...] | None = None) -> VectorDescriptor:  # fmt: skip
    """The driver's descriptor for ``op`` on an ``(N, H, W, C)`` tensor (a pooling's ``pool``:
    ``(kh, kw, stride_h, stride_w, pad_top, pad_left, out_h, out_w)``), its channels padded to
    whole bus beats as the driver lays such a tensor out; the parameters zero (the timing and
    traffic do not depend on them)."""
    bus = config.bus_width // 8
    n, h, w, c = tensor
    shape = (n, h, w, -(-c // bus) * bus)
    if pool is None:
        return place_vector(config, op, shape)
    kh, kw, sh, sw, top, left, oh, ow = pool
    return place_vector(config, op, shape, window=(kh, kw), stride=(sh, sw), pads=(top, left),
                        out=(oh, ow))  # fmt: skip
