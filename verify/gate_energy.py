"""Gate-level energy of one GEMM beside the energy model's, component by component.

One simulated run of the activity build gives both: its per-net activity goes into OpenSTA's
power of the synthesized netlist (synth/power.py), its toggle groups and counters into the
energy model (models/energy.py), priced over the same busy window. The model's logic prices are
fitted to such gate-level points (verify/logic_fit.py), so the two compare at 0.18 um directly;
the gate-level figures are also shown scaled to the model's node with Stillmaker and Baas'
energy factor (models/technology.py), labelled as estimates.

The rows that compare are :data:`ROWS`: the mesh, and the device's whole logic. SRAM macros
and DRAM are priced per access by the memory models on both sides, so they are left out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from systolic.contract.config import ArrayConfig
from systolic.models.energy import UNCERTAIN, EnergyReport, energy, load_coefficients
from systolic.models.technology import CELL_LIBRARY_NM, COEFFICIENTS_NM, factor
from systolic.sim.simulate import SimResult, run_gemms
from systolic.synth.flow import synthesize
from systolic.synth.power import PowerReport, gate_power

__all__ = ["ROWS", "GateEnergy", "gate_energy"]

#: Gate-level components (synth/flow.py) against the model's (models/energy.py) that price the
#: same hardware: the mesh, and all the logic (leakage, SRAM and DRAM aside).
ROWS = {
    "mesh": (("pe_array", "edge"),
             ("multiplier", "accumulator", "pipeline", "stationary", "edge", "clock")),
    "logic": (("pe_array", "edge", "buffers", "controller", "dma", "control"),
              tuple(c for c in UNCERTAIN["logic"] if c != "leakage")),
}  # fmt: skip
#: The node the model's coefficients are for, and the flow's.
MODEL_NM, FLOW_NM = COEFFICIENTS_NM, CELL_LIBRARY_NM


@dataclass
class GateEnergy:
    """One GEMM's energy, gate level (OpenSTA, 0.18 um) and model, in pJ per MAC."""

    config: ArrayConfig
    shape: tuple[int, int, int]
    power: PowerReport
    model: EnergyReport  # over the gate level's window, at the model's node
    node_factor: float  # the model's node over the logic's calibration node
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

    def model_pj_per_mac(self, components: tuple[str, ...], nm: int = MODEL_NM) -> float:
        """The model's energy per MAC of ``components`` at ``nm`` (the model's node or 0.18 um,
        where its logic prices were fitted)."""
        pj = sum(self.model.components[c] for c in components) / self.macs
        return pj if nm == MODEL_NM else pj / self.node_factor

    def rows(self) -> list[dict]:
        """Per compared row: gate level and model at 0.18 um, the gate level scaled to the
        model's node, and model over gate level."""
        out = []
        for row, (gate, model) in ROWS.items():
            measured = self.gate_pj_per_mac(gate)
            modelled = self.model_pj_per_mac(model, FLOW_NM)
            out.append({"row": row, "gate_components": list(gate),
                        "model_components": list(model),
                        "gate_pj_per_mac_180nm": measured, "model_pj_per_mac_180nm": modelled,
                        "gate_pj_per_mac_45nm": self.gate_pj_per_mac(gate, MODEL_NM),
                        "model_pj_per_mac_45nm": self.model_pj_per_mac(model),
                        "ratio": modelled / measured if measured else float("inf")})  # fmt: skip
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
    run), and price each run at gate level (synthesized at ``clock_ns``) and with the model,
    both over the array's busy window."""
    report = synthesize(config, clock_ns=clock_ns)
    results = run_gemms(config, operands, activity=True, per_net=True)
    co = load_coefficients()
    out = []
    for (a, b), r in zip(operands, results, strict=True):
        power = gate_power(report, r.net_activity(), clock_ns)
        window = dict(r.counters) | {"cycles": r.activity_cycles}
        model = energy(config, window, r.offchip_words, r.toggles, r.macs, co, source="toggles")
        out.append(GateEnergy(config, (a.shape[0], a.shape[1], b.shape[1]), power, model,
                              co.node_factor, r))  # fmt: skip
    return out
