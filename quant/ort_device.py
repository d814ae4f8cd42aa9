"""onnxruntime's quantized layers on the simulated device (issue 35).

Each QLinearConv, QLinearMatMul and QGemm of :func:`quant.ort_check.ort_layers` runs on the RTL
under Verilator, behind the DRAM model: a convolution as a convolution descriptor (its input
tensor in DRAM, no im2col copy; a depthwise one a slice of channels at a time on block-diagonal
weights, :func:`contract.conv.depthwise_slices`; another grouped one a descriptor per group), a
matrix product as a GEMM; the input's zero point and the weights' (one per layer:
onnxruntime's int8 weights are symmetric) at the array's edge; the int32 bias, onnxruntime's
float32 scale per output channel (``float_scale``, on a device built with ``requant_float``)
and the output zero point in the fused output path. The device's outputs come back in
onnxruntime's layout, to be compared with onnxruntime's own
(:func:`quant.ort_check.check_model`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

import numpy as np
from systolic.contract.config import ArrayConfig
from systolic.contract.conv import Conv, depthwise_slices
from systolic.contract.dma import word_layout
from systolic.contract.plan import conv_chunk_sizes
from systolic.contract.refusal import Refusal
from systolic.golden.requant import RequantParams
from systolic.sim.simulate import Quantization, run_convs, run_gemms

__all__ = ["DeviceFor", "device_config", "device_outputs", "placed"]

#: The device a layer runs on, given its input's and output's signedness.
DeviceFor = Callable[[bool, bool], ArrayConfig]


def device_config(dataflow: str = "ws", rows: int = 4, cols: int = 4, *,
                  depth: int = 1024) -> DeviceFor:  # fmt: skip
    """Devices for onnxruntime's layers: int8 operands with zero points, requantization in
    both modes (``requant_float``), a staging buffer for convolution descriptors; buffers of
    ``depth`` words. Inputs and outputs signed or not as the layer's are (u8 or s8
    activations)."""

    def make(in_signed: bool, out_signed: bool) -> ArrayConfig:
        return ArrayConfig(dataflow, rows, cols, a_signed=in_signed, zero_points=True,
                           requant=True, requant_float=True, out_signed=out_signed,
                           a_depth=depth, b_depth=depth, c_depth=depth,
                           stage_depth=depth)  # fmt: skip

    make(False, False)  # a bad dataflow or shape: refused here, by name
    return make


def placed(layer, x_shape) -> Conv:
    """A convolution layer's geometry on an input of ``x_shape`` (NCHW)."""
    batch, channels, height, width = x_shape
    if channels != layer.conv.channels:
        raise ValueError(f"{layer.op} {layer.name!r}: an input of {channels} channels, not "
                         f"{layer.conv.channels}")  # fmt: skip
    return replace(layer.conv, batch=batch, height=height, width=width)


def _quantization(layer, channels: slice | None = None) -> Quantization:
    """The layer's zero points and fused output path (its channels ``channels``)."""
    if np.unique(layer.w_zero).size > 1:
        raise ValueError(f"{layer.op} {layer.name!r}: its weights' zero points differ by "
                         f"channel; the device takes one per layer")  # fmt: skip
    pick = channels or slice(None)
    bias = None if layer.bias is None else layer.bias[pick]
    params = RequantParams.from_float_scales(layer.scale[pick], layer.y_zero, bias=bias)
    return Quantization(layer.x_zero, int(layer.w_zero[0]), params)


def _conv_jobs(config: ArrayConfig, layer, x: np.ndarray) -> list[tuple]:
    """A convolution's descriptors, their outputs' channels in order: ``((conv, x, w),
    quantization)``, the input NHWC (onnxruntime's is NCHW)."""
    c = placed(layer, x.shape)
    nhwc = np.asarray(x, np.int64).transpose(0, 2, 3, 1)
    if c.groups > 1 and c.groups == c.channels == c.out_channels:  # depthwise
        q = _quantization(layer)
        parts = depthwise_slices(c, nhwc, layer.weights, word_layout(config, "a").tile, q.b_zero)
        jobs, c0 = [], 0
        for part in parts:
            n = part[0].out_channels
            jobs.append((part, _quantization(layer, slice(c0, c0 + n))))
            c0 += n
        return jobs
    cin, cout = c.channels // c.groups, c.out_channels // c.groups
    one = Conv(c.batch, c.height, c.width, cin, cout, c.kernel, c.stride, c.pads, c.dilation)
    return [((one, nhwc[..., g * cin : (g + 1) * cin], layer.weights[g * cout : (g + 1) * cout]),
             _quantization(layer, slice(g * cout, (g + 1) * cout)))
            for g in range(c.groups)]  # fmt: skip


def _ran(layer, res) -> None:
    if res.error:
        raise ValueError(f"{layer.op} {layer.name!r}: the device refused it "
                         f"({Refusal(res.error).name}, code {res.error})")  # fmt: skip


def _named(owners: list, run, *args, **kwargs):
    """``run(*args, **kwargs)``, a problem with its ``i``-th GEMM or convolution (sim.simulate
    names them so) told as a problem of the layer ``owners[i]``."""
    try:
        return run(*args, **kwargs)
    except ValueError as e:
        found = re.match(r"(?:GEMM|convolution) (\d+)", str(e))
        if found is None:
            raise
        layer = owners[int(found.group(1))]
        raise ValueError(f"{layer.op} {layer.name!r}: {e}") from None


def _chunked(config: ArrayConfig, layer, jobs: list) -> list:
    """``jobs``, each convolution with the chunk the driver picks for it, their parameters
    checked; a layer none fits (its staged rows past the staging buffer, ...) or whose
    parameters the device cannot hold refused by name."""
    try:
        for (conv, _, _), q in jobs:
            q.check(config, conv.out_channels)
        return [(job, conv_chunk_sizes(config, job[0][0])) for job in jobs]
    except ValueError as e:
        raise ValueError(f"{layer.op} {layer.name!r} on {config.name}: {e}") from None


def _gemm_quantization(config: ArrayConfig, layer) -> Quantization:
    """A matrix product's quantization, checked: refused by name where the device cannot
    hold it."""
    q = _quantization(layer)
    try:
        q.check(config, layer.weights.shape[1])
    except ValueError as e:
        raise ValueError(f"{layer.op} {layer.name!r} on {config.name}: {e}") from None
    return q


def device_outputs(layers: list, values: dict[str, np.ndarray],
                   device_for: DeviceFor, **bench) -> dict[str, np.ndarray]:  # fmt: skip
    """Each layer's (:class:`quant.ort_check.OrtLayer`) output computed by the device on its
    input ``values[layer.input]`` (onnxruntime's tensors by name), in onnxruntime's layout, by
    layer name. The layers of one device run on one simulator process a kind: their
    convolutions in one batch, their matrix products in another. ``bench`` goes to
    :func:`sim.simulate.run_gemms` (``timeout``, ``memory``)."""
    by_device: dict[tuple[bool, bool], list] = {}
    for layer in layers:
        by_device.setdefault((layer.in_signed, layer.out_signed), []).append(layer)
    out: dict[str, np.ndarray] = {}
    for signs, group in by_device.items():
        config = device_for(*signs)
        convs = []  # (layer, (conv, x, w), quantization, chunk)
        for layer in group:
            if layer.conv is not None:
                jobs = _conv_jobs(config, layer, values[layer.input])
                convs += [(layer, *job, (c["m"], c["k"], c["n"]))
                          for job, c in _chunked(config, layer, jobs)]  # fmt: skip
        if convs:
            results = _named([c[0] for c in convs], run_convs, config, [c[1] for c in convs],
                             quant=[c[2] for c in convs], chunk=[c[3] for c in convs],
                             name="ort-conv", **bench)  # fmt: skip
            parts: dict[str, list[np.ndarray]] = {}
            for (layer, *_), res in zip(convs, results, strict=True):
                _ran(layer, res)
                parts.setdefault(layer.name, []).append(res.c)
            for layer in group:
                if layer.conv is None:
                    continue
                c = placed(layer, values[layer.input].shape)
                oh, ow = c.out
                y = np.concatenate(parts[layer.name], axis=1)  # pixels x channels, by group
                out[layer.name] = y.reshape(c.batch, oh, ow, c.out_channels).transpose(0, 3, 1, 2)
        gemms = [layer for layer in group if layer.conv is None]
        if gemms:
            inputs = [np.asarray(values[layer.input], np.int64) for layer in gemms]
            operands = [(x.reshape(-1, x.shape[-1]), layer.weights)
                        for x, layer in zip(inputs, gemms, strict=True)]  # fmt: skip
            results = _named(gemms, run_gemms, config, operands,
                             quant=[_gemm_quantization(config, layer) for layer in gemms],
                             name="ort-gemm", **bench)  # fmt: skip
            for x, layer, res in zip(inputs, gemms, results, strict=True):
                _ran(layer, res)
                out[layer.name] = res.c.reshape(*x.shape[:-1], -1)
    return out
