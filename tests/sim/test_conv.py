"""Convolution descriptors on the simulated device (contract.conv, rtl/expander.py): random
convolutions (strides 1-2, pads 0-2, dilations 1-2, 1x1 to 7x7 kernels, ragged channel counts,
chunks of one or more output rows or whole images and one or more slices, every loop order)
bit-exact against
golden.conv, every counter equal to the exact model's, with zero points and requantization, in
all three dataflows; and (WS) queued behind one another and between GEMMs."""

from __future__ import annotations

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig
from systolic.contract.conv import (
    Conv,
    chunk_rows,
    depthwise_slices,
    device_gemm,
    device_weights,
    input_matrix,
    slices,
    stage_bound,
)
from systolic.contract.dma import (
    LOOP_ORDERS,
    Refusal,
    check_descriptor,
    next_base,
    place,
    word_layout,
)
from systolic.contract.memory import DEFAULT_MEMORY, Dram
from systolic.contract.plan import conv_chunk_sizes
from systolic.golden.conv import conv_reference
from systolic.golden.data import random_operands
from systolic.golden.reference import reference
from systolic.golden.requant import RequantParams
from systolic.models.device import predict_device, predict_stream
from systolic.sim.simulate import Quantization, run_convs, run_gemms

from tests.helpers import direct_conv, random_conv

#: The device of these tests (and of the convolution regression and `systolic sim --conv`
#: tests): ragged 3-channel slices, zero points and requantization (drawn on or off per
#: convolution, in fixed point or onnxruntime's float32 scales); OS's inputs and outputs u8,
#: the others' s8 (tests/quant/test_ort_device.py runs onnxruntime's layers of both on them).
CONFIGS = {
    "ws-3x2-zp-rq": ArrayConfig("ws", 3, 2, zero_points=True, requant=True, requant_float=True,
                                a_depth=128, b_depth=128, c_depth=128, stage_depth=128),
    # OS and IS transpose the staged slices into A words of pixels (3 and 2 a word here)
    "os-3x2-zp-rq": ArrayConfig("os", 3, 2, zero_points=True, requant=True, requant_float=True,
                                a_depth=256, b_depth=128, c_depth=128, stage_depth=128,
                                a_signed=False, out_signed=False),
    "is-3x2-zp-rq": ArrayConfig("is", 3, 2, zero_points=True, requant=True, requant_float=True,
                                a_depth=256, b_depth=256, c_depth=128, stage_depth=128),
}  # fmt: skip
CONFIG = CONFIGS["ws-3x2-zp-rq"]


def _chunk(rng, config: ArrayConfig, conv: Conv):
    """A random chunk the device takes (whole output rows tiling the images, whole slices),
    fitting the banks and the staging buffer; None when none does."""
    tile = word_layout(config, "a").tile
    m, k, n = device_gemm(conv, tile)
    oh, ow = conv.out
    per_slice = conv.kernel[0] * conv.kernel[1] * tile
    tries = []
    for r in range(1, m // ow + 1):
        if chunk_rows(conv, r * ow) is None:
            continue
        for s in range(1, slices(conv, tile) + 1):
            nc = int(rng.choice([n, max(1, n // 2)]))
            d = place(config, m, k, n, conv=conv, chunk=(r * ow, s * per_slice, nc))
            if check_descriptor(config, d)[0] is Refusal.NONE:
                tries.append(d.chunk)
    return tries[int(rng.integers(len(tries)))] if tries else None


def _span(signed: bool) -> tuple[int, int]:
    """An 8-bit operand's values, as ``rng.integers`` takes them."""
    return (-128, 128) if signed else (0, 256)


def _draws(rng, config: ArrayConfig, count: int) -> list:
    out = []
    while len(out) < count:
        conv = random_conv(rng, int(rng.choice([1, 3, 5, 7])))
        chunk = _chunk(rng, config, conv)
        if chunk is None:
            continue
        x = rng.integers(*_span(config.a_signed), (conv.batch, conv.height, conv.width,
                                                   conv.channels))  # fmt: skip
        w = rng.integers(-128, 128, (conv.out_channels, *conv.kernel, conv.channels))
        q = None
        if config.zero_points and rng.random() < 0.7:
            n = conv.out_channels
            low = 0 if config.out_signed else 5  # the output zero point: -5..4 or 0..9
            out_zero, relu, bias = int(rng.integers(-5, 5)) + low, bool(rng.integers(2)), (
                rng.integers(-500, 500, n))  # fmt: skip
            if rng.random() < 0.5:  # onnxruntime's float scales: outputs from 0 to saturated
                scales = np.float32(2.0) ** rng.uniform(-16, -6, n).astype(np.float32)
                params = RequantParams.from_float_scales(scales, out_zero, relu, bias)
            else:
                params = RequantParams(rng.integers(1 << 29, 1 << 30, n),
                                       rng.integers(-12, -6, n), out_zero, relu, bias)  # fmt: skip
            a_zero = int(rng.integers(-10, 10)) + (0 if config.a_signed else 128)
            q = Quantization(a_zero, int(rng.integers(-10, 10)), params)
        out.append(((conv, x, w), q, chunk, LOOP_ORDERS[int(rng.integers(len(LOOP_ORDERS)))]))
        tile = word_layout(config, "a").tile
        assert stage_bound(conv, tile, chunk[0], chunk[1]) <= config.stage_depth
    return out


def _expected(config, conv, x, w, q):
    if q is None:
        return conv_reference(config, conv, x, w)
    acc = conv_reference(config, conv, x, w, q.a_zero, q.b_zero)
    return q.params.apply(config, acc)


@pytest.mark.parametrize("name", CONFIGS)
def test_convolutions_are_bit_exact_and_the_model_exact(name, seed):
    config = CONFIGS[name]
    rng = np.random.default_rng([seed, len(name)])
    print(f"seed {seed}")
    draws = _draws(rng, config, 6)
    results = run_convs(config, [d[0] for d in draws], quant=[d[1] for d in draws],
                        chunk=[d[2] for d in draws], order=[d[3] for d in draws],
                        name="conv")  # fmt: skip
    for ((conv, x, w), q, chunk, _), res in zip(draws, results, strict=True):
        assert res.error == 0, (conv, chunk)
        np.testing.assert_array_equal(res.c, _expected(config, conv, x, w, q),
                                      err_msg=f"{conv} chunk {chunk}")  # fmt: skip
        assert dict(predict_device(config, res.descriptor, DEFAULT_MEMORY)) == res.counters, (
            conv, chunk)  # fmt: skip
        assert not res.errors, res.errors
        print(f"{conv} chunk {chunk}: {res.counters['cycles']} cycles, A "
              f"{res.counters['dram_read_bytes_a']} bytes")  # fmt: skip


def test_convolutions_and_gemms_queued_together(seed):
    """Convolutions and GEMMs queued at once behind a slow, long-latency DRAM: a GEMM's A load
    right behind a convolution's waits for the expander (the A bank has one write port), a
    convolution behind a GEMM stages while the GEMM's A still arrives; bit-exact, every
    completion and the queue's counters as the model predicts."""
    config = CONFIG
    rng = np.random.default_rng([seed, 5])
    print(f"seed {seed}")
    draws = _draws(rng, config, 3)
    # the first GEMM's B waits for the DRAM's request slots long enough that the convolution
    # behind it stages while the GEMM's A still arrives
    shapes = [(9, 9, 9), tuple(int(v) for v in rng.integers(1, 10, 3))]
    gemms = random_operands(rng, config, shapes)
    operands, descriptors, wants, base = [], [], [], 0
    # a GEMM first: the convolution behind it stages while the GEMM's A still arrives (its
    # words go to the bank, the staging load's to the staging buffer: each load says which)
    plan = [("gemm", gemms[0]), ("conv", draws[0]), ("conv", draws[1]), ("gemm", gemms[1]),
            ("conv", draws[2])]  # fmt: skip
    for kind, item in plan:
        if kind == "conv":
            (conv, x, w), _, chunk, order = item
            d = place(config, *device_gemm(conv, config.rows), conv=conv, chunk=chunk,
                      order=order, base=base)  # fmt: skip
            operands.append((input_matrix(conv, x), device_weights(conv, w, config.rows)))
            wants.append(conv_reference(config, conv, x, w))
        else:
            a, b = item
            d = place(config, a.shape[0], a.shape[1], b.shape[1], base=base)
            operands.append((a, b))
            wants.append(reference(config, a, b))
        descriptors.append(d)
        base = next_base(config, d)
    memory = Dram("3/2", 100, 8)  # a long latency: loads overlap
    runs = run_gemms(config, operands, descriptors=descriptors, queued=True, memory=memory,
                     name="conv-queued")  # fmt: skip
    first = runs[0].posted
    predicted = predict_stream(config, [(r.descriptor, r.posted - first) for r in runs], memory)
    for i, (res, want, pred) in enumerate(zip(runs, wants, predicted, strict=True)):
        assert res.error == 0, i
        assert pred.measured_cycles == res.measured_cycles, (i, plan[i][0])
        np.testing.assert_array_equal(res.c, want, err_msg=f"descriptor {i}")
    assert runs[-1].counters == predicted.registers


@pytest.mark.parametrize("name", CONFIGS)
def test_a_depthwise_convolution_runs_a_slice_at_a_time(name, seed):
    """Depthwise (groups = channels), lowered to one convolution a slice with block-diagonal
    weights (contract.conv.depthwise_slices): the slices' outputs side by side are the
    depthwise convolution by its definition, zero points included; each slice's counters the
    model's; on every dataflow (a slice is A's tile: 3 channels on WS and OS, 2 on IS)."""
    config = CONFIGS[name]
    tile = word_layout(config, "a").tile
    rng = np.random.default_rng([seed, 6])
    print(f"seed {seed}")
    while True:  # a convolution whose slices have a chunk that fits
        base = random_conv(rng, int(rng.choice([3, 5])))
        channels = int(rng.integers(tile + 1, 3 * tile + 1))  # two or three slices
        conv = Conv(base.batch, base.height, base.width, channels, channels, base.kernel,
                    base.stride, base.pads, base.dilation, channels)  # fmt: skip
        try:
            conv_chunk_sizes(config, Conv(conv.batch, conv.height, conv.width, tile,
                                          tile, conv.kernel, conv.stride, conv.pads,
                                          conv.dilation))  # fmt: skip
        except ValueError:
            continue
        break
    x = rng.integers(*_span(config.a_signed), (conv.batch, conv.height, conv.width, channels))
    w = rng.integers(-128, 128, (channels, *conv.kernel, 1))
    za, zb = (int(v) for v in rng.integers(-10, 10, 2))
    za += 0 if config.a_signed else 128
    parts = depthwise_slices(conv, x, w, tile, zb)
    q = Quantization(za, zb)
    results = run_convs(config, parts, quant=[q] * len(parts), name="depthwise")
    got = np.concatenate([r.c for r in results], axis=1)
    np.testing.assert_array_equal(got, direct_conv(conv, x, w, za, zb), err_msg=str(conv))
    for res in results:
        assert res.error == 0
        assert dict(predict_device(config, res.descriptor, DEFAULT_MEMORY)) == res.counters
    print(f"{conv}: {len(parts)} slices, {sum(r.counters['cycles'] for r in results)} cycles")
