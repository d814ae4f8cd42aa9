"""Whole networks on the simulated device, every operator it supports on the device: the
playbook's digits CNN (biases and ReLU on the array's fused output path) and a ResNet basic
block (a max pool and a residual add on the vector unit, its convolutions' biases and ReLU
fused). Every intermediate tensor is bit-exact against golden/, computed apart from the device's
chain, and every counter equals the models' (models/device.py, models/vector.py)."""

from __future__ import annotations

import numpy as np
import pytest
from systolic.contract.vector import place_vector
from systolic.golden.reference import reference, requantized_reference
from systolic.golden.requant import RequantParams
from systolic.golden.vector import AddParams, descriptor_reference
from systolic.models.device import predict_device
from systolic.models.vector import predict_vector
from systolic.quant.deployment import Recipe, layer_config, make_plan, run_integer
from systolic.quant.nets import im2col
from systolic.quant.tasks import build_net, load_task
from systolic.sim.simulate import Quantization
from systolic.sim.vector import run_stream

#: The playbook's int8 layers (unsigned activations with zero points, signed weights) with the
#: vector unit: one build for both networks.
CONFIG = layer_config("int8", 4, vector=True)


@pytest.mark.long
def test_the_digits_cnn_runs_on_the_device_bit_exact(seed):
    """The deployed pipeline's three layers (golden/ computes the chain, run_integer) streamed
    on one device, each from the input golden gave it: every layer's output as golden's, every
    counter as the model's; the convolutions' bias and ReLU on the fused path, the logits'
    bias on the host."""
    rng = np.random.default_rng([seed, 35])
    task = load_task("digits")
    net = build_net(task, "cnn", rng)
    for layer in net.array_layers:  # trained biases are not zero
        layer.b = rng.normal(0, 0.2, layer.b.shape)
    plan = make_plan(net, task.x_train[:64], "int8", Recipe("minmax"))
    assert all(plan.bias(i) is not None for i in range(len(plan.layers)))
    run = run_integer(plan, task.x_test[:2], rows=4, vector=True)
    assert [g[1] for g in run.gemms] == [CONFIG] * 3
    items = [("gemm", a, b, quant) for _, _, a, b, quant in run.gemms]
    results = run_stream(CONFIG, items, name="e2e-digits", timeout=300)
    for index, (code, r) in enumerate(zip(run.codes, results, strict=True)):
        np.testing.assert_array_equal(r.c, code, err_msg=f"layer {index} (seed {seed})")
        assert r.counters == dict(predict_device(CONFIG, r.descriptor, r.memory)), index
        assert r.descriptor.bias == (index < 2) == (r.descriptor.clamp is not None), index


def _conv(x, w, zero):
    """im2col of NHWC ``x`` for a 3x3, stride-1, pad-1 convolution, padded with its zero point,
    and the weights as a K x Cout matrix in the same (channel, row, column) order."""
    cols = im2col(x.transpose(0, 3, 1, 2), 3, 3, 1, 1, pad_value=zero)
    return cols, w.reshape(w.shape[0], -1).T


def _requant(rng, acc_bound, scale_in, scale_w, channels, relu):
    """An output scale that fits the accumulators seen into 8 bits, and its parameters."""
    scale_out = acc_bound * scale_in * scale_w / 255
    zero = 0 if relu else 128
    bias = rng.integers(-2000, 2000, channels)
    return RequantParams.from_scales(np.full(channels, scale_in * scale_w / scale_out), zero,
                                     relu, bias), scale_out, zero  # fmt: skip


def test_a_resnet_basic_block_runs_on_the_device_bit_exact(seed):
    """max pool 3x3/2 -> conv 3x3 + bias + ReLU -> conv 3x3 + bias -> residual add with the
    pool's output, ReLU; 16 channels of 8 x 8 pixels, u8 activations, i8 weights. golden/
    computes the chain first; the device then runs its four descriptors as a driver streams
    them, with no reset between them (a vector descriptor after GEMMs, and GEMMs after one),
    each one's inputs laid out in DRAM before it is posted."""
    rng = np.random.default_rng([seed, 36])
    c = 16
    x = rng.integers(0, 256, (1, 8, 8, c))
    sx, zx, sw = 0.05, 100, 0.01
    pool = place_vector(CONFIG, "max_pool", x.shape, window=(3, 3), stride=(2, 2), pads=(1, 1),
                        out=(4, 4))  # fmt: skip
    golden = {"pool": descriptor_reference(CONFIG, pool, x)}
    items = [("vector", pool, x, None)]
    h, scale, zero = golden["pool"], sx, zx
    for name, relu in (("conv1", True), ("conv2", False)):
        a, b = _conv(h, rng.integers(-90, 91, (c, c, 3, 3)), zero)
        acc = reference(CONFIG, a, b, zero, 0)
        params, scale_out, zero_out = _requant(rng, np.abs(acc).max(), scale, sw, c, relu)
        golden[name] = requantized_reference(CONFIG, a, b, zero, 0, params)
        items.append(("gemm", a, b, Quantization(zero, 0, params)))
        h, scale, zero = golden[name].reshape(1, 4, 4, c), scale_out, zero_out  # C is NHWC
    params = AddParams.from_scales(scale, zero, sx, zx, 2 * max(scale, sx), 0)
    fields = {f"x_{f}": getattr(params, f"x_{f}") for f in ("zero", "multiplier", "shift")}
    fields |= {f"y_{f}": getattr(params, f"y_{f}") for f in ("zero", "multiplier", "shift")}
    add = place_vector(CONFIG, "add", h.shape, z_multiplier=params.out_multiplier,
                       z_shift=params.out_shift, out_zero=0, clamp=(0, 255), **fields)  # fmt: skip
    golden["add"] = descriptor_reference(CONFIG, add, h, golden["pool"])
    items.append(("vector", add, h, golden["pool"]))
    assert len(np.unique(golden["add"])) > 20  # the block's output is not saturated flat
    results = run_stream(CONFIG, items, name="e2e-block", timeout=300)
    for name, item, r in zip(golden, items, results, strict=True):
        where = f"{name} (seed {seed})"
        if item[0] == "vector":
            np.testing.assert_array_equal(r.z, golden[name], err_msg=where)
            assert r.counters == dict(predict_vector(CONFIG, item[1], r.memory)), where
        else:
            np.testing.assert_array_equal(r.c, golden[name], err_msg=where)
            assert r.counters == dict(predict_device(CONFIG, r.descriptor, r.memory)), where
        assert r.dram["read_beats_a"] == r.counters["dram_read_beats_a"], where
