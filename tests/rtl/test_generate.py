"""rtl/generate.py's cache of generated Verilog: the text it returns is the generator's, the
next call reads it instead of generating, and it is keyed on everything that fixes the text."""

from __future__ import annotations

import pytest
import systolic.rtl.generate as generate
from systolic.contract.config import ArrayConfig
from systolic.rtl.generate import design_verilog


def _no_generation(*args, **kwargs):
    raise AssertionError("generated again")


def test_the_cache_returns_the_generators_text_and_reads_it_back(tmp_path, monkeypatch):
    config = ArrayConfig("os", 2, 3)
    fresh = design_verilog(config, "array")
    assert design_verilog(config, "array", cache=tmp_path) == fresh
    (kept,) = tmp_path.glob("*.v")
    assert kept.name.startswith("os-2x3-i8-acc32-array-") and kept.read_text() == fresh
    monkeypatch.setattr(generate.verilog, "convert", _no_generation)
    assert design_verilog(config, "array", cache=tmp_path) == fresh  # read, not generated
    with pytest.raises(AssertionError, match="generated again"):  # another design: not cached
        design_verilog(ArrayConfig("os", 3, 2), "array", cache=tmp_path)
    with pytest.raises(AssertionError, match="generated again"):  # the device: its own text
        design_verilog(config, "device", cache=tmp_path)


def test_the_key_covers_the_generator_and_twins_share(tmp_path, monkeypatch):
    ws, is_ = ArrayConfig("ws", 2, 2, a_width=4), ArrayConfig("is", 2, 2, b_width=4)
    text = design_verilog(ws, "array", cache=tmp_path)
    monkeypatch.setattr(generate.verilog, "convert", _no_generation)
    # the IS mesh is generated as its WS twin (design_config): the same text, one file
    assert design_verilog(is_, "array", cache=tmp_path) == text
    assert len(list(tmp_path.glob("*.v"))) == 1
    # a change to the generator's source (or Amaranth's version) is a new key
    sources = generate.generator_sources()
    monkeypatch.setattr(generate, "generator_sources", lambda: [*sources, "# edited"])
    with pytest.raises(AssertionError, match="generated again"):
        design_verilog(ws, "array", cache=tmp_path)
