"""The `systolic` command line: what it writes, and one clear line for every bad option."""

import json
import subprocess
import sys

import pytest
from systolic.contract.config import ArrayConfig


def systolic(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "systolic.cli", *args], capture_output=True, text=True, cwd=cwd
    )


def test_generate_writes_verilog_and_config(tmp_path):
    out = tmp_path / "gen"
    r = systolic(
        "generate",
        "--dataflow",
        "is",
        "--rows",
        "3",
        "--cols",
        "2",
        "--a-width",
        "4",
        "--a-unsigned",
        "--acc-width",
        "20",
        "--out",
        str(out),
        "--lint",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["name"] == "is-3x2-au4-bi8-acc20"
    assert report["lint"]["clean"] is True
    assert "module systolic_accelerator(" in (out / "systolic_accelerator.v").read_text()
    config = ArrayConfig.from_json((out / "config.json").read_text())
    assert config == ArrayConfig("is", 3, 2, a_width=4, a_signed=False, acc_width=20)


def test_generate_from_config_file(tmp_path):
    (tmp_path / "c.json").write_text(ArrayConfig("os", 2, 2).to_json())
    r = systolic("generate", "--config", "c.json", "--cols", "4", "--design", "array", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "os-2x4-i8-acc32" / "systolic_array.v").is_file()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["generate", "--dataflow", "xs", "--rows", "2", "--cols", "2"],
            "argument --dataflow: invalid choice: 'xs'",
        ),
        (
            ["generate", "--dataflow", "ws", "--rows", "0", "--cols", "2"],
            "rows must be an integer between 1 and 512, not 0",
        ),
        (
            ["generate", "--dataflow", "ws", "--rows", "65", "--cols", "2"],
            "rows = 65 is beyond what the RTL generator builds (1 to 64); the analytical model",
        ),
        (
            ["generate", "--dataflow", "ws", "--rows", "2", "--cols", "2", "--b-width", "40"],
            "b_width must be an integer between 2 and 16, not 40",
        ),
        (["generate", "--dataflow", "ws", "--rows", "2"], "--cols is required"),
        (["generate", "--rows", "two"], "argument --rows: invalid int value: 'two'"),
        (["generate", "--config", "missing.json"], "cannot read --config missing.json"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
    ],
)
def test_bad_options_exit_2_with_one_line(tmp_path, args, message):
    r = systolic(*args, cwd=tmp_path)
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], r.stderr
    assert "Traceback" not in r.stderr


def test_help_explains_every_option():
    r = systolic("generate", "--help")
    assert r.returncode == 0
    for option in (
        "--dataflow",
        "--rows",
        "--cols",
        "--a-width",
        "--b-width",
        "--a-unsigned",
        "--b-unsigned",
        "--acc-width",
        "--out",
        "--lint",
        "--config",
        "--design",
    ):
        assert option in r.stdout


def test_sim_checks_against_golden_and_reports(tmp_path):
    r = systolic("sim", "--dataflow", "os", "--rows", "2", "--cols", "3", "--a-depth", "64",
                 "--b-depth", "64", "--c-depth", "64", "--m", "5", "--k", "7", "--n", "4",
                 "--seed", "11", "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["bit_exact"] is True and out["mismatches"] == 0 and out["seed"] == 11
    assert (out["m"], out["k"], out["n"]) == (5, 7, 4) and out["data"] == "random"
    assert out["cycles"] == out["counters"]["cycles"] > 0
    # 5x7x4 on 2x3: ceil(5/2) * ceil(4/3) = 6 tiles of 7 steps each stream 42 vectors.
    assert out["counters"]["stream_cycles"] == 42
    assert 0 < out["utilization"] <= 1


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
            ["--m", "2", "--k", "2", "--n", "2", "--pause", "1.5"],
            "argument --pause: must be a probability in [0, 1), not '1.5'",
        ),
        (
            ["--m", "2", "--k", "2", "--n", "2", "--c-depth", "0"],
            "c_depth must be an integer between 1 and 16777216, not 0",
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
    r = systolic("sim", "--dataflow", "ws", "--rows", "4", "--cols", "4", *args)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], r.stderr


def test_model_prints_prediction_without_simulating():
    r = systolic("model", "--dataflow", "is", "--rows", "3", "--cols", "5", "--m", "11", "--k",
                 "20", "--n", "6", "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    c = out["counters"]
    parts = c["stream_cycles"] + c["fill_cycles"] + c["stall_cycles"] + c["drain_cycles"]
    assert out["cycles"] == c["cycles"] == parts
    assert out["weight_words_off_array"] == c["b_reads"]
    assert set(out["reuse"]) == {"array_a", "array_b", "offchip_a", "offchip_b"}


def test_compare_shapes_file_and_exit_status(tmp_path, monkeypatch, capsys):
    from systolic.experiments import compare as compare_module

    from systolic.cli import main

    shapes = tmp_path / "shapes.txt"
    shapes.write_text("# M,K,N\n5,7,3\n\n2, 9, 4  # ragged\n")
    args = ["compare", "--dataflow", "ws", "--rows", "2", "--cols", "3", "--a-depth", "64",
            "--b-depth", "64", "--c-depth", "64", "--shapes", str(shapes)]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "2 points x 13 quantities" in out and "0 point(s) with differences" in out

    real = compare_module.predict

    def off_by_one(config, m, k, n):  # a model that is wrong by one cycle must be caught
        pred = real(config, m, k, n)
        pred.counters["cycles"] += 1
        return pred

    monkeypatch.setattr(compare_module, "predict", off_by_one)
    assert main(args) == 1
    assert "DIFFER: cycles" in capsys.readouterr().out


def test_compare_rejects_malformed_shapes(tmp_path):
    shapes = tmp_path / "bad.txt"
    shapes.write_text("4,4,4\n4,four,4\n")
    r = systolic("compare", "--dataflow", "os", "--rows", "2", "--cols", "2", "--shapes",
                 str(shapes))  # fmt: skip
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"systolic: {shapes}:2: expected three positive integers M,K,N, got '4,four,4'"
    ]
    r = systolic("compare", "--dataflow", "os", "--rows", "2", "--cols", "2", "--m", "3")
    assert r.returncode == 2 and "give all of --m, --k and --n" in r.stderr


def test_sim_with_zero_data():
    r = systolic("sim", "--dataflow", "is", "--rows", "2", "--cols", "3", "--a-depth", "64",
                 "--b-depth", "64", "--c-depth", "64", "--m", "4", "--k", "5", "--n", "3",
                 "--data", "zeros", "--seed", "2")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "4x5x3 GEMM, seed 2, zeros data: C matches golden/ bit for bit" in r.stdout
