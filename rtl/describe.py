# amaranth: UnusedElaboratable=no
"""Which component implements a configuration: the one place that picks it.

Testbenches, models and tools also build components only to read their properties (latency,
preload length, bank reuse distance, ports) instead of restating them; the comment on the first
line tells Amaranth that such instances, never elaborated, are not forgotten submodules.
"""

from __future__ import annotations

from .array import OutputStationaryArray, StationaryArray
from .config import ArrayConfig, Dataflow

__all__ = ["describe", "describe_controller", "describe_design"]


def describe(config: ArrayConfig) -> StationaryArray | OutputStationaryArray:
    """The mesh of ``config``, for its properties and signature."""
    if config.dataflow is Dataflow.OS:
        return OutputStationaryArray(config)
    return StationaryArray(config)


def describe_design(config: ArrayConfig, kind: str):
    """The mesh (``kind="array"``) or the whole accelerator (``"accelerator"``)."""
    if kind == "array":
        return describe(config)
    from .top import Accelerator

    return Accelerator(config)


def describe_controller(config: ArrayConfig):
    """The tiling controller of ``config``, for its timing properties."""
    from .controller import OutputStationaryController, StationaryController

    depths = (config.a_depth, config.b_depth, config.c_depth)
    if config.dataflow is Dataflow.OS:
        return OutputStationaryController(
            config, a_depth=depths[0], b_depth=depths[1], c_depth=depths[2]
        )
    return StationaryController(config, x_depth=depths[0], s_depth=depths[1], y_depth=depths[2])
