"""``systolic regress``: a configuration's regression passes and says so in JUnit XML; a
deliberately broken model makes it fail, and the replay command it prints reproduces the
failure alone and writes the waveform."""

from __future__ import annotations

import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from systolic.contract.config import ArrayConfig
from systolic.verify.regress import CONV_EVERY, case, run_regression

from ..configs import DEPTHS
from ..helpers import run_faulty
from ..sim.test_conv import CONFIGS as CONV_CONFIGS

CONFIG = ArrayConfig(
    "is",
    2,
    3,
    a_depth=24,
    b_depth=24,
    c_depth=24,
    zero_points=True,
    requant=True,
    a_signed=False,
    out_signed=False,
    bus_width=64,
    max_burst=2,
)  # fmt: skip  (the AXI conformance test's: its port build)


def _systolic(args, cwd, env=None):
    return subprocess.run([sys.executable, "-m", "systolic.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True)  # fmt: skip


def _broken(args, cwd):
    """``systolic ARGS`` with its model one cycle long (tests/faults.py)."""
    return run_faulty(*args, cwd=cwd, env={"SYSTOLIC_REGRESS_BREAK_MODEL": "cycles"})


def test_cases_cover_the_modes_and_replay_identically(seed):
    drawn = [case(CONFIG, seed, i) for i in range(12)]
    assert {c.values for c in drawn} == {"random", "corners", "zeros"}
    assert any(c.memory is None for c in drawn) and any(c.memory for c in drawn)
    assert any(1 in c.shape for c in drawn)
    assert any(c.quant and c.quant.params is not None for c in drawn)
    again = case(CONFIG, seed, 5)
    assert (again.a == drawn[5].a).all() and again.describe() == drawn[5].describe()


@pytest.mark.long
def test_a_regression_of_a_generated_configuration_passes_with_junit_xml(tmp_path, seed):
    (tmp_path / "c.json").write_text(CONFIG.to_json())
    gen = _systolic(["generate", "--config", "c.json", "--out", "rtl"], tmp_path)
    assert gen.returncode == 0, gen.stderr
    r = _systolic(["regress", "rtl/config.json", "--count", "8", "--seed", str(seed), "--junit",
                   "out.xml"], tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "8 of 8 passed" in r.stdout
    suite = ET.parse(tmp_path / "out.xml").getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("8", "0")
    assert len(suite.findall("testcase")) == 8


@pytest.mark.long
def test_a_broken_model_fails_with_a_replay_that_reproduces_it_and_writes_waves(tmp_path, seed):
    # the smallest device, whose plain and traced builds tests/rtl/test_gemms.py and
    # tests/sim/test_waves.py make too
    (tmp_path / "config.json").write_text(ArrayConfig("ws", 1, 1, **DEPTHS).to_json())
    r = _broken(["regress", "config.json", "--count", "2", "--seed", str(seed), "--no-pauses"],
                tmp_path)  # fmt: skip
    assert r.returncode == 1, r.stdout + r.stderr
    assert "counter cycles: RTL" in r.stdout
    xml = next(tmp_path.glob("regress-*.xml"))
    assert ET.parse(xml).getroot().find("testsuite").get("failures") == "2"
    lines = r.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if "FAILED" in line)
    replay = next(line.split("replay: ", 1)[1] for line in lines[first:] if "replay: " in line)
    words = shlex.split(replay)
    assert words[0] == "systolic"
    again = _broken(words[1:], tmp_path)  # the same command, run as printed
    assert again.returncode == 1 and "0 of 1 passed" in again.stdout, again.stdout
    # the same case: its shape, values, order, chunks and memory
    assert lines[first] in again.stdout.splitlines(), (lines[first], again.stdout)
    waves = tmp_path / words[words.index("--waves") + 1]
    assert waves.stat().st_size > 200


def test_a_malformed_config_file_is_a_clear_error(tmp_path):
    (tmp_path / "bad.json").write_text('{"dataflow": "ws", "rows": 0, "cols": 4}')
    r = _systolic(["regress", "bad.json"], tmp_path)
    assert r.returncode == 2 and "rows" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("name", sorted(CONV_CONFIGS))
def test_a_configuration_with_a_staging_buffer_regresses_convolutions_too(name, seed):
    """Every third case of a configuration with a staging buffer is a convolution (random
    geometry and chunks): drawn, run and judged like the GEMMs around it, all passing, on each
    dataflow."""
    config = CONV_CONFIGS[name]  # tests/sim/test_conv.py's devices
    drawn = [case(config, seed, i, pauses=False) for i in range(2 * CONV_EVERY)]
    assert [c.conv is not None for c in drawn] == [i % CONV_EVERY == CONV_EVERY - 1
                                                   for i in range(2 * CONV_EVERY)]  # fmt: skip
    outcomes = run_regression(config, drawn)
    for o in outcomes:
        print(o.case.describe(), "passed" if o.passed else o.failures)
    assert all(o.passed for o in outcomes)
