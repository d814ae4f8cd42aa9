"""sim/build.py: a second build of the same design reuses the cached model."""

from __future__ import annotations

from systolic.contract.config import ArrayConfig
from systolic.sim.build import build_model


def test_second_build_is_cached(tmp_path):
    config = ArrayConfig("os", 1, 2)
    first = build_model(config, "array", root=tmp_path)
    assert not first.cached and first.seconds > 0
    again = build_model(config, "array", root=tmp_path)
    assert again.cached and again.directory == first.directory
    other = build_model(ArrayConfig("os", 1, 2, acc_width=31), "array", root=tmp_path)
    assert other.directory != first.directory and not other.cached
