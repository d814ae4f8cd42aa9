"""models/device.py on convolution descriptors (contract.conv): the compute, B and C figures of
the implicit GEMM's im2col twin with the same chunks, and A's DRAM traffic the rows each chunk's
windows read, counted here from contract.conv.staged_rows (a separate derivation), once per
slice a chunk stages. Timing against the RTL waits for the expander's hardware."""

from __future__ import annotations

import numpy as np
from systolic.contract.config import ArrayConfig
from systolic.contract.conv import Conv, device_gemm, staged_rows
from systolic.contract.dma import containers, jobs, place
from systolic.contract.memory import DEFAULT_MEMORY, Dram
from systolic.models.device import predict_device

from tests.helpers import random_conv


def test_a_convolution_moves_its_staged_rows_and_computes_its_gemm(seed):
    rng = np.random.default_rng([seed, 3])
    print(f"seed {seed}")
    done = 0
    while done < 8:
        conv = random_conv(rng, int(rng.choice([1, 3, 5])))
        # dilation 1 and the windows of the first and last output rows reaching into the
        # plane: every row staged lies between the first and the last a window reads
        kh = conv.kernel[0]
        top, left, bottom, right = conv.pads
        pads = (min(top, kh - 1), left, min(bottom, kh - 1), right)
        conv = Conv(conv.batch, conv.height, conv.width, conv.channels, conv.out_channels,
                    conv.kernel, conv.stride, pads)  # fmt: skip
        config = ArrayConfig("ws", int(rng.integers(2, 5)), int(rng.integers(2, 5)), a_depth=512,
                             b_depth=512, c_depth=512, stage_depth=512)  # fmt: skip
        tile = config.rows
        try:
            d = place(config, *device_gemm(conv, tile), conv=conv)
        except ValueError:
            continue  # no chunk fits
        twin = place(config, d.m, d.k, d.n, chunk=d.chunk)
        dram = Dram(int(rng.choice([4, 16, 64])), int(rng.choice([1, 20])), 64)
        got, gemm = predict_device(config, d, dram), predict_device(config, twin, dram)
        assert got["jobs"] == gemm["jobs"] > 0
        for name in ("preload_cycles", "stream_cycles", "a_reads", "b_reads", "c_writes",
                     "dram_read_bytes_b", "dram_write_bytes"):  # fmt: skip
            assert got[name] == gemm[name], (name, conv, d.chunk)
        staged = 0
        per_slice = conv.kernel[0] * conv.kernel[1] * tile
        for job in jobs(config, d):
            if job.load_a:
                ch = job.chunk
                rows = [i * conv.height + y for i, y in staged_rows(conv, ch.m0, ch.m1)]
                span = rows[-1] - rows[0] + 1 if rows else 1
                staged += span * conv.width * -(-(ch.k1 - ch.k0) // per_slice)
        assert got["dram_read_bytes_a"] == staged * containers(config)["a"], (conv, d.chunk)
        print(f"{conv}: A {got['dram_read_bytes_a']} B from DRAM against "
              f"{gemm['dram_read_bytes_a']} B as im2col; {got['cycles']} cycles against "
              f"{gemm['cycles']}")  # fmt: skip
        done += 1


def test_a_three_by_three_convolution_reads_a_third_of_its_im2col():
    """3x3, stride 1, pad 1 on 16x16 with 8 channels, WS 4x4: chunks of 2 output rows stage 4
    input rows (2 at an edge), 32 of them in the image, where im2col reads every element up to
    9 times (2,304 words of A against 288 of input)."""
    config = ArrayConfig("ws", 4, 4, stage_depth=256)
    conv = Conv(1, 16, 16, 8, 8, (3, 3), (1, 1), (1, 1, 1, 1))
    d = place(config, *device_gemm(conv, 4), conv=conv, chunk=(32, 72, 8))
    got = predict_device(config, d, DEFAULT_MEMORY)
    rows = 3 + 6 * 4 + 3  # the first and last chunk read 3 rows, the six between 4
    assert got["dram_read_bytes_a"] == rows * 16 * 2 * containers(config)["a"]
    twin = predict_device(config, place(config, d.m, d.k, d.n, chunk=d.chunk), DEFAULT_MEMORY)
    assert twin["dram_read_bytes_a"] == 256 * 18 * containers(config)["a"]
