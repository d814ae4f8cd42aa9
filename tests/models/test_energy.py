"""models/energy.py: energy follows activity and shape, breakdowns add up, and coefficient
files are validated by name."""

from __future__ import annotations

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig
from systolic.contract.memory import DramEnergy
from systolic.golden.data import DataKind, random_operands
from systolic.models.energy import (
    CoefficientsError,
    energy,
    figures_energy,
    load_coefficients,
    model_energy,
)
from systolic.sim.simulate import run_gemms

from ..helpers import coefficients_with


def test_energy_falls_with_activity(seed):
    """Same configuration and shape: random > sparse > sparser > all zeros."""
    config = ArrayConfig("os", 4, 3)  # built for test_toggles.py too
    shape = (16, 24, 16)
    operands = []
    for i, kind in enumerate(["random", "sparse:0.5", "sparse:0.9", "zeros"]):
        rng = np.random.default_rng([seed, i])
        operands += random_operands(rng, config, [shape], DataKind(kind))
    results = run_gemms(config, operands, activity=True)
    totals = [figures_energy(r, r.toggles, source="toggles").total for r in results]
    assert totals == sorted(totals, reverse=True) and len(set(totals)) == 4, totals


def test_energy_grows_with_shape_as_the_model_predicts(seed):
    config = ArrayConfig("ws", 4, 4)
    shapes = [(8, 8, 8), (16, 16, 16), (32, 32, 32)]
    operands = random_operands(np.random.default_rng(seed), config, shapes)
    results = run_gemms(config, operands, activity=True)
    rtl = [figures_energy(r, r.toggles, source="toggles") for r in results]
    model = [model_energy(config, a, b) for a, b in operands]
    assert [e.total for e in rtl] == sorted(e.total for e in rtl)
    assert [e.total for e in model] == sorted(e.total for e in model)
    for result, measured, predicted in zip(results, rtl, model, strict=True):
        assert predicted.total == pytest.approx(measured.total, rel=0.02)
        # the part DRAM and SRAM cannot hide: the mesh's registers and datapath;
        # close when tiles stream back to back (the model 0.7% to 1.0% low at 8x8x8, 0.4% at
        # 16^3, 0.13% at 32^3 on five seeds: the fill and drain edges weigh less as the GEMM
        # grows), looser with stalls, whose bubbles the model approximates (2.1% to 5.0%)
        bound = 0.2 if result.counters["stall_cycles"] else 0.02
        datapath = ("multiplier", "accumulator", "pipeline", "stationary", "edge")
        got, want = (sum(e.components[c] for c in datapath) for e in (predicted, measured))
        assert got == pytest.approx(want, rel=bound)


def test_breakdowns_sum_to_the_total(seed):
    config = ArrayConfig("is", 3, 5)
    ((a, b),) = random_operands(np.random.default_rng(seed), config, [(10, 7, 12)])
    report = model_energy(config, a, b)
    by_traffic = sum(sum(levels.values()) for levels in report.traffic.values())
    assert sum(report.components.values()) == pytest.approx(report.total)
    assert by_traffic == pytest.approx(report.total)
    assert report.pj_per_mac == pytest.approx(report.total / (10 * 7 * 12))


#: A technology for pricing by hand: 90 nm throughout (CACTI's own node, so the SRAM figures are
#: the table's rows and the logic needs no scaling), a distinct round price per logic term.
HAND_TECHNOLOGY = """
name = "hand"
technology = "round figures, for a test"
node_nm = 90
clock_mhz = { value = 1000, source = "test" }
[logic]
file = "hand_logic.toml"
node_range = { low = 0.5, high = 1.0, source = "test" }
[sram]
range = { low = 0.8, high = 1.5, source = "test" }
[leakage]
per_pe = { value = 0.5, source = "test" }
per_sram_kib = { value = 0.25, source = "test" }
"""
HAND_PRICES = {"multiplier": 1, "accumulator": 2, "adder": 3, "pipeline": 4, "stationary": 5,
               "edge": 6, "buffer": 7, "control": 8, "mac": 9, "mesh_clock": 10, "pe_cycle": 11,
               "buffer_cycle": 12, "device_cycle": 13, "multiplier_both": 14, "psum_add": 15,
               "clock_tree": 16, "flag": 17, "edge_mux": 18, "multiplier_fp": 19,
               "adder_fp": 20, "partial_product": 21, "partial_product_both": 22,
               "stationary_mux": 23, "pe_cycle_fp": 24}  # fmt: skip
HAND_LOGIC = """
name = "hand_logic"
node_nm = 90
cell_library = "none"
source = "test"
range = { low = 0.9, high = 1.2, source = "test" }
[price]
""" + "".join(f"{k} = {v}\n" for k, v in HAND_PRICES.items())


def hand_technology(tmp_path):
    (tmp_path / "hand_logic.toml").write_text(HAND_LOGIC)
    (tmp_path / "hand.toml").write_text(HAND_TECHNOLOGY)
    return load_coefficients(tmp_path / "hand.toml")


def test_every_pricing_path_in_picojoules(tmp_path):
    """One small case priced by hand, term by term, from a test-owned technology.

    WS 2x2 int8, 64-word buffers: A and B words are 2 x 8 = 16 bits, C words 2 x 32 = 64 bits,
    C banks with two read ports. CACTI's rows at 90 nm (sram_cacti.csv, read here as numbers):
    1r1w 16 x 64: read 1.12434 pJ, write 1.90096 pJ; 2r1w 64 x 64: read 5.02577, write 8.72469.
    """
    co = hand_technology(tmp_path)
    config = ArrayConfig("ws", 2, 2, a_depth=64, b_depth=64, c_depth=64)
    counters = {"cycles": 100, "stream_cycles": 16, "a_reads": 10, "b_reads": 20, "c_reads": 5,
                "c_writes": 8}  # fmt: skip
    offchip = {"a": 3, "b": 4, "c": 2}
    toggles = {
        ("multiplier", "compute"): 16,
        ("multiplier", "products"): 30,
        ("accumulator", "psum"): 32,
        ("pipeline", "activation"): 100,
        ("stationary", "weight"): 10,
        ("edge", "output"): 50,
        ("buffer", "activation"): 7,
        ("control", "control"): 20,
    }
    dram = DramEnergy(2.0, 3.0, 1.0, 4.0, "test")
    report = energy(config, counters, offchip, toggles, macs=64, coefficients=co, dram=dram,
                    shape=(8, 4, 6))  # fmt: skip
    pj = report.components
    # WS: one operand stays, no both-operands prices; int8 multipliers, no width scaling
    assert pj["multiplier"] == 16 * 1 + 30 * 21
    # the register's flips, the adder's (the same flips), those of the PEs below the first row
    # (half of them on 2 rows: the first adds to zero), and 4 PEs x 16 streamed cycles of MACs
    assert pj["accumulator"] == 32 * 2 + 32 * 3 + 16 * 15 + 4 * 16 * 9
    # the flags: 8 x 4 x 6 in one command of 2 x 3 tiles, streamed back to back: valid rises
    # and falls once, the bank flag moves 6 times, on each of the 4 PEs
    assert pj["pipeline"] == 100 * 4 + (2 + 6) * 4 * 17
    # registers and the muxes they feed (the preload's, the edge's)
    assert (pj["stationary"], pj["edge"]) == (10 * (5 + 23), 50 * 6 + 50 * 18)
    assert (pj["buffer"], pj["control"]) == (7 * 7, 20 * 8)
    # the 2x2 WS mesh has 4 PEs of a 10-bit lane (8 + valid + bank), a 32-bit partial sum and two
    # 8-bit weights, plus one 10-bit skew register (row 1), one 8-bit preload skew register
    # (column 1) and one 32-bit de-skew register (column 0): 40 + 128 + 64 + 50 = 282 bits
    assert pj["clock"] == 100 * (282 * 10 + 282 * 16 + 4 * 11)  # the flops, their clock net
    # the buffers' words (16 + 16 + 64 bits) and the rest of the device, every cycle
    assert pj["device"] == 100 * (96 * 12 + 13)
    ra, wa, rc, wc = 1.12434, 1.90096, 5.02577, 8.72469
    sram = {"activation": 10 * ra + 3 * wa, "weight": 20 * ra + 4 * wa,
            "psum": 5 * rc + (8 - 2) * wc, "output": 2 * (wc + rc)}  # fmt: skip
    assert pj["sram"] == pytest.approx(sum(sram.values()))
    # DRAM: A 3 x 16 and B 4 x 16 bits read at 2 pJ, C 2 x 64 bits written at 3 pJ
    dram_pj = {"activation": 48 * 2, "weight": 64 * 2, "output": 128 * 3}
    assert pj["dram"] == sum(dram_pj.values())
    # leakage: 0.5 per PE and 0.25 per SRAM KiB (0.125 + 0.125 + 0.5) per busy cycle
    assert pj["leakage"] == pytest.approx(100 * (4 * 0.5 + 0.75 * 0.25))
    t = report.traffic
    assert t["activation"] == pytest.approx(
        {"array": 400, "buffer": 49 + sram["activation"], "offchip": 96}
    )  # the flags are overhead
    assert t["weight"] == pytest.approx({"array": 280, "buffer": sram["weight"], "offchip": 128})
    assert t["psum"] == pytest.approx({"array": 64, "buffer": sram["psum"], "offchip": 0})
    assert t["output"] == pytest.approx(
        {"array": 50 * 24, "buffer": sram["output"], "offchip": 384}
    )
    assert t["compute"]["array"] == 16 + 30 * 21 + 32 * 3 + 16 * 15 + 4 * 16 * 9
    assert t["overhead"]["array"] == pytest.approx(160 + 8 * 4 * 17 + pj["clock"] + pj["device"]
                                                   + pj["leakage"])  # fmt: skip
    # the range: logic at the fit's range times the node scaling's, SRAM and DRAM at theirs
    logic = report.total - pj["sram"] - pj["dram"]
    assert report.terms == pytest.approx({"logic": logic, "sram": pj["sram"], "dram": 608})
    assert report.low == pytest.approx(logic * 0.9 * 0.5 + pj["sram"] * 0.8 + 608 * 0.5)
    assert report.high == pytest.approx(logic * 1.2 * 1.0 + pj["sram"] * 1.5 + 608 * 2.0)


def test_the_logic_is_scaled_from_its_node_by_the_energy_factor(tmp_path):
    co = hand_technology(tmp_path)
    (tmp_path / "hand.toml").write_text(HAND_TECHNOLOGY.replace("node_nm = 90", "node_nm = 45"))
    at45 = load_coefficients(tmp_path / "hand.toml")
    # Stillmaker-Baas: energy fit 1.018 V^2 - 0.3107 V + 0.1539 at 45 nm, 1.0 V; 90 nm at 1.2 V
    # 4.762 V^2 - 4.781 V + 2.092 (stillmaker_baas_2017.toml, evaluated here)
    e45 = 1.018 - 0.3107 + 0.1539
    e90 = 4.762 * 1.44 - 4.781 * 1.2 + 2.092
    assert at45.price("mac") == pytest.approx(9 * e45 / e90)
    assert co.price("mac") == 9


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("[sram]", "[srams]", "srams: unknown key"),
        ("per_pe = { value = 0.01", "per_pe = { value = -0.01",
         "leakage.per_pe: value must be >= 0"),
        ("per_pe = { value = 0.01", "per_pe = { value = \"a lot\"",
         "leakage.per_pe: value must be a number"),
        ("range = { low = 0.917", "range = { low = 1.2",
         "sram.range: the range must hold the nominal"),
        ("node_nm = 45", "node_nm = 44", "node_nm: must be one of 180, 90, 45, 22, 7, not 44"),
        ('file = "logic_osu018.toml"', 'file = "nope.toml"', "nope.toml: cannot read"),
        ("[clock_mhz]", "[clock_mhz", "not valid TOML"),
    ],
    ids=["unknown-section", "negative", "not-a-number", "range", "node", "logic-file", "syntax"],
)  # fmt: skip
def test_bad_coefficients_are_named(tmp_path, old, new, message):
    with pytest.raises(CoefficientsError, match=message.replace("(", r"\(")):
        load_coefficients(coefficients_with(tmp_path, old, new))


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("mac = ", "macs = ", "price.macs: unknown term"),
        ("mesh_clock = ", "mesh_clock = -", "price.mesh_clock: must be a number >= 0"),
        ("node_nm = 180", "node_nm = 130", "node_nm: must be one of"),
    ],
    ids=["unknown-term", "negative", "node"],
)  # fmt: skip
def test_bad_logic_files_are_named(tmp_path, old, new, message):
    with pytest.raises(CoefficientsError, match=f"logic_osu018.toml: {message}"):
        load_coefficients(coefficients_with(tmp_path, "[sram]", "[sram]", (old, new)))


def test_missing_coefficients_file(tmp_path):
    with pytest.raises(CoefficientsError, match="cannot read"):
        load_coefficients(tmp_path / "nope.toml")


def test_a_convolution_pays_its_staging_buffer():
    """A convolution descriptor's A words go through the staging buffer: the off-chip words
    written into it, the expanded words read from it and written into the A buffer. Priced
    here from the SRAM model's macros (models.sram.memory_macro of the staging SRAM and of an
    A bank, as contract.memories declares them), the activation SRAM energy grows by exactly
    that, and nothing else changes."""
    from systolic.contract.conv import Conv, device_gemm
    from systolic.contract.dma import place
    from systolic.contract.memories import memories
    from systolic.contract.memory import DEFAULT_MEMORY
    from systolic.models.device import DeviceFigures
    from systolic.models.pipeline import expanded_words, predict_pipeline
    from systolic.models.sram import memory_macro
    from systolic.models.toggles import estimate_toggles

    config = ArrayConfig("ws", 4, 4, stage_depth=256)
    conv = Conv(1, 12, 12, 8, 8, (3, 3), pads=(1, 1, 1, 1))
    d = place(config, *device_gemm(conv, 4), conv=conv)
    fig = DeviceFigures(config, conv.gemm, d, dict(predict_pipeline(config, d, DEFAULT_MEMORY)))
    co = load_coefficients()
    expanded = expanded_words(config, d, DEFAULT_MEMORY)
    staged = fig.offchip_words["a"]
    assert expanded > staged > 0  # a 3x3's windows overlap: fewer staged words than expanded
    toggles = estimate_toggles(config, d.m, d.k, d.n, data="random", seed=0)
    plain = figures_energy(fig, toggles, co, source="model")
    conv_e = figures_energy(fig, toggles, co, source="model", expanded=expanded)
    macro = {m.path: memory_macro(m, co.node_nm) for m in memories(config)}
    st, a = macro["expander.staging"], macro["a_buffer.bank0"]
    want = staged * st.write_pj + expanded * st.read_pj + (expanded - staged) * a.write_pj
    assert conv_e.traffic["activation"]["buffer"] - plain.traffic["activation"]["buffer"] == (
        pytest.approx(want, rel=1e-9))  # fmt: skip
    assert conv_e.total - plain.total == pytest.approx(want, rel=1e-9)
