"""The bare meshes under Verilator: every output vector bit-exact and in the exact cycle
(tb/array_tb.py checks each output vector and its arrival cycle)."""

from __future__ import annotations

import pytest
from systolic.sim.build import build_model, run_cocotb

from ..configs import SIM_CONFIGS
from ..conftest import SEED


@pytest.mark.parametrize("config", SIM_CONFIGS, ids=lambda c: c.name)
def test_mesh_matches_golden(config, seed):
    build = build_model(config, "array")
    run = run_cocotb(
        build,
        "systolic.tb.array_tb",
        env={"SYSTOLIC_SEED": str(seed)},
        name=f"{config.name}-s{seed}",  # an IS mesh shares its WS twin's model and folder
    )
    assert run.tests == 3, f"expected 3 cocotb tests, {run.tests} ran; see {run.log}"
    assert run.failed == 0, (
        f"{run.failed} of {run.tests} cocotb tests failed on {config.name}; see {run.log}; "
        f"replay with SYSTOLIC_SEED={SEED}"
    )
