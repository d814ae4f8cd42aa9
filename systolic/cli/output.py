"""Printing shared by ``sim`` and ``model``: a GEMM's figures and an energy breakdown."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from systolic.contract.trace import chrome_trace

if TYPE_CHECKING:
    from systolic.models.energy import EnergyReport


__all__ = ["print_energy", "print_figures", "write_trace"]


def print_figures(s: dict) -> None:
    """The lines `sim` and `model` share, from a GemmFigures summary (a device's, with its
    memory counters, or the compute model's)."""
    c, off, reuse = s["counters"], s["offchip_words"], s["reuse"]
    chunks = s.get("chunks", s.get("commands"))
    size = f" of {'x'.join(map(str, s['chunk']))}" if "chunk" in s else ""
    how = f", {s['chunking']}" if "chunking" in s else ""
    print(f"  cycles {s['cycles']}, PE utilization {100 * s['utilization']:.1f}% "
          f"({chunks} chunk(s){size}{how})")  # fmt: skip
    if "memory" in s:
        mem = s["memory"]
        print(f"  DRAM {mem['bandwidth']} B/cycle, latency {mem['latency']} cycles, "
              f"{mem['max_requests']} requests; loop order {s.get('order', 'nmk')}")  # fmt: skip
        print(f"  compute: the array busy {c['compute_cycles']} cycles (words it waited for "
              f"to land in its fill and stalls); it waited {c['array_wait_cycles']} cycles to "
              f"start a chunk, the DMA {c['dma_wait_cycles']} cycles for a free bank")  # fmt: skip
        read = sum(c[f"dram_read_bytes_{b}"] for b in "abcq")
        moved = read + c["dram_write_bytes"]
        rate = moved / s["cycles"] if s["cycles"] else 0.0
        print(f"  DMA: read A {c['dram_read_bytes_a']}, B {c['dram_read_bytes_b']}, "
              f"C {c['dram_read_bytes_c']}, table {c['dram_read_bytes_q']} bytes; wrote "
              f"{c['dram_write_bytes']} bytes; {rate:.2f} B/cycle on average")  # fmt: skip
    print(
        f"  streaming {c['stream_cycles']}, fill {c['fill_cycles']}, stall {c['stall_cycles']}, "
        f"drain {c['drain_cycles']}, preload {c['preload_cycles']} cycles"
    )
    print(
        f"  buffer words read: A {c['a_reads']}, B {c['b_reads']}, C {c['c_reads']}; "
        f"written: C {c['c_writes']}"
    )
    print(f"  off-chip words: A {off['a']}, B {off['b']} in; C {off['c']} out")
    print(f"  MACs per word: into the array A {reuse['array_a']:.1f}, B {reuse['array_b']:.1f}; "
          f"from off-chip A {reuse['offchip_a']:.1f}, B {reuse['offchip_b']:.1f}")  # fmt: skip


def print_energy(report: EnergyReport) -> None:
    """The component and traffic split of an EnergyReport."""
    total = report.total
    print(
        f"  energy ({report.source}, coefficients {report.coefficients}): {total / 1e3:,.1f} nJ "
        f"({report.low / 1e3:,.1f} to {report.high / 1e3:,.1f}), {report.pj_per_mac:.3f} pJ/MAC, "
        f"{report.power_mw:,.1f} mW average at {report.clock_mhz:g} MHz"
    )
    names = {"logic": "logic (node scaling)", "fit": "logic (the fit)"}
    ranges = ", ".join(f"{names.get(t, t)} {lo:.2f}-{hi:.2f}x"
                       for t, (lo, hi) in report.ranges.items())  # fmt: skip
    print(f"    ranges: {ranges}; DRAM bits priced by: {report.dram}")
    print(f"    {'by component':24}{'nJ':>13} {'share':>7}")
    for name, pj in report.components.items():
        print(f"    {name:24}{pj / 1e3:>13,.2f} {100 * pj / total:>6.1f}%")
    print(f"    by traffic {'':9} {'array':>13} {'buffer':>13} {'off-chip':>13} {'share':>7}")
    for klass, levels in report.traffic.items():
        cells = [levels.get(level) for level in ("array", "buffer", "offchip")]
        text = " ".join(f"{'' if v is None else f'{v / 1e3:,.2f}':>13}" for v in cells)
        print(f"    {klass:24}{text} {100 * sum(levels.values()) / total:>6.1f}%")
    print("    (nJ; array = registers and datapath, buffer = on-chip SRAM and its ports)")


def write_trace(path: Path, events: list, label: str, clock_mhz: float) -> None:
    """A timeline's Chrome trace-event JSON in ``path`` (Perfetto, chrome://tracing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(chrome_trace(events, clock_mhz=clock_mhz, label=label)))


def print_inference(config_name: str, workload_name: str, record: dict, host) -> None:
    """A whole inference's split (``workloads.evaluate.inference_figures``) beside its GEMMs
    alone."""
    inf = record["inference"]
    total, energy = inf["latency_s"], inf["energy_pj"]
    print(f"{config_name}: {workload_name}, one inference end to end (model, host "
          f"{host.name}{', counters read' if host.counters else ''})")  # fmt: skip
    print(f"  latency {total * 1e3:.4g} ms, energy {energy / 1e9:.4g} mJ; PE utilization "
          f"{100 * inf['utilization']:.1f}% end to end, {100 * record['utilization']:.1f}% "
          f"over the GEMMs alone ({record['latency_s'] * 1e3:.4g} ms)")  # fmt: skip
    print("  part              latency ms   share   energy mJ   share")
    names = {
        "array": "array compute",
        "memory_stalls": "memory stalls",
        "fused": "fused output",
        "vector": "vector unit",
        "host": "host operators",
        "driver": "driver",
    }
    energy_of = dict(inf["energy_split_pj"])
    energy_of["array"] = energy_of.pop("device")  # the GEMMs' energy, their stalls' included
    for key, label in names.items():
        t = inf["latency_split_s"].get(key, 0.0)
        e = energy_of.get(key)
        line = f"  {label:<17} {t * 1e3:>10.4g}  {100 * t / total:>5.1f}%"
        if e is not None:
            line += f"  {e / 1e9:>10.4g}  {100 * e / energy:>5.1f}%"
        print(line)
    print(f"  descriptors {inf['descriptors']}; the driver busy {inf['driver_busy_s'] * 1e3:.4g} "
          "ms of the host's time")  # fmt: skip
    for where, ops in inf["where"].items():
        shown = ", ".join(f"{op} x{n}" for op, n in ops.items())
        print(f"  {where}: {shown}")
