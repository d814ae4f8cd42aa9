"""Argument checks shared by every layer, so that each error names the value and its range."""

from __future__ import annotations

import numbers
from typing import Any

__all__ = ["ValueTypeError", "check_bool", "check_integer", "is_integer", "is_number"]


class ValueTypeError(TypeError):
    """A value of the wrong type where a user gives one (an option, a configuration or spec
    file): reported in one line, where any other ``TypeError`` is a bug and shows its trace."""


def is_integer(value: Any) -> bool:
    """An integer (Python's or numpy's), and not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """A real number (an integer or a float, numpy's included), and not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_integer(name: str, value: Any, lo: int, hi: float | None = None) -> None:
    """``value`` must be an integer in ``lo .. hi`` (no upper bound when ``hi`` is None):
    ``TypeError`` for a non-integer, ``ValueError`` outside the range, naming ``name``."""
    allowed = f"an integer between {lo} and {hi}" if hi is not None else f"an integer >= {lo}"
    if not is_integer(value):
        raise ValueTypeError(f"{name} must be {allowed}, not {value!r}")
    if value < lo or (hi is not None and value > hi):
        raise ValueError(f"{name} must be {allowed}, not {value!r}")


def check_bool(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise ValueTypeError(f"{name} must be True or False, not {value!r}")
