"""Options every subcommand shares: one clear line and exit status 2 for every bad value, and
--help that explains every option."""

from __future__ import annotations

import pytest

from ..helpers import coefficients_with, run_cli


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["generate", "--dataflow", "xs", "--rows", "2", "--cols", "2"],
            "argument --dataflow: invalid choice: 'xs'",
        ),
        (
            ["generate", "--dataflow", "ws", "--rows", "0", "--cols", "2"],
            "rows must be an integer between 1 and 64 (the RTL generator's), not 0",
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
    r = run_cli(*args, cwd=tmp_path)
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], r.stderr
    assert "Traceback" not in r.stderr


def test_help_explains_every_option():
    r = run_cli("generate", "--help")
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


def test_cli_bad_coefficients_file(tmp_path):
    bad = coefficients_with(tmp_path, "edge = { value = 0.009", "edge = { value = -1")
    r = run_cli("sim", "--dataflow", "ws", "--rows", "2", "--cols", "2", "--m", "2", "--k", "2",
                  "--n", "2", "--energy", "--coefficients", str(bad))  # fmt: skip
    assert r.returncode == 2
    assert "toggle.edge: value must be >= 0" in r.stderr
    assert "Traceback" not in r.stderr


#: What parsing the command line must not import: the stacks behind the subcommands' work
#: (scikit-learn, Dask, cocotb, plotting, ONNX) load in the subcommand that uses them.
HEAVY = ("sklearn", "dask", "distributed", "cocotb", "cocotb_tools", "matplotlib", "pandas",
         "onnx", "onnxruntime", "plotly")  # fmt: skip


def test_parsing_the_command_line_imports_no_heavy_stack():
    """`systolic --help` and a mistyped option answer in about a second: building every
    subcommand's parser and failing on a bad option loads none of the heavy libraries."""
    import subprocess
    import sys

    code = ("import sys, systolic.cli as c\n"
            "status = c.main(['sim', '--dataflow', 'xs'])\n"
            "print(status, sorted({m.split('.')[0] for m in sys.modules}))")  # fmt: skip
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    status, loaded = r.stdout.split(" ", 1)
    assert status == "2", r.stdout + r.stderr
    assert "systolic" in loaded
    assert not [m for m in HEAVY if f"'{m}'" in loaded], loaded
