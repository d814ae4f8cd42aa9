"""`systolic compare`: a shapes file, the exit status on a difference, malformed shapes."""

from __future__ import annotations

import pytest

from ..helpers import run_cli


@pytest.mark.long
def test_compare_shapes_file_and_exit_status(tmp_path, monkeypatch, capsys):
    from systolic.verify import compare as compare_module

    from systolic.cli import main

    shapes = tmp_path / "shapes.txt"
    shapes.write_text("# M,K,N\n5,7,3\n\n2, 9, 4  # ragged\n")
    args = ["compare", "--dataflow", "ws", "--rows", "2", "--cols", "3", "--a-depth", "24",
            "--b-depth", "24", "--c-depth", "24", "--shapes", str(shapes)]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "4 points (2 DRAM setting(s)) x 29 quantities" in out  # 24 counters, 5 words
    assert "0 point(s) with differences" in out
    one_setting = [*args, "--bandwidth", "3/2", "--latency", "7", "--order", "knm"]
    assert main(one_setting) == 0
    assert "2 points (1 DRAM setting(s))" in capsys.readouterr().out

    real = compare_module.predict_device

    def off_by_one(config, d, memory):  # a model that is wrong by one cycle must be caught
        pred = real(config, d, memory)
        pred["array_wait_cycles"] += 1
        return pred

    monkeypatch.setattr(compare_module, "predict_device", off_by_one)
    assert main(one_setting) == 1
    assert "DIFFER: array_wait_cycles" in capsys.readouterr().out


def test_compare_rejects_malformed_shapes(tmp_path):
    shapes = tmp_path / "bad.txt"
    shapes.write_text("4,4,4\n4,four,4\n")
    r = run_cli("compare", "--dataflow", "os", "--rows", "2", "--cols", "2", "--shapes",
                 str(shapes))  # fmt: skip
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"systolic: {shapes}:2: expected three positive integers M,K,N, got '4,four,4'"
    ]
    r = run_cli("compare", "--dataflow", "os", "--rows", "2", "--cols", "2", "--m", "3")
    assert r.returncode == 2 and "give all of --m, --k and --n" in r.stderr


CONV_DEVICE = [
    "--dataflow",
    "ws",
    "--rows",
    "3",
    "--cols",
    "2",
    "--a-depth",
    "128",
    "--b-depth",
    "128",
    "--c-depth",
    "128",
    "--stage-depth",
    "128",
    "--zero-points",
    "--requant",
    "--requant-float",
]  # fmt: skip  (tests/sim/test_conv.py's device: one build for both)


@pytest.mark.long
def test_compare_takes_a_convolution(monkeypatch, capsys):
    """``--conv``: a strided, padded 3x3 convolution on two images at both default DRAM
    settings: bit-exact and every counter equal; a model a stage row short is caught."""
    from systolic.verify import compare as compare_module

    from systolic.cli import main

    args = ["compare", *CONV_DEVICE, "--conv", "2,7,6,5,3,3", "--pad", "1", "--stride", "2"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "24x54x3" in out  # 2 images of 4x3 outputs; K = 9 taps x 2 slices of 3 channels
    assert "2 points (2 DRAM setting(s))" in out and "0 point(s) with differences" in out
    real = compare_module.predict_device

    def short(config, d, memory):
        pred = real(config, d, memory)
        pred["dram_read_bytes_a"] -= 4
        return pred

    monkeypatch.setattr(compare_module, "predict_device", short)
    assert main([*args, "--bandwidth", "3/2", "--latency", "7"]) == 1  # one DRAM setting
    assert "DIFFER: dram_read_bytes_a" in capsys.readouterr().out


def test_compare_convolution_options_are_checked():
    for extra, message in (
        (["--energy"], "--conv compares one convolution's counters: without --energy"),
        (["--stage-depth", "8"], "--conv: no chunk of"),
    ):
        r = run_cli("compare", *CONV_DEVICE, "--conv", "1,6,6,4,3,3", *extra)
        assert r.returncode == 2, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], r.stderr
