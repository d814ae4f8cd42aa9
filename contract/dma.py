"""The DMA path: how operands lie in DRAM, the GEMM descriptor and what it may ask, and the jobs
and transfers the sequencer makes of it (docs/memory.md).

A GEMM in DRAM is its buffer words (:mod:`contract.layouts`), tile-major: word ``(t, i)`` of an
operand at ``addr + t * stride + i * container`` bytes, where ``container`` is the word's bits
rounded up to a power-of-two number of bytes. The sequencer walks chunks of the descriptor's
sizes in its loop order; each chunk is a :class:`Job` saying what to load, which banks it uses
and what to store. The RTL's sequencer and engines, the simulation's driver and the model all
read these functions.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from .axi import ADDR_BITS, MAX_BURST_BYTES
from .checks import is_integer
from .config import ArrayConfig, Dataflow, value_range
from .conv import CONV_LIMITS, Conv, check_conv, stage
from .interface import DIM_BITS
from .layouts import BufferWord, footprint, from_words, input_word, layouts, to_words
from .memory import container_bytes
from .plan import Chunk, chunk_sizes, conv_chunk_sizes, granularity
from .refusal import Refusal
from .vector import vector_fields

__all__ = [
    "DRAIN_LATENCY",
    "LOOP_ORDERS",
    "WRITE_BUFFER_WORDS",
    "Q_ENTRY_BYTES",
    "Q_ENTRY_FIELDS",
    "Descriptor",
    "Job",
    "Refusal",
    "Region",
    "SPLIT_OPERAND",
    "Transfer",
    "b_first",
    "beat_bytes",
    "bursts",
    "c_format",
    "check_descriptor",
    "descriptor_fields",
    "descriptor_values",
    "gemm_fields",
    "containers",
    "conv_fields",
    "from_image",
    "image",
    "jobs",
    "offchip_words",
    "next_base",
    "place",
    "q_image",
    "reads_what_writes",
    "spans",
    "split_first",
    "staging",
    "q_transfer",
    "tile_rows",
    "transfers",
    "word_layout",
]

#: Loop orders of the chunk nest, outermost first; a descriptor names one by its index.
LOOP_ORDERS = ("nmk", "mnk", "nkm", "knm", "mkn", "kmn")

#: Words the write engine buffers between the C bank and the W channel.
WRITE_BUFFER_WORDS = 4

#: Cycles from the write engine's read of a C bank word to the cycle the write buffer takes it:
#: the SRAM's read (its access time then alone in a cycle but for the bank's multiplexer, the
#: C macro's being most of the clock at 8x8 and up), then a register (issue 36).
DRAIN_LATENCY = 2

#: Bytes of one output channel's entry of the parameter table in DRAM: the Q31 multiplier as a
#: 32-bit word (bytes 0-3), the shift as one signed byte (byte 4), the bias as a signed 32-bit
#: word (bytes 8-11), the rest padding (a power of two, so a word of entries packs whole).
Q_ENTRY_BYTES = 16
#: Bit offsets of an entry's fields in DRAM.
Q_ENTRY_FIELDS = {"multiplier": 0, "shift": 32, "bias": 64}


@dataclass(frozen=True)
class Region:
    """Where an operand lies in DRAM: tile row ``t`` from ``addr + t * stride`` bytes."""

    addr: int
    stride: int


@dataclass(frozen=True)
class Descriptor:
    """One GEMM for the device: ``C[M,N] (+)= A[M,K] @ B[K,N]`` from and to DRAM.

    ``chunk`` gives the chunk sizes ``(mc, kc, nc)``, which the driver picks
    (:func:`contract.plan.chunk_sizes`) and the hardware checks. ``p`` is where partial sums go
    when K spans several chunks and is not the innermost loop (accumulator width, C's shape).
    ``q_addr`` is the parameter table: ``N`` entries of :data:`Q_ENTRY_BYTES`. The fused output
    path (``requant``) adds each channel's bias from the table (``bias``) to its accumulators,
    requantizes them, adds ``out_zero`` and clamps the result to ``clamp = (lo, hi)`` (the
    activation: ReLU is ``(out_zero, top)``, ReLU6 ``(out_zero, out_zero + 6 / scale)``) or, with
    ``clamp=None``, saturates it to the output range; ``float_scale`` (a device with
    ``requant_float``) makes each channel's multiplier a float32 scale's bits, requantizing as
    onnxruntime does (:func:`golden.requant.requantize_float`). ``conv`` makes it a convolution
    (:mod:`contract.conv`, on a device with a staging buffer): A is then the input, staged and
    expanded chunk by chunk, and the GEMM its implicit one.
    """

    m: int
    k: int
    n: int
    chunk: tuple[int, int, int]
    a: Region
    b: Region
    c: Region
    p: Region = Region(0, 0)
    q_addr: int = 0
    accumulate: bool = False
    order: str = "nmk"
    a_zero: int = 0
    b_zero: int = 0
    requant: bool = False
    out_zero: int = 0
    bias: bool = False
    clamp: tuple[int, int] | None = None
    conv: Conv | None = None
    float_scale: bool = False

    @property
    def order_code(self) -> int:
        return LOOP_ORDERS.index(self.order) if self.order in LOOP_ORDERS else len(LOOP_ORDERS)


def descriptor_fields(config: ArrayConfig) -> list[tuple[str, int]]:
    """The descriptor as the device takes it: ``(field, bits)`` packed least significant first
    (zero points and the output zero point in two's complement where signed): a GEMM's fields
    (:func:`gemm_fields`), then those only a vector descriptor has
    (:func:`contract.vector.vector_fields`), then a convolution's (:func:`conv_fields`), then the
    float scale's bit."""
    fields = gemm_fields(config)
    have = {name for name, _ in fields}
    late = [f for f in fields if f[0].startswith("conv") or f[0] == "float_scale"]  # last: the
    fields = [f for f in fields if f not in late]  # older fields keep their registers
    return fields + [f for f in vector_fields(config) if f[0] not in have] + late


def gemm_fields(config: ArrayConfig) -> list[tuple[str, int]]:
    """The fields a GEMM descriptor sets (``vector``, zero, with the vector unit)."""
    dim = DIM_BITS
    fields = [("m", dim), ("k", dim), ("n", dim), ("mc", dim), ("kc", dim), ("nc", dim),
              ("order", 3), ("accumulate", 1)]  # fmt: skip
    for r in "abcp":
        fields += [(f"{r}_addr", ADDR_BITS), (f"{r}_stride", ADDR_BITS)]
    fields.append(("q_addr", ADDR_BITS))
    if config.zero_points:
        fields += [("a_zero", config.a_width), ("b_zero", config.b_width)]
    if config.requant:
        out = config.out_width
        fields += [("requant", 1), ("out_zero", out), ("bias", 1), ("clamp", 1),
                   ("clamp_lo", out), ("clamp_hi", out)]  # fmt: skip
    if config.vector:
        fields.append(("vector", 1))
    if config.stage_depth:
        fields += conv_fields()
    if config.requant_float:
        fields.append(("float_scale", 1))
    return fields


def conv_fields() -> list[tuple[str, int]]:
    """A convolution descriptor's geometry (:class:`contract.conv.Conv`; bottom and right pads
    are implied by the output's height and width)."""
    bits = {name: top.bit_length() for name, top in CONV_LIMITS.items()}
    dim = DIM_BITS
    return [("conv", 1), ("conv_images", dim), ("conv_height", dim), ("conv_width", dim),
            ("conv_channels", dim), ("conv_out_height", dim), ("conv_out_width", dim),
            ("conv_kh", bits["kernel"]), ("conv_kw", bits["kernel"]),
            ("conv_sh", bits["stride"]), ("conv_sw", bits["stride"]),
            ("conv_dh", bits["dilation"]), ("conv_dw", bits["dilation"]),
            ("conv_top", bits["pads"]), ("conv_left", bits["pads"])]  # fmt: skip


def _conv_values(conv: Conv | None) -> dict[str, int]:
    if conv is None:
        return {name: 0 for name, _ in conv_fields()}
    if conv.groups != 1:
        raise ValueError(f"groups = {conv.groups} has no field: the device runs groups 1 "
                         "(contract.conv.depthwise_slices lowers a depthwise one)")  # fmt: skip
    oh, ow = conv.out
    return {"conv": 1, "conv_images": conv.batch, "conv_height": conv.height,
            "conv_width": conv.width, "conv_channels": conv.channels, "conv_out_height": oh,
            "conv_out_width": ow, "conv_kh": conv.kernel[0], "conv_kw": conv.kernel[1],
            "conv_sh": conv.stride[0], "conv_sw": conv.stride[1], "conv_dh": conv.dilation[0],
            "conv_dw": conv.dilation[1], "conv_top": conv.pads[0],
            "conv_left": conv.pads[1]}  # fmt: skip


def descriptor_values(config: ArrayConfig, d: Descriptor) -> dict[str, int]:
    """The fields of :func:`descriptor_fields` for ``d`` (a clamp's bounds must lie in the
    output range, the only values its fields hold)."""
    lo, hi = _clamp(config, d)
    if d.float_scale and not config.requant_float:
        raise ValueError(f"float_scale needs a device built with requant_float; {config.name} "
                         f"has none")  # fmt: skip
    if config.requant and d.clamp is not None:
        top = value_range(config.out_width, config.out_signed)
        if not (is_integer(lo) and is_integer(hi) and top[0] <= lo <= top[1]
                and top[0] <= hi <= top[1]):  # fmt: skip
            raise ValueError(f"clamp = {d.clamp!r} must lie in the output range "
                             f"[{top[0]}, {top[1]}]")  # fmt: skip
    values = {"m": d.m, "k": d.k, "n": d.n, "mc": d.chunk[0], "kc": d.chunk[1],
              "nc": d.chunk[2], "order": d.order_code, "accumulate": int(d.accumulate),
              "q_addr": d.q_addr, "a_zero": d.a_zero, "b_zero": d.b_zero,
              "requant": int(d.requant), "out_zero": d.out_zero, "bias": int(d.bias),
              "clamp": int(d.clamp is not None), "clamp_lo": lo, "clamp_hi": hi,
              "vector": 0, "float_scale": int(d.float_scale)}  # fmt: skip
    for r in "abcp":
        region = getattr(d, r)
        values[f"{r}_addr"], values[f"{r}_stride"] = region.addr, region.stride
    values |= _conv_values(d.conv)
    return {name: values[name] for name, _ in gemm_fields(config)}


def _clamp(config: ArrayConfig, d: Descriptor) -> tuple[int, int]:
    """The clamp's bounds, or the output range's without one."""
    if d.clamp is None:
        return value_range(config.out_width, config.out_signed)
    lo, hi = d.clamp
    return lo, hi


def word_layout(config: ArrayConfig, kind: str) -> BufferWord:
    """The buffer word of ``kind``: ``a``, ``b``, ``c`` (C as stored: requantized outputs with
    ``requant``), ``p`` (partial sums, accumulator width) or ``q`` (a table word)."""
    lay = layouts(config)
    if kind in ("a", "b"):
        return lay[kind]
    if kind == "p":
        return lay["c"]
    if kind == "c":
        c = lay["c"]
        if not config.requant:
            return c
        return BufferWord(c.tile, c.rowwise, config.out_width, config.out_signed)
    if kind == "q":
        return BufferWord(config.cols, True, Q_ENTRY_BYTES * 8, False)
    raise ValueError(f"kind must be one of 'a', 'b', 'c', 'p', 'q', not {kind!r}")


def c_format(config: ArrayConfig, d: Descriptor) -> str:
    """How finished outputs lie in DRAM: ``"c"`` (requantized) or ``"p"`` (accumulators)."""
    return "c" if config.requant and d.requant else "p"


def containers(config: ArrayConfig) -> dict[str, int]:
    """Bytes each kind of word takes in DRAM (a power of two)."""
    return dict(_containers(config))


@functools.lru_cache(maxsize=256)  # the models ask for them per chunk class
def _containers(config: ArrayConfig) -> tuple[tuple[str, int], ...]:
    return tuple((kind, container_bytes(word_layout(config, kind).bits)) for kind in "abcpq")


def offchip_words(config: ArrayConfig, d: Descriptor, counters: dict) -> dict[str, int]:
    """Buffer words that crossed between DRAM and the buffers, from a descriptor's DRAM byte
    counters (:data:`contract.interface.DEVICE_COUNTERS`): A and B loaded (``a``, ``b``), C
    words that came in to be accumulated into (``c_in``: C given to accumulate into, and partial
    sums coming back), finished C words stored (``c``, each once) and partial sums stored
    (``p_out``)."""
    if not counters.get("jobs"):
        return dict.fromkeys(("a", "b", "c", "c_in", "p_out"), 0)
    cont = containers(config)
    fmt = c_format(config, d)
    final = word_layout(config, fmt).words((d.m, d.n))
    return {
        "a": counters["dram_read_bytes_a"] // cont["a"],
        "b": counters["dram_read_bytes_b"] // cont["b"],
        "c": final,
        "c_in": counters["dram_read_bytes_c"] // cont["p"],
        "p_out": (counters["dram_write_bytes"] - final * cont[fmt]) // cont["p"],
    }


def beat_bytes(config: ArrayConfig, kind: str) -> int:
    """Bytes per beat of ``kind``'s transfers: the word's container, or the bus if narrower (a
    beat never carries more than one word)."""
    return min(containers(config)[kind], config.bus_width // 8)


def _shape(kind: str, m: int, k: int, n: int) -> tuple[int, int]:
    return {"a": (m, k), "b": (k, n), "c": (m, n), "p": (m, n)}[kind]


def _matrix(d: Descriptor, kind: str) -> tuple[int, int]:
    """The shape of ``kind``'s matrix in DRAM: a convolution's A is its input, pixels by
    channels."""
    if kind == "a" and d.conv is not None:
        c = d.conv
        return c.batch * c.height * c.width, c.channels
    return _shape(kind, d.m, d.k, d.n)


def _rows(config: ArrayConfig, d: Descriptor, kind: str, fmt: str) -> tuple[int, int]:
    """``(tile rows, words per tile row)`` of ``kind``'s matrix in DRAM in words of ``fmt``
    (a convolution's input in :func:`contract.layouts.input_word`)."""
    word = input_word(config) if kind == "a" and d.conv is not None else word_layout(config, fmt)
    return tile_rows(word, _matrix(d, kind))


def tile_rows(word: BufferWord, shape: tuple[int, int]) -> tuple[int, int]:
    """``(tile rows, words per tile row)`` of a matrix of ``shape`` in words of ``word``."""
    rows, cols = shape
    if word.rowwise:
        return math.ceil(cols / word.tile), rows
    return math.ceil(rows / word.tile), cols


def check_descriptor(config: ArrayConfig, d: Descriptor) -> tuple[Refusal, str]:
    """The refusal the device gives ``d`` (``Refusal.NONE`` when it runs it), and why."""
    top = (1 << DIM_BITS) - 1
    for name, value in (("m", d.m), ("k", d.k), ("n", d.n)):
        if not is_integer(value) or not 1 <= value <= top:
            return Refusal.DIMENSION, f"{name} must be in 1..{top}, not {value!r}"
    if d.order not in LOOP_ORDERS:
        return Refusal.ORDER, f"order must be one of {', '.join(LOOP_ORDERS)}, not {d.order!r}"
    requant = config.requant and d.requant
    if d.accumulate and requant:
        return Refusal.MODE, "accumulate into C needs C at accumulator width, not requantized"
    float_scale = config.requant_float and d.float_scale
    if config.requant and not d.requant and (d.bias or d.clamp is not None or float_scale):
        return Refusal.MODE, ("a bias, an activation clamp or a float scale needs requant (the "
                              "fused output path)")  # fmt: skip
    if requant and d.clamp is not None and d.clamp[0] > d.clamp[1]:
        return Refusal.CLAMP, f"clamp = {d.clamp!r} must have its low bound at most its high"
    g = granularity(config)
    for dim, total, size in zip("mkn", (d.m, d.k, d.n), d.chunk, strict=True):
        if not is_integer(size) or not 1 <= size <= total:
            return Refusal.CHUNK, f"chunk size {dim}c must be in 1..{total}, not {size!r}"
        if size != total and size % g[dim]:
            return Refusal.CHUNK, (f"chunk size {dim}c = {size} must be a multiple of "
                                   f"{g[dim]} (or all of {dim.upper()} = {total})")  # fmt: skip
    need = footprint(config, *d.chunk)
    for buf in "abc":
        depth = getattr(config, f"{buf}_depth")
        if need[buf] > depth:
            return Refusal.CHUNK, (f"a chunk needs {need[buf]} words of a {buf.upper()} bank, "
                                   f"which holds {buf}_depth = {depth}")  # fmt: skip
    if requant and math.ceil(d.n / config.cols) > config.q_depth:
        return Refusal.TABLE, (f"{d.n} channels take {math.ceil(d.n / config.cols)} Q words, "
                               f"past q_depth = {config.q_depth}")  # fmt: skip
    if d.conv is not None:
        if not config.stage_depth:
            return Refusal.CONV, "a convolution needs a staging buffer (stage_depth > 0)"
        why = check_conv(d.conv, word_layout(config, "a").tile, (d.m, d.k, d.n), d.chunk,
                         config.stage_depth)  # fmt: skip
        if why:
            return Refusal.CONV, why
    cont = containers(config)
    used = {"a": d.a, "b": d.b, "c": d.c}
    if _spills(d):
        used["p"] = d.p
    for kind, region in used.items():
        fmt = c_format(config, d) if kind == "c" else kind
        size = cont[fmt]
        tiles, lines = _rows(config, d, kind, fmt)
        if not is_integer(region.addr) or not 0 <= region.addr < 1 << ADDR_BITS or (
                region.addr % size):  # fmt: skip
            return Refusal.ALIGNMENT, (f"{kind}_addr = {region.addr!r} must be a multiple of "
                                       f"its {size}-byte words")  # fmt: skip
        if (not is_integer(region.stride) or region.stride % size
                or not lines * size <= region.stride < 1 << ADDR_BITS):  # fmt: skip
            return Refusal.STRIDE, (f"{kind}_stride = {region.stride!r} must be a multiple of "
                                    f"{size} bytes and hold a tile row of {lines} words "
                                    f"({lines * size} bytes)")  # fmt: skip
        if region.addr + (tiles - 1) * region.stride + lines * size > 1 << ADDR_BITS:
            return Refusal.RANGE, f"{kind} reaches past the {ADDR_BITS}-bit address space"
    if requant:
        if not is_integer(d.q_addr) or not 0 <= d.q_addr < 1 << ADDR_BITS or d.q_addr % cont["q"]:
            return Refusal.ALIGNMENT, (
                f"q_addr = {d.q_addr!r} must be a multiple of "
                f"{cont['q']} in the {ADDR_BITS}-bit address space"
            )
        if d.q_addr + math.ceil(d.n / config.cols) * cont["q"] > 1 << ADDR_BITS:
            return Refusal.RANGE, f"the requantization table reaches past {ADDR_BITS} bits"
    return Refusal.NONE, ""


def spans(config: ArrayConfig, d: Descriptor) -> dict[str, tuple[int, int]]:
    """The bytes ``[first, past the last)`` of each region ``d`` uses in DRAM, as the device's
    check bounds them: ``a``, ``b``, ``c``, ``p`` (when partial sums leave the chip) and ``q``
    (when it requantizes)."""
    cont = containers(config)
    out = {}
    for kind in "abcp":
        if kind == "p" and not _spills(d):
            continue
        fmt = c_format(config, d) if kind == "c" else kind
        region = getattr(d, kind)
        tiles, lines = _rows(config, d, kind, fmt)
        out[kind] = (region.addr, region.addr + (tiles - 1) * region.stride + lines * cont[fmt])
    if config.requant and d.requant:
        out["q"] = (d.q_addr, d.q_addr + math.ceil(d.n / config.cols) * cont["q"])
    return out


def reads_what_writes(config: ArrayConfig, later: Descriptor, earlier: Descriptor) -> bool:
    """Whether ``later`` reads a byte that ``earlier`` writes (its C or partial sums): the device
    then starts ``later`` only once ``earlier`` has completed (contract.timing
    .DESCRIPTOR_SLOTS); otherwise ``later``'s first loads overlap ``earlier``'s last chunks."""
    reads, writes = spans(config, later), spans(config, earlier)
    if not later.accumulate:
        reads.pop("c")
    return any(r0 < w1 and w0 < r1 for r0, r1 in reads.values()
               for kind, (w0, w1) in writes.items() if kind in "cp")  # fmt: skip


def _spills(d: Descriptor) -> bool:
    """Partial sums leave the chip: K spans several chunks and is not the innermost loop."""
    return d.chunk[1] < d.k and d.order[-1] != "k"


# -- the chunk nest -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """One chunk of a descriptor and what the sequencer does around it."""

    chunk: Chunk
    load_a: bool  # A's chunk differs from the previous job's: load it into the other A bank
    load_b: bool
    c_in: str | None  # C's bank starts from DRAM: "c" (accumulate into C), "p" (partials), None
    store: str | None  # after the compute: "c" (finished outputs), "p" (partials), None (kept)
    banks: dict[str, int] = field(default_factory=dict)  # bank of A, B and C

    @property
    def accumulate(self) -> bool:
        """The compute adds to what the C bank holds (a later K chunk, or C loaded)."""
        return self.chunk.k0 > 0 or self.c_in is not None


def jobs(config: ArrayConfig, d: Descriptor) -> list[Job]:
    """The chunks of ``d`` in its loop order, with loads, stores and banks."""
    mc, kc, nc = d.chunk
    starts = {"m": range(0, d.m, mc), "k": range(0, d.k, kc), "n": range(0, d.n, nc)}
    outer, middle, inner = d.order
    chunks = []
    for i in starts[outer]:
        for j in starts[middle]:
            for l in starts[inner]:  # noqa: E741
                o = {outer: i, middle: j, inner: l}
                chunks.append(Chunk(o["m"], min(d.m, o["m"] + mc), o["k"], min(d.k, o["k"] + kc),
                                    o["n"], min(d.n, o["n"] + nc), d.k))  # fmt: skip
    out = []
    banks = {"a": 1, "b": 1, "c": 1}  # the first load of each goes to bank 0
    for i, ch in enumerate(chunks):
        prev = chunks[i - 1] if i else None
        nxt = chunks[i + 1] if i + 1 < len(chunks) else None
        new_a = prev is None or (prev.m0, prev.k0) != (ch.m0, ch.k0)
        new_b = prev is None or (prev.k0, prev.n0) != (ch.k0, ch.n0)
        new_c = prev is None or (prev.m0, prev.n0) != (ch.m0, ch.n0)
        leaves = nxt is None or (nxt.m0, nxt.n0) != (ch.m0, ch.n0)
        for buf, new in (("a", new_a), ("b", new_b), ("c", new_c)):
            if new:
                banks[buf] ^= 1
        c_in = None
        if new_c and ch.k0 > 0:
            c_in = "p"
        elif new_c and d.accumulate:
            c_in = "c"
        store = ("c" if ch.last_k else "p") if leaves else None
        out.append(Job(ch, new_a, new_b, c_in, store, dict(banks)))
    return out


#: Where the driver starts each region: 4 KB boundaries, so no region shares a page.
PLACEMENT_ALIGN = 4096


def _up(x: int, align: int = PLACEMENT_ALIGN) -> int:
    return -(-x // align) * align


def place(config: ArrayConfig, m: int, k: int, n: int, *, order: str = "nmk",
          accumulate: bool = False, pad: int = 0, zeros: tuple[int, int] = (0, 0),
          requant: bool = False, out_zero: int = 0, bias: bool = False,
          clamp: tuple[int, int] | None = None, chunk=None,
          base: int = 0, conv: Conv | None = None,
          float_scale: bool = False) -> Descriptor:  # fmt: skip
    """The driver's descriptor for an ``m x k x n`` GEMM: A, B, C, partial sums and the
    requantization table one after another from address ``base`` (a multiple of 4 KB; 0 unless
    several GEMMs share the DRAM), each from a 4 KB boundary, with
    ``pad`` extra words between tile rows and the chunk sizes of
    :func:`contract.plan.chunk_sizes` (or ``chunk``). The models evaluate a GEMM given by its
    shape on this placement. With ``conv``, the GEMM is that convolution's
    (:func:`contract.conv.device_gemm`), A its input (pixels by channels) and the chunk sizes
    :func:`contract.plan.conv_chunk_sizes`. ``float_scale`` requantizes with float32 scales."""
    cont = containers(config)
    if chunk is not None:
        size = dict(zip("mkn", chunk, strict=True))
    elif conv is not None:
        size = conv_chunk_sizes(config, conv)
    else:
        size = chunk_sizes(config, m, k, n)
    if base % PLACEMENT_ALIGN:
        raise ValueError(f"base = {base} must be a multiple of {PLACEMENT_ALIGN}")
    regions = {}
    fmt = {"a": "a", "b": "b", "c": "c" if (config.requant and requant) else "p", "p": "p"}
    a_shape = (m, k) if conv is None else (conv.batch * conv.height * conv.width, conv.channels)
    for kind, shape in (("a", a_shape), ("b", (k, n)), ("c", (m, n)), ("p", (m, n))):
        word = input_word(config) if kind == "a" and conv is not None else (
            word_layout(config, fmt[kind]))  # fmt: skip
        tiles, lines = tile_rows(word, shape)
        stride = (lines + pad) * cont[fmt[kind]]
        regions[kind] = Region(base, stride)
        base = _up(base + tiles * stride)
    requant = bool(requant)
    return Descriptor(m, k, n, (size["m"], size["k"], size["n"]), regions["a"], regions["b"],
                      regions["c"], regions["p"], base, accumulate, order, zeros[0], zeros[1],
                      requant, out_zero if requant else 0, bias and requant,
                      clamp if requant else None, conv, bool(float_scale) and requant)  # fmt: skip


def next_base(config: ArrayConfig, d: Descriptor) -> int:
    """Where :func:`place` puts the next GEMM of a driver's batch: the first 4 KB boundary past
    every region it laid out for ``d`` (the table, its last, included)."""
    table = math.ceil(d.n / config.cols) * containers(config)["q"] if d.requant else 0
    return _up(d.q_addr + table)


# -- transfers ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Transfer:
    """One load or store of a job: ``segments`` contiguous runs ``(dram address, words)``,
    filling (or draining) the bank from word 0 in order; a convolution's A fills the staging
    buffer instead, from which the expander then writes ``expand`` words into the bank."""

    kind: str  # "a", "b", "c", "p" (C and partial sums move in either direction), "q"
    bank: int
    segments: tuple[tuple[int, int], ...]
    fmt: str  # the format its words move in (a key of containers(): C at "p" width coming in)
    expand: int = 0
    opens: bool = True  # its first word is the bank's first (else it goes on from an earlier part)
    closes: bool = True  # its last word is the bank's last (else a later part goes on)

    @property
    def words(self) -> int:
        return sum(w for _, w in self.segments)


def b_first(config: ArrayConfig, chunk: tuple[int, int, int], conv: Conv | None = None) -> bool:
    """Whether a descriptor's jobs (chunks of ``chunk``) load B before A: the operand whose
    chunk has fewer words goes first (A on a tie), so the compute can start on it while the
    larger one's words arrive behind the controller's reads (docs/memory.md, computing on a
    partly loaded chunk). A convolution's A goes first: it stages and expands, and the compute
    waits for all of it."""
    if conv is not None:
        return False
    need = footprint(config, *chunk)
    return need["b"] < need["a"]


#: The operand whose first tile row the compute needs before the other's words (WS's and IS's
#: stationary one, preloaded a tile ahead; OS's A, whose first tile row meets every B tile).
SPLIT_OPERAND = {Dataflow.WS: "b", Dataflow.IS: "a", Dataflow.OS: "a"}


def split_first(config: ArrayConfig, chunk: tuple[int, int, int], conv: Conv | None = None) -> bool:
    """Whether a job that loads both A and B loads :data:`SPLIT_OPERAND`'s first tile row (its
    first run of words: WS's and IS's first column of stationary tiles, OS's first row of A
    tiles), then the other operand, then the rest of the first: the order the compute first
    needs their words in, when that first tile row has fewer words than the other operand.
    Otherwise the two load whole, in :func:`b_first`'s order. A convolution's A
    loads whole and first (:func:`b_first`)."""
    if conv is not None:
        return False
    mc, kc, nc = chunk
    y = SPLIT_OPERAND[config.dataflow]
    _, first = tile_rows(word_layout(config, y), (mc, kc) if y == "a" else (kc, nc))
    other = footprint(config, *chunk)["a" if y == "b" else "b"]
    return first < other


def transfers(config: ArrayConfig, d: Descriptor, job: Job) -> tuple[list, list]:
    """``(loads, stores)`` of ``job``: loads in the order the read engine serves them (A and B,
    one split around the other (:func:`split_first`) or the smaller chunk first
    (:func:`b_first`), then C or partial sums), and the store, if any."""
    cont = containers(config)
    ch = job.chunk

    def transfer(kind: str, region: Region, bank: int, fmt: str) -> Transfer:
        word = word_layout(config, fmt)
        r0, r1, c0, c1 = {
            "a": (ch.m0, ch.m1, ch.k0, ch.k1),
            "b": (ch.k0, ch.k1, ch.n0, ch.n1),
            "c": (ch.m0, ch.m1, ch.n0, ch.n1),
            "p": (ch.m0, ch.m1, ch.n0, ch.n1),
        }[kind]
        if word.rowwise:  # tile rows along the columns, lines are matrix rows
            t0, tiles, i0, lines = c0 // word.tile, math.ceil((c1 - c0) / word.tile), r0, r1 - r0
        else:
            t0, tiles, i0, lines = r0 // word.tile, math.ceil((r1 - r0) / word.tile), c0, c1 - c0
        size = cont[fmt]
        segments = tuple(
            (region.addr + (t0 + t) * region.stride + i0 * size, lines) for t in range(tiles)
        )
        return Transfer(kind, bank, segments, fmt)

    loads = []
    if job.load_a and d.conv is not None:
        loads.append(staging(config, d, job))
    elif job.load_a:
        loads.append(transfer("a", d.a, job.banks["a"], "a"))
    if job.load_b:
        b = transfer("b", d.b, job.banks["b"], "b")
        if loads and split_first(config, d.chunk, d.conv):
            y, x = (b, loads[0]) if SPLIT_OPERAND[config.dataflow] == "b" else (loads[0], b)
            loads = _split(y, x)
        else:
            loads.insert(0 if b_first(config, d.chunk, d.conv) else len(loads), b)
    if job.c_in is not None:  # C and partial sums come in at accumulator width
        loads.append(transfer(job.c_in, d.c if job.c_in == "c" else d.p, job.banks["c"], "p"))
    stores = []
    if job.store == "c":
        stores.append(transfer("c", d.c, job.banks["c"], c_format(config, d)))
    elif job.store == "p":
        stores.append(transfer("p", d.p, job.banks["c"], "p"))
    return loads, stores


def _split(y: Transfer, x: Transfer) -> list:
    """``y``'s first tile row, ``x``, then the rest of ``y`` (:func:`split_first`)."""
    if len(y.segments) == 1:
        return [y, x]
    return [Transfer(y.kind, y.bank, y.segments[:1], y.fmt, closes=False), x,
            Transfer(y.kind, y.bank, y.segments[1:], y.fmt, opens=False)]  # fmt: skip


def staging(config: ArrayConfig, d: Descriptor, job: Job) -> Transfer:
    """A convolution's A load for ``job``: each slice's run of the input rows the chunk reads
    (:func:`contract.conv.stage`) into the staging buffer, then the chunk's A words expanded."""
    ch, word = job.chunk, word_layout(config, "a")
    s0, s1, p0, p1 = stage(d.conv, word.tile, ch.m0, ch.m1, ch.k0, ch.k1)
    size = containers(config)["a"]
    segments = tuple((d.a.addr + s * d.a.stride + p0 * size, p1 - p0) for s in range(s0, s1))
    return Transfer("a", job.banks["a"], segments, "a",
                    word.words((ch.m1 - ch.m0, ch.k1 - ch.k0)))  # fmt: skip


def q_transfer(config: ArrayConfig, d: Descriptor) -> Transfer:
    """The requantization table, loaded once before the first job."""
    return Transfer("q", 0, ((d.q_addr, math.ceil(d.n / config.cols)),), "q")


def q_image(config: ArrayConfig, multiplier, shift, bias=None) -> bytes:
    """The parameter table in DRAM (:data:`Q_ENTRY_BYTES` per channel, contiguous; ``bias``
    zero when not given)."""
    n = np.asarray(multiplier).shape[-1]
    fields = {"multiplier": (multiplier, 32), "shift": (shift, 8),
              "bias": (np.zeros(n, np.int64) if bias is None else bias, 32)}  # fmt: skip
    entries = np.zeros((n, Q_ENTRY_BYTES), dtype=np.uint8)
    for name, (values, bits) in fields.items():
        raw = (np.asarray(values, dtype=np.int64) & ((1 << bits) - 1)).astype("<u8")
        at = Q_ENTRY_FIELDS[name] // 8
        entries[:, at : at + bits // 8] = raw.view(np.uint8).reshape(n, 8)[:, : bits // 8]
    word = word_layout(config, "q")
    tiles = math.ceil(n / config.cols)
    out = np.zeros((tiles * config.cols, Q_ENTRY_BYTES), dtype=np.uint8)
    out[:n] = entries
    cont = containers(config)["q"]
    packed = np.zeros((tiles, cont), dtype=np.uint8)
    packed[:, : word.tile * Q_ENTRY_BYTES] = out.reshape(tiles, -1)
    return packed.tobytes()


def bursts(address: int, nbytes: int, beat: int, max_burst: int) -> list[tuple[int, int]]:
    """``(address, beats)`` of the bursts moving ``nbytes`` from ``address``: split where an
    address is a multiple of ``max_burst * beat`` bytes (so none crosses 4 KB)."""
    span = max_burst * beat
    assert span <= MAX_BURST_BYTES and address % beat == 0 and nbytes % beat == 0
    out = []
    end = address + nbytes
    while address < end:
        stop = min(end, (address // span + 1) * span)
        out.append((address, (stop - address) // beat))
        address = stop
    return out


# -- DRAM images ----------------------------------------------------------------------------------


def image(mat: np.ndarray, word: BufferWord, container: int, stride: int) -> bytes:
    """The bytes of ``mat`` in DRAM from its region's address: its words (:func:`to_words`
    order), each packed LSB first (element ``j`` at bits ``j*width ..``) in ``container``
    bytes, tile row ``t`` from byte ``t * stride``."""
    words = to_words(np.asarray(mat, dtype=np.int64), word)
    tiles, lines = tile_rows(word, np.asarray(mat).shape)
    packed = _pack(words, word.width, container)  # (tiles * lines, container)
    out = np.zeros((tiles, stride), dtype=np.uint8)
    out[:, : lines * container] = packed.reshape(tiles, lines * container)
    return out.reshape(-1)[: (tiles - 1) * stride + lines * container].tobytes()


def from_image(blob: bytes, word: BufferWord, container: int, stride: int,
               shape: tuple[int, int]) -> np.ndarray:  # fmt: skip
    """Inverse of :func:`image`: the ``shape`` matrix (signed where the word is)."""
    tiles, lines = tile_rows(word, shape)
    raw = np.frombuffer(blob, dtype=np.uint8)
    raw = np.concatenate([raw, np.zeros(tiles * stride - len(raw), np.uint8)])
    rows = raw.reshape(tiles, stride)[:, : lines * container].reshape(tiles * lines, container)
    return from_words(_unpack(rows, word), word, shape)


def _pack(words: np.ndarray, width: int, container: int) -> np.ndarray:
    """Words of ``width``-bit elements as ``container`` little-endian bytes each."""
    n, tile = words.shape
    values = words.astype(np.int64).astype(np.uint64) & np.uint64((1 << width) - 1)
    bits = (values[:, :, None] >> np.arange(width, dtype=np.uint64)) & np.uint64(1)
    bits = bits.reshape(n, tile * width).astype(np.uint8)
    full = np.zeros((n, container * 8), dtype=np.uint8)
    full[:, : tile * width] = bits
    return np.packbits(full, axis=1, bitorder="little")


def _unpack(rows: np.ndarray, word: BufferWord) -> np.ndarray:
    bits = np.unpackbits(rows, axis=1, bitorder="little")[:, : word.tile * word.width]
    bits = bits.reshape(len(rows), word.tile, word.width).astype(np.uint64)
    values = (bits << np.arange(word.width, dtype=np.uint64)).sum(axis=2, dtype=np.uint64)
    if word.signed:
        top = np.uint64(1) << np.uint64(word.width - 1)
        wrap = np.uint64(0) if word.width == 64 else np.uint64(1) << np.uint64(word.width)
        values = np.where(values >= top, values - wrap, values)  # modulo 2**64
    return values.view(np.int64) if word.signed else values.astype(np.int64)
