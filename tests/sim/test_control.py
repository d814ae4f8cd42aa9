"""The AXI4-Lite control plane checked with a master that is not ours (tb/control_tb.py:
cocotbext-axi's AxiLiteMaster, adapted to cocotb 2, and its AxiRam on the AXI4 port): every
identification register reads as contract/registers.py defines it, every descriptor register
writes and reads back at its width, unmapped addresses answer SLVERR, byte strobes and
write-1-to-clear behave, a refused descriptor raises the error interrupt, a full queue holds
the doorbell's response, and the counters a queue of descriptors ends with equal the model's."""

from __future__ import annotations

import json

from systolic.contract.dma import Refusal, check_descriptor, descriptor_values, place
from systolic.contract.interface import DEVICE_COUNTERS, TIMED_COUNTERS
from systolic.contract.memory import Dram
from systolic.models.device import predict_device, predict_stream
from systolic.sim.build import build_model, run_cocotb

from .test_axi_conformance import CONFIGS

CONFIG = CONFIGS[0]  # shares the conformance test's build (AXI4 port at the wrapper's edge)


def test_registers_through_an_independent_axi_lite_master(seed, tmp_path):
    d = place(CONFIG, 9, 13, 7, chunk=(3, 6, 4), order="kmn")  # 18 chunks, partial sums spilled
    assert check_descriptor(CONFIG, d)[0] is Refusal.NONE
    results = tmp_path / "counters.json"
    env = {"SYSTOLIC_DESCRIPTOR": json.dumps(descriptor_values(CONFIG, d)),
           "SYSTOLIC_RESULTS": str(results), "SYSTOLIC_SEED": str(seed)}  # fmt: skip
    build = build_model(CONFIG, "device", memory="port")
    run = run_cocotb(build, "systolic.tb.control_tb", env=env, name=f"control-{seed}")
    assert (run.tests, run.failed) == (2, 0), f"see {run.log}"
    got = json.loads(results.read_text())
    # the bench's last run queues queue_depth + 2 copies of it at once: the counters the queue
    # leaves add up every copy's work (each reads the partial sums the one before writes, so
    # they run one after another; none is checked on an idle device but the first)
    posts = CONFIG.queue_depth + 2
    predicted = predict_stream(CONFIG, [(d, 0)] * posts, Dram(1)).registers
    work = [k for k in DEVICE_COUNTERS if k not in TIMED_COUNTERS]
    assert {k: got[k] for k in work} == {k: predicted[k] for k in work}
    assert got["jobs"] == posts * predict_device(CONFIG, d, Dram(1))["jobs"]
    assert got["cycles"] >= got["compute_cycles"] > 0
