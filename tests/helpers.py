"""Helpers that several test files share: the command line, the model-against-RTL check and
sweep specs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from systolic.contract.config import Dataflow
from systolic.models.cycles import command_counters, predict
from systolic.models.energy import DEFAULT_COEFFICIENTS

__all__ = [
    "TINY",
    "check_against_model",
    "coefficients_with",
    "run_cli",
    "stream_starts",
    "write_spec",
]


def run_cli(*args, cwd=None, env=None) -> subprocess.CompletedProcess:
    """``systolic ARGS...`` in a fresh interpreter, output captured."""
    return subprocess.run([sys.executable, "-m", "systolic.cli", *args], capture_output=True,
                          text=True, cwd=cwd, env={**os.environ, **(env or {})})  # fmt: skip


def stream_starts(rows: int, p: int, tiles: int, release: int) -> list[int]:
    """The WS/IS schedule tile by tile, with no shortcut (derived in tests/rtl/test_timing.py):
    the issue cycle of each tile's first stream read. Tile i preloads into bank i % 2 in
    ``rows`` cycles once the preload port is free and the bank's previous tile read its last
    vector ``release`` cycles ago; it streams ``p`` vectors from the cycle after its preload,
    once the stream port is free."""
    preload_free = stream_free = 0
    bank_free = [0, 0]
    starts = []
    for i in range(tiles):
        start = max(preload_free, bank_free[i % 2])  # first preload read of tile i
        preload_free = start + rows
        first = max(start + rows, stream_free)  # first stream read of tile i
        starts.append(first)
        stream_free = first + p
        bank_free[i % 2] = first + p - 1 + release
    return starts


def check_against_model(config, res, where):
    """RTL == model: every counter of every command (and the cycles the bench measured itself,
    which the hardware's counter must equal), the totals and the off-chip words (counted where
    they crossed the host streams)."""
    for cmd in res.commands:
        expected = command_counters(config, *cmd["shape"], cmd["accumulate"])
        assert cmd["counters"] == expected, f"{where}, command {cmd['shape']}"
        assert cmd["measured_cycles"] == cmd["counters"]["cycles"], (
            f"{where}, command {cmd['shape']}: the bench measured {cmd['measured_cycles']} "
            f"cycles from acceptance to done, the cycle counter says {cmd['counters']['cycles']}"
        )
        # the monitor saw every C write the counter counts; the last one is in the last busy
        # cycle, except that OS drops the rows of its last tile past M (it drains the rows in
        # order, one a cycle, so the last kept row is written that many cycles earlier)
        assert cmd["c_writes_seen"] == cmd["counters"]["c_writes"], f"{where}, {cmd['shape']}"
        dropped = 0
        if config.dataflow is Dataflow.OS:
            dropped = config.rows - 1 - (cmd["shape"][0] - 1) % config.rows
        assert cmd["last_c_write"] == cmd["measured_cycles"] - 1 - dropped, (
            f"{where}, command {cmd['shape']}: last C write in busy cycle {cmd['last_c_write']}"
        )
    pred = predict(config, *res.shape)
    assert res.counters == pred.counters, where
    assert res.offchip_words == pred.offchip_words, where
    assert len(res.commands) == pred.commands, where


#: A sweep small enough for the tests: two configurations, two GEMM workloads, all in RTL.
TINY = """\
name: tiny
configs:
  dataflow: [ws, os]
  array: [2x2]
  depth: [256]
workloads:
  - gemm: {m: 8, k: 6, n: 5}
  - gemm: {m: 3, k: 9, n: 4}
    count: 3
evaluate:
  rtl: all
"""


def write_spec(tmp_path: Path, text: str) -> Path:
    """``text`` (dedented) as ``spec.yaml`` in ``tmp_path``."""
    path = tmp_path / "spec.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def coefficients_with(tmp_path: Path, old: str, new: str) -> Path:
    """The default coefficients file with ``old`` (which must be in it) replaced by ``new``."""
    text = DEFAULT_COEFFICIENTS.read_text()
    assert old in text
    path = tmp_path / "coefficients.toml"
    path.write_text(text.replace(old, new))
    return path
