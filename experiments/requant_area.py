"""One output lane of each requantization arithmetic, synthesized: the fixed-point one the device
has (TensorFlow Lite's, :func:`rtl.requant.scale`) against onnxruntime's float one
(:func:`rtl.requant.scale_float`, issue 35), each with its zero point and clamp to int8.

Yosys's generic ``synth`` and ABC mapped to the OSU 0.18 um cells, no timing constraint and no
fan-out buffering (the project's flow, synth/flow.py, times whole designs; a lane alone is a
comparison of logic, not a design). Prints cells and area of each, and the energy of one output:
OpenSTA's power of the netlist at 100 MHz, each accumulator bit switching as it does from one
output to the next of a channel of an int8 layer (u8 activations less their zero point, weights
within +-64, K = 256, an int32 bias: the per-bit toggle rates and duty cycles of that stream),
the scale, zero point and shift constant (a channel's); zero-delay propagation, so glitches are
left out, as in synth/power.py. Figures only.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

import numpy as np
from amaranth import Elaboratable, Module, Signal, signed
from amaranth.back import verilog
from systolic.golden.requant import quantize_multiplier
from systolic.rtl.requant import clamp, scale, scale_float
from systolic.synth import tools


class Lane(Elaboratable):
    """One output: ``x`` scaled by the fixed-point ``(multiplier, shift)`` or by the float32
    ``bits``, plus the zero point, clamped to int8."""

    def __init__(self, kind: str):
        self.kind = kind
        self.x, self.bits, self.shift = Signal(signed(32)), Signal(32), Signal(signed(6))
        self.zero, self.out = Signal(signed(9)), Signal(signed(9))

    def elaborate(self, platform):
        m = Module()
        if self.kind == "float":
            y = scale_float(m, self.x, self.bits, "f")
        else:
            y = scale(m, self.x, self.bits[:31], self.shift, "s")
        m.d.comb += self.out.eq(clamp(m, y + self.zero, -128, 127, "c"))
        return m


_SCRIPT = """\
read_verilog lane.v
synth -top lane
abc -liberty {lib}
opt_clean -purge
tee -q -o stat.json stat -json -liberty {lib}
write_verilog -noattr -noexpr lane_syn.v
"""

#: The clock the lane's inputs change with: one output a cycle.
PERIOD_NS = 10.0
_STA = """\
read_liberty {lib}
read_verilog lane_syn.v
link_design lane
create_clock -name clk -period {period}
set_input_delay 0 -clock clk [all_inputs]
source activity.tcl
report_power -digits 6
exit
"""
_TOTAL = re.compile(r"^Total\s+([-\d.e+]+)\s+([-\d.e+]+)\s+([-\d.e+]+)\s+([-\d.e+]+)", re.M)


def lane_inputs(seed: int = 0, rows: int = 4096, k: int = 256) -> dict:
    """A channel's stream of biased accumulators (``x``) from an int8 layer, and its constant
    parameters: a float32 scale mapping about four standard deviations onto int8 (``bits``),
    the same as a Q31 multiplier and shift, a zero point."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, (rows, k)) - 128
    b = rng.integers(-64, 65, k)
    x = a @ b + int(rng.integers(-2000, 2000))
    real = 127 / (4 * x.std())
    multiplier, shift = quantize_multiplier(real)
    bits = int(np.float32(real).view(np.uint32))
    return {"x": x, "bits": bits, "multiplier": multiplier, "shift": shift, "zero": 3}


def _activity(port: str, width: int, values) -> list[str]:
    """``set_power_activity`` of each bit of ``port``: its flips per output and its duty."""
    v = np.asarray(values, dtype=np.int64)
    if v.ndim == 0:
        v = v[None]
    lines = []
    for i in range(width):
        bit = (v >> i) & 1
        rate = float(np.mean(bit[1:] != bit[:-1])) if len(bit) > 1 else 0.0
        duty = float(bit.mean())
        duty = min(max(duty, rate / 2), 1 - rate / 2)  # what the flips allow (OpenSTA's NaN)
        lines.append(f"set_power_activity -input_ports {{{port}[{i}]}} -activity {rate:.6f} "
                     f"-duty {duty:.6f}\n")  # fmt: skip
    return lines


def lane_energy(kind: str, folder: Path, inputs: dict) -> dict:
    """The synthesized lane's (in ``folder``) energy per output, pJ: dynamic and leakage."""
    bits = inputs["bits"] if kind == "float" else inputs["multiplier"]
    lines = (_activity("x", 32, inputs["x"]) + _activity("bits", 32, bits)
             + _activity("shift", 6, inputs["shift"] if kind == "fixed" else 0)
             + _activity("zero", 9, inputs["zero"]))  # fmt: skip
    (folder / "activity.tcl").write_text("".join(lines))
    (folder / "power.tcl").write_text(_STA.format(lib=tools.liberty().name, period=PERIOD_NS))
    out = tools.run([tools.sta(), "-no_init", "-no_splash", "-exit", "power.tcl"], folder,
                    folder / "sta.log", f"OpenSTA power of the {kind} lane")  # fmt: skip
    total = _TOTAL.search(out)
    if total is None:
        raise RuntimeError(f"no Total row in OpenSTA's power report ({folder / 'sta.log'})")
    internal, switching, leakage, _ = (float(v) for v in total.groups())
    period = PERIOD_NS * 1e-9
    return {
        "dynamic_pj": (internal + switching) * period * 1e12,
        "leakage_pj": leakage * period * 1e12,
    }


def synthesize_lane(kind: str, folder: Path) -> dict:
    """``{"cells": ..., "area_um2": ...}`` of one lane of ``kind`` (``"fixed"`` or
    ``"float"``), synthesized in ``folder``."""
    lane = Lane(kind)
    ports = [lane.x, lane.bits, lane.shift, lane.zero, lane.out]
    (folder / "lane.v").write_text(verilog.convert(lane, name="lane", ports=ports))
    lib = tools.liberty()
    (folder / lib.name).write_bytes(lib.read_bytes())  # the Yosys sandbox sees its folder only
    (folder / "lane.ys").write_text(_SCRIPT.format(lib=lib.name))
    tools.run([tools.yosys(), "-q", "-l", "yosys.log", "lane.ys"], folder, folder / "yosys.out",
              f"Yosys synthesis of the {kind} lane")  # fmt: skip
    stat = json.loads((folder / "stat.json").read_text())
    design = stat["design"]
    return {"cells": design["num_cells"], "area_um2": design["area"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m systolic.experiments.requant_area",
                                     description=__doc__.splitlines()[0])  # fmt: skip
    parser.parse_args(argv)
    inputs = lane_inputs()
    print(f"{'requantization':<32} {'cells':>7} {'area mm^2':>10} {'pJ/output':>10} "
          f"{'leakage':>8}")  # fmt: skip
    for kind, what in (("fixed", "fixed point (TFLite, 32x31 mul)"),
                       ("float", "float32 (onnxruntime, 24x24)")):  # fmt: skip
        with tempfile.TemporaryDirectory() as scratch:
            figures = synthesize_lane(kind, Path(scratch))
            energy = lane_energy(kind, Path(scratch), inputs)
        print(
            f"{what:<32} {figures['cells']:>7} {figures['area_um2'] / 1e6:>10.4f} "
            f"{energy['dynamic_pj']:>10.3f} {energy['leakage_pj']:>8.4f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
