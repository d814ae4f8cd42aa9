"""The playbook end to end (a short run through the RTL), and networks to and from ONNX."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from systolic.quant.nets import Conv, Dense, Flatten, Net, Relu
from systolic.quant.onnx_io import net_from_onnx, write_onnx
from systolic.workloads.library import WorkloadError
from systolic.workloads.onnx_import import onnx_workload

from ..helpers import at_most, run_cli

#: Chance is 0.1 on ten digits: over seeds 1-200 (make seeds) the accuracy is 0.097 on average
#: (sd 0.040, worst 0.20); the bound is mean + 6 sd, rounded up.
UNTRAINED_ACCURACY = 0.35


def test_short_playbook_run_passes_its_checks(tmp_path):
    out = tmp_path / "q"
    # 4x4: the accuracy test's int4 build (ws-4x4 uint4 x int4, requantized to 4 bits)
    r = run_cli("quantize", "--models", "digits:mlp", "--quick", "--rtl-samples", "4",
                "--rows", "4", "--out", str(out), "--seed", "0")  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    (record,) = json.loads((out / "quantize.json").read_text())
    checks = {c["name"]: c for c in record["checks"]}
    assert set(checks) == {"RTL equals golden/", "fake-quant model = integer pipeline",
                           "per-layer SQNR against float", "requantization parameters in range",
                           "accuracy retention guard",
                           "onnxruntime's quantization on the RTL"}  # fmt: skip
    assert all(c["passed"] for c in checks.values()), checks
    assert checks["RTL equals golden/"]["detail"].count("bit-exact") == 2
    # onnxruntime's four quantizations: both dense layers of each on the device, every element
    assert [(c["format"], c["weights"]) for c in record["ort_rtl"]] == [
        ("QDQ", "per-tensor"), ("QDQ", "per-channel"), ("QOperator", "per-tensor"),
        ("QOperator", "per-channel")]  # fmt: skip
    for case in record["ort_rtl"]:
        on_device = [x for x in case["layers"] if x["device"] is not None]
        assert [x["op"] for x in on_device] == ["QGemm", "QGemm"], case
        assert all(x["device"] == x["golden"] == x["elements"] > 0 for x in on_device), case
    ort_rows = [r for r in record["retention"] if r["name"].startswith("onnxruntime")]
    assert len(ort_rows) == 2 and all(r["test"] > UNTRAINED_ACCURACY for r in ort_rows)
    assert record["onnx_identical"]
    # the file the playbook quantized is a workload too: 64-64-10 per sample
    assert record["gemms"] == [["dense1", 1, 64, 64], ["dense3", 1, 64, 10]]
    # every mix of three precisions over two layers, with energy from the model
    assert len(record["mixes"]) == 9 and all(m["energy_pj"] > 0 for m in record["mixes"])
    by = {m["energy_pj"]: m["precisions"] for m in record["mixes"]}
    uniform = {tuple(p): e for e, p in by.items() if len(set(p)) == 1}
    assert uniform[("int4", "int4")] < uniform[("int8", "int8")] < uniform[("bf16", "bf16")]
    chosen = record["chosen"]
    assert chosen["val"] >= record["floor"] * record["float"]["val"]
    assert not any(m["val"] >= chosen["val"] and m["energy_pj"] < chosen["energy_pj"]
                   for m in record["mixes"])  # fmt: skip
    # the chosen mix's energy carries the energy model's range, as every other answer does
    row = next(r for r in record["retention"] if r.get("energy_range_pj"))
    low, high = row["energy_range_pj"]
    assert low < row["energy_pj"] == chosen["energy_pj"] < high
    md = (out / "quantize.md").read_text()
    for heading in ("## Summary", "### Calibration", "### Mixed precision",
                    "### Deployment checks (chosen mix)"):  # fmt: skip
        assert heading in md
    html = (out / "quantize.html").read_text()
    assert "data:image/png;base64," in html and "FAIL" not in html
    assert "PASS RTL equals golden/" in r.stdout


def _model(tmp_path, nodes, inits, shape=(1, 4)):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", *shape[1:]])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", None])
    g = helper.make_graph(nodes, "m", [x], [y], inits)
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_networks_round_trip_through_onnx(tmp_path, seed):
    rng = np.random.default_rng(seed)

    def f32(*shape):
        return rng.standard_normal(shape).astype(np.float32).astype(float)

    net = Net("rt", (2, 6, 6), [
        Conv(f32(3, 2, 3, 3), 2, 1, f32(3)), Relu(), Flatten(), Dense(f32(27, 5), f32(5)),
        Relu(), Dense(f32(5, 4)),
    ])  # fmt: skip
    path = write_onnx(net, tmp_path / "rt.onnx")
    back = net_from_onnx(path)
    x = rng.standard_normal((4, 72))
    np.testing.assert_array_equal(back.forward(x), net.forward(x))
    assert [g.shape for g in onnx_workload(path, batch=4).gemms] == [(36, 18, 3), (4, 27, 5),
                                                                    (4, 5, 4)]  # fmt: skip
    assert back.layers[0].b.tolist() == net.layers[0].b.tolist() and back.layers[5].b is None


def test_a_bias_added_after_the_layer_folds_into_it(tmp_path, seed):
    """PyTorch exports a Linear on 3-D inputs as MatMul then Add: the constant folds into the
    layer's bias, as a Gemm's would."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="fc"),
             helper.make_node("Add", ["b", "h"], ["y"], name="add")]  # fmt: skip
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")]
    net = net_from_onnx(_model(tmp_path, nodes, inits))
    assert len(net.layers) == 1 and net.layers[0].b.tolist() == b.astype(float).tolist()
    x = rng.standard_normal((2, 4))
    np.testing.assert_allclose(net.forward(x), x @ w + b, rtol=1e-6)


def test_onnx_networks_the_playbook_cannot_take_are_named(tmp_path):
    w = numpy_helper.from_array(np.ones((4, 3), np.float32), "w")
    bias = numpy_helper.from_array(np.ones(2, np.float32), "b")  # 3 channels
    path = _model(tmp_path, [helper.make_node("Gemm", ["x", "w", "b"], ["y"], name="fc")],
                  [w, bias])  # fmt: skip
    with pytest.raises(WorkloadError, match="'fc' .*bias needs one value per output channel"):
        net_from_onnx(path)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="fc"),
             helper.make_node("Add", ["h", "x"], ["y"], name="residual")]  # fmt: skip
    with pytest.raises(WorkloadError, match="'residual' .*not a constant"):
        net_from_onnx(_model(tmp_path, nodes, [w]))
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="fc"),
             helper.make_node("Softmax", ["h"], ["y"], name="sm")]  # fmt: skip
    path = _model(tmp_path, nodes, [w])
    with pytest.raises(WorkloadError, match="'sm' \\(Softmax\\)"):
        net_from_onnx(path)
    path = _model(tmp_path, [helper.make_node("MatMul", ["x", "w"], ["h"], name="a"),
                             helper.make_node("Relu", ["x"], ["y"], name="b")], [w])  # fmt: skip
    with pytest.raises(WorkloadError, match="not a chain"):
        net_from_onnx(path)


def test_a_users_onnx_network_is_quantized_as_given(tmp_path, seed):
    from systolic.quant.playbook import Options, run_model

    rng = np.random.default_rng(seed)
    user = Net("user", (64,), [Dense(rng.standard_normal((64, 32)) * 0.2,
                                     rng.standard_normal(32) * 0.1), Relu(),
                               Dense(rng.standard_normal((32, 10)) * 0.2,
                                     rng.standard_normal(10) * 0.1)])  # fmt: skip
    path = write_onnx(user, tmp_path / "user.onnx")
    opts = Options(models=("digits:mlp",), out=tmp_path / "q", onnx=path, rtl_samples=0,
                   qat_epochs=1, cal_draws=1, cal_sizes=(16,), log=lambda text: None)  # fmt: skip
    record = run_model("digits:mlp", opts)
    assert record["source"] == f"read from {path}"
    assert record["gemms"] == [["dense0", 1, 64, 32], ["dense2", 1, 32, 10]]
    assert len(record["mixes"]) == 9
    # untrained weights: the float accuracy is chance, and the guard still reports honestly
    at_most(record["float"]["test"], UNTRAINED_ACCURACY, "untrained network's test accuracy")
