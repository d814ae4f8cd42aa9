"""Gate-level energy of one GEMM beside the toggle model's, component by component.

One simulated run of the activity build gives both: its per-net activity goes into OpenSTA's
power of the synthesized netlist (synth/power.py), its toggle groups into the energy model
(models/energy.py). Gate-level figures are measured at 0.18 um and shown scaled to the model's
45 nm with Stillmaker and Baas' energy factor (models/technology.py), labelled as estimates.

The model prices the mesh's datapath (multipliers, accumulators, pipeline, stationary and edge
registers, and their clock), the buffers' port registers and the controller; it prices the
memory side (DMA, descriptor queue, control registers) by the words it moves, and the SRAMs per
access. So the rows that compare are :data:`PAIRS`; the gate-level figures of the rest are
shown alone.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np
from systolic.contract.config import ArrayConfig, Dataflow
from systolic.models.energy import EnergyReport, figures_energy
from systolic.models.technology import CELL_LIBRARY_NM, COEFFICIENTS_NM, factor
from systolic.sim.simulate import SimResult, run_gemms
from systolic.synth.flow import synthesize
from systolic.synth.power import PowerReport, gate_power

__all__ = ["PAIRS", "GateEnergy", "gate_energy"]

#: Gate-level components (synth/flow.py) against the model's (models/energy.py) that price the
#: same hardware. The model's clock term is the mesh's registers' clock.
PAIRS = {
    "mesh": (("pe_array", "edge"),
             ("multiplier", "accumulator", "pipeline", "stationary", "edge", "clock")),
    "buffers": (("buffers",), ("buffer",)),
    "controller": (("controller",), ("control",)),
}  # fmt: skip
#: The node the model's coefficients are for, and the flow's.
MODEL_NM, FLOW_NM = COEFFICIENTS_NM, CELL_LIBRARY_NM


@dataclass
class GateEnergy:
    """One GEMM's energy, gate level (OpenSTA, 0.18 um) and model (45 nm), in pJ per MAC."""

    config: ArrayConfig
    shape: tuple[int, int, int]
    power: PowerReport
    model: EnergyReport
    result: SimResult

    @property
    def macs(self) -> int:
        m, k, n = self.shape
        return m * k * n

    @property
    def window(self) -> int:
        """Cycles OpenSTA's average power is taken over: the activity's window."""
        return self.result.activity_cycles

    def gate_pj_per_mac(self, components: tuple[str, ...] | None = None, nm: int = FLOW_NM,
                        ) -> float:  # fmt: skip
        """Gate-level energy per MAC of ``components`` (all by default), at node ``nm``
        (scaled from the measured 0.18 um when another)."""
        names = components or tuple(self.power.components)
        pj = sum(self.power.energy_pj(self.window, c) for c in names if c in self.power.components)
        return pj / self.macs * factor("energy", FLOW_NM, nm)

    def model_pj_per_mac(self, components: tuple[str, ...]) -> float:
        return sum(self.model.components[c] for c in components) / self.macs

    def rows(self) -> list[dict]:
        """Per compared row: gate-level pJ/MAC at 0.18 um and scaled to 45 nm, the model's."""
        out = []
        for row, (gate, model) in PAIRS.items():
            scaled = self.gate_pj_per_mac(gate, MODEL_NM)
            modelled = self.model_pj_per_mac(model)
            out.append({"row": row, "gate_components": list(gate),
                        "model_components": list(model),
                        "gate_pj_per_mac_180nm": self.gate_pj_per_mac(gate),
                        "gate_pj_per_mac_45nm": scaled, "model_pj_per_mac_45nm": modelled,
                        "ratio": scaled / modelled if modelled else float("inf")})  # fmt: skip
        return out

    def to_dict(self) -> dict:
        return {"config": self.config.to_dict(), "shape": list(self.shape),
                "window_cycles": self.window, "clock_ns": self.power.clock_ns,
                "energy_factor_180_to_45nm": factor("energy", FLOW_NM, MODEL_NM),
                "gate_pj_per_mac_180nm": self.gate_pj_per_mac(),
                "rows": self.rows(), "power": self.power.to_dict()}  # fmt: skip


def gate_energy(config: ArrayConfig, operands: list[tuple[np.ndarray, np.ndarray]], *,
                clock_ns: float = 10.0) -> list[GateEnergy]:  # fmt: skip
    """Simulate each ``(A, B)`` on the activity build of ``config``'s device (one simulator
    run), and price each run at gate level (synthesized at ``clock_ns``) and with the model."""
    report = synthesize(config, clock_ns=clock_ns)
    results = run_gemms(config, operands, activity=True, per_net=True)
    out = []
    for (a, b), r in zip(operands, results, strict=True):
        power = gate_power(report, r.net_activity(), clock_ns)
        model = figures_energy(r, r.toggles, source="toggles")
        out.append(GateEnergy(config, (a.shape[0], a.shape[1], b.shape[1]), power, model, r))
    return out


def main(argv: list[str] | None = None) -> int:
    """``make bench-power``: gate level against the toggle model, per dataflow and array size,
    on a random int8 GEMM of 8 tiles a side."""
    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("--sizes", type=int, nargs="+", default=[2, 4, 8])
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    print(f"{'config':<18} {'cells':>8} {'mm^2 cells':>10} {'mm^2 SRAM':>9} {'Fmax MHz':>8} "
          f"{'gate pJ/MAC 0.18um':>18} {'mesh 45nm gate/model':>22}")  # fmt: skip
    for n in args.sizes:
        for dataflow in Dataflow:
            config = ArrayConfig(dataflow, n, n)
            rng = np.random.default_rng(args.seed)
            a = rng.integers(-128, 128, (8 * n, 8 * n))
            b = rng.integers(-128, 128, (8 * n, 8 * n))
            (g,) = gate_energy(config, [(a, b)])
            s = synthesize(config)
            mesh = next(r for r in g.rows() if r["row"] == "mesh")
            print(f"{config.name:<18} {s.cells:>8} {s.area_um2 / 1e6:>10.3f} "
                  f"{s.sram_area_um2 / 1e6:>9.3f} {s.fmax_mhz:>8.1f} "
                  f"{g.gate_pj_per_mac():>18.2f} "
                  f"{mesh['gate_pj_per_mac_45nm']:>9.3f} / {mesh['model_pj_per_mac_45nm']:.3f}",
                  flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
