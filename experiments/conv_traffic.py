"""Convolutions' DRAM traffic before and after the DMA's staging (issue 34): ResNet-50 (v1.5)
and MobileNet v1 at batch 1 and 8 on WS 16x16, int8 requantized, every convolution's bytes from
the device's transfers (contract.dma.transfers over its chunks: exactly what the exact model
counts, tests/models/test_device_conv.py), and the DRAM energy of those bytes.

*Before*: every convolution an im2col GEMM (A the im2col matrix in DRAM, built by the host: its
own traffic is not counted here, as the models never counted it). *After*: the driver's
lowering (see :func:`lowering`): a 1x1 stride-1 unpadded convolution is the GEMM on its input
itself; a convolution whose channels fill less than half a slice (the stem's 3) or a strided
1x1 stays im2col (staging whole rows would read more than the windows do, or multiply K by the
padded lanes); the rest are convolution descriptors, a depthwise one as one descriptor per
slice of 16 channels with block-diagonal weights. Chunks: the largest that fit for the GEMMs
(loop order nmk), the fewest bytes for the convolutions (contract.plan.conv_chunk_sizes).

Prints each network's A, B and C megabytes before and after, the DRAM energy, and, for
ResNet-50's 3x3 layers, A's bytes against the compulsory: the input once per pass of the
chunk nest over it (once per N chunk when the nest reloads A for each)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from systolic.contract.config import ArrayConfig
from systolic.contract.conv import Conv, device_gemm, slices
from systolic.contract.dma import containers, jobs, place, transfers
from systolic.contract.memory import container_bytes
from systolic.models.technology import dram_energy

#: (name, input size, channels, out channels, kernel, stride, count): torchvision's ResNet-50
#: v1.5 (stride on the 3x3), 224 x 224 input, pads kernel // 2.
RESNET50 = [
    ("conv1", 224, 3, 64, 7, 2, 1),
    ("l1_reduce_first", 56, 64, 64, 1, 1, 1), ("l1_reduce", 56, 256, 64, 1, 1, 2),
    ("l1_3x3", 56, 64, 64, 3, 1, 3), ("l1_expand", 56, 64, 256, 1, 1, 3),
    ("l1_down", 56, 64, 256, 1, 1, 1),
    ("l2_reduce_first", 56, 256, 128, 1, 1, 1), ("l2_3x3_first", 56, 128, 128, 3, 2, 1),
    ("l2_reduce", 28, 512, 128, 1, 1, 3), ("l2_3x3", 28, 128, 128, 3, 1, 3),
    ("l2_expand", 28, 128, 512, 1, 1, 4), ("l2_down", 56, 256, 512, 1, 2, 1),
    ("l3_reduce_first", 28, 512, 256, 1, 1, 1), ("l3_3x3_first", 28, 256, 256, 3, 2, 1),
    ("l3_reduce", 14, 1024, 256, 1, 1, 5), ("l3_3x3", 14, 256, 256, 3, 1, 5),
    ("l3_expand", 14, 256, 1024, 1, 1, 6), ("l3_down", 28, 512, 1024, 1, 2, 1),
    ("l4_reduce_first", 14, 1024, 512, 1, 1, 1), ("l4_3x3_first", 14, 512, 512, 3, 2, 1),
    ("l4_reduce", 7, 2048, 512, 1, 1, 2), ("l4_3x3", 7, 512, 512, 3, 1, 2),
    ("l4_expand", 7, 512, 2048, 1, 1, 3), ("l4_down", 14, 1024, 2048, 1, 2, 1),
    ("fc", 1, 2048, 1000, 1, 1, 1),
]  # fmt: skip

#: MobileNet v1 (Howard et al. 2017, table 1), 224 x 224: "dw" layers are depthwise.
MOBILENET_V1 = [
    ("conv1", 224, 3, 32, 3, 2, 1), ("dw1", 112, 32, 32, 3, 1, 1), ("pw1", 112, 32, 64, 1, 1, 1),
    ("dw2", 112, 64, 64, 3, 2, 1), ("pw2", 56, 64, 128, 1, 1, 1),
    ("dw3", 56, 128, 128, 3, 1, 1), ("pw3", 56, 128, 128, 1, 1, 1),
    ("dw4", 56, 128, 128, 3, 2, 1), ("pw4", 28, 128, 256, 1, 1, 1),
    ("dw5", 28, 256, 256, 3, 1, 1), ("pw5", 28, 256, 256, 1, 1, 1),
    ("dw6", 28, 256, 256, 3, 2, 1), ("pw6", 14, 256, 512, 1, 1, 1),
    ("dw7", 14, 512, 512, 3, 1, 5), ("pw7", 14, 512, 512, 1, 1, 5),
    ("dw8", 14, 512, 512, 3, 2, 1), ("pw8", 7, 512, 1024, 1, 1, 1),
    ("dw9", 7, 1024, 1024, 3, 1, 1), ("pw9", 7, 1024, 1024, 1, 1, 1),
    ("fc", 1, 1024, 1000, 1, 1, 1),
]  # fmt: skip

NETWORKS = {"resnet50": RESNET50, "mobilenet-v1": MOBILENET_V1}


def moved(config: ArrayConfig, d) -> dict[str, int]:
    """DRAM bytes of descriptor ``d``'s loads by operand and of its stores."""
    cont = containers(config)
    out = dict.fromkeys("abc", 0)
    for job in jobs(config, d):
        loads, stores = transfers(config, d, job)
        for t in loads:
            out["a" if t.kind == "a" else "b" if t.kind == "b" else "c"] += t.words * cont[
                "p" if t.kind in "cp" else t.kind]  # fmt: skip
        for t in stores:
            out["c"] += t.words * cont["c" if t.kind == "c" else "p"]
    return out


def lowering(config: ArrayConfig, conv: Conv, depthwise: bool) -> tuple[str, list]:
    """How the driver runs ``conv``: ``(way, [(descriptor, copies)])``."""
    tile = config.rows
    (kh, kw), (sh, sw) = conv.kernel, conv.stride
    one = kh == kw == 1 and not any(conv.pads)
    if depthwise:  # a slice of channels at a time, block-diagonal weights
        per = Conv(conv.batch, conv.height, conv.width, min(tile, conv.channels),
                   min(tile, conv.channels), conv.kernel, conv.stride, conv.pads)  # fmt: skip
        return "conv per slice", [(place(config, *device_gemm(per, tile), conv=per, requant=True),
                                   slices(conv, tile))]  # fmt: skip
    if one and sh == sw == 1:
        return "gemm", [(place(config, *conv.gemm, requant=True), 1)]
    if one or conv.channels * 2 < tile:
        return "im2col", [(place(config, *conv.gemm, requant=True), 1)]
    return "conv", [(place(config, *device_gemm(conv, tile), conv=conv, requant=True), 1)]


def before(config: ArrayConfig, conv: Conv, depthwise: bool) -> list:
    if depthwise:  # one GEMM a channel, K = kh * kw, N = 1
        per = Conv(conv.batch, conv.height, conv.width, 1, 1, conv.kernel, conv.stride,
                   conv.pads)  # fmt: skip
        return [(place(config, *per.gemm, requant=True), conv.channels)]
    return [(place(config, *conv.gemm, requant=True), 1)]


def network(config: ArrayConfig, name: str, batch: int) -> dict:
    totals = {"before": dict.fromkeys("abc", 0), "after": dict.fromkeys("abc", 0)}
    three: dict = {"a": 0, "compulsory": 0}
    cont_a = container_bytes(config.rows * config.a_width)
    for layer, size, cin, cout, k, stride, count in NETWORKS[name]:
        depthwise = layer.startswith("dw")
        conv = Conv(batch, size, size, cin, cout, (k, k), (stride, stride), (k // 2,) * 4)
        for when, ds in (("before", before(config, conv, depthwise)),
                         ("after", lowering(config, conv, depthwise)[1])):  # fmt: skip
            for d, copies in ds:
                got = moved(config, d)
                for kind in "abc":
                    totals[when][kind] += got[kind] * copies * count
                if when == "after" and name == "resnet50" and k == 3 and d.conv is not None:
                    nchunks = -(-d.n // d.chunk[2])
                    passes = nchunks if len(jobs(config, replace(d, n=d.chunk[2]))) > 1 else 1
                    once = batch * size * size * slices(conv, config.rows) * cont_a * passes
                    three["a"] += got["a"] * count
                    three["compulsory"] += once * count
                    three.setdefault("layers", []).append(
                        f"{layer} x{count}: chunk {'x'.join(map(str, d.chunk))}, {passes} "
                        f"pass(es), A {got['a'] / once:.2f}x")  # fmt: skip
    return totals, three


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage-depth", type=int, default=8192)
    parser.add_argument("--depth", type=int, default=1024, help="words of each A, B, C bank")
    args = parser.parse_args(argv)
    config = ArrayConfig("ws", 16, 16, requant=True, a_depth=args.depth, b_depth=args.depth,
                         c_depth=args.depth, stage_depth=args.stage_depth)  # fmt: skip
    energy = dram_energy(None)
    print(
        f"{config.name}, DRAM energy {energy.read_pj_per_bit} pJ/bit read, "
        f"{energy.write_pj_per_bit} written ({energy.source})"
    )
    print(f"{'network':14} {'batch':>5} {'':7} {'A MB':>8} {'B MB':>8} {'C MB':>8} {'total':>8} "
          f"{'DRAM mJ':>8}")  # fmt: skip
    for name in NETWORKS:
        for batch in (1, 8):
            totals, three = network(config, name, batch)
            for when, t in totals.items():
                mj = 8e-9 * ((t["a"] + t["b"]) * energy.read_pj_per_bit
                             + t["c"] * energy.write_pj_per_bit)  # fmt: skip
                print(f"{name:14} {batch:>5} {when:7} {t['a'] / 1e6:>8.2f} {t['b'] / 1e6:>8.2f} "
                      f"{t['c'] / 1e6:>8.2f} {sum(t.values()) / 1e6:>8.2f} {mj:>8.3f}",
                      flush=True)  # fmt: skip
            if three["compulsory"]:
                print(
                    f"{'':14} {'':>5} ResNet-50's 3x3 layers: A {three['a'] / 1e6:.2f} MB, "
                    f"{three['a'] / three['compulsory']:.2f}x the input once per pass "
                    f"({'; '.join(three['layers'])})"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
