"""quant/nets.py: im2col against a direct convolution, backpropagation against finite
differences, and the straight-through estimator of quantization-aware training."""

from __future__ import annotations

import numpy as np
from systolic.quant.deployment import Recipe, make_plan
from systolic.quant.nets import Conv, Dense, Flatten, Net, Relu, im2col, train


def _direct_conv(x, w, stride, pad):
    """Cross-correlation by its definition, one output at a time."""
    n, c, h, ww = x.shape
    cout, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (ww + 2 * pad - kw) // stride + 1
    out = np.zeros((n, cout, oh, ow))
    for b in range(n):
        for o in range(cout):
            for i in range(oh):
                for j in range(ow):
                    patch = xp[b, :, i * stride : i * stride + kh, j * stride : j * stride + kw]
                    out[b, o, i, j] = np.sum(patch * w[o])
    return out


def test_im2col_convolution_matches_the_definition(seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 3, 7, 6))
    for stride, pad in ((1, 1), (2, 1), (2, 0), (3, 2)):
        layer = Conv(rng.standard_normal((4, 3, 3, 3)), stride, pad)
        net = Net("c", (3, 7, 6), [layer])
        np.testing.assert_allclose(net.forward(x), _direct_conv(x, layer.w, stride, pad),
                                   atol=1e-12)  # fmt: skip


def test_im2col_pads_with_the_given_value():
    x = np.zeros((1, 1, 2, 2), dtype=np.int64)
    cols = im2col(x, 3, 3, 1, 1, pad_value=7)
    assert cols.shape == (4, 9)
    assert (cols == 7).sum() == 4 * 5  # each 3x3 window over a 2x2 input sees 5 padded taps


def _small_net(rng):
    return Net("t", (2, 5, 5), [
        Conv(rng.standard_normal((3, 2, 3, 3)) * 0.5, 2, 1), Relu(), Flatten(),
        Dense(rng.standard_normal((27, 6)) * 0.3), Relu(), Dense(rng.standard_normal((6, 4))),
    ])  # fmt: skip


def _relu_pattern(net, x) -> list:
    trace: list = []
    net.forward(x, trace=trace)
    return [mask for layer, mask, _ in trace if isinstance(layer, Relu)]


def test_gradients_match_finite_differences(seed):
    """Central differences of the loss, at weights whose +-eps steps cross no ReLU kink (where
    a difference quotient is not the derivative)."""
    rng = np.random.default_rng(seed)
    net = _small_net(rng)
    x, y = rng.standard_normal((5, 50)), rng.integers(0, 4, 5)
    _, grads = net.gradients(x, y)
    eps = 1e-6
    for layer, g in zip(net.array_layers, grads, strict=True):
        checked = 0
        for _ in range(40):
            idx = tuple(rng.integers(0, s) for s in layer.w.shape)
            old = layer.w[idx]
            layer.w[idx] = old + eps
            up, _ = net.gradients(x, y)
            pattern_up = _relu_pattern(net, x)
            layer.w[idx] = old - eps
            down, _ = net.gradients(x, y)
            pattern_down = _relu_pattern(net, x)
            layer.w[idx] = old
            if any((a != b).any() for a, b in zip(pattern_up, pattern_down, strict=True)):
                continue  # the step crossed a kink
            assert abs((up - down) / (2 * eps) - g[idx]) < 1e-5 * max(1, abs(g[idx])), idx
            checked += 1
            if checked == 6:
                break
        assert checked == 6


def test_straight_through_estimator_blocks_clipped_values(seed):
    rng = np.random.default_rng(seed)
    net = _small_net(rng)
    x, y = np.abs(rng.standard_normal((40, 50))), rng.integers(0, 4, 40)
    plan = make_plan(net, x, "int4", Recipe("percentile", 90.0))  # clips a tenth of inputs
    acts = net.activations(x)
    mask = plan.ste(0, "act", acts[0])
    top = (15 - plan.layers[0].act.zero_point) * plan.layers[0].act.scale
    np.testing.assert_array_equal(mask, (acts[0] <= top + 1e-12).astype(float))
    assert (mask == 0).sum() > 0
    # the weight gradient through the STE is the plain one where nothing is clipped
    plain = Net("t", net.input_shape, net.layers)
    _, g_plain = plain.gradients(x, y, hook=plan.hook)
    _, g_ste = plain.gradients(x, y, hook=plan.hook, ste=plan.ste)
    w_mask = plan.ste(2, "weight", net.array_layers[2].matrix())
    np.testing.assert_allclose(g_ste[2], g_plain[2] * w_mask)


def test_qat_lowers_the_fake_quantized_loss(seed):
    rng = np.random.default_rng(seed)
    net = _small_net(rng)
    x = rng.standard_normal((200, 50))
    y = np.argmax(x[:, :4], axis=1)  # learnable labels
    train(net, x, y, rng, epochs=20)
    plan = make_plan(net, x, "int4", Recipe())
    before, _ = net.gradients(x, y, hook=plan.hook)
    losses = train(net, x, y, rng, epochs=10, lr=1e-3, hook=plan.hook, ste=plan.ste)
    after, _ = net.gradients(x, y, hook=plan.hook)
    print(f"seed {seed}: fake-quant loss {before:.4f} -> {after:.4f}, epochs {losses}")
    assert after < before
