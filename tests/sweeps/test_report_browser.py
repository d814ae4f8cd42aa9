"""The sweep report in a real browser (headless Chromium over the DevTools protocol): it loads
without console errors, its interactive plots render, the answers and the who-wins matrices
are on the page, its tables sort, and `systolic report --screenshot` saves the first screen."""

from __future__ import annotations

import struct

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from systolic.sweeps.report import report_data
from systolic.sweeps.report.browser import Browser
from systolic.sweeps.results import load_results

from ..helpers import run_cli, write_spec

SPEC = """\
name: browser
configs:
  dataflow: [ws, os, is]
  array: [2x2, 4x4]
  depth: [256]
workloads:
  - onnx: mlp.onnx              # a batch profile, and operators off the array to list
    batch: [1, 4]
  - gemm: {m: 8, k: 6, n: 5}
evaluate:
  rtl: none
"""


def _mlp(path) -> None:
    """A two-layer MLP with a symbolic batch dimension."""
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((16, 32)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((32, 8)).astype(np.float32), "w2")
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["y"], name="fc2"),
             helper.make_node("Softmax", ["y"], ["p"])]  # fmt: skip
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])
    p = helper.make_tensor_value_info("p", TensorProto.FLOAT, ["batch", 8])
    graph = helper.make_graph(nodes, "mlp", [x], [p], [w1, w2])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browser")
    _mlp(tmp / "mlp.onnx")
    out = tmp / "out"
    r = run_cli("sweep", str(write_spec(tmp, SPEC)), "--out", str(out))
    assert r.returncode == 0, r.stderr
    return out


def _png_size(path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_the_report_renders_in_chromium(sweep):
    data = report_data(load_results(sweep / "results.jsonl"), "browser")
    assert "<script src" not in (sweep / "report.html").read_text()  # opens without a network
    with Browser() as browser:
        browser.open(sweep / "report.html")
        plots = browser.settle(
            "document.querySelectorAll('.js-plotly-plot .main-svg').length >= 3 && "
            "document.querySelectorAll('.js-plotly-plot').length")  # fmt: skip
        assert browser.problems() == []
        # the three interactive plots drew their points (SVG marker paths exist)
        assert plots == 3
        assert browser.evaluate("document.querySelectorAll('.js-plotly-plot .scatterlayer "
                                ".trace').length") > 0  # fmt: skip
        # the ONNX model's operators that are not array work are listed
        assert browser.evaluate("document.getElementById('operators') !== null")
        # the first thing on the page: the answers, then the matrices
        assert browser.evaluate("document.querySelectorAll('#answers + ul li').length") == len(
            data.answers
        )
        assert browser.evaluate("document.querySelectorAll('table.matrix').length") == len(
            data.matrices
        )
        cells = browser.evaluate(
            "Array.from(document.querySelectorAll('table.matrix td')).map(c => c.className)"
        )
        assert cells and set(cells) <= {"win-ws", "win-os", "win-is", "none"}
        top = browser.evaluate("document.getElementById('answers').getBoundingClientRect().top")
        assert top < 300  # on the first screen
        # every link in the table of contents and in the answers lands on a section
        missing = browser.evaluate(
            "Array.from(document.querySelectorAll('a[href^=\"#\"]'))"
            ".map(a => a.getAttribute('href').slice(1))"
            ".filter(id => !document.getElementById(id))")  # fmt: skip
        assert missing == []
        # clicking a heading sorts the table of points by that column
        order = browser.evaluate("""(() => {
            const t = document.querySelector('#points ~ div table.sortable');
            const col = Array.from(t.tHead.rows[0].cells).findIndex(h => h.textContent == 'cycles');
            t.tHead.rows[0].cells[col].click();
            return Array.from(t.tBodies[0].rows).map(r =>
                parseFloat(r.cells[col].textContent.replace(/,/g, '')));
        })()""")
        assert len(order) == len(data.points_table.rows) and order == sorted(order)
        assert browser.problems() == []


def test_screenshot_of_the_first_screen(sweep, tmp_path):
    shot = tmp_path / "first.png"
    r = run_cli("report", str(sweep / "results.jsonl"), "--screenshot", str(shot))
    assert r.returncode == 0, r.stdout + r.stderr
    assert _png_size(shot) == (1280, 800)
    assert shot.stat().st_size > 20_000  # a rendered page, not a blank one


def test_console_errors_are_caught(tmp_path):
    page = tmp_path / "bad.html"
    page.write_text("<!doctype html><p>x</p><script>console.warn('w'); nosuch();</script>")
    with Browser() as browser:
        browser.open(page)
        problems = browser.problems()
    assert problems[0] == "console.warning: w"
    assert problems[1].startswith("exception: ReferenceError: nosuch is not defined")
