"""One output lane of each requantization arithmetic, synthesized: the fixed-point one the device
has (TensorFlow Lite's, :func:`rtl.requant.scale`) against onnxruntime's float one
(:func:`rtl.requant.scale_float`, issue 35), each with its zero point and clamp to int8.

Yosys's generic ``synth`` and ABC mapped to the OSU 0.18 um cells, no timing constraint and no
fan-out buffering (the project's flow, synth/flow.py, times whole designs; a lane alone is a
comparison of logic, not a design). Prints cells and area of each. Figures only.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from amaranth import Elaboratable, Module, Signal, signed
from amaranth.back import verilog
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
"""


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
    print(f"{'requantization':<32} {'cells':>7} {'area mm^2':>10}")
    for kind, what in (("fixed", "fixed point (TFLite, 32x31 mul)"),
                       ("float", "float32 (onnxruntime, 24x24)")):  # fmt: skip
        with tempfile.TemporaryDirectory() as scratch:
            figures = synthesize_lane(kind, Path(scratch))
        print(f"{what:<32} {figures['cells']:>7} {figures['area_um2'] / 1e6:>10.4f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
