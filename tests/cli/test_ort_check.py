"""``systolic ort-check``: quantize with onnxruntime, every layer against golden; clear errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from systolic.quant.nets import Conv, Dense, Flatten, Net, Relu
from systolic.quant.onnx_io import write_onnx

from ..helpers import run_cli


@pytest.fixture
def model(tmp_path):
    rng = np.random.default_rng(5)
    net = Net("cli", (2, 6, 6), [
        Conv(rng.normal(0, 0.3, (4, 2, 3, 3)), pad=1, b=rng.normal(0, 0.1, 4)), Relu(),
        Flatten(), Dense(rng.normal(0, 0.1, (4 * 6 * 6, 5)), b=rng.normal(0, 0.1, 5)),
    ])  # fmt: skip
    return write_onnx(net, tmp_path / "cli.onnx")


def test_every_layer_of_a_quantized_model_equals_golden(model, tmp_path):
    kept = tmp_path / "q.onnx"
    r = run_cli("ort-check", str(model), "--per-channel", "--seed", "2", "--out", str(kept),
                "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert [x["op"] for x in report["layers"]] == ["QLinearConv", "QGemm"]
    assert all(x["equal"] == x["elements"] > 0 for x in report["layers"])
    assert ("every element of the 2 quantized layer(s) equals onnxruntime's (golden's is "
            "compared)") in r.stderr  # fmt: skip
    again = run_cli("ort-check", str(kept), "--quantized", "--seed", "3")  # the kept model
    assert again.returncode == 0, again.stderr
    assert "100.00%" in again.stdout


def test_a_differing_layer_exits_one(model, monkeypatch, capsys):
    from systolic.quant import ort_check

    from systolic.cli import main

    real = ort_check.golden_layer
    monkeypatch.setattr(ort_check, "golden_layer", lambda layer, x: real(layer, x) + 1)
    assert main(["ort-check", str(model), "--seed", "1"]) == 1
    assert "NOT every element" in capsys.readouterr().out


@pytest.mark.long
def test_rtl_runs_every_layer_on_the_device(model, monkeypatch, capsys):
    """``--rtl``: each layer's device column, and the exit status from both; on
    tests/sim/test_conv.py's OS device (u8, float scales), not a build of its own."""
    from systolic.quant import ort_device

    from systolic.cli import main

    from ..quant.test_ort_device import device_for

    monkeypatch.setattr(ort_device, "device_config", lambda *a, **k: device_for)
    assert main(["ort-check", str(model), "--seed", "4", "--rtl", "--json"]) == 0
    out, err = capsys.readouterr()
    report = json.loads(out[out.index("{") :])
    assert [x["device"] for x in report["layers"]] == [x["elements"] for x in report["layers"]]
    assert "(golden's and the device's are compared)" in err


@pytest.mark.parametrize(("args", "message"), [
    (["--quantized"], "has no QLinearConv, QLinearMatMul, QGemm layer"),
    (["--data", "missing.npy"], "--data: no such file missing.npy"),
    (["--calibrate", "best"], "argument --calibrate: invalid choice: 'best'"),
    (["--device", "ws-0x3"], "argument --device: must be DATAFLOW-ROWSxCOLS (ws, os or is; "
                             "rows 1..64, columns 1..64), as ws-4x4, not 'ws-0x3'"),
])  # fmt: skip
def test_bad_input_is_one_clear_line(model, args, message):
    r = run_cli("ort-check", str(model), "--seed", "1", *args)
    assert r.returncode == 2
    assert message in r.stderr and "Traceback" not in r.stderr


def test_a_file_that_is_not_onnx_is_refused(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_text("not a model")
    r = run_cli("ort-check", str(bad))
    assert r.returncode == 2
    assert r.stderr.strip() == f"systolic: {bad} is not an ONNX model (DecodeError)"
