"""Accuracy retention: a small MLP trained in numpy, quantized with quant.calibrate, run through
the simulated accelerator in int8, int4 and bf16, against its float accuracy.

The data is generated on the spot (no download): ten classes of 64-feature samples, each class a
mixture of two Gaussian modes with overlapping noise, so that a float MLP is good but not perfect
and precision loss shows. The network is ``64 -> 48 (ReLU) -> 10`` without biases (the array has
no bias adder). Quantized inference uses what deployed int8 models use:

- layer 1: activations asymmetric per tensor (a zero point, unsigned), weights symmetric per
  output channel; the int32 accumulators are requantized per channel with ReLU to unsigned
  integers (zero point 0) by the accelerator's requantization unit;
- layer 2: those integers times per-channel weights, int32 logits read raw and dequantized.

bf16 runs both layers in bf16 with fp32 accumulation; ReLU and the bf16 rounding of the hidden
layer happen on the host.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from systolic.contract.config import PRECISIONS, ArrayConfig
from systolic.golden.bf16 import bf16_bits, bits_to_float
from systolic.golden.reference import reference, requantized_reference
from systolic.models.energy import figures_energy
from systolic.quant.calibrate import choose_scale, quantize, requant_params
from systolic.sim.simulate import Quantization, run_gemms

__all__ = ["Experiment", "make_dataset", "run_accuracy", "train_mlp"]

FEATURES, HIDDEN, CLASSES = 64, 48, 10


def make_dataset(rng, samples: int) -> tuple[np.ndarray, np.ndarray]:
    """``(x, labels)``: ``samples`` rows of a fixed ten-class Gaussian mixture (see module)."""
    centers = np.random.default_rng(1234).standard_normal((CLASSES, 2, FEATURES)) * 0.9
    labels = rng.integers(0, CLASSES, samples)
    modes = rng.integers(0, 2, samples)
    x = centers[labels, modes] + rng.standard_normal((samples, FEATURES)) * 1.6
    return x, labels


def train_mlp(x, labels, rng, epochs: int = 400, lr: float = 0.01):
    """Weights ``(w1, w2)`` of the bias-free MLP, trained with Adam on softmax cross-entropy."""
    w = [
        rng.standard_normal((FEATURES, HIDDEN)) * np.sqrt(2 / FEATURES),
        rng.standard_normal((HIDDEN, CLASSES)) * np.sqrt(2 / HIDDEN),
    ]
    moments = [[np.zeros_like(p), np.zeros_like(p)] for p in w]
    onehot = np.eye(CLASSES)[labels]
    for step in range(1, epochs + 1):
        h = np.maximum(x @ w[0], 0)
        logits = h @ w[1]
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        d_logits = (p - onehot) / len(x)
        grads = [x.T @ ((d_logits @ w[1].T) * (h > 0)), h.T @ d_logits]
        for param, g, (m1, m2) in zip(w, grads, moments, strict=True):
            m1 *= 0.9
            m1 += 0.1 * g
            m2 *= 0.999
            m2 += 0.001 * g * g
            param -= lr * (m1 / (1 - 0.9**step)) / (np.sqrt(m2 / (1 - 0.999**step)) + 1e-8)
    return w


def _accuracy(logits, labels) -> float:
    return float(np.mean(np.argmax(logits, axis=1) == labels))


@dataclass
class Result:
    precision: str
    accuracy: float
    retention: float  # accuracy / float accuracy
    rtl_equals_golden: bool
    pj_per_mac: float


@dataclass
class Experiment:
    float_accuracy: float
    results: list[Result]
    test_samples: int

    def table(self) -> str:
        lines = [
            f"{'precision':10} {'accuracy':>9} {'retention':>10} {'pJ/MAC':>8}  RTL = golden",
            f"{'float64':10} {100 * self.float_accuracy:>8.2f}% {'100.00%':>10} {'-':>8}  -",
        ]
        for r in self.results:
            lines.append(
                f"{r.precision:10} {100 * r.accuracy:>8.2f}% {100 * r.retention:>9.2f}% "
                f"{r.pj_per_mac:>8.3f}  {'yes' if r.rtl_equals_golden else 'NO'}"
            )
        return "\n".join(lines)


def _integer(bits: int, x_cal, x_test, w1, w2, h_cal, labels, rows: int):
    """Layers 1 and 2 in ``bits``-bit integers through the accelerator."""
    config = ArrayConfig(
        "ws",
        rows,
        rows,
        a_width=bits,
        b_width=bits,
        acc_width=PRECISIONS[f"int{bits}"][1],
        a_signed=False,
        zero_points=True,
        requant=True,
        out_width=bits,
        out_signed=False,
    )
    s_x = choose_scale(x_cal, bits, signed=False, method="percentile")
    s_w1 = choose_scale(w1, bits, signed=True, per_channel=True, symmetric=True)
    s_h = choose_scale(h_cal, bits, signed=False, method="percentile")
    s_w2 = choose_scale(w2, bits, signed=True, per_channel=True, symmetric=True)
    xq, w1q, w2q = quantize(x_test, s_x), quantize(w1, s_w1), quantize(w2, s_w2)
    layer1 = Quantization(int(s_x.zero_point), 0, requant_params(s_x, s_w1, s_h, relu=True))
    (r1,) = run_gemms(config, [(xq, w1q)], quant=[layer1], activity=True, name="accuracy")
    golden1 = requantized_reference(config, xq, w1q, layer1.a_zero, 0, layer1.params)
    (r2,) = run_gemms(config, [(r1.c, w2q)], activity=True, name="accuracy")
    golden2 = reference(config, r1.c, w2q)
    logits = r2.c * s_h.scale * s_w2.scale
    exact = np.array_equal(r1.c, golden1) and np.array_equal(r2.c, golden2)
    return _accuracy(logits, labels), exact, (r1, r2)


def _bf16(x_test, w1, w2, labels, rows: int):
    config = ArrayConfig("ws", rows, rows, number="bf16")
    xb, w1b, w2b = bf16_bits(x_test), bf16_bits(w1), bf16_bits(w2)
    (r1,) = run_gemms(config, [(xb, w1b)], activity=True, name="accuracy")
    hidden = bf16_bits(np.maximum(bits_to_float(r1.c), 0))  # ReLU, back to bf16, on the host
    (r2,) = run_gemms(config, [(hidden, w2b)], activity=True, name="accuracy")
    exact = np.array_equal(r1.c, reference(config, xb, w1b)) and np.array_equal(
        r2.c, reference(config, hidden, w2b)
    )
    return _accuracy(bits_to_float(r2.c), labels), exact, (r1, r2)


def run_accuracy(test_samples: int = 1000, rows: int = 8, seed: int = 0) -> Experiment:
    """Train, calibrate on training data, and measure test accuracy per precision."""
    rng = np.random.default_rng(seed)
    x_train, y_train = make_dataset(rng, 3000)
    x_test, y_test = make_dataset(rng, test_samples)
    w1, w2 = train_mlp(x_train, y_train, rng)
    float_acc = _accuracy(np.maximum(x_test @ w1, 0) @ w2, y_test)
    x_cal = x_train[:500]
    h_cal = np.maximum(x_cal @ w1, 0)
    results = []
    runs = [
        (f"int{b}", lambda b=b: _integer(b, x_cal, x_test, w1, w2, h_cal, y_test, rows))
        for b in (8, 4)
    ] + [("bf16", lambda: _bf16(x_test, w1, w2, y_test, rows))]
    for name, run in runs:
        acc, exact, (r1, r2) = run()
        energy = sum(figures_energy(r, r.toggles, source="toggles").total for r in (r1, r2))
        macs = r1.macs + r2.macs
        results.append(Result(name, acc, acc / float_acc, exact, energy / macs))
    return Experiment(float_acc, results, test_samples)
