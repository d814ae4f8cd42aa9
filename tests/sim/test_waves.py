"""Waveforms on demand: a traced build records the run (VCD and FST), ``systolic sim --waves``
writes one, and with ``SYSTOLIC_WAVES_ON_FAIL`` a failing test leaves the waveform of its last
simulation (the GEMMs it judged), a passing one none."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig
from systolic.golden.data import random_operands
from systolic.golden.reference import reference
from systolic.sim.simulate import run_gemm

from ..configs import DEPTHS

#: The smallest device, on tests/rtl/test_gemms.py's buffers: its plain build is that test's.
CONFIG = ArrayConfig("ws", 1, 1, **DEPTHS)


def _vcd_signals(text: str) -> set[str]:
    return {line.split()[4] for line in text.splitlines() if line.lstrip().startswith("$var")}


def test_a_vcd_records_the_bus_and_the_design_and_the_run_stays_bit_exact(tmp_path, seed):
    rng = np.random.default_rng(seed)
    ((a, b),) = random_operands(rng, CONFIG, [(3, 4, 2)])
    waves = tmp_path / "run.vcd"
    res = run_gemm(CONFIG, a, b, waves=waves)
    assert np.array_equal(res.c, reference(CONFIG, a, b)) and res.error == 0
    text = waves.read_text()
    names = _vcd_signals(text)
    assert {"s_axil_awvalid", "m_axi_arvalid", "irq", "clk"} <= names, sorted(names)[:20]
    # the run is in it: the clock toggles through the descriptor's cycles and more
    assert text.count("\n#") > 2 * res.measured_cycles


def test_systolic_sim_writes_an_fst(tmp_path):
    waves = tmp_path / "gemm.fst"
    r = subprocess.run(
        [sys.executable, "-m", "systolic.cli", "sim", "--dataflow", "ws", "--rows", "1",
         "--cols", "1", "--a-depth", "48", "--b-depth", "48", "--c-depth", "48", "--m", "2",
         "--k", "3", "--n", "2", "--seed", "1", "--waves",
         str(waves)], capture_output=True, text=True,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    blob = waves.read_bytes()
    assert len(blob) > 200 and blob[0] == 0  # FST's first block is its header (type 0)


def test_a_bad_waveform_name_is_refused_before_building():
    with pytest.raises(ValueError, match=r"\.fst or \.vcd"):
        run_gemm(CONFIG, np.ones((1, 1), int), np.ones((1, 1), int), waves=Path("x.ghw"))


INNER = """
import numpy as np
from systolic.contract.config import ArrayConfig
from systolic.sim.simulate import run_gemm

CONFIG = ArrayConfig("ws", 1, 1, a_depth=48, b_depth=48, c_depth=48)


def test_passes_after_simulating():
    run_gemm(CONFIG, np.ones((2, 2), int), np.ones((2, 2), int))


def test_fails_after_simulating():
    res = run_gemm(CONFIG, np.ones((2, 3), int), np.ones((3, 2), int))
    assert res.c[0, 0] == 4  # it is 3: the check fails and the waveform stays


def test_fails_without_simulating():
    assert False
"""


def test_a_failing_test_leaves_the_waveform_of_its_last_simulation(tmp_path):
    shutil.copy(Path(__file__).resolve().parents[1] / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_inner.py").write_text(INNER)
    waves = tmp_path / "waves"
    env = os.environ | {"SYSTOLIC_WAVES_ON_FAIL": str(waves)}
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "test_inner.py"], cwd=tmp_path, env=env, capture_output=True,
                       text=True)  # fmt: skip
    assert "2 failed, 1 passed" in r.stdout, r.stdout[-2000:]
    left = sorted(p.name for p in waves.iterdir())
    assert left == ["test_inner.py_test_fails_after_simulating.fst"], left
    assert (waves / left[0]).stat().st_size > 200
    assert "waveform" in r.stdout and left[0] in r.stdout
