"""The one configuration object shared by the generator, the models, the testbench and sweeps."""

from __future__ import annotations

import dataclasses
import enum
import json
from dataclasses import dataclass
from typing import Any

from .axi import BUS_WIDTHS, MAX_BURST_BYTES
from .checks import ValueTypeError, check_bool, check_integer, is_integer

__all__ = [
    "DEFAULT_DEPTH",
    "LIMITS",
    "PRECISIONS",
    "RTL_LIMITS",
    "ArrayConfig",
    "Dataflow",
    "beyond_rtl",
    "beyond_rtl_value",
    "check_buildable",
    "value_range",
]


class Dataflow(enum.StrEnum):
    """Which operand stays in the processing elements.

    ``WS``: a weight ``B[k, n]`` (K on rows, N on columns); ``OS``: an output ``C[m, n]``
    (M on rows, N on columns); ``IS``: an input ``A[m, k]`` (K on rows, M on columns).
    """

    WS = "ws"
    OS = "os"
    IS = "is"


#: Allowed ranges, inclusive, of a configuration: what the analytical model takes (arrays up to
#: 512 x 512, buffers up to 2**24 words of one edge vector, gigabytes at that width).
LIMITS = {
    "rows": (1, 512),
    "cols": (1, 512),
    "a_width": (2, 16),
    "b_width": (2, 16),
    "acc_width": (2, 64),
    "a_depth": (1, 1 << 24),
    "b_depth": (1, 1 << 24),
    "c_depth": (1, 1 << 24),
    "out_width": (2, 16),
    "q_depth": (1, 1 << 16),
    "max_reads": (1, 64),
    "max_writes": (1, 64),
    "queue_depth": (1, 16),
    "stage_depth": (0, 1 << 24),
}

#: What the RTL generator builds (``systolic generate``, ``sim``, RTL points of a sweep): arrays
#: up to 64 x 64 (Verilator build times in the README) and buffers that 16-bit addresses reach
#: (:data:`contract.interface.ADDR_BITS`). Keys not named take :data:`LIMITS`.
RTL_LIMITS = {
    "rows": (1, 64),
    "cols": (1, 64),
    "a_depth": (1, 1 << 16),
    "b_depth": (1, 1 << 16),
    "c_depth": (1, 1 << 16),
    "stage_depth": (0, 1 << 16),
}

#: Integer precision presets: operand bits and the accumulator that holds any int8 dot product
#: of up to 2**(acc - 2*bits) terms without wrapping (int4 -> 16, int8 -> 32, int16 -> 48).
PRECISIONS = {"int4": (4, 16), "int8": (8, 32), "int16": (16, 48)}

#: Number formats: integers, or bf16 operands with fp32 accumulation.
NUMBERS = ("int", "bf16")

#: Largest operand width with zero points: the array sees ``value - zero`` in one more bit.
ZERO_POINT_MAX_WIDTH = 15
#: Requantization takes the int32 accumulator of the common int8 runtimes.
REQUANT_MAX_ACC = 32

#: The vector unit's elements are bytes: requantized outputs of at most 8 bits.
VECTOR_MAX_WIDTH = 8

#: Buffer depths (in edge-vector words) when none are given.
DEFAULT_DEPTH = 1024


def value_range(width: int, signed: bool) -> tuple[int, int]:
    """Smallest and largest value of a ``width``-bit integer, two's complement when ``signed``."""
    if signed:
        return -(1 << (width - 1)), (1 << (width - 1)) - 1
    return 0, (1 << width) - 1


def beyond_rtl_value(name: str, value: Any) -> str | None:
    """Why the RTL generator does not build ``name = value`` (past :data:`RTL_LIMITS`, named
    with both ranges), or None (also for a name the RTL does not limit, or a non-integer)."""
    if name not in RTL_LIMITS or not is_integer(value):
        return None
    lo, hi = RTL_LIMITS[name]
    if lo <= value <= hi:
        return None
    if value < lo:  # below both ranges (which start together)
        return f"{name} must be an integer between {lo} and {hi} (the RTL generator's), not {value}"
    return (
        f"{name} = {value} is beyond what the RTL generator builds ({lo} to {hi}); "
        f"the analytical model (systolic model, model-only sweep points) takes up to "
        f"{LIMITS[name][1]}"
    )


def beyond_rtl(config: ArrayConfig) -> str | None:
    """Why the RTL generator does not build ``config`` (a parameter past :data:`RTL_LIMITS`,
    named with both ranges), or None when it does."""
    for name in RTL_LIMITS:
        problem = beyond_rtl_value(name, getattr(config, name))
        if problem is not None:
            return problem
    return None


def check_buildable(config: ArrayConfig) -> None:
    """Refuse a configuration the model takes but the RTL generator does not build."""
    problem = beyond_rtl(config)
    if problem is not None:
        raise ValueError(problem)


@dataclass(frozen=True)
class ArrayConfig:
    """A systolic array: shape, dataflow and arithmetic.

    Parameters
    ----------
    dataflow : Dataflow or str
        ``"ws"``, ``"os"`` or ``"is"``.
    rows, cols : int
        Processing elements per column and per row, 1 to 512 each (the RTL: 1 to 64).
    a_width, b_width : int
        Bits of the activation (A) and weight (B) operands, 2 to 16.
    a_signed, b_signed : bool
        Two's-complement (True) or unsigned (False) operands.
    acc_width : int
        Bits of the accumulator and of every output, 2 to 64. Sums wrap modulo ``2**acc_width``
        as two's-complement hardware does; outputs are signed when either operand is.
    a_depth, b_depth, c_depth : int
        Words in the A, B and C buffers, 1 to 2**24 (the RTL: 1 to 65536). A word is one
        array-edge vector (:mod:`contract.layouts`); C words are at accumulator width.
    number : str
        ``"int"`` (integers of the widths above) or ``"bf16"``: bf16 operands, fp32 accumulation
        (see :mod:`golden.bf16`); bf16 fixes the widths at 16, 16 and 32 bits.
    zero_points : bool
        Per-tensor zero points of A and B (command fields): the array computes
        ``(A - za) @ (B - zb)``, subtracting at its edge (operands up to 15 bits).
    requant : bool
        An output requantization unit on the host's C read path: per output channel a Q31
        multiplier and a shift, an output zero point, optional ReLU, saturation to
        ``out_width`` bits (``out_signed``). Needs ``acc_width <= 32``.
    out_width, out_signed, q_depth : int, bool, int
        The requantized output's bits (2 to 16) and signedness; words of the per-channel
        parameter buffer (``cols`` channels a word, 1 to 65536).
    bus_width : int
        Bits of the AXI4 data bus to DRAM: 64, 128, 256 or 512.
    max_burst : int
        Beats of the DMA's longest burst, a power of two from 1 to 256 whose bytes at the bus
        width fit in 4 KB (bursts are aligned to their size, so none crosses a 4 KB boundary).
    max_reads, max_writes : int
        Read and write bursts the DMA keeps outstanding, 1 to 64.
    queue_depth : int
        GEMM descriptors the device queues behind the one it runs, 1 to 16.
    vector : bool
        A vector unit beside the array (:mod:`contract.vector`): residual adds, elementwise max
        and pooling on the requantized outputs' tensors in DRAM, driven by descriptors through
        the same queue. Needs ``requant`` and ``out_width <= 8`` (a byte an element).
    stage_depth : int
        Words (of A's width) of the staging buffer that convolution descriptors stage input rows
        in (:mod:`contract.conv`); 0, the default, builds none and the device takes GEMMs only.
    requant_float : bool
        The requantization unit also scales as onnxruntime does (:func:`golden.requant
        .requantize_float`): a descriptor's ``float_scale`` makes each channel's multiplier a
        float32 scale, so a model quantized by onnxruntime runs bit-exactly. Needs ``requant``.
    """

    dataflow: Dataflow
    rows: int
    cols: int
    a_width: int = 8
    b_width: int = 8
    a_signed: bool = True
    b_signed: bool = True
    acc_width: int = 32
    a_depth: int = DEFAULT_DEPTH
    b_depth: int = DEFAULT_DEPTH
    c_depth: int = DEFAULT_DEPTH
    zero_points: bool = False
    requant: bool = False
    number: str = "int"
    out_width: int = 8
    out_signed: bool = True
    q_depth: int = 256
    bus_width: int = 128
    max_burst: int = 16
    max_reads: int = 16
    max_writes: int = 8
    queue_depth: int = 2
    vector: bool = False
    stage_depth: int = 0
    requant_float: bool = False

    def __post_init__(self) -> None:
        try:
            dataflow = Dataflow(self.dataflow)
        except ValueError:
            allowed = ", ".join(repr(d.value) for d in Dataflow)
            raise ValueError(f"dataflow must be one of {allowed}, not {self.dataflow!r}") from None
        object.__setattr__(self, "dataflow", dataflow)
        for name, (lo, hi) in LIMITS.items():
            check_integer(name, getattr(self, name), lo, hi)
            object.__setattr__(self, name, int(getattr(self, name)))  # numpy's: plain ints
        flags = ("a_signed", "b_signed", "zero_points", "requant", "out_signed", "vector",
                 "requant_float")  # fmt: skip
        for name in flags:
            check_bool(name, getattr(self, name))
        if self.number not in NUMBERS:
            raise ValueError(f"number must be one of {', '.join(map(repr, NUMBERS))}, "
                             f"not {self.number!r}")  # fmt: skip
        if self.number == "bf16":
            if self.zero_points or self.requant:
                raise ValueError("number 'bf16' takes no zero_points or requant (integer only)")
            # bf16 operands and fp32 sums travel as bit patterns
            for name, value in (("a_width", 16), ("b_width", 16), ("acc_width", 32),
                                ("a_signed", False), ("b_signed", False)):  # fmt: skip
                object.__setattr__(self, name, value)
        if self.zero_points and max(self.a_width, self.b_width) > ZERO_POINT_MAX_WIDTH:
            raise ValueError(
                f"zero_points need a_width and b_width <= {ZERO_POINT_MAX_WIDTH} (the array "
                f"sees value - zero point in one more bit), not {self.a_width} and {self.b_width}"
            )
        if self.bus_width not in BUS_WIDTHS:
            raise ValueError(f"bus_width must be one of {', '.join(map(str, BUS_WIDTHS))} bits, "
                             f"not {self.bus_width!r}")  # fmt: skip
        burst_max = min(256, MAX_BURST_BYTES * 8 // self.bus_width)
        if not (is_integer(self.max_burst) and 1 <= self.max_burst <= burst_max
                and self.max_burst & (self.max_burst - 1) == 0):  # fmt: skip
            raise ValueError(f"max_burst must be a power of two from 1 to {burst_max} beats at "
                             f"bus_width {self.bus_width}, not {self.max_burst!r}")  # fmt: skip
        if self.vector and not (self.requant and self.out_width <= VECTOR_MAX_WIDTH):
            raise ValueError(
                f"vector needs requant and out_width <= {VECTOR_MAX_WIDTH} (its tensors are the "
                f"requantized outputs, a byte an element), not requant = {self.requant}, "
                f"out_width = {self.out_width}"
            )
        if self.requant_float and not self.requant:
            raise ValueError("requant_float needs requant (it is a mode of the requantization "
                             "unit), not requant = False")  # fmt: skip
        if self.requant and self.acc_width > REQUANT_MAX_ACC:
            raise ValueError(
                f"requant takes an accumulator of at most {REQUANT_MAX_ACC} bits (int32, as the "
                f"int8 runtimes), not acc_width = {self.acc_width}"
            )

    # -- derived facts --

    @property
    def c_signed(self) -> bool:
        """Outputs are two's-complement when either operand is signed (or offset by a zero
        point, which makes it signed)."""
        return (self.a_signed or self.b_signed or self.zero_points) and self.number == "int"

    @property
    def precision(self) -> str:
        """``bf16``, ``int8`` (equal integer widths) or ``a8b4`` (different ones)."""
        if self.number == "bf16":
            return "bf16"
        if self.a_width == self.b_width:
            return f"int{self.a_width}"
        return f"a{self.a_width}b{self.b_width}"

    @property
    def mesh_widths(self) -> tuple[int, int]:
        """Bits of A and B operands inside the array: one more with zero points (signed)."""
        extra = 1 if self.zero_points else 0
        return self.a_width + extra, self.b_width + extra

    def mesh_config(self) -> ArrayConfig:
        """The configuration the mesh and its controller are generated with: the operands as
        the array sees them (``value - zero point``, signed, one bit wider, with zero points);
        everything else as given. Without zero points, ``self``."""
        if not self.zero_points:
            return self
        a, b = self.mesh_widths
        return dataclasses.replace(
            self, a_width=a, b_width=b, a_signed=True, b_signed=True, zero_points=False,
            requant=False, vector=False, requant_float=False,
        )  # fmt: skip

    @property
    def pes(self) -> int:
        """Number of processing elements, ``rows * cols``."""
        return self.rows * self.cols

    @property
    def name(self) -> str:
        """Short stable name, for example ``ws-8x8-i8-acc32`` or ``os-4x2-ai8-bu4-acc20``;
        non-default buffer depths add ``-d<A>.<B>.<C>`` (``is-4x4-i8-acc32-d64.64.128``)."""

        def operand(width: int, signed: bool) -> str:
            return f"{'i' if signed else 'u'}{width}"

        a = operand(self.a_width, self.a_signed)
        b = operand(self.b_width, self.b_signed)
        precision = a if a == b else f"a{a}-b{b}"
        name = f"{self.dataflow.value}-{self.rows}x{self.cols}-{precision}-acc{self.acc_width}"
        if self.number == "bf16":
            name = f"{self.dataflow.value}-{self.rows}x{self.cols}-bf16"
        depths = (self.a_depth, self.b_depth, self.c_depth)
        if depths != (DEFAULT_DEPTH,) * 3:
            name += "-d" + ".".join(map(str, depths))
        if self.zero_points:
            name += "-zp"
        if self.requant:
            name += f"-rq{operand(self.out_width, self.out_signed)}"
            if self.requant_float:
                name += "f"
            if self.q_depth != 256:
                name += f".q{self.q_depth}"
        dma = (self.bus_width, self.max_burst, self.max_reads, self.max_writes, self.queue_depth)
        if dma != (128, 16, 16, 8, 2):
            name += "-axi" + ".".join(map(str, dma))
        if self.vector:
            name += "-vec"
        if self.stage_depth:
            name += f"-st{self.stage_depth}"
        return name

    # -- serialization --

    #: The fields :meth:`to_dict` leaves out at these values.
    OMITTED = {"vector": False, "stage_depth": 0, "requant_float": False}

    def to_dict(self) -> dict[str, Any]:
        """The fields by name; ``vector``, ``stage_depth`` and ``requant_float`` only when set,
        so a configuration without them keeps the JSON, ``CONFIG_HASH`` and sweep point ids it
        had before them."""
        d = dataclasses.asdict(self)
        d["dataflow"] = self.dataflow.value
        for name, value in self.OMITTED.items():
            if d[name] == value:
                del d[name]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ArrayConfig:
        """Build from a dictionary, rejecting unknown and missing keys by name."""
        if not isinstance(d, dict):
            raise ValueTypeError(
                f"an ArrayConfig must be given as a mapping, not {type(d).__name__}"
            )
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - set(fields))
        if unknown:
            raise ValueError(
                f"unknown ArrayConfig key(s) {', '.join(map(repr, unknown))}; "
                f"allowed keys: {', '.join(fields)}"
            )
        missing = [
            name for name, f in fields.items() if f.default is dataclasses.MISSING and name not in d
        ]
        if missing:
            raise ValueError(f"missing ArrayConfig key(s) {', '.join(map(repr, missing))}")
        return cls(**d)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ArrayConfig:
        try:
            d = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"ArrayConfig JSON is malformed: {e}") from None
        return cls.from_dict(d)
