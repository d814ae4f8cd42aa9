"""The one configuration object shared by the generator, the models, the testbench and sweeps."""

from __future__ import annotations

import dataclasses
import enum
import json
from dataclasses import dataclass
from typing import Any

__all__ = ["ArrayConfig", "Dataflow", "LIMITS", "DEFAULT_DEPTH"]


class Dataflow(enum.StrEnum):
    """Which operand stays in the processing elements.

    ``WS``: a weight ``B[k, n]`` (K on rows, N on columns); ``OS``: an output ``C[m, n]``
    (M on rows, N on columns); ``IS``: an input ``A[m, k]`` (K on rows, M on columns).
    """

    WS = "ws"
    OS = "os"
    IS = "is"


#: Allowed ranges, inclusive. Arrays up to 64 x 64 generate; 32 x 32 is the largest one tested.
LIMITS = {
    "rows": (1, 64),
    "cols": (1, 64),
    "a_width": (2, 16),
    "b_width": (2, 16),
    "acc_width": (2, 64),
    "a_depth": (1, 1 << 16),
    "b_depth": (1, 1 << 16),
    "c_depth": (1, 1 << 16),
}

#: Buffer depths (in edge-vector words) when none are given.
DEFAULT_DEPTH = 1024


def _check_int(name: str, value: Any) -> None:
    lo, hi = LIMITS[name]
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer between {lo} and {hi}, not {value!r}")
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be an integer between {lo} and {hi}, not {value!r}")


def _check_bool(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, not {value!r}")


@dataclass(frozen=True)
class ArrayConfig:
    """A systolic array: shape, dataflow and arithmetic.

    Parameters
    ----------
    dataflow : Dataflow or str
        ``"ws"``, ``"os"`` or ``"is"``.
    rows, cols : int
        Processing elements per column and per row, 1 to 64 each.
    a_width, b_width : int
        Bits of the activation (A) and weight (B) operands, 2 to 16.
    a_signed, b_signed : bool
        Two's-complement (True) or unsigned (False) operands.
    acc_width : int
        Bits of the accumulator and of every output, 2 to 64. Sums wrap modulo ``2**acc_width``
        as two's-complement hardware does; outputs are signed when either operand is.
    a_depth, b_depth, c_depth : int
        Words in the A, B and C buffers, 1 to 65536. A word is one array-edge vector (see
        :mod:`rtl.top` for each dataflow's layout); C words are at accumulator width.
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

    def __post_init__(self) -> None:
        try:
            dataflow = Dataflow(self.dataflow)
        except ValueError:
            allowed = ", ".join(repr(d.value) for d in Dataflow)
            raise ValueError(f"dataflow must be one of {allowed}, not {self.dataflow!r}") from None
        object.__setattr__(self, "dataflow", dataflow)
        for name in LIMITS:
            _check_int(name, getattr(self, name))
        _check_bool("a_signed", self.a_signed)
        _check_bool("b_signed", self.b_signed)

    # -- derived facts --

    @property
    def c_signed(self) -> bool:
        """Outputs are two's-complement when either operand is signed."""
        return self.a_signed or self.b_signed

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
        depths = (self.a_depth, self.b_depth, self.c_depth)
        if depths != (DEFAULT_DEPTH,) * 3:
            name += "-d" + ".".join(map(str, depths))
        return name

    # -- serialization --

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["dataflow"] = self.dataflow.value
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ArrayConfig:
        """Build from a dictionary, rejecting unknown and missing keys by name."""
        if not isinstance(d, dict):
            raise TypeError(f"an ArrayConfig must be given as a mapping, not {type(d).__name__}")
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
