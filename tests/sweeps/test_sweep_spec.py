"""sweeps/sweep_spec.py: errors that name the file, line and key; crossing; the shipped specs
load."""

from __future__ import annotations

from pathlib import Path

import pytest
import systolic.sweeps
from systolic.sweeps.sweep_spec import SpecError, load_spec

from ..helpers import TINY, run_cli, write_spec

WORKLOAD_1 = "  - gemm: {m: 3, k: 9, n: 4}\n    count: 3"


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("name: tiny", "nmae: tiny", ":1: nmae: unknown key; expected one of name, configs"),
        ("array: [2x2]", "array: [2by2]", ":4: configs.array.0: must be ROWSxCOLS like 8x8"),
        ("array: [2x2]", "array: [1x0]",
         ":4: configs.array: cols must be an integer between 1 and 512"),
        ("depth: [1024]", "depth: [1024]\n  precision: [int7]",
         ":6: configs.precision: must be one of int4, int8, int16, bf16, not 'int7'"),
        ("{m: 8, k: 6, n: 5}", "{m: 8, k: six, n: 5}",
         ":7: workloads.0.gemm.k: must be an integer >= 1, not 'six'"),
        ("{m: 8, k: 6, n: 5}", "{m: 8, k: 6}", ":7: workloads.0.gemm: missing key 'n'"),
        ("count: 3", "count: 3\n    batch: 2", ":10: workloads.1.batch: unknown key"),
        ("rtl: all", "rtl: most", ":11: evaluate.rtl: must be one of none, all, sample, pareto"),
        ("  - gemm: {m: 3, k: 9, n: 4}\n    count: 3", "  - transformer: bert-huge",
         ":8: workloads.1.transformer: must be one of bert-base"),
        ("dataflow: [ws, os]", "dataflow: [ws, os", ":4: not valid YAML"),
        (WORKLOAD_1, "  - transformer: bert-base\n    batch: [1, 0]",
         ":9: workloads.1.batch: must be an integer >= 1, not 0"),
        (WORKLOAD_1, "  - transformer: bert-base\n    batch: -2",
         ":9: workloads.1.batch: must be an integer >= 1, not -2"),
        (WORKLOAD_1, "  - transformer: bert-base\n    seq: [0]",
         ":9: workloads.1.seq: must be an integer >= 1, not 0"),
        ("rtl: all", "rtl: sample\n  sample: 0",
         ":12: evaluate.sample: must be an integer >= 1, not 0"),
        ("rtl: all", "rtl: all\n  timeout: -1",
         ":12: evaluate.timeout: must be a positive number of seconds, not -1"),
        ("rtl: all", "rtl: all\n  max_macs: 0",
         ":12: evaluate.max_macs: must be an integer >= 1, not 0"),
        ("rtl: all", "rtl: all\ncoefficients: nowhere.toml",
         ":12: coefficients: "),
        ("evaluate:", "memory: [ddr9]\nevaluate:",
         ":10: memory.0: unknown memory preset 'ddr9'; presets: lpddr4x-4266-x16"),
        ("evaluate:", "memory: [{gb_per_s: 8}]\nevaluate:",
         ":10: memory.0: missing key 'latency_ns' (or give a preset)"),
        ("evaluate:", "memory: [{gb_per_s: -8, latency_ns: 50}]\nevaluate:",
         ":10: memory.0.gb_per_s: must be a positive number, not -8"),
        ("evaluate:", "memory: [hbm2e-pc, {preset: hbm2e-pc}]\nevaluate:",
         ":10: memory: memory names must differ"),
        ("evaluate:", "memory: [{gb_per_s: 8, latency_ns: 50}]\nevaluate:",
         ":10: memory.0: a memory without a preset needs its energy per bit: read_pj_per_bit, "
         "write_pj_per_bit, energy_source"),
        ("evaluate:", "memory: [{preset: hbm2e-pc, read_pj_per_bit: 3}]\nevaluate:",
         ":10: memory.0: a memory's own energy needs read_pj_per_bit, write_pj_per_bit, "
         "energy_source; missing write_pj_per_bit, energy_source"),
        ("evaluate:", "memory: [{preset: hbm2e-pc, read_pj_per_bit: 3, write_pj_per_bit: 3, "
         "energy_source: me, high_pj_per_bit: 2}]\nevaluate:",
         ":10: memory.0: the read energy 3 pJ/bit must lie in its range [3, 2]"),
        ("evaluate:", "host: laptop\nevaluate:",
         ":10: host: unknown host preset 'laptop'; presets: embedded, mobile, server"),
        ("evaluate:", "host: {preset: server, read_ns: -5}\nevaluate:",
         ":10: host: host read_ns must be a number in [0, 1e+09], not -5"),
    ],
    ids=["unknown-key", "array-format", "array-range", "precision", "wrong-type", "missing",
         "key-of-other-kind", "rtl-mode", "unknown-model", "yaml-syntax", "batch-0",
         "batch-negative", "seq-0", "sample-0", "timeout", "max-macs", "no-coefficients",
         "memory-preset", "memory-missing", "memory-negative", "memory-names",
         "memory-no-energy", "memory-energy-part", "memory-energy-range", "host-preset",
         "host-number"],
)  # fmt: skip
def test_spec_errors_name_line_and_key(tmp_path, old, new, message):
    assert old in TINY
    path = write_spec(tmp_path, TINY.replace(old, new))
    with pytest.raises(SpecError) as e:
        load_spec(path)
    assert str(e.value).startswith(str(path)), e.value
    assert message in str(e.value), e.value
    if "coefficients" in new:
        assert "nowhere.toml: cannot read" in str(e.value)


def test_spec_error_on_the_command_line(tmp_path):
    path = write_spec(tmp_path, TINY.replace("rtl: all", "rtl: most"))
    r = run_cli("sweep", str(path), "--out", str(tmp_path / "out"))
    assert r.returncode == 2
    assert f"{path}:11: evaluate.rtl: must be one of" in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()  # nothing ran


def test_spec_crosses_configs_and_workloads(tmp_path):
    sweep = load_spec(write_spec(tmp_path, TINY.replace("array: [2x2]", "array: [2x2, 3x4]")))
    assert [c.name for c in sweep.configs] == [
        "ws-2x2-i8-acc32", "ws-3x4-i8-acc32", "os-2x2-i8-acc32", "os-3x4-i8-acc32",
    ]  # fmt: skip
    assert sweep.points == 8 and sweep.rtl == "all"


@pytest.mark.parametrize("name", ["default", "large"])
def test_shipped_specs_are_valid(name):
    spec = Path(systolic.sweeps.__file__).parent / "specs" / f"{name}.yaml"  # as installed
    sweep = load_spec(spec)
    assert sweep.points == len(sweep.configs) * len(sweep.workloads) * len(sweep.memories) > 0
    assert {c.precision for c in sweep.configs} >= {"int8", "bf16"}


def test_memory_is_an_axis(tmp_path):
    """Two memories double the points; a preset's numbers can be overridden; the default is
    one LPDDR4X-4266 x32 channel."""
    text = TINY.replace("evaluate:", "memory:\n  - hbm2e-pc\n  - {preset: hbm2e-pc, name: slow, "
                        "gb_per_s: 2}\nevaluate:")  # fmt: skip
    sweep = load_spec(write_spec(tmp_path, text))
    assert sweep.points == 8
    fast, slow = sweep.memories
    assert (fast.gb_per_s, slow.gb_per_s, slow.latency_ns, slow.name) == (25.6, 2.0, 100.0, "slow")
    dram = slow.at(500.0)  # at 500 MHz: 4 bytes and 50 cycles
    assert (dram.bandwidth, dram.latency) == (4, 50)
    assert [m.name for m in load_spec(write_spec(tmp_path, TINY)).memories] == [
        "lpddr4x-4266-x32"]  # fmt: skip
    # a preset's numbers replaced keep its device's energy; a memory may give its own
    assert (fast.device, slow.device, slow.energy) == ("hbm2e-pc", "hbm2e-pc", None)
    text = TINY.replace("evaluate:", "memory:\n  - {name: mine, gb_per_s: 4, latency_ns: 90, "
                        "read_pj_per_bit: 7, write_pj_per_bit: 8, energy_source: lab}\n"
                        "evaluate:")  # fmt: skip
    (mine,) = load_spec(write_spec(tmp_path, text)).memories
    assert (mine.energy.read_pj_per_bit, mine.energy.spread, mine.energy.source) == (
        7.0, (1.0, 1.0), "lab")  # fmt: skip


def test_the_host_is_a_preset_or_its_numbers_and_names_its_points(tmp_path):
    from systolic.contract.host import Host
    from systolic.workloads.evaluate import point_id

    plain = load_spec(write_spec(tmp_path, TINY))
    assert plain.host is None  # the default host
    path = write_spec(tmp_path, TINY.replace("evaluate:", "host: {preset: server, counters: true}"
                                                          "\nevaluate:"))  # fmt: skip
    sweep = load_spec(path)
    assert sweep.host == Host(**(Host.preset("server").to_dict()
                                 | {"counters": True, "name": "server (modified)"}))  # fmt: skip
    c, w, m = sweep.configs[0], sweep.workloads[0], sweep.memories[0]
    assert point_id(c, w, m) == point_id(c, w, m, Host.preset())  # the default: old ids hold
    assert point_id(c, w, m, sweep.host) != point_id(c, w, m)


def test_requant_crosses_the_integer_configurations_that_can_take_it(tmp_path):
    """The fused output path for int8 (a 32-bit accumulator), not for int16 (48 bits) nor bf16,
    which are kept once each."""
    spec = ("name: rq\nconfigs:\n  dataflow: [ws]\n  array: [2x2]\n"
            "  precision: [int8, int16, bf16]\n  requant: [false, true]\n"
            "workloads:\n  - gemm: {m: 4, k: 4, n: 4}\n")  # fmt: skip
    sweep = load_spec(write_spec(tmp_path, spec))
    assert sorted((c.precision, c.requant) for c in sweep.configs) == [
        ("bf16", False), ("int16", False), ("int8", False), ("int8", True)]  # fmt: skip
    only = load_spec(write_spec(tmp_path, spec.replace("[false, true]", "[true]")))
    assert sorted((c.precision, c.requant) for c in only.configs) == [
        ("bf16", False), ("int16", False), ("int8", True)]  # fmt: skip
    with pytest.raises(SpecError, match=r"configs.requant: must list true or false, not 'often'"):
        load_spec(write_spec(tmp_path, spec.replace("[false, true]", "[often]")))


def test_the_vector_unit_crosses_the_configurations_with_the_fused_path(tmp_path):
    """vector: [false, true] doubles the int8 configurations that requantize; the others (no
    fused path: nothing for the unit to read) are kept once, without it."""
    spec = ("name: vec\nconfigs:\n  dataflow: [ws]\n  array: [2x2]\n"
            "  precision: [int8, int16]\n  requant: [false, true]\n  vector: [false, true]\n"
            "workloads:\n  - gemm: {m: 4, k: 4, n: 4}\n")  # fmt: skip
    sweep = load_spec(write_spec(tmp_path, spec))
    assert sorted((c.precision, c.requant, c.vector) for c in sweep.configs) == [
        ("int16", False, False), ("int8", False, False), ("int8", True, False),
        ("int8", True, True)]  # fmt: skip
    with pytest.raises(SpecError, match=r"configs.vector: must list true or false, not 1"):
        load_spec(write_spec(tmp_path, spec.replace("vector: [false, true]", "vector: [1]")))


def test_the_staging_buffer_crosses_the_configurations(tmp_path):
    """stage_depth: [0, 256] doubles the configurations (every dataflow runs convolutions);
    a negative depth is refused by key."""
    spec = ("name: st\nconfigs:\n  dataflow: [ws, os]\n  array: [2x2]\n"
            "  stage_depth: [0, 256]\nworkloads:\n  - gemm: {m: 4, k: 4, n: 4}\n")  # fmt: skip
    sweep = load_spec(write_spec(tmp_path, spec))
    assert sorted((c.dataflow.value, c.stage_depth) for c in sweep.configs) == [
        ("os", 0), ("os", 256), ("ws", 0), ("ws", 256)]  # fmt: skip
    with pytest.raises(SpecError, match=r"configs.stage_depth.0: must be an integer >= 0"):
        load_spec(write_spec(tmp_path, spec.replace("[0, 256]", "[-1]")))
