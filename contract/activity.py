"""What switching activity is counted: the component and traffic classes, and the mesh's register
bits per component.

Components: ``multiplier`` (operand bits), ``accumulator`` (``psum_out``/``acc_reg``: the adder's
output register), ``pipeline`` (registers passing operands between PEs), ``stationary``
(``w0``/``w1``), ``edge`` (skew and de-skew registers at the mesh borders), ``buffer`` (registers
of the buffers' ports) and ``control`` (controller, command and counters). The simulation's
probes (sim/probes.py) tag every register of the Verilog with one; the toggle model
(models/toggles.py) predicts the same groups; the energy model prices them. A per-net build also
counts the registers of the memory side, the SRAMs' read data and the inputs, for gate-level
power (:data:`UNPRICED`).
"""

from __future__ import annotations

from .config import ArrayConfig, Dataflow

__all__ = ["COMPONENTS", "UNPRICED", "datapath_flop_bits", "stream_traffic"]

COMPONENTS = (
    "multiplier", "accumulator", "pipeline", "stationary", "edge", "buffer", "control",
)  # fmt: skip

#: Activity counted net by net but not priced by toggles: the memory side (descriptor queue,
#: chunk walkers, DMA engines, bank states, control registers, device counters), whose energy is
#: priced per word it moves, the SRAMs' read data (priced per access) and the device's input
#: ports. Gate-level power (synth/power.py) reads them; the toggle groups leave them out.
UNPRICED = ("memory", "sram", "input")


def stream_traffic(config: ArrayConfig) -> tuple[str, str]:
    """``(streaming, stationary)`` operand of the WS/IS mesh, or ``(a lane, b lane)`` for OS."""
    if config.dataflow is Dataflow.IS:
        return "weight", "activation"
    return "activation", "weight"


def datapath_flop_bits(config: ArrayConfig) -> dict[str, int]:
    """Register bits of the mesh by component (``pipeline``, ``accumulator``, ``stationary``,
    ``edge``), from its structure: what the clock reaches every cycle. (Equal to the flops that
    sim/probes.py finds in the Verilog; a test holds the two together.)"""
    config = config.mesh_config()  # operands as the array sees them
    rows, cols, acc = config.rows, config.cols, config.acc_width
    skew_rows = rows * (rows - 1) // 2  # registers of the triangular skews
    skew_cols = cols * (cols - 1) // 2
    pes = rows * cols
    if config.dataflow is Dataflow.OS:
        lane = config.a_width + 2  # a, valid, last
        return {
            "pipeline": pes * (lane + config.b_width),
            "accumulator": pes * acc,
            "stationary": 0,
            "edge": skew_rows * lane + skew_cols * (config.b_width + acc),
        }
    ws = config.dataflow is Dataflow.WS
    stream, stationary = (
        (config.a_width, config.b_width) if ws else (config.b_width, config.a_width)
    )
    lane = stream + 2  # x, valid, bank
    return {
        "pipeline": pes * lane,
        "accumulator": pes * acc,
        "stationary": pes * 2 * stationary,
        "edge": skew_rows * lane + skew_cols * (acc + stationary),  # + the preload's skew
    }
