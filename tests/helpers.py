"""Helpers that several test files share: the command line, the model-against-RTL check and
sweep specs."""

from __future__ import annotations

import fcntl
import json
import os
import pickle
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np
from systolic.contract.dma import jobs
from systolic.contract.interface import COUNTERS, TIMED_COUNTERS
from systolic.models.cycles import command_counters
from systolic.models.device import predict_device
from systolic.models.energy import DEFAULT_COEFFICIENTS

__all__ = [
    "TINY",
    "at_least",
    "at_most",
    "check_against_model",
    "coefficients_with",
    "computed_once",
    "direct_conv",
    "random_conv",
    "run_cli",
    "stream_starts",
    "write_spec",
]

T = TypeVar("T")


def computed_once(name: str, compute: Callable[[], T]) -> T:
    """``compute()``, computed once a test run: by the first xdist worker to ask for ``name``
    (under a lock; pickled into the run's folder, tests/conftest.py) and read by the others, to
    which the work-stealing scheduler hands a module's other tests (each would otherwise
    compute a module fixture of its own)."""
    folder = Path(os.environ["SYSTOLIC_RUN_DIR"])
    path = folder / f"{name}.pickle"
    with open(folder / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            return pickle.loads(path.read_bytes())
        value = compute()
        path.write_bytes(pickle.dumps(value))
        return value


def run_cli(*args, cwd=None, env=None) -> subprocess.CompletedProcess:
    """``systolic ARGS...`` in a fresh interpreter, output captured."""
    return subprocess.run([sys.executable, "-m", "systolic.cli", *args], capture_output=True,
                          text=True, cwd=cwd, env={**os.environ, **(env or {})})  # fmt: skip


def run_faulty(*args, env: dict, cwd=None) -> subprocess.CompletedProcess:
    """:func:`run_cli` with the faults of tests/faults.py that ``env`` asks for."""
    faults = Path(__file__).with_name("faults.py")
    return subprocess.run([sys.executable, str(faults), *args], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, **env})  # fmt: skip


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


#: The compute counters that grow when a chunk starts before its operands are in
#: (models.cycles.gated_counters): the closed forms are their least values.
WAITED = tuple(k for k in TIMED_COUNTERS
               if k == "compute_cycles" or (k in COUNTERS and k != "cycles"))  # fmt: skip


def check_against_model(config, res, where):
    """RTL == model: every device counter of ``res`` (a :class:`sim.simulate.SimResult`) as
    :func:`models.device.predict_device` gives it for the same descriptor and DRAM; the chunks'
    compute counters summed as :func:`models.cycles.command_counters` gives them chunk by chunk
    (:func:`contract.dma.jobs`; at least that for the counts of cycles a chunk may spend
    waiting for its words); the cycles the bench monitor measured itself, which the hardware's
    counter must equal; and the DRAM bytes the DRAM model served, which the device's counters
    must equal."""
    predicted = predict_device(config, res.descriptor, res.memory)
    assert res.counters == dict(predicted), where
    assert res.measured_cycles == predicted.measured_cycles, (
        f"{where}: the bench measured {res.measured_cycles} cycles from acceptance to done, "
        f"the cycle counter says {res.counters['cycles']}"
    )
    chunks = jobs(config, res.descriptor)
    assert res.counters["jobs"] == len(chunks), where
    for name in COUNTERS:
        total = sum(command_counters(config, *j.chunk.shape, j.accumulate)[name] for j in chunks)
        key = "compute_cycles" if name == "cycles" else name
        if key in WAITED:  # a chunk started on loading banks waits for its words
            assert res.counters[key] >= total, f"{where}: {key}"
        else:
            assert res.counters[key] == total, f"{where}: {key}"
    for op in "abcq":
        assert res.dram[f"read_bytes_{op}"] == res.counters[f"dram_read_bytes_{op}"], where
    written = sum(res.dram[f"write_bytes_{op}"] for op in "abcq")
    assert written == res.counters["dram_write_bytes"], where
    assert res.dram["protocol_errors"] == 0, f"{where}: the DMA broke an AXI4 rule"


#: A sweep small enough for the tests: two configurations, two GEMM workloads, all in RTL.
TINY = """\
name: tiny
configs:
  dataflow: [ws, os]
  array: [2x2]
  depth: [1024]  # the default: ws-2x2 is the activity build other tests make
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


def coefficients_with(tmp_path: Path, old: str, new: str, logic: tuple[str, str] = ("", "")
                      ) -> Path:  # fmt: skip
    """The default technology file with ``old`` (which must be in it) replaced by ``new``, and
    beside it its logic file, with ``logic[0]`` replaced by ``logic[1]``."""
    text = DEFAULT_COEFFICIENTS.read_text()
    assert old in text
    path = tmp_path / "coefficients.toml"
    path.write_text(text.replace(old, new))
    source = DEFAULT_COEFFICIENTS.with_name("logic_osu018.toml").read_text()
    assert logic[0] in source
    (tmp_path / "logic_osu018.toml").write_text(source.replace(*logic))
    return path


#: ``make seeds`` sets this to a folder: every :func:`at_most`/:func:`at_least` check appends its
#: statistic there (one JSON line), so the runner prints each test's worst value beside its bound.
STATISTICS = "SYSTOLIC_STATISTICS"


def _record(what: str, value: float, bound: float, sense: str) -> None:
    folder = os.environ.get(STATISTICS)
    if not folder:
        return
    test = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" (", 1)[0]
    line = {"test": test, "what": what, "value": float(value), "bound": float(bound),
            "sense": sense}  # fmt: skip
    with open(Path(folder) / f"{os.getpid()}.jsonl", "a") as f:
        f.write(json.dumps(line) + "\n")


def at_most(value: float, bound: float, what: str) -> None:
    """Assert a sampled statistic ``value <= bound`` (``what`` names it); its bound must come
    from the statistic's measured spread over seeds (``make seeds`` prints the worst)."""
    _record(what, value, bound, "<=")
    assert value <= bound, f"{what}: {value:.6g} > {bound:.6g}"


def at_least(value: float, bound: float, what: str) -> None:
    """Assert a sampled statistic ``value >= bound``, like :func:`at_most`."""
    _record(what, value, bound, ">=")
    assert value >= bound, f"{what}: {value:.6g} < {bound:.6g}"


def random_conv(rng, kernel: int):
    """Strides 1-2, pads 0-2, dilations 1-2, ragged channel counts; groups 1."""
    stride, dilation = (tuple(int(v) for v in rng.integers(1, 3, 2)) for _ in range(2))
    pads = tuple(int(v) for v in rng.integers(0, 3, 4))
    span = max(dilation) * (kernel - 1) + 1
    size = int(rng.integers(span, span + 5))
    from systolic.contract.conv import Conv

    return Conv(int(rng.integers(1, 3)), size, size + int(rng.integers(0, 3)),
                int(rng.integers(1, 11)), int(rng.integers(1, 7)), (kernel, kernel), stride, pads,
                dilation)  # fmt: skip


def direct_conv(conv, x, w, za: int = 0, zb: int = 0):
    """A convolution by its definition, a loop over the kernel on the zero-point-padded input:
    ``pixels x out_channels`` (``w`` is ``O x kh x kw x C``; depthwise, ``groups == channels``,
    ``C x kh x kw x 1``, each channel with its own filter)."""
    top, left, bottom, right = conv.pads
    (kh, kw), (sh, sw), (dh, dw) = conv.kernel, conv.stride, conv.dilation
    xp = np.pad(np.asarray(x, np.int64) - za, ((0, 0), (top, bottom), (left, right), (0, 0)))
    oh, ow = conv.out
    out = np.zeros((conv.batch, oh, ow, conv.out_channels), dtype=np.int64)
    for ky in range(kh):
        for kx in range(kw):
            win = xp[:, ky * dh : ky * dh + sh * (oh - 1) + 1 : sh,
                     kx * dw : kx * dw + sw * (ow - 1) + 1 : sw, :]  # fmt: skip
            taps = np.asarray(w, np.int64)[:, ky, kx, :] - zb
            out += win * taps[:, 0] if conv.groups > 1 else win @ taps.T
    return out.reshape(-1, conv.out_channels)


def float_onnx(name: str, nodes: list, weights: dict, x_shape: list, y_shape: list):
    """A float ONNX model (IR 8, which onnxruntime loads) of ``nodes`` from input ``x`` to output
    ``y``, ``weights`` its float32 initializers by name."""
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in weights.items()]
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)], inits)  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
