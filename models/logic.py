"""The events the device's logic spends energy on, each priced by one calibrated term.

The energy model prices logic as a sum of ``price x count`` over :data:`TERMS`; the prices are
fitted to gate-level power (``verify/logic_fit.py``, OpenSTA on the synthesized netlist, 0.18
um), and the counts come from one place, :func:`logic_events`, for the fit and for every
estimate alike. The counts follow from a GEMM's bit flips per toggle group (measured by the
RTL's activity build or predicted by :mod:`models.toggles`), its performance counters and the
configuration's structure:

- every toggle group's bit flips (multiplier operands, accumulator, pipeline, stationary and
  edge registers, buffer ports, control registers), each group its own price, and the
  accumulator's flips once more for the adder logic behind them, the edge registers' for the
  muxes they feed, the multiplier's in OS (both operands move), and the accumulator's in
  the PEs that add a live partial sum once more (in WS and IS the first row adds its product
  to zero: at the gate level its PEs cost about 40% of the others');
- with bf16 operands, the multiplier's and the accumulator's flips once more, for what float
  arithmetic adds (exponents, alignment, normalization), fitted to the bf16 points apart;
- the multiply-accumulates the PEs do, padding included (PEs x streamed cycles): the adder's
  and the multiplier's work per operation, whatever the bits;
- the flips of the PEs' flags (valid, bank, last), which steer each PE's muxes: many more
  gates switch than for a bit of data (they follow from the plan:
  :func:`models.toggles.flag_flips`);
- per cycle: each mesh flip-flop bit's clock pin and internal state; each PE's muxes and
  enables; each bit of the buffers' words (their ports' registers and muxes); and the rest of
  the device (DMA engines, descriptor queue, control registers, walkers), which clocks every
  cycle with or without work.
"""

from __future__ import annotations

from systolic.contract.activity import COMPONENTS, datapath_flop_bits
from systolic.contract.config import ArrayConfig, Dataflow
from systolic.contract.layouts import layouts

__all__ = ["FITTED_WIDTH", "TERMS", "logic_events", "multiplier_scale"]

#: Each priced term: (the energy component it adds to, what it counts).
TERMS: dict[str, tuple[str, str]] = {
    "multiplier": (
        "multiplier",
        "multiplier operand bit flips, each times the partial products "
        "it reaches over an int8 multiplier's (multiplier_scale)",
    ),
    "partial_product": (
        "multiplier",
        "partial-product bit flips (a_i b_j of each multiply: a flip of one operand's bit "
        "against a zero in the other moves nothing), WS and IS: one operand moves; over "
        "multiplier_scale (a rule between two measured ends, docs/energy.md)",
    ),
    "partial_product_both": (
        "multiplier",
        "partial-product bit flips in OS, where both operands move and the multiplier's adder "
        "tree sees both; over multiplier_scale",
    ),
    "accumulator": ("accumulator", "accumulator register bit flips (the adder's output)"),
    "adder": ("accumulator", "accumulator bit flips, for the adder's logic that makes them"),
    "pipeline": ("pipeline", "bit flips of the registers passing operands between PEs"),
    "stationary": ("stationary", "bit flips of the stationary operand registers"),
    "stationary_mux": (
        "stationary",
        "bit flips of the stationary operand registers, for the preload's muxes they pass "
        "(each bank's load enable, the shift's bank select)",
    ),
    "edge": ("edge", "bit flips of the skew and de-skew registers"),
    "edge_mux": ("edge", "bit flips of the skew and de-skew registers, for the muxes they feed"),
    "multiplier_both": (
        "multiplier",
        "multiplier operand bit flips while the other operand moves "
        "too (OS, where both stream; in WS and IS one stays)",
    ),
    "buffer": ("buffer", "bit flips of the buffers' port registers"),
    "control": ("control", "bit flips of the controller's registers and counters"),
    "mac": ("accumulator", "multiply-accumulates, padding included: PEs x streamed cycles"),
    "psum_add": (
        "accumulator",
        "accumulator bit flips of the PEs that add a live partial sum: "
        "every PE in OS, all but the first row in WS and IS (which adds to zero)",
    ),
    "multiplier_fp": (
        "multiplier",
        "bf16 multiplier operand bit flips, for the exponent adder "
        "and the normalization a float multiply adds",
    ),
    "adder_fp": (
        "accumulator",
        "fp32 accumulator bit flips, for the alignment and normalization shifts a float add adds",
    ),
    "flag": ("pipeline", "flips of the PEs' valid, bank and last flags, which steer their muxes"),
    "pe_cycle_fp": ("clock", "bf16 PEs x cycles: the float datapath's logic that switches idle"),
    "mesh_clock": ("clock", "mesh flip-flop bits x cycles"),
    "clock_tree": ("clock", "mesh flip-flop bits x cycles: the buffers of the clock net to them"),
    "pe_cycle": ("clock", "PEs x cycles: operand muxes and enables"),
    "buffer_cycle": ("device", "bits of the A, B and C buffer words x cycles"),
    "device_cycle": ("device", "cycles: the DMA, queue and control registers, clocked always"),
}
#: Each toggle group's term is its own name.
assert set(COMPONENTS) <= set(TERMS)


#: The operand width the multiplier's prices are fitted at (int8 devices).
FITTED_WIDTH = 8


def multiplier_scale(config: ArrayConfig) -> float:
    """What an operand bit flip drives in this configuration's multiplier, over an int8
    multiplier's: a flip of one operand's bit reaches a row of the array of partial products as
    wide as the other operand, so on average ``2 wa wb / (wa + wb)`` cells (``w`` for equal
    widths), over 8. bf16 multiplies 8-bit significands."""
    if config.number == "bf16":
        return 1.0
    wa, wb = config.mesh_widths
    return 2 * wa * wb / (wa + wb) / FITTED_WIDTH


def logic_events(config: ArrayConfig, counters: dict[str, int],
                 toggles: dict[tuple[str, str], int], *, flags: int = 0,
                 ) -> list[tuple[str, str, float]]:  # fmt: skip
    """``(term, traffic class, count)`` for each event of a GEMM: ``toggles`` per ``(component,
    traffic)``, the device's ``counters``, the PEs' ``flags`` flips
    (:func:`models.toggles.flag_flips`); the clock pays for the counters' ``cycles``. The
    traffic class is the toggle group's, ``compute`` for the operations and
    ``overhead`` for what the clock and the flags spend."""
    cycles = counters["cycles"]
    chained = config.rows if config.dataflow is Dataflow.OS else config.rows - 1
    events: list[tuple[str, str, float]] = []
    for (component, klass), flips in sorted(toggles.items()):
        if component not in COMPONENTS:
            raise ValueError(f"unknown activity component {component!r}")
        if (component, klass) == ("multiplier", "products"):
            both = config.dataflow is Dataflow.OS
            flips /= multiplier_scale(config)
            events.append(("partial_product_both" if both else "partial_product", "compute", flips))
            continue
        if component == "multiplier":
            klass = "compute"
            flips *= multiplier_scale(config)
        elif component == "control" or klass == "control":
            klass = "overhead"
        events.append((component, klass, flips))
        if component == "edge":
            events.append(("edge_mux", klass, flips))
        if component == "stationary":
            events.append(("stationary_mux", klass, flips))
        if component == "multiplier" and config.dataflow is Dataflow.OS:
            events.append(("multiplier_both", klass, flips))
        if component == "accumulator":
            events.append(("adder", "compute", flips))
            events.append(("psum_add", "compute", flips * chained / config.rows))
        if config.number == "bf16" and component in ("multiplier", "accumulator"):
            events.append(({"multiplier": "multiplier_fp", "accumulator": "adder_fp"}[component],
                           "compute", flips))  # fmt: skip
    mesh_bits = sum(datapath_flop_bits(config).values())
    words = sum(word.bits for name, word in layouts(config).items() if name in "abc")
    events += [
        ("mac", "compute", config.pes * counters["stream_cycles"]),
        ("flag", "overhead", flags),
        ("mesh_clock", "overhead", mesh_bits * cycles),
        ("clock_tree", "overhead", mesh_bits * cycles),
        ("pe_cycle", "overhead", config.pes * cycles),
        ("pe_cycle_fp", "overhead", config.pes * cycles if config.number == "bf16" else 0),
        ("buffer_cycle", "overhead", words * cycles),
        ("device_cycle", "overhead", cycles),
    ]
    return events
