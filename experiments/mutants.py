"""``make mutants``: targeted bugs, injected one at a time, that the test suite must catch.

Each mutant is a small edit of one file (a timing term a cycle long, an energy price doubled, a
spec check removed, ...) and the test selection that must fail with it. The edits are applied
to a scratch copy of the repository, never to the working tree; the scratch copy's ``systolic``
package is put first on ``PYTHONPATH``, so the tests, the command-line tools they start and the
simulator's Python all import the mutated code. Compiled models are shared with the working
tree's ``build/`` (a mutated generator hashes to new models; unchanged ones are reused).

It is a benchmark, not a test: it prints killed or survived per mutant and the time it took,
and exits 1 if any survived (or its tests could not run). It works on a git checkout (it copies
the tracked files). New subsystems add their mutants here.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from systolic.contract.layers import CLI, LAYERS

__all__ = ["MUTANTS", "Mutant", "run_mutants"]

REPO = Path(__file__).resolve().parent.parent


def subpackages() -> list[str]:
    """The repository folders that are subpackages of ``systolic`` (contract/layers.py)."""
    return [folder for name, (folder, _) in LAYERS.items() if name != CLI]


@dataclass(frozen=True)
class Mutant:
    """Replace ``old`` (which must occur exactly once) by ``new`` in ``path``; ``tests`` (a
    pytest selection, relative to the repository) must then fail."""

    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]


MUTANTS = (
    Mutant("bank_release + 2 (a real extra stall, model and RTL move together)",
           "contract/timing.py", "    _stationary(config, \"bank_release\")\n    return 0\n",
           "    _stationary(config, \"bank_release\")\n    return 2\n",
           ("tests/rtl/test_timing.py::test_cycles_follow_the_architecture",)),
    Mutant("a skew register one stage long", "rtl/array.py",
           'row[0].west.eq(_delay(m, lane, r, f"skew_row{r}"))',
           'row[0].west.eq(_delay(m, lane, r + 1, f"skew_row{r}"))',
           ("tests/rtl/test_array.py::test_mesh_matches_golden[ws-3x2-i8-acc32]",)),
    Mutant("the adder drops the accumulator's top bit", "rtl/fp.py",
           "return (x + y)[: len(x)]", "return (x + y)[: len(x) - 1]",
           ("tests/rtl/test_gemms.py::test_narrow_accumulators_wrap_in_the_device[ws]",)),
    Mutant("the chunk's cycle counter starts from 1", "rtl/core.py",
           "m.d.sync += [getattr(cnt, name).eq(0) for name in COUNTERS]",
           'm.d.sync += [getattr(cnt, name).eq(int(name == "cycles")) for name in COUNTERS]',
           ("tests/rtl/test_timing.py::test_cycles_follow_the_architecture[ws-2x2-i8-acc12-d48.48.48]",)),
    Mutant("the exact model's idle-cycle skip jumps one cycle too far", "models/device.py",
           "return max(t + 1, min(times))", "return max(t + 2, min(times) + 1)",
           ("tests/sim/test_device.py",)),
    Mutant("the bench monitor counts one cycle too many", "sim/wrapper.py",
           "else bench_cycles <= bench_cycles + 64'd1;",
           "else bench_cycles <= bench_cycles + 64'd1 + (bench_cycles == 64'd3);",
           ("tests/rtl/test_gemms.py::test_gemms_bit_exact[ws-2x2-i8-acc12-d48.48.48]",)),
    Mutant("B reloaded for every chunk (resident weights not reused)", "contract/dma.py",
           "new_b = prev is None or (prev.k0, prev.n0) != (ch.k0, ch.n0)", "new_b = True",
           ("tests/rtl/test_gemms.py::test_gemms_bit_exact[ws-2x2-i8-acc12-d48.48.48]",)),
    Mutant("a zero point ignored in the reference", "golden/reference.py",
           "c = (a - a_zero).view(np.uint64) @ (b - b_zero).view(np.uint64)",
           "c = a.view(np.uint64) @ (b - b_zero).view(np.uint64)",
           ("tests/golden/test_reference.py",)),
    Mutant("requantization rounds its nudge down", "golden/requant.py",
           "nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))",
           "nudge = np.where(ab >= 0, (1 << 30) - 1, 1 - (1 << 30))",
           ("tests/golden/test_requant.py",)),
    Mutant("the bias added after requantization, not before", "golden/requant.py",
           "x = _wrap32(acc + bias)  # the bias first, as the runtimes add it",
           "x, out_zero = acc, out_zero + bias",
           ("tests/golden/test_requant.py::test_the_bias_is_added_before_the_scale_wrapping_in_32_bits",)),
    Mutant("ReLU6 clamping at 5", "golden/requant.py",
           '"relu6": (0.0, 6.0)', '"relu6": (0.0, 5.0)',
           ("tests/golden/test_requant.py::test_activations_quantize_their_bounds_on_the_output_scale",)),
    Mutant("the device ignores the bias", "rtl/requant.py",
           "biased.eq((x + Mux(path.bias, pair.bias, 0))[:32])", "biased.eq(x)",
           ("tests/rtl/test_quantized.py::test_requantization_corners_bit_exact",)),
    Mutant("the device ignores the clamp's high bound", "rtl/requant.py",
           "Mux(path.clamp, path.clamp_hi, hi)", "hi",
           ("tests/rtl/test_quantized.py::test_requantization_corners_bit_exact",)),
    Mutant("the driver's register count off by one (the doorbell forgotten)", "contract/host.py",
           'return {"post": fields + 1, "reads": reads, "acks": 1}',
           'return {"post": fields, "reads": reads, "acks": 1}',
           ("tests/contract/test_host.py",)),
    Mutant("a pooling window one row short (the device)", "rtl/vector.py",
           'self._window(m, start_y, d.pool_h, d.height, "y")',
           'self._window(m, start_y, d.pool_h - 1, d.height, "y")',
           ("tests/sim/test_vector.py::test_vector_unit_bit_exact_and_counted_exactly",)),
    Mutant("a pooling window one row short (the walk the model reads)", "contract/vector.py",
           "window_rows(oy, v.stride[0], v.pads[0], v.window[0], h)",
           "window_rows(oy, v.stride[0], v.pads[0], v.window[0] - 1, h)",
           ("tests/contract/test_vector.py",)),
    Mutant("the residual add skipping the second input's scaling (the device)", "rtl/vector.py",
           "m.d.comb += new.eq(Mux(first, scaled, held + scaled))",
           "m.d.comb += new.eq(Mux(first, scaled, held + operand))",
           ("tests/sim/test_vector.py::test_vector_unit_bit_exact_and_counted_exactly",)),
    Mutant("the residual add skipping the second input's scaling (golden)", "golden/vector.py",
           "sy = _scale(y << ADD_LEFT_SHIFT, params.y_multiplier, params.y_shift)",
           "sy = y << ADD_LEFT_SHIFT",
           ("tests/golden/test_vector.py::test_a_residual_add_matches_real_arithmetic_within_a_step",)),
    Mutant("a vector run adds the last GEMM's array counters again", "rtl/device.py",
           "with m.If(cp_side.finished):",
           "with m.If(cp_side.finished | (vec.run_done if vec is not None else 0)):",
           ("tests/sim/test_end_to_end.py::test_a_resnet_basic_block_runs_on_the_device_bit_exact",)),
    Mutant("the model's average ready a cycle before its reciprocal", "models/vector.py",
           "ready_at = t + 1 + DIVIDE_CYCLES if average else 0",
           "ready_at = t + DIVIDE_CYCLES if average else 0",
           ("tests/models/test_vector.py",)),
    Mutant("a host operator priced at zero (softmax)", "models/inference.py",
           '"Softmax": 14,', '"Softmax": 0,',
           ("tests/models/test_inference.py",)),
    Mutant("DRAM energy x 2", "models/energy.py",
           'add("dram", klass, "offchip", bits * per_bit)',
           'add("dram", klass, "offchip", 2 * bits * per_bit)',
           ("tests/models/test_energy.py::test_every_pricing_path_in_picojoules",)),
    Mutant("a DRAM preset priced with another's per-bit energy", "models/technology.py",
           "return dram_devices()[memory.device]",
           "return dram_devices()[DEFAULT_MEMORY_PRESET]",
           ("tests/models/test_sram_and_technology.py",)),
    Mutant("the SRAM lookup ignores tiling", "models/sram.py",
           "return tiled_memory(memory.width, memory.depth, memory.reads, node_nm)",
           "return sram_macro(memory.width, memory.depth, memory.reads, node_nm)",
           ("tests/models/test_sram_and_technology.py",)),
    Mutant("a calibrated term dropped (the PEs' flags)", "models/logic.py",
           '("flag", "overhead", flags),', "",
           ("tests/verify/test_logic_fit.py",)),
    Mutant("partial products kept by both operands counted once, not twice (OS)",
           "models/toggles.py", "cx[:-1] * cy[:-1] - 2 * kept", "cx[:-1] * cy[:-1] - kept",
           ("tests/models/test_toggles.py",)),
    Mutant("the measured duty cycles not annotated (OpenSTA's default of one half)",
           "synth/power.py", '("" if duty is None else f" -duty {_consistent(rate, duty):.9g}")',
           '""', ("tests/synth/test_power.py",)),
    Mutant("the node scaling's range ignored", "models/energy.py",
           '{"logic": self.node_range,', '{"logic": (1.0, 1.0),',
           ("tests/models/test_energy.py::test_every_pricing_path_in_picojoules",)),
    Mutant("buffer toggles x 2 (the model's estimate)", "models/toggles.py",
           'counts.add("buffer", "psum", UPDATE_LATENCY * results.sum())',
           'counts.add("buffer", "psum", 2 * UPDATE_LATENCY * results.sum())',
           ("tests/models/test_toggles.py",)),
    Mutant("the spec's batch check removed", "workloads/spec_reader.py",
           'integer(doc, b, (*path, "batch"))', "b", ("tests/sweeps/test_sweep_spec.py",)),
    Mutant("each xdist worker draws its own seed", "tests/conftest.py",
           'os.environ.setdefault("SYSTOLIC_SEED", str(random.SystemRandom().randrange(2**31)))',
           'os.environ["SYSTOLIC_SEED"] = os.environ.get("SYSTOLIC_SEED_GIVEN") or '
           "str(random.SystemRandom().randrange(2**31))",
           ("tests/test_conftest.py",)),
    Mutant("a read burst one beat short (the DMA)", "rtl/dma.py",
           "ar.payload.len.eq(runs.beats - 1)", "ar.payload.len.eq(runs.beats - 2)",
           ("tests/sim/test_device.py::test_device_gemms_bit_exact_in_every_order[ws-2x3-i8-acc32-d24.24.24]",)),
    Mutant("a ping-pong swap one chunk early (B's bank turns on every chunk)", "rtl/sequencer.py",
           "self.bank_b.eq(self.bank_b ^ load_b)", "self.bank_b.eq(~self.bank_b)",
           ("tests/rtl/test_sequencer.py",)),
    Mutant("the DRAM's bandwidth term off by one in the model", "contract/memory.py",
           "return max(size * self.den, self.num)", "return max(size * self.den + 1, self.num)",
           ("tests/sim/test_device.py::test_device_gemms_bit_exact_in_every_order[ws-2x3-i8-acc32-d24.24.24]",)),
    Mutant("the chunk tuner halves whatever the pipeline model predicts", "models/chunking.py",
           "if not scored or scored[0][0] > fastest * (1 - MIN_GAIN):", "if not scored:",
           ("tests/models/test_chunking.py",)),
    Mutant("WLAST one beat early (the AXI RAM run)", "rtl/dma.py",
           "w.payload.last.eq(beat + 1 == head.beats)", "w.payload.last.eq(beat + 2 == head.beats)",
           ("tests/sim/test_axi_conformance.py",)),
    Mutant("WLAST one beat early (the DRAM model's rule checks)", "rtl/dma.py",
           "w.payload.last.eq(beat + 1 == head.beats)", "w.payload.last.eq(beat + 2 == head.beats)",
           ("tests/sim/test_device.py::test_device_gemms_bit_exact_in_every_order[ws-2x3-i8-acc32-d24.24.24]",)),
    Mutant("the model's timeline a cycle late", "models/device.py",
           "return [(t - 1, name, what) for t, name, what in events]",
           "return [(t, name, what) for t, name, what in events]",
           ("tests/sim/test_trace.py",)),
    Mutant("the next descriptor starts though it reads what the running one writes",
           "rtl/device.py", "& ~((run.state(ptr[\"rd\"]) == RUNNING) & depends)", "",
           ("tests/sim/test_device.py::test_queued_descriptors_overlap_and_complete_in_order",)),
    Mutant("the compute side takes again a slot it has done (an older one still storing)",
           "rtl/device.py", "taken = ((run.state(after) == RUNNING) & ~took)",
           "taken = ((run.state(after) == RUNNING))",
           ("tests/sim/test_device.py::"
            "test_a_queue_where_the_next_finishes_computing_before_the_oldest_stores",)),
    Mutant("the next table loads while the writer still stores with the one before",
           "rtl/device.py",
           "q_now = q_pending & (run.ptr[\"wr\"] == run.ptr[\"rd\"]) & wr.cmd.ready",
           "q_now = q_pending",
           ("tests/sim/test_device.py::"
            "test_queued_requantizing_descriptors_load_their_tables_in_turn",)),
    Mutant("a queued descriptor zeroes the counters the queue has counted", "rtl/device.py",
           "alone = run.checking & ~run.state(~run.ptr[\"chk\"]).any()",
           "alone = run.checking",
           ("tests/sim/test_device.py::"
            "test_a_queue_where_the_next_finishes_computing_before_the_oldest_stores",)),
    Mutant("the model's queue starts a descriptor that reads what the one before writes",
           "models/device.py",
           "start = not rd_valid and not rd.q_pending and not (prev_running and es[x].depends)",
           "start = not rd_valid and not rd.q_pending",
           ("tests/sim/test_device.py::"
            "test_queued_descriptors_overlap_unless_one_reads_what_the_other_writes",)),
    Mutant("fp32 running sums keep IEEE subnormals", "golden/bf16.py",
           "not ((sums != 0) & (np.abs(sums) < 2.0**_EXP_MIN)).any()", "True",
           ("tests/golden/test_bf16.py::test_running_sums_equal_fp32_add_step_by_step",)),
    Mutant("the compiled pipeline walk counts A's loads once per K chunk, not per (M, K)",
           "models/timeline.py",
           "new_a = first or m != index[j - 1, 0] or k != index[j - 1, 1]",
           "new_a = first or k != index[j - 1, 1]",
           ("tests/models/test_pipeline.py::test_exact_counters_equal_the_device_model",)),
    Mutant("the compiled popcount drops the sign bit of 64-bit sums", "models/psums.py",
           "sign = 1 if v < 0 else 0", "sign = 0",
           ("tests/models/test_psums.py",)),
    Mutant("the compiled WS/IS partial sums keep one product, not the running sum",
           "models/psums.py", "acc[c] += xi * s[i, c]", "acc[c] = xi * s[i, c]",
           ("tests/models/test_psums.py",)),
    Mutant("write-1-to-clear clears every pending bit, not the written ones", "rtl/control.py",
           'w_hits["IRQ_PENDING"], w_data[:2] & mask[:2], 0)',
           'w_hits["IRQ_PENDING"], mask[:2], 0)',
           ("tests/sim/test_control.py",)),
    Mutant("the doorbell answers before the queue takes the descriptor", "rtl/control.py",
           "complete = pending & (~ring | self.desc.ready)", "complete = pending",
           ("tests/sim/test_control.py",)),
    Mutant("an address with no register answers OKAY", "rtl/control.py",
           "self.rresp.eq(Mux(_any(r_hits.values()), OKAY, SLVERR))", "self.rresp.eq(OKAY)",
           ("tests/sim/test_control.py",)),
    Mutant("the C header's masks one bit short", "contract/regdocs.py",
           'out.append(f"#define {name}_{f.name.upper()}_MASK 0x{f.mask:08x}u")',
           'out.append(f"#define {name}_{f.name.upper()}_MASK 0x{f.mask >> 1:08x}u")',
           ("tests/contract/test_registers.py",)),
    Mutant("the regression compares C only, not the counters", "verify/regress.py",
           "if c.memory is not None or k not in TIMED_COUNTERS]",
           "if False]",
           ("tests/cli/test_regress.py::test_a_broken_model_fails_with_a_replay_that_reproduces_it_and_writes_waves",)),
    Mutant("the replay command forgets the seed", "verify/regress.py",
           '"--seed", str(seed), "--case"', '"--case"',
           ("tests/cli/test_regress.py::test_a_broken_model_fails_with_a_replay_that_reproduces_it_and_writes_waves",)),
    Mutant("a passing test leaves a waveform too", "tests/conftest.py",
           'if where and report.failed and report.when == "call":',
           'if where and report.when == "call":',
           ("tests/sim/test_waves.py::test_a_failing_test_leaves_the_waveform_of_its_last_simulation",)),
    Mutant("the local pool gives up on the tasks of a dead worker", "sweeps/engines.py",
           "                self.pool = None\n                restarts += 1\n",
           "                self.pool = None\n                restarts += RESTARTS + 1\n",
           ("tests/sweeps/test_engines.py::test_the_local_pool_reruns_the_task_of_a_killed_worker",)),
    Mutant("the driver posts a layer past a descriptor's fields whole", "workloads/evaluate.py",
           "parts = -(-size // top)", "parts = 1",
           ("tests/workloads/test_evaluate.py::test_a_layer_past_a_descriptor_costs_its_cycles",)),
    Mutant("the C banks' read port 0 is not write-through", "rtl/sram.py",
           'lines.append("    if (r0_en && w_en && r0_addr == w_addr) r0_data <= w_data;")',
           "pass",
           ("tests/rtl/test_gemms.py",)),
    Mutant("synthesis counts no flip-flops", "synth/flow.py",
           "tally[1] += n if c.sequential else 0", "tally[1] += 0",
           ("tests/synth/test_flow.py::test_every_dataflow_mesh_synthesizes_and_meets_a_10ns_clock",)),
    Mutant("the critical path's slack is read from its arrival", "synth/flow.py",
           r'slack = re.search(r"^\s*(-?[\d.]+)\s+slack \((MET|VIOLATED)\)", block, re.M)',
           r'slack = re.search(r"^\s*(-?[\d.]+)\s+data (arrival) time", block, re.M)',
           ("tests/synth/test_flow.py::test_every_dataflow_mesh_synthesizes_and_meets_a_10ns_clock",)),
    Mutant("the descriptor check's products one bit short", "rtl/device.py",
           "shifting = checking & (step >= 1) & (step <= bits)",
           "shifting = checking & (step >= 1) & (step <= bits - 1)",
           ("tests/sim/test_device.py::test_refusals_at_the_edge_of_the_checks_products",)),
    Mutant("the check's capped products lose their sticky bit past the cap", "rtl/device.py",
           "m.d.sync += over.eq(over | total[width:].any())", "m.d.sync += over.eq(0)",
           ("tests/sim/test_device.py::test_refusals_at_the_edge_of_the_checks_products",)),
    Mutant("the clock gate opens a cycle late (its enable taken at the rising edge)",
           "rtl/clock_gate.py", "m.d.gate += enabled.eq(want)", "m.d.aon += enabled.eq(want)",
           ("tests/sim/test_device.py::test_device_gemms_bit_exact_in_every_order",)),
    Mutant("the clock gate shuts as the device goes idle (no edges after the last busy cycle)",
           "rtl/clock_gate.py", "want.eq(rst | active | linger.any())", "want.eq(rst | active)",
           ("tests/sim/test_control.py",)),
    Mutant("the idle device's gated flip-flops priced as clocked", "synth/power.py",
           """flat, _ = drive_gated_clocks(flat, sequential, "1'b0" if idle else "clk")""",
           """flat, _ = drive_gated_clocks(flat, sequential, "clk")""",
           ("tests/synth/test_power.py::test_the_idle_device_clocks_only_its_always_on_registers",)),
    Mutant("a walker's next chunk length from the current origin", "rtl/sequencer.py",
           "length.eq(Mux(new_wrap, total - origins[d], size))",
           "length.eq(Mux(new_wrap, total - origin[d], size))",
           ("tests/rtl/test_sequencer.py",)),
    Mutant("a walker's chunk wraps one origin late", "rtl/sequencer.py",
           "new_wrap = origins[d] >= reach[d]", "new_wrap = origins[d] > reach[d]",
           ("tests/rtl/test_sequencer.py",)),
    Mutant("LVS read as matching whatever netgen says", "synth/drc_lvs.py",
           'return int(total.group(1)), "match uniquely" in result.group(1)',
           "return int(total.group(1)), True",
           ("tests/synth/test_drc_lvs.py::test_lvs_finds_a_connection_the_wires_do_not_make",)),
    Mutant("a DRC run that stopped early read as clean", "synth/drc_lvs.py",
           'if not re.search(r"^drc done$", out, re.M):', "if False:",
           ("tests/synth/test_drc_lvs.py::test_the_tools_output_is_read_as_they_report_it",)),
    Mutant("DRC violations counted once per rule", "synth/drc_lvs.py",
           'return dict(Counter(re.findall(r"^violation: (.*)$", out, re.M)))',
           'return dict.fromkeys(re.findall(r"^violation: (.*)$", out, re.M), 1)',
           ("tests/synth/test_drc_lvs.py",)),
    Mutant("a later unnamed wire end dropped whatever it carries", "synth/route.py",
           r'r"\s*,\s*\(\s*0\s+0\s+ERROR', r'r"\s*,\s*\(\s*\S+\s+\S+\s+ERROR',
           ("tests/synth/test_route.py::"
            "test_unnamed_wire_ends_are_dropped_only_when_they_carry_nothing",)),
    Mutant("fan-out buffering only past four times the limit", "synth/fanout.py",
           "if len(sites) > limit}", "if len(sites) > 4 * limit}",
           ("tests/synth/test_fanout.py",)),
    Mutant("a synthesized sweep's points run at the coefficients' clock", "sweeps/run.py",
           "clock = clock_mhz if synth is None else point_clock(synth, clock_mhz)",
           "clock = clock_mhz",
           ("tests/sweeps/test_synthesis.py",)),
    Mutant("dynamic batching never waits for a fuller batch", "serving/batching.py",
           "begin = max(ready, min(arrivals[i] + policy.max_wait_s, full))",
           "begin = ready",
           ("tests/serving/test_queueing.py",)),
    Mutant("the thermal model cools twice as fast", "serving/power_budget.py",
           "math.exp(-seconds / self.envelope.tau_s)",
           "math.exp(-2 * seconds / self.envelope.tau_s)",
           ("tests/serving/test_power_budget.py",)),
    Mutant("leakage only while busy", "serving/power_budget.py",
           "            leak_pj += (b - a) * idle.leak_w(p) * 1e12\n", "",
           ("tests/serving/test_power_budget.py",)),
    Mutant("decode steps priced at the prompt's length, not the cache's", "serving/generation.py",
           "length = _blocks(int(max(prompt[i] + made[i] for i in batch)))",
           "length = _blocks(int(max(prompt[i] for i in batch)))",
           ("tests/serving/test_generation.py",)),
    Mutant("a served GEMM batch forgets the descriptor's check cycles", "serving/service.py",
           "self.cycles[batch] = p.measured_cycles", 'self.cycles[batch] = p["cycles"]',
           ("tests/serving/test_rtl_service.py",)),
    Mutant("the tuner trusts the pipeline model on small GEMMs", "models/chunking.py",
           "if best != largest and m * k * n <= EXACT_CHECK_MACS:", "if False:",
           ("tests/models/test_chunking.py::test_the_exact_model_overrules_the_pipeline_models_pick_on_a_small_gemm",)),
    Mutant("the exact chunking times only the pipeline model's first pick", "models/chunking.py",
           "EXACT_CANDIDATES = 4", "EXACT_CANDIDATES = 1",
           ("tests/models/test_chunking.py::test_exact_chunks_bring_one_small_gemm_near_the_bound",)),
    Mutant("a descriptor's first K chunk never accumulates into C as loaded", "models/cycles.py",
           "for acc, times in ((accumulate, first), (True, ck - first)):",
           "for acc, times in ((False, first), (True, ck - first)):",
           ("tests/models/test_cycles.py::test_chunked_sums_match_a_descriptors_jobs",)),
    Mutant("the exact chunking ranks only the halvings of the GEMM", "models/chunking.py",
           "fitting = [c for c in _multiples(config, shape)",
           "fitting = [c for c in _halvings(config, shape)",
           ("tests/models/test_chunking.py::test_exact_chunks_need_not_halve_the_gemm",)),
    Mutant("the stream tuner never runs (every GEMM too large for it)", "models/chunking.py",
           "STREAM_EXACT_MACS = 1 << 22", "STREAM_EXACT_MACS = 1 << 10",
           ("tests/models/test_chunking.py::test_stream_chunks_bring_a_queue_of_small_gemms_near_the_bound",)),
    Mutant("the expander pads with 0, not the input's zero point", "rtl/expander.py",
           "zero = Cat(*[Value.cast(g.a_zero)[: word.width]] * word.tile)",
           "zero = Const(0, word.bits)",
           ("tests/sim/test_conv.py::test_convolutions_are_bit_exact_and_the_model_exact",)),
    Mutant("the expander steps along a row by the vertical stride", "rtl/expander.py",
           "m.d.sync += [ox.eq(ox + 1), ix.eq(ix + g.sw)]",
           "m.d.sync += [ox.eq(ox + 1), ix.eq(ix + g.sh)]",
           ("tests/sim/test_conv.py::test_convolutions_are_bit_exact_and_the_model_exact",)),
    Mutant("the staging stops a row short of a dilated window's last", "rtl/expander.py",
           "m.d.comb += span.eq((g.kh - 1) * g.dh)", "m.d.comb += span.eq((g.kh - 1) * g.dh - 1)",
           ("tests/sim/test_conv.py::test_convolutions_are_bit_exact_and_the_model_exact",)),
    Mutant("the staging fetches a row more than the model counts", "rtl/expander.py",
           "p_past = img1 * hw + (hi + 1) * g.width", "p_past = img1 * hw + (hi + 2) * g.width",
           ("tests/sim/test_conv.py::test_convolutions_are_bit_exact_and_the_model_exact",)),
    Mutant("a plain A load's words go to the staging buffer while the expander stages",
           "rtl/device.py", "staging = fill.payload.stage  # the load's own bit",
           "staging = exp.staging  # the load's own bit",
           ("tests/sim/test_conv.py::test_convolutions_and_gemms_queued_together",)),
    Mutant("the implicit A pads with 0, not the zero point", "contract/conv.py",
           "np.where(src == -1, zero, 0)", "np.where(src == -1, 0, 0)",
           ("tests/golden/test_conv.py",)),
    Mutant("the implicit A strides columns by the vertical stride", "contract/conv.py",
           "iy, ix = oy * sh - top + ky * dh, ox * sw - left + kx * dw",
           "iy, ix = oy * sh - top + ky * dh, ox * sh - left + kx * dw",
           ("tests/golden/test_conv.py",)),
    Mutant("the model stages a dilated window's rows one short", "contract/conv.py",
           "hi = last[0] * conv.height + min(max(last[1] * sh - top + (kh - 1) * dh, 0),",
           "hi = last[0] * conv.height + min(max(last[1] * sh - top + (kh - 1) * dh - 1, 0),",
           ("tests/contract/test_conv.py", "tests/models/test_device_conv.py")),
    Mutant("a model imports the generator", "models/cycles.py",
           "from systolic.contract.config import ArrayConfig, Dataflow\n",
           "from systolic.contract.config import ArrayConfig, Dataflow\nimport systolic.rtl.pe\n",
           ("tests/test_architecture.py",)),
    Mutant("ONNX Conv ignores dilation", "workloads/onnx_import.py",
           "return (size + pads[0] + pads[1] - dilation * (kernel - 1) - 1) // stride + 1",
           "return (size + pads[0] + pads[1] - (kernel - 1) - 1) // stride + 1",
           ("tests/workloads/test_onnx_import.py",)),
    Mutant("ONNX grouped Conv counted as one group", "workloads/onnx_import.py",
           "cout // group, group,", "cout, 1,",
           ("tests/workloads/test_onnx_import.py",)),
    Mutant("pipeline model stages a convolution's rows one word short a slice",
           "models/pipeline.py", "staged = [(lambda s: s[3] - s[2])(",
           "staged = [(lambda s: s[3] - s[2] - 1)(", ("tests/models/test_pipeline.py",)),
    Mutant("lowering counts a depthwise slice's block-diagonal MACs as useful",
           "contract/lowering.py", "useful = (part.gemm[0], kk, n)",
           "useful = (part.gemm[0], kk * n, n)", ("tests/contract/test_lowering.py",)),
    Mutant("driver_workload runs each depthwise slice once per channel",
           "workloads/evaluate.py", "(piece, runs // per * times)", "(piece, runs * times)",
           ("tests/workloads/test_evaluate.py",)),
    Mutant("a depthwise slice's toggles counted on dense weights", "workloads/evaluate.py",
           "diagonal=tile if diagonal else 0)", "diagonal=0)",
           ("tests/workloads/test_evaluate.py::test_a_depthwise_slice_is_priced_and_simulated_on_block_diagonal_weights",)),
    Mutant("the toggle sample's block-diagonal weights one lane off", "models/toggles.py",
           "% diagonal == np.arange(sample[2])", "% diagonal == 1 + np.arange(sample[2])",
           ("tests/models/test_toggles.py::test_a_depthwise_slice_is_estimated_on_its_block_diagonal_weights",)),
    Mutant("a sweep's RTL point draws dense weights for a depthwise slice", "workloads/evaluate.py",
           "        if g.diagonal:  # a depthwise slice", "        if False:  # a depthwise slice",
           ("tests/workloads/test_evaluate.py::test_a_depthwise_slice_is_priced_and_simulated_on_block_diagonal_weights",)),
    Mutant("onnxruntime's requantization rounds half away from zero", "golden/requant.py",
           "y = np.rint(product).astype(np.int64)",
           "y = np.trunc(product + np.copysign(np.float32(0.5), product)).astype(np.int64)",
           ("tests/golden/test_requant.py::test_float_requantization_rounds_ties_to_even_as_onnxruntime_does",)),
    Mutant("onnxruntime's per-channel scale applied per tensor", "golden/requant.py",
           "product = (x * np.asarray(scale, dtype=np.float32))",
           "product = (x * np.asarray(scale, dtype=np.float32).flat[0])",
           ("tests/golden/test_requant.py",)),
    Mutant("an onnxruntime layer's input zero point dropped", "quant/ort_check.py",
           "layer.weights[o:o + 1], layer.x_zero,", "layer.weights[o:o + 1], 0,",
           ("tests/quant/test_ort_check.py",)),
    Mutant("an onnxruntime layer's per-channel scale read per tensor", "quant/ort_check.py",
           "scale = np.broadcast_to(scale, (out_channels,))",
           "scale = np.broadcast_to(scale.flat[0], (out_channels,))",
           ("tests/quant/test_ort_check.py",)),
    Mutant("the hardware's float requantization rounds ties up", "rtl/requant.py",
           "out.eq(kept + (guard & (sticky | kept[0])))", "out.eq(kept + guard)",
           ("tests/rtl/test_quantized.py::test_the_float_scaler_rounds_as_onnxruntime",)),
    Mutant("the hardware's int32 to float32 keeps 25 bits", "rtl/requant.py",
           "down.eq(Mux(lead > 23, lead - 23, 1))", "down.eq(Mux(lead > 24, lead - 24, 1))",
           ("tests/rtl/test_quantized.py::test_the_float_scaler_rounds_as_onnxruntime",)),
    Mutant("onnxruntime's QLinearAdd without its fused multiply-add", "golden/requant.py",
           "    total = product + c\n",
           "    total = product.astype(np.float32).astype(np.float64) + c\n",
           ("tests/golden/test_requant.py::test_a_fused_multiply_add_is_what_onnxruntime_does",)),
    Mutant("onnxruntime's global average pool forgets the input zero point", "golden/requant.py",
           "acc = x.reshape(n, c, h * w).sum(axis=-1) - int(x_zero) * h * w",
           "acc = x.reshape(n, c, h * w).sum(axis=-1)",
           ("tests/golden/test_requant.py::test_ort_global_average_pool_equals_onnxruntimes",)),
    Mutant("a bias quantized at the weight scale alone", "quant/calibrate.py",
           "scale = np.broadcast_to(inputs.scale * weights.scale, np.shape(bias))",
           "scale = np.broadcast_to(weights.scale, np.shape(bias))",
           ("tests/quant/test_ort_check.py::test_the_playbooks_bias_quantization_equals_onnxruntimes",)),
    Mutant("the device's float scale takes the accumulator before its bias", "rtl/requant.py",
           "float_in.eq(Mux(path.float_scale, biased, 0))",
           "float_in.eq(Mux(path.float_scale, x, 0))",
           ("tests/rtl/test_quantized.py::test_requantization_corners_bit_exact",)),
    Mutant("the device scales in fixed point when a descriptor asks for float", "rtl/requant.py",
           "    if not cfg.requant_float:\n        rounded = scale(",
           "    if True:\n        rounded = scale(",
           ("tests/rtl/test_quantized.py::test_requantization_corners_bit_exact",)),
    Mutant("the device runs a float scale without requantization", "rtl/device.py",
           "add(~d.requant & (d.bias | d.clamp | floats), Refusal.MODE)",
           "add(~d.requant & (d.bias | d.clamp), Refusal.MODE)",
           ("tests/rtl/test_quantized.py::test_fused_path_refusals_on_the_device",)),
    Mutant("an onnxruntime layer runs on the device without its input zero point",
           "quant/ort_device.py", "return Quantization(layer.x_zero, int(layer.w_zero[0]), params)",
           "return Quantization(0, int(layer.w_zero[0]), params)",
           ("tests/quant/test_ort_device.py",)),
    Mutant("the controller reads a word before it has landed", "rtl/controller.py",
           'return getattr(self, f"{buffer}_open") | (address < getattr(self, f"{buffer}_landed"))',
           'return getattr(self, f"{buffer}_open") | 1',
           ("tests/sim/test_trace.py::test_a_chunk_computes_while_its_operands_land",
            "tests/sim/test_device.py::test_device_gemms_bit_exact_in_every_order")),
    Mutant("a bank's landed count is not reset when its next load begins", "rtl/device.py",
           '_set_state(m, banks.landed["b"], w.bank_b, 0)', "None",
           ("tests/sim/test_trace.py::test_a_bank_loaded_again_is_read_only_once_its_new_words_land",)),
    Mutant("the device loads B first whatever the chunks", "rtl/device.py",
           'run.b_first = (words["b"] < words["a"]) & not_conv', "run.b_first = Const(1)",
           ("tests/sim/test_trace.py::test_a_chunk_computes_while_its_operands_land",)),
    Mutant("the device never splits a load around the other operand", "rtl/device.py",
           "run.split = (first < other) & not_conv", "run.split = Const(0)",
           ("tests/sim/test_device.py::test_device_gemms_bit_exact_in_every_order",)),
    Mutant("the rest of a split load starts again at its first tile row", "rtl/device.py",
           "m.d.sync += rest_addr.eq(addr[\"ab\"[y]] + getattr(d, f\"{'ab'[y]}_stride\"))",
           "m.d.sync += rest_addr.eq(addr[\"ab\"[y]])",
           ("tests/sim/test_device.py::test_device_gemms_bit_exact_in_every_order",)),
    Mutant("the read engine ends a load at its first part", "rtl/dma.py",
           "runs.lane, last_burst & ~cmd.more,", "runs.lane, last_burst,",
           ("tests/sim/test_device.py::test_device_gemms_bit_exact_in_every_order",)),
    Mutant("the driver's contract never splits a load", "contract/dma.py",
           "    return first < other", "    return False",
           ("tests/models/test_chunking.py::test_a_chunk_loads_first_what_its_first_tiles_need",)),
    Mutant("the routed report reads the placed timing (no extracted wires)", "synth/route.py",
           'wires = f"read_spef {spef.name}"', 'wires = ""',
           ("tests/synth/test_route.py::test_a_routed_mesh_is_timed_with_its_wires",)),
    Mutant("rc2dly's capacitances left in pF under its fF header", "synth/route.py",
           'text = text.replace("*C_UNIT 1 FF", "*C_UNIT 1 PF")', "text = text",
           ("tests/synth/test_route.py::test_rc2dly_spef_is_mended_to_the_standard",)),
    Mutant("a routed DEF's repeated coordinate (*) read as 0", "synth/route.py",
           'nx = x if token[0] == "*" else float(token[0])',
           'nx = 0.0 if token[0] == "*" else float(token[0])',
           ("tests/synth/test_route.py::test_a_hand_made_def_reads_as_counted",)),
    Mutant("the routed mesh without its clock tree (qflow's one clock net)", "synth/route.py",
           "return buffer_fanout(netlist, clocks, buffer=CLOCK_BUFFER, limit=CLOCK_FANOUT)",
           "return Buffered(netlist, {}, CLOCK_BUFFER)",
           ("tests/synth/test_route.py::test_a_routed_mesh_is_timed_with_its_wires",)),
    Mutant("the model leaves out the C buffer's registered read (busy one cycle short)",
           "models/cycles.py", "        cycles = last_result + 1 + DONE_DELAY",
           "        cycles = last_result + 1 + 1",
           ("tests/rtl/test_timing.py::test_cycles_follow_the_architecture",)),
    Mutant("the contract's read latency without the mesh's edge register", "contract/timing.py",
           "READ_LATENCY = 2", "READ_LATENCY = 1",
           ("tests/rtl/test_timing.py::test_cycles_follow_the_architecture",)),
    Mutant("an update one cycle behind another of the same word misses its sum", "rtl/banks.py",
           "m.d.sync += old_word.eq(Mux(same, new_word, Mux(reading.bank, olds[1], olds[0])))",
           "m.d.sync += old_word.eq(Mux(reading.bank, olds[1], olds[0]))",
           ("tests/rtl/test_gemms.py",)),
    Mutant("the controller lets the C bank go before the last update's write", "rtl/controller.py",
           "finishing = [Signal(name=f\"finishing_{i}\") for i in range(timing.DONE_DELAY)]",
           "finishing = [Signal(name=f\"finishing_{i}\") for i in range(1)]",
           ("tests/sim/test_device.py",)),
    Mutant("the exact model drains a C word a cycle sooner than the write engine",
           "models/device.py", "self.in_flight = [0] * DRAIN_LATENCY", "self.in_flight = [0]",
           ("tests/sim/test_device.py",)),
    Mutant("a burst runs past its boundary (the room to it from the full span)", "rtl/dma.py",
           "m.d.comb += [self.beat_log.eq(int(math.log2(beat))), room.eq(span - low)]",
           "m.d.comb += [self.beat_log.eq(int(math.log2(beat))), room.eq(span)]",
           ("tests/sim/test_axi_conformance.py", "tests/sim/test_device.py")),
    Mutant("fill cells counted as the design's", "synth/route.py",
           'if cell.startswith("FILL"):', "if False:",
           ("tests/synth/test_route.py::test_a_hand_made_def_reads_as_counted",)),
    Mutant("the pipeline model loads a split operand whole", "models/timeline.py",
           "split = order >= SPLIT_A and loads[0, j] and loads[1, j]", "split = False",
           ("tests/models/test_pipeline.py::test_one_chunk_and_memory_bound_extremes",)),
    Mutant("the driver's contract loads the larger chunk first", "contract/dma.py",
           'return need["b"] < need["a"]', 'return need["b"] > need["a"]',
           ("tests/sim/test_trace.py::test_a_chunk_computes_while_its_operands_land",)),
    Mutant("the exact model's chunk ignores the words still to land", "models/device.py",
           "if landed and landed[-1] > t0:", "if False:",
           ("tests/sim/test_device.py::test_device_gemms_bit_exact_in_every_order",)),
    Mutant("a convolution's A is computed on while the expander writes it", "rtl/device.py",
           "early_a = ~d.conv if cfg.stage_depth else Const(1)", "early_a = Const(1)",
           ("tests/sim/test_conv.py::test_convolutions_are_bit_exact_and_the_model_exact",)),
    Mutant("partial sums come back while a store's AW waits for the slave", "rtl/dma.py",
           "self.unanswered.eq(req.outstanding.any() | self.mem.aw.valid)",
           "self.unanswered.eq(req.outstanding.any())",
           ("tests/sim/test_axi_conformance.py::"
            "test_partial_sums_wait_for_a_store_whose_aw_the_slave_holds",)),
    Mutant("the staging buffer's reads go unpriced", "models/energy.py",
           'expanded * macros["staging"].read_pj', "0.0", ("tests/models/test_energy.py",)),
    Mutant("OS/IS expander gathers into a block only once it is empty (a cycle lost a block)",
           "rtl/expander.py", "return ~gathering_full | (freeing & (emit == gather))",
           "return ~gathering_full", ("tests/sim/test_conv.py::"
                                      "test_convolutions_are_bit_exact_and_the_model_exact",)),
    Mutant("OS/IS expander steps a block's words by a tile instead of the chunk's K",
           "rtl/expander.py", "m.d.sync += block.eq(block + ch.klen)",
           "m.d.sync += block.eq(block + tile)",
           ("tests/sim/test_conv.py::test_convolutions_are_bit_exact_and_the_model_exact",)),
    Mutant("the model's OS/IS expansion forgets the first block's gathering",
           "contract/timing.py", "(min(tile, pixels) if transposed else 0)", "0",
           ("tests/sim/test_conv.py::test_convolutions_are_bit_exact_and_the_model_exact",)),
    Mutant("ONNX attention MatMul loses its head count", "workloads/onnx_import.py",
           "return Gemm(node.name, m, k, n, math.prod(lead), weights=w is not None), w",
           "return Gemm(node.name, m, k, n, 1, weights=w is not None), w",
           ("tests/workloads/test_onnx_import.py",)),
    Mutant("MSE calibration searches only half the grid", "quant/calibrate.py",
           "MSE_GRID = np.linspace(0.2, 1.0, 81)", "MSE_GRID = np.linspace(0.6, 1.0, 41)",
           ("tests/quant/test_calibrate.py",)),
    Mutant("entropy calibration drops the clipped outliers", "quant/calibrate.py",
           "p[-1] += hist[i:].sum()", "p[-1] += 0",
           ("tests/quant/test_calibrate.py",)),
    Mutant("integer im2col pads with 0, not the zero point", "quant/deployment.py",
           "return im2col(h, kh, kw, layer.stride, layer.pad, pad_value)",
           "return im2col(h, kh, kw, layer.stride, layer.pad, 0)",
           ("tests/quant/test_deployment.py",)),
    Mutant("the straight-through estimator passes clipped gradients", "quant/deployment.py",
           "return _in_range(value, self._scale(i, kind, value)).astype(np.float64)",
           "return np.ones_like(value)",
           ("tests/quant/test_nets.py",)),
    Mutant("the rounding check explains any one-step difference", "quant/deploy_checks.py",
           "explained += int((diff & (np.abs(got - fake) == 1) & near_tie).sum())",
           "explained += int((diff & (np.abs(got - fake) <= 2)).sum())",
           ("tests/quant/test_deployment.py",)),
    Mutant("who-wins cells pick the runner-up", "sweeps/report/answers.py",
           "(win, best), rest = ranked[0], ranked[1:]",
           "(win, best), rest = ranked[-1], ranked[:-1]",
           ("tests/sweeps/test_report.py",)),
    Mutant("coinciding series are never merged", "sweeps/report/interactive.py",
           "key = (tuple(xs), tuple(round(y, 12) if isinstance(y, float) else y for y in ys))",
           "key = (label, tuple(xs))", ("tests/sweeps/test_report.py",)),
    Mutant("the report's tables sort backwards", "sweeps/report/templates/report.html.j2",
           "return (x < y ? -1 : x > y ? 1 : 0) * (up ? 1 : -1);",
           "return (x < y ? -1 : x > y ? 1 : 0) * (up ? -1 : 1);",
           ("tests/sweeps/test_report_browser.py",)),
    Mutant("the browser test misses uncaught exceptions", "sweeps/report/browser.py",
           'elif e["method"] == "Runtime.exceptionThrown":', 'elif e["method"] == "none":',
           ("tests/sweeps/test_report_browser.py::test_console_errors_are_caught",)),
)  # fmt: skip


def _scratch(root: Path) -> Path:
    """A copy of the repository's tracked files (as they are in the working tree) in ``root``,
    whose ``systolic/`` folder links the subpackages in, so that ``systolic`` imports from it."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True,
                           check=True).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, files):
        source = REPO / name
        if source.is_file():
            target = root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    for sub in subpackages():
        (root / "systolic" / sub).symlink_to(root / sub, target_is_directory=True)
    return root


def _pytest(root: Path, tests: tuple[str, ...], env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
        cwd=root, env=env, capture_output=True, text=True,
    )  # fmt: skip


def _why(run: subprocess.CompletedProcess) -> str:
    """The first assertion or error line of a failed run: what killed the mutant."""
    for line in run.stdout.splitlines():
        if line.startswith("E   "):
            return line[4:].strip()[:150]
    return run.stdout.strip().splitlines()[-1][:150] if run.stdout.strip() else ""


def run_mutants(mutants=MUTANTS, *, keep: bool = False, why: bool = False) -> int:
    """Run every mutant; 0 when each was killed (its tests failed: pytest's exit status 1), 1
    when one survived or its tests could not run (any other status), 2 when the unmutated
    selections fail."""
    start = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="systolic-mutants-"))
    try:
        return _run(mutants, root, why, start)
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)


def _run(mutants, root: Path, why: bool, start: float) -> int:
    _scratch(root)
    env = {
        **os.environ,
        "PYTHONPATH": str(root),
        "SYSTOLIC_BUILD_DIR": os.environ.get("SYSTOLIC_BUILD_DIR", str(REPO / "build")),
    }
    env.pop("SYSTOLIC_SEED", None)  # fmt: skip
    for mutant in mutants:
        if (root / mutant.path).read_text().count(mutant.old) != 1:
            raise ValueError(f"mutant {mutant.name!r}: {mutant.path} must contain its text once")
    selection = tuple(dict.fromkeys(t for m in mutants for t in m.tests))
    print(f"scratch copy: {root}; the selections without mutants first ...", flush=True)
    base = _pytest(root, selection, env)
    if base.returncode != 0:
        print(base.stdout[-3000:] + base.stderr[-2000:])
        print("the unmutated selections fail: fix them before judging mutants")
        return 2
    print(f"{'mutant':66} {'result':>9} {'seconds':>8}")
    killed = 0
    for mutant in mutants:
        path = root / mutant.path
        text = path.read_text()
        path.write_text(text.replace(mutant.old, mutant.new))
        t0 = time.monotonic()
        try:
            run = _pytest(root, mutant.tests, env)
        finally:
            path.write_text(text)
        result = {0: "SURVIVED", 1: "killed"}.get(run.returncode, f"error {run.returncode}")
        killed += run.returncode == 1
        print(f"{mutant.name:66} {result:>9} {time.monotonic() - t0:>8.1f}", flush=True)
        if run.returncode == 1 and why:
            print(f"    {_why(run)}")
        elif run.returncode not in (0, 1):  # the tests did not run: not a kill
            print(run.stdout[-2000:] + run.stderr[-2000:])
    total = time.monotonic() - start
    print(f"{killed} of {len(mutants)} mutants killed in {total:.0f} s")
    return 0 if killed == len(mutants) else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m systolic.experiments.mutants",
                                     description=__doc__.splitlines()[0])  # fmt: skip
    parser.add_argument("-k", metavar="TEXT", action="append",
                        help="only mutants whose name contains TEXT (repeatable)")  # fmt: skip
    parser.add_argument("--keep", action="store_true", help="keep the scratch copy")
    parser.add_argument("--why", action="store_true", help="print what failed for each mutant")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTANTS if not args.k or any(k in m.name for k in args.k)]
    if not chosen:  # an empty selection would run the whole suite as its baseline
        print(f"no mutant's name contains {' or '.join(map(repr, args.k))}", file=sys.stderr)
        return 2
    return run_mutants(chosen, keep=args.keep, why=args.why)


if __name__ == "__main__":
    sys.exit(main())
