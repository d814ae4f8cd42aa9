"""`systolic sim`: one GEMM checked against golden/, its counters, energy, precision and
quantization options, and one line for every bad option."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ..helpers import run_cli


def test_sim_checks_against_golden_and_reports(tmp_path):
    r = run_cli(
        "sim",
        "--dataflow",
        "os",
        "--rows",
        "3",
        "--cols",
        "5",
        "--a-depth",
        "48",
        "--b-depth",
        "48",
        "--c-depth",
        "48",
        "--m",
        "5",
        "--k",
        "7",
        "--n",
        "4",
        "--seed",
        "11",
        "--json",
    )  # fmt: skip (tests/rtl/test_gemms.py's OS 3x5)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["bit_exact"] is True and out["mismatches"] == 0 and out["seed"] == 11
    assert (out["m"], out["k"], out["n"]) == (5, 7, 4) and out["data"] == "random"
    assert out["cycles"] == out["counters"]["cycles"] > 0
    # 5x7x4 on 3x5: ceil(5/3) * ceil(4/5) = 2 tiles of 7 steps each stream 14 vectors.
    assert out["counters"]["stream_cycles"] == 14
    assert 0 < out["utilization"] <= 1
    assert out["model_differences"] == {} and out["memory"]["bandwidth"] == "16"


def test_sim_behind_a_slow_memory_prints_the_waits():
    """At 8 B/cycle and 100 cycles of latency the array waits for memory (a chunk starts on its
    loads under way and waits for its first words); the model agrees."""
    r = run_cli("sim", "--dataflow", "ws", "--rows", "4", "--cols", "4", "--a-depth", "64",
                 "--b-depth", "64", "--c-depth", "64", "--m", "16", "--k", "24", "--n", "12",
                 "--seed", "5", "--bandwidth", "8", "--latency", "100",
                 "--order", "mnk")  # fmt: skip
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "DRAM 8 B/cycle, latency 100 cycles, 64 requests; loop order mnk" in lines[2]
    fill = int(lines[5].split("fill ")[1].split(",")[0])
    assert fill > 100  # at least one latency before the first vector can stream
    # M outermost: A (16x24 int8) is read once, B (24x12) once per M chunk
    read_a, read_b = (int(x.split()[-1]) for x in lines[4].split(", ")[:2])
    assert read_a == 384 and read_b % 288 == 0 and read_b > 288, lines[4]
    assert lines[-1] == "  the model (models/device.py) predicts every counter exactly"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--m", "0", "--k", "2", "--n", "2"], "argument --m: must be a positive integer, not 0"),
        (["--m", "2", "--k", "x", "--n", "2"], "argument --k: must be a positive integer, not 'x'"),
        (
            ["--m", "8", "--k", "8", "--n", "8", "--b-depth", "3"],
            "b_depth = 3 words cannot hold one tile",
        ),
        (
            ["--m", "2", "--k", "2", "--n", "2", "--bandwidth", "0"],
            "bandwidth must be in (0, 65536] bytes per cycle, not '0'",
        ),
        (
            ["--m", "2", "--k", "2", "--n", "2", "--latency", "0"],
            "latency must be an integer between 1 and 100000, not 0",
        ),
        (
            ["--m", "2", "--k", "2", "--n", "2", "--order", "kkk"],
            "argument --order: invalid choice: 'kkk'",
        ),
        (
            ["--m", "2", "--k", "2", "--n", "2", "--bus-width", "100"],
            "bus_width must be one of 64, 128, 256, 512 bits, not 100",
        ),
        (
            ["--m", "2", "--k", "2", "--n", "2", "--c-depth", "0"],
            "c_depth must be an integer between 1 and 65536 (the RTL generator's), not 0",
        ),
        (
            ["--m", "2", "--k", "2", "--n", "2", "--c-depth", "65537"],
            "c_depth = 65537 is beyond what the RTL generator builds (1 to 65536)",
        ),
        (
            ["--m", "2", "--k", "2", "--n", "2", "--data", "sparse:-1"],
            "argument --data: data 'sparse:P' needs a fraction of zeros P in [0, 1]",
        ),
    ],
)
def test_sim_bad_options(args, message):
    r = run_cli("sim", "--dataflow", "ws", "--rows", "4", "--cols", "4", *args)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], r.stderr


def test_sim_with_zero_data():
    r = run_cli("sim", "--dataflow", "os", "--rows", "3", "--cols", "5", "--a-depth", "48",
                 "--b-depth", "48", "--c-depth", "48", "--m", "4", "--k", "5", "--n", "3",
                 "--data", "zeros", "--seed", "2")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "4x5x3 GEMM, seed 2, zeros data: C matches golden/ bit for bit" in r.stdout


def test_cli_sim_energy_json():
    r = run_cli("sim", "--dataflow", "ws", "--rows", "2", "--cols", "2", "--m", "6", "--k", "5",
                  "--n", "4", "--seed", "3", "--energy", "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    energy = json.loads(r.stdout)["energy"]
    assert energy["source"] == "toggles"
    assert sum(energy["components_pj"].values()) == pytest.approx(energy["total_pj"])
    assert energy["pj_per_mac"] == pytest.approx(energy["total_pj"] / (6 * 5 * 4))


def test_cli_sim_precision_zero_points_and_requant():
    r = subprocess.run(
        [sys.executable, "-m", "systolic.cli", "sim", "--dataflow", "ws", "--rows", "2",
         "--cols", "3", "--m", "5", "--k", "7", "--n", "4", "--seed", "2", "--precision", "int8",
         "--a-unsigned", "--a-zero", "200", "--b-zero", "-3", "--requant", "--out-zero", "10",
         "--relu", "--json"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["bit_exact"] and out["quant"]["a_zero"] == 200 and out["quant"]["requant"]
    assert out["config"] == "ws-2x3-au8-bi8-acc32-zp-rqi8"


def test_a_failed_simulation_is_one_line_not_a_traceback(monkeypatch, capsys):
    """A simulator crash (or a failed Verilator build) reaches the user as its message, which
    names the log, with exit status 1."""
    import systolic.sim.simulate as simulate
    from systolic.sim.simulate import SimulationError

    from systolic.cli import main

    def crash(*args, **kwargs):
        raise SimulationError("ws-2x2-i8-acc32: the simulation failed; see /x/sim.log", None, {})

    monkeypatch.setattr(simulate, "run_gemm", crash)  # `systolic sim` imports it when it runs
    status = main(["sim", "--dataflow", "ws", "--rows", "2", "--cols", "2", "--m", "2", "--k",
                   "2", "--n", "2", "--seed", "1"])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 1
    assert err == ["systolic: ws-2x2-i8-acc32: the simulation failed; see /x/sim.log"]


def test_sim_runs_a_convolution():
    """``--conv``: a padded 3x3 convolution as a convolution descriptor on tests/sim/test_conv.py's
    ws 3x2 device with a staging buffer, requantized by float32 scales: bit-exact, the model
    exact, and its implicit GEMM's shape (6x5 pixels; K = 9 positions x 2 slices of 3
    channels)."""
    r = run_cli("sim", "--dataflow", "ws", "--rows", "3", "--cols", "2", "--a-depth", "128",
                "--b-depth", "128", "--c-depth", "128", "--stage-depth", "128", "--requant",
                "--requant-float", "--float-scale", "--bias", "--a-zero", "3", "--b-zero", "-2",
                "--conv", "1,6,5,4,3,3", "--pad", "1", "--seed", "4", "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["bit_exact"] and out["model_differences"] == {} and out["quant"]["float_scale"]
    assert (out["m"], out["k"], out["n"]) == (30, 54, 3)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--conv", "1,6,5,4,3,3"], "--conv needs a staging buffer: give --stage-depth WORDS"),
        (["--stage-depth", "64", "--conv", "1,6,5"], "--conv takes N,H,W,C,O,K"),
        (["--stage-depth", "64", "--conv", "1,2,2,4,3,5"], "--conv: a (5, 5) kernel"),
        (["--m", "4"], "give --k, --n (a GEMM) or --conv (a convolution)"),
    ],
)
def test_sim_bad_convolution_options(args, message):
    r = run_cli("sim", "--dataflow", "ws", "--rows", "4", "--cols", "4", *args)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], r.stderr
