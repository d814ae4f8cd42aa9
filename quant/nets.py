"""Small networks in numpy: dense and convolution layers (NCHW, each with an optional per-channel
bias, which the array adds in its fused output path), ReLU and Flatten, with backpropagation and
Adam, and hooks that put fake quantization in the forward pass (quantization-aware training with
a straight-through estimator).

A convolution is computed as the array computes it: im2col, one row per output pixel and one
column per (input channel, kernel row, kernel column), times the weights as a ``K x Cout``
matrix. :func:`im2col` is shared with the integer pipeline, which pads with the zero point.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

__all__ = [
    "Conv",
    "Dense",
    "Flatten",
    "Net",
    "Relu",
    "conv_out",
    "im2col",
    "train",
]


class _Weighted:
    def params(self) -> list[np.ndarray]:
        """What training updates, in place: the weights, then the bias if there is one."""
        return [self.w] if self.b is None else [self.w, self.b]

    def biased(self, y: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
        """The GEMM's output ``y`` (channels along the last axis) plus the bias (or ``bias``,
        the bias as a hook gave it)."""
        bias = self.b if bias is None else bias
        return y if bias is None else y + bias


@dataclass
class Dense(_Weighted):
    """``y = x @ w + b`` with ``w`` of shape ``K x N`` and ``b`` of ``N`` (or no bias)."""

    w: np.ndarray
    b: np.ndarray | None = None

    def matrix(self) -> np.ndarray:
        return self.w


@dataclass
class Conv(_Weighted):
    """A 2-D convolution of weights ``Cout x Cin x kh x kw``, square stride and padding, and a
    bias per output channel (or none)."""

    w: np.ndarray
    stride: int = 1
    pad: int = 0
    b: np.ndarray | None = None

    def matrix(self) -> np.ndarray:
        """The weights as the GEMM's B: ``(Cin * kh * kw) x Cout``."""
        return self.w.reshape(self.w.shape[0], -1).T


@dataclass
class Relu:
    pass


@dataclass
class Flatten:
    pass


ARRAY_LAYERS = (Dense, Conv)


def conv_out(size: int, kernel: int, stride: int, pad: int) -> int:
    return (size + 2 * pad - kernel) // stride + 1


def im2col(x: np.ndarray, kh: int, kw: int, stride: int, pad: int, pad_value=0) -> np.ndarray:
    """Rows ``(n, oh, ow)`` of columns ``(c, i, j)`` of the NCHW tensor ``x``, padded with
    ``pad_value`` (the zero point, for integers)."""
    n, c, _, _ = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=pad_value)
    windows = sliding_window_view(xp, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]
    oh, ow = windows.shape[2], windows.shape[3]
    return windows.transpose(0, 2, 3, 1, 4, 5).reshape(n * oh * ow, c * kh * kw)


def _col2im(cols, shape, kh, kw, stride, pad) -> np.ndarray:
    """The adjoint of :func:`im2col` (gradients back onto the input)."""
    n, c, h, w = shape
    oh, ow = conv_out(h, kh, stride, pad), conv_out(w, kw, stride, pad)
    g = cols.reshape(n, oh, ow, c, kh, kw).transpose(0, 3, 4, 5, 1, 2)
    out = np.zeros((n, c, h + 2 * pad, w + 2 * pad))
    for i in range(kh):
        for j in range(kw):
            out[:, :, i : i + stride * oh : stride, j : j + stride * ow : stride] += g[:, :, i, j]
    return out[:, :, pad : pad + h, pad : pad + w]


@dataclass
class Net:
    """A sequential network of :class:`Dense`, :class:`Conv`, :class:`Relu` and
    :class:`Flatten`, on inputs of ``input_shape`` (features, or ``C x H x W``)."""

    name: str
    input_shape: tuple[int, ...]
    layers: list = field(default_factory=list)

    @property
    def array_layers(self) -> list:
        return [layer for layer in self.layers if isinstance(layer, ARRAY_LAYERS)]

    def forward(self, x, hook=None, trace: list | None = None) -> np.ndarray:
        """Logits for ``x``. ``hook(i, kind, value)`` may replace the input activation
        (``kind="act"``), the weight matrix (``"weight"``) or the bias (``"bias"``) of array
        layer ``i``, and the layer's output (``"out"``: the GEMM's plus the bias); ``trace``
        collects what backpropagation needs."""
        h = np.asarray(x, dtype=np.float64).reshape(len(x), *self.input_shape)
        index = 0
        for layer in self.layers:
            if isinstance(layer, ARRAY_LAYERS):
                a_in = hook(index, "act", h) if hook else h
                w = hook(index, "weight", layer.matrix()) if hook else layer.matrix()
                bias = layer.b
                if hook and bias is not None:
                    bias = hook(index, "bias", bias)
                if isinstance(layer, Conv):
                    cout, _, kh, kw = layer.w.shape
                    n, _, hh, ww = a_in.shape
                    oh = conv_out(hh, kh, layer.stride, layer.pad)
                    ow = conv_out(ww, kw, layer.stride, layer.pad)
                    cols = im2col(a_in, kh, kw, layer.stride, layer.pad)
                    y = layer.biased(cols @ w, bias)
                    if hook:
                        y = hook(index, "out", y)
                    out = y.reshape(n, oh, ow, cout).transpose(0, 3, 1, 2)
                    ctx = (cols, w, a_in.shape, (n, oh, ow, cout))
                else:
                    y = layer.biased(a_in @ w, bias)
                    out = hook(index, "out", y) if hook else y
                    ctx = (a_in, w, None, None)
                if trace is not None:
                    trace.append((layer, ctx, a_in))
                h = out
                index += 1
            elif isinstance(layer, Relu):
                if trace is not None:
                    trace.append((layer, h > 0, None))
                h = np.maximum(h, 0)
            else:  # Flatten
                if trace is not None:
                    trace.append((layer, h.shape, None))
                h = h.reshape(len(h), -1)
        return h

    def activations(self, x) -> list[np.ndarray]:
        """Each array layer's input activation (NCHW for convolutions) on ``x``, float."""
        seen = []

        def hook(i, kind, value):
            if kind == "act":
                seen.append(value)
            return value

        self.forward(x, hook)
        return seen

    def outputs(self, x, hook=None) -> list[np.ndarray]:
        """Each array layer's output (``rows x N``, bias included) on ``x``, under ``hook`` if
        given."""
        seen = []

        def record(i, kind, value):
            value = hook(i, kind, value) if hook else value
            if kind == "out":
                seen.append(value)
            return value

        self.forward(x, record)
        return seen

    def predict(self, x, hook=None) -> np.ndarray:
        return np.argmax(self.forward(x, hook), axis=1)

    def accuracy(self, x, labels, hook=None) -> float:
        return float(np.mean(self.predict(x, hook) == labels))

    def gradients(self, x, labels, hook=None, ste=None) -> tuple[float, list[np.ndarray]]:
        """Softmax cross-entropy loss and its gradient for each parameter of each array layer
        (:meth:`Dense.params` order). ``ste(i, kind, value)`` gives the straight-through mask of
        a fake-quantized value (the bias is not masked: it is quantized at the accumulator's
        32 bits)."""
        trace: list = []
        logits = self.forward(x, hook, trace)
        shifted = logits - logits.max(axis=1, keepdims=True)
        log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))  # log-softmax
        loss = float(-np.mean(log_p[np.arange(len(x)), labels]))  # exact where p underflows
        p = np.exp(log_p)
        g = p
        g[np.arange(len(x)), labels] -= 1
        g /= len(x)
        grads = []
        index = len(self.array_layers)
        for layer, ctx, a_in in reversed(trace):
            if isinstance(layer, Relu):
                g = g * ctx
            elif isinstance(layer, Flatten):
                g = g.reshape(ctx)
            else:
                index -= 1
                a, w, in_shape, out_shape = ctx
                if isinstance(layer, Conv):
                    g2 = g.transpose(0, 2, 3, 1).reshape(-1, out_shape[3])
                    dw = a.T @ g2
                    cout, _, kh, kw = layer.w.shape
                    g = _col2im(g2 @ w.T, in_shape, kh, kw, layer.stride, layer.pad)
                    dw = dw.T.reshape(layer.w.shape)
                else:
                    g2 = g
                    dw = a.T @ g
                    g = g @ w.T
                if ste is not None:  # gradients pass where the quantizer did not clip
                    g = g * ste(index, "act", a_in)
                    mask = ste(index, "weight", layer.matrix())
                    dw = dw * (mask if isinstance(layer, Dense) else mask.T.reshape(dw.shape))
                if layer.b is not None:
                    grads.append(g2.sum(axis=0))
                grads.append(dw)
        return loss, grads[::-1]


def train(net: Net, x, labels, rng, *, epochs: int, lr: float = 3e-3, batch: int = 64,
          hook=None, ste=None, on_epoch=None) -> list[float]:  # fmt: skip
    """Adam on softmax cross-entropy over minibatches, in place; the mean loss of each epoch.
    With ``hook`` and ``ste`` the forward pass is fake-quantized (QAT); ``on_epoch(net)`` runs
    after each epoch (to recalibrate ranges)."""
    params = [p for layer in net.array_layers for p in layer.params()]
    m1 = [np.zeros_like(p) for p in params]
    m2 = [np.zeros_like(p) for p in params]
    losses, step = [], 0
    for _ in range(epochs):
        order = rng.permutation(len(x))
        total = 0.0
        for start in range(0, len(x), batch):
            idx = order[start : start + batch]
            loss, grads = net.gradients(x[idx], labels[idx], hook, ste)
            total += loss * len(idx)
            step += 1
            for p, g, a, b in zip(params, grads, m1, m2, strict=True):
                a *= 0.9
                a += 0.1 * g
                b *= 0.999
                b += 0.001 * g * g
                p -= lr * (a / (1 - 0.9**step)) / (np.sqrt(b / (1 - 0.999**step)) + 1e-8)
        losses.append(total / len(x))
        if on_epoch:
            on_epoch(net)
    return losses
