# amaranth: UnusedElaboratable=no
"""Designs built only for what they tell: ports, payload layouts and timing, never elaborated.

Testbenches, models and tools read the generator's own properties (latency, preload length, bank
reuse distance, ...) instead of restating them; the comment on the first line tells Amaranth that
these instances are not forgotten submodules.
"""

from __future__ import annotations

from .array import OutputStationaryArray, StationaryArray
from .config import ArrayConfig, Dataflow

__all__ = ["describe", "describe_design"]


def describe(config: ArrayConfig) -> StationaryArray | OutputStationaryArray:
    """The mesh of ``config``, for its properties and signature."""
    if config.dataflow is Dataflow.OS:
        return OutputStationaryArray(config)
    return StationaryArray(config)


def describe_design(config: ArrayConfig, kind: str):
    """The mesh (``kind="array"``) or the whole accelerator (``"accelerator"``), undelaborated."""
    if kind == "array":
        return describe(config)
    from .top import Accelerator

    return Accelerator(config)
