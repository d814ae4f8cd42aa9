"""Convolutions' DRAM traffic before and after the DMA's staging (issue 34): ResNet-50 (v1.5)
and MobileNet v1 at batch 1 and 8 on WS 16x16, int8 requantized, every convolution's bytes from
the device's transfers (contract.dma.transfers over its chunks: exactly what the exact model
counts, tests/models/test_device_conv.py), and the DRAM energy of those bytes.

The layers are the workload library's (:func:`workloads.library.cnn`). *Before*: the
driver's lowering without a staging buffer, every convolution an im2col GEMM (A the im2col
matrix in DRAM, built by the host: its own traffic is not counted here, as the models never
counted it). *After*: the driver's lowering with one (:func:`contract.lowering.lower_conv`:
which convolutions stay GEMMs and why). Chunks: the largest that fit for the GEMMs (loop
order nmk), the fewest bytes for the convolutions (contract.plan.conv_chunk_sizes).

Prints each network's A, B and C megabytes before and after, the DRAM energy, and, for
ResNet-50's 3x3 layers, A's bytes against the compulsory: the input once per pass of the
chunk nest over it (once per N chunk when the nest reloads A for each)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from systolic.contract.config import ArrayConfig
from systolic.contract.conv import Conv, slices
from systolic.contract.dma import containers, jobs, place, transfers
from systolic.contract.lowering import lower_conv
from systolic.contract.memory import container_bytes
from systolic.models.technology import dram_energy
from systolic.workloads.library import CNNS, cnn


def moved(config: ArrayConfig, d) -> dict[str, int]:
    """DRAM bytes of descriptor ``d``'s loads by operand and of its stores."""
    cont = containers(config)
    out = dict.fromkeys("abc", 0)
    for job in jobs(config, d):
        loads, stores = transfers(config, d, job)
        for t in loads:
            out["c" if t.kind in "cp" else t.kind] += t.words * cont[t.fmt]
        for t in stores:
            out["c"] += t.words * cont[t.fmt]
    return out


def descriptors(config: ArrayConfig, conv: Conv, staging: bool) -> list:
    """``[(descriptor, copies)]`` a run of ``conv`` posts: the driver's lowering
    (:func:`contract.lowering.lower_conv`) on ``config``, or without staging (before)."""
    if not staging:
        config = replace(config, stage_depth=0)
    out = []
    for p in lower_conv(config, conv, requant=True):
        d = place(config, *p.gemm, conv=p.conv, requant=True)
        out.append((d, p.times))
    return out


def network(config: ArrayConfig, name: str, batch: int) -> dict:
    totals = {"before": dict.fromkeys("abc", 0), "after": dict.fromkeys("abc", 0)}
    three: dict = {"a": 0, "compulsory": 0}
    cont_a = container_bytes(config.rows * config.a_width)
    for g in cnn(name, batch).gemms:
        conv, count = g.conv, g.count // g.conv.groups
        for when in ("before", "after"):
            for d, copies in descriptors(config, conv, when == "after"):
                got = moved(config, d)
                for kind in "abc":
                    totals[when][kind] += got[kind] * copies * count
                if when == "after" and name == "resnet50" and conv.kernel == (3, 3) and d.conv:
                    nchunks = -(-d.n // d.chunk[2])
                    passes = nchunks if len(jobs(config, replace(d, n=d.chunk[2]))) > 1 else 1
                    once = (d.conv.batch * conv.height * conv.width * slices(conv, config.rows)
                            * cont_a * passes * copies)  # fmt: skip
                    three["a"] += got["a"] * copies * count
                    three["compulsory"] += once * count
                    three.setdefault("layers", []).append(
                        f"{g.name} x{count}: chunk {'x'.join(map(str, d.chunk))}, {passes} "
                        f"pass(es), A {got['a'] * copies / once:.2f}x")  # fmt: skip
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
    for name in CNNS:
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
