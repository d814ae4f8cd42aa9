"""models/technology.py (Stillmaker and Baas' scaling) and models/sram.py (the CACTI table)."""

from __future__ import annotations

import csv
import math

import pytest
from systolic.models import sram, technology
from systolic.models.sram import MACRO_MAX_WIDTH, sram_macro, tiled_memory
from systolic.models.technology import factor, scale


def test_energy_fits_reproduce_the_papers_worked_examples():
    """The corrigendum's examples: 32 nm HP at 0.9 V gives 0.4571, 180 nm at 1.8 V is
    24.64 * 1.8 - 17.98 = 26.372; scaling 1 pJ from 180 nm to 32 nm is their ratio."""
    assert factor("energy", 180, 32) == pytest.approx(0.4571 / 26.372, rel=1e-4)
    assert factor("energy", 32, 180) * factor("energy", 180, 32) == pytest.approx(1.0)
    assert factor("area", 180, 45) == 0.053 and factor("area", 180, 7) == 0.0032
    assert scale("delay", 10.0, 180, 180) == 10.0


def test_22nm_lies_between_its_neighbours_and_smaller_nodes_cost_less():
    for quantity in technology.QUANTITIES:
        f32, f22, f20 = (factor(quantity, 180, n) for n in (32, 22, 20))
        assert min(f32, f20) <= f22 <= max(f32, f20), quantity
    energies = [factor("energy", 180, n) for n in (180, 90, 45, 32, 22, 7)]
    assert energies == sorted(energies, reverse=True)


def test_unknown_nodes_and_quantities_are_refused_by_name():
    with pytest.raises(
        ValueError, match="to_nm must be one of 180, 90, 45, 32, 22, 20, 7 nm, not 28"
    ):
        factor("energy", 180, 28)
    with pytest.raises(
        ValueError, match="quantity must be one of area, delay, energy, not 'power'"
    ):
        factor("power", 180, 45)


def _row(node_um: str, kind: str, width: int, depth: int) -> dict:
    """A row of the committed table, read here without models/sram.py."""
    lines = [line for line in sram.TABLE.read_text().splitlines() if not line.startswith("#")]
    for row in csv.DictReader(lines):
        if (row["node_um"], row["port_kind"], row["width_bits"], row["depth_words"]) == (
            node_um, kind, str(width), str(depth)):  # fmt: skip
            return row
    raise AssertionError(f"no row {node_um} {kind} {width}x{depth}")


def test_grid_points_are_the_tables_figures_and_other_nodes_are_scaled():
    row = _row("0.045", "2r1w", 256, 1024)
    m = sram_macro(256, 1024, reads=2, node_nm=45)
    assert m.read_pj == float(row["read_energy_pJ"]) and m.area_um2 == pytest.approx(
        float(row["area_mm2"]) * 1e6)  # fmt: skip
    assert m.access_ns == float(row["access_time_ns"]) and m.source == "CACTI 7 at 45 nm"
    row90 = _row("0.09", "1r1w", 16, 1024)
    m = sram_macro(16, 1024, node_nm=180)
    assert m.area_um2 == pytest.approx(float(row90["area_mm2"]) * 1e6 / 0.15)
    assert m.read_pj == pytest.approx(float(row90["read_energy_pJ"]) * factor("energy", 90, 180))
    assert m.leakage_mw == float(row90["leakage_mW"]) and "scaled to 180 nm" in m.source


def test_between_grid_points_the_figures_are_log_log_interpolated():
    lo, hi = (sram_macro(64, d, node_nm=45) for d in (1024, 4096))
    mid = sram_macro(64, 2048, node_nm=45)  # halfway in log(depth)
    assert mid.read_pj == pytest.approx(math.sqrt(lo.read_pj * hi.read_pj))
    assert lo.area_um2 < mid.area_um2 < hi.area_um2
    tiny = sram_macro(16, 16, node_nm=45)  # below CACTI's smallest array
    assert "extrapolated" in tiny.source and 0 < tiny.area_um2 < sram_macro(16, 32).area_um2


def test_bad_macros_are_refused_by_name():
    with pytest.raises(ValueError, match="node_nm must be one of 180, 90, 45, 22, 7, not 65"):
        sram_macro(64, 1024, node_nm=65)
    with pytest.raises(ValueError, match="reads must be 1 or 2"):
        sram_macro(64, 1024, reads=3)
    with pytest.raises(ValueError, match="depth must be a positive integer, not 0"):
        sram_macro(64, 0)


def test_a_memory_wider_than_a_macro_is_tiled_from_macros_side_by_side():
    assert MACRO_MAX_WIDTH == 256
    narrow = tiled_memory(256, 1024, reads=2, node_nm=180)
    assert narrow == sram_macro(256, 1024, reads=2, node_nm=180)  # one macro: as it is
    wide = tiled_memory(512, 1024, reads=2, node_nm=180)
    half = sram_macro(256, 1024, reads=2, node_nm=180)
    assert (wide.width, wide.depth) == (512, 1024)
    assert wide.area_um2 == pytest.approx(2 * half.area_um2)
    assert wide.read_pj == pytest.approx(2 * half.read_pj)
    assert wide.leakage_mw == pytest.approx(2 * half.leakage_mw)
    assert wide.access_ns == half.access_ns < sram_macro(512, 1024, reads=2, node_nm=180).access_ns
    assert "2 macros of 256 bits side by side" in wide.source
    odd = tiled_memory(600, 64, node_nm=45)  # three macros of 200 bits
    assert odd.area_um2 == pytest.approx(3 * sram_macro(200, 64, node_nm=45).area_um2)


def test_the_energy_model_prices_a_buffer_access_at_its_tiled_macro():
    """16x16 OS int8: the C buffer's 512-bit words come from two 256-bit 2r1w macros of 1,024
    words (CACTI's rows at 45 nm, read here); A's and B's 128-bit words from one 1r1w macro.
    One C read through energy() costs two macro reads; an untiled 512-bit array would not."""
    from systolic.contract.config import ArrayConfig
    from systolic.models.energy import energy, load_coefficients

    config = ArrayConfig("os", 16, 16)
    co = load_coefficients()
    assert co.node_nm == 45

    def sram_pj(**counters) -> float:
        c = {"cycles": 0, "stream_cycles": 0, "a_reads": 0, "b_reads": 0, "c_reads": 0,
             "c_writes": 0} | counters  # fmt: skip
        return energy(config, c, {}, {}, 1, co).components["sram"]

    c_row = _row("0.045", "2r1w", 256, 1024)
    assert sram_pj(c_reads=1) == pytest.approx(2 * float(c_row["read_energy_pJ"]))
    assert sram_pj(c_reads=1) != pytest.approx(float(_row("0.045", "2r1w", 512, 1024)[
        "read_energy_pJ"]))  # fmt: skip
    a_row = _row("0.045", "1r1w", 128, 1024)
    assert sram_pj(a_reads=1) == pytest.approx(float(a_row["read_energy_pJ"]))
    assert sram_pj(c_writes=1) == pytest.approx(2 * float(c_row["write_energy_pJ"]))


def _presets_file() -> dict:
    """The DRAM devices' file, read here without models/technology.py."""
    import tomllib

    return tomllib.loads(technology.DRAM_FILE.read_text())["device"]


def test_every_memory_preset_has_its_own_cited_energy_per_bit():
    from systolic.contract.memory import DRAM_PRESETS, Memory

    devices = _presets_file()
    assert set(devices) == set(DRAM_PRESETS)
    for name, entry in devices.items():
        energy = technology.dram_energy(Memory.preset(name))
        assert energy.read_pj_per_bit == entry["read_pj_per_bit"]
        assert energy.write_pj_per_bit == entry["write_pj_per_bit"]
        assert entry["low_pj_per_bit"] <= entry["read_pj_per_bit"] <= entry["high_pj_per_bit"]
        assert len(entry["source"]) > 20, name
    # the kinds of memory differ: HBM2E, LPDDR5, LPDDR4X and DDR4 in that order per bit
    per_bit = [
        devices[n]["read_pj_per_bit"]
        for n in ("hbm2e-stack", "lpddr5-6400-x64", "lpddr4x-4266-x16", "ddr4-3200-x64")
    ]
    assert per_bit == sorted(per_bit) and len(set(per_bit)) == 4


def test_two_memories_differ_in_energy_by_their_bits_prices():
    """One point behind LPDDR4X and behind HBM2E: the DRAM energy of each is its bits times
    its device's figures (read for A and B, written for C), from the file; the rest of the
    energy differs only by what the memories' speeds change."""
    from systolic.contract.config import ArrayConfig
    from systolic.contract.memory import Memory
    from systolic.models.energy import load_coefficients
    from systolic.workloads.evaluate import model_record
    from systolic.workloads.library import Gemm, Workload

    config = ArrayConfig("ws", 8, 8)
    work = Workload("g", "g", "gemm", 1, None, (Gemm("g", 64, 96, 80),))
    devices = _presets_file()
    drams = {}
    for name in ("lpddr4x-4266-x16", "hbm2e-stack"):
        r = model_record(config, work, Memory.preset(name), load_coefficients(), "random", 0)
        width = {"a": 64, "b": 64, "c": 256}  # WS 8x8 int8 words: 8 x 8, 8 x 8, 8 x 32 bits
        read = r["offchip_words"]["a"] * width["a"] + r["offchip_words"]["b"] * width["b"]
        written = r["offchip_words"]["c"] * width["c"]
        dev = devices[name]
        assert r["components_pj"]["dram"] == pytest.approx(
            read * dev["read_pj_per_bit"] + written * dev["write_pj_per_bit"]
        )
        assert r["priced_by"]["dram"]["source"] == dev["source"]
        drams[name] = r["components_pj"]["dram"]
    assert drams["lpddr4x-4266-x16"] > 1.4 * drams["hbm2e-stack"]


def test_a_memory_without_a_preset_needs_its_own_energy():
    from systolic.contract.memory import DramEnergy, Memory

    own = Memory("mine", 10.0, 50.0, energy=DramEnergy(1.0, 2.0, 0.5, 3.0, "my datasheet"))
    assert technology.dram_energy(own).write_pj_per_bit == 2.0
    with pytest.raises(ValueError, match="memory 'bare' has no energy per bit: give it a preset"):
        technology.dram_energy(Memory("bare", 10.0, 50.0))
    with pytest.raises(ValueError, match="read energy 5 pJ/bit must lie in its range"):
        DramEnergy(5.0, 2.0, 0.5, 3.0, "x")
    with pytest.raises(ValueError, match="a DRAM energy needs a source"):
        DramEnergy(1.0, 2.0, 0.5, 3.0, " ")


def test_the_sram_range_is_what_cacti_and_the_published_figures_disagree_by():
    """Horowitz (ISSCC 2014): 64-bit reads of 8 KB, 32 KB and 1 MB SRAMs cost 10, 20 and 100 pJ;
    the default technology's SRAM range spans those over CACTI's for the same memories."""
    from systolic.models.energy import load_coefficients

    ratios = [pj / sram_macro(64, kib * 1024 * 8 // 64, node_nm=45).read_pj
              for kib, pj in ((8, 10.0), (32, 20.0), (1024, 100.0))]  # fmt: skip
    low, high = load_coefficients().sram_range
    assert low == pytest.approx(min(ratios), abs=1e-3)
    assert high == pytest.approx(max(ratios), abs=1e-3)
