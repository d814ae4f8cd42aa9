"""rtl/controller.py: malformed commands (zero dimensions, addresses past a buffer) raise
`error` in hardware and still finish."""

from __future__ import annotations

import pytest
from systolic.contract.config import ArrayConfig, Dataflow
from systolic.sim.build import build_model, run_cocotb

from ..configs import DEPTHS


@pytest.mark.parametrize("dataflow", list(Dataflow), ids=lambda d: d.value)
def test_hardware_flags_malformed_commands(dataflow):
    """Zero dimensions and addresses past a buffer's end raise `error` and still finish
    (see tb/accelerator_tb.py::malformed_commands)."""
    config = ArrayConfig(dataflow, 2, 2, **DEPTHS)  # built for tests/rtl/test_top.py too
    run = run_cocotb(build_model(config), "systolic.tb.accelerator_tb",
                     testcase="malformed_commands", name="malformed")  # fmt: skip
    assert (run.tests, run.failed) == (1, 0), f"see {run.log}"
