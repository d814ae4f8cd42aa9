"""Whole inferences: where each operator between the GEMMs runs, what the host's operators and
the driver cost, and the timeline that puts device, host and driver together (docs/inference.md).

- **Where.** A GEMM's bias and activation (ReLU, a Clip such as ReLU6) run in the device's fused
  output path when the configuration has one (``requant``) and the operator takes the GEMM's
  output alone; so does the requantization of every integer GEMM's outputs. Residual adds,
  elementwise maxima and poolings run on the vector unit when the configuration has one
  (``vector``) and the operator's geometry is one it takes (:data:`VECTOR_KINDS`). Shape operators
  cost nothing (a runtime folds them when it loads the graph); a BatchNormalization after a
  layer reaches here as that layer's bias (the importer folds its scale into the weights).
  Everything else runs on the host, and so do the bias, activation and requantization of a
  device without the fused path (an integer device's int32 outputs, a bf16 device's fp32 ones,
  converted back for the next layer).
- **The host's price** of an operator is a roofline on :class:`contract.host.Host`: its
  arithmetic (operations per output element, :data:`HOST_OP_COSTS`, plus the conversion of
  integer tensors to and from the host's fp32) at the host's rate, or the bytes it moves at the
  host's share of the DRAM bandwidth, whichever takes longer, plus the runtime's dispatch; its
  energy is those operations at the host's energy per operation and the bytes at the DRAM's
  energy per bit.
- **The driver** posts each descriptor (a write per ``DESC_*`` register and the doorbell),
  takes its interrupt, reads ``IRQ_PENDING`` and ``STATUS`` (and every counter, if it keeps
  them) and clears the interrupt (:func:`contract.host.driver_accesses`); its energy is the
  host's active power while it does.
- **The timeline** runs the inference's steps in order on one host thread: the driver posts
  descriptors ahead while the device's queue has room, so posting overlaps the device's work;
  a host operator needs the results before it, so it waits for every descriptor posted so far
  to complete, then computes.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass

from systolic.contract.config import ArrayConfig
from systolic.contract.host import Host, driver_accesses
from systolic.contract.memory import DramEnergy

from .energy import Coefficients
from .technology import factor

__all__ = [
    "DEQUANTIZE_OPS",
    "FOLDED_OPS",
    "FUSABLE_OPS",
    "HOST_OP_COSTS",
    "QUANTIZE_OPS",
    "VECTOR_KINDS",
    "DriverCosts",
    "HostCost",
    "Step",
    "Timeline",
    "driver_costs",
    "fused_output_pj",
    "host_cost",
    "placement",
    "timeline",
    "vector_pj",
]

#: Operations per output element on the host of each operator's reference algorithm, an ``exp``
#: counted as 10 (range reduction and a degree-5 polynomial), ``erf`` and ``tanh`` as 12, a
#: division or a square root as 4: Softmax is max, subtract, exp, sum and scale (14);
#: LayerNormalization mean, subtract, square and sum, normalize, scale and shift (7); GELU
#: ``x/2 (1 + erf(x/sqrt 2))`` (16). A pooling window or a reduction adds one per element each
#: output reads. Operators not listed cost one.
HOST_OP_COSTS = {
    "Softmax": 14, "LogSoftmax": 15, "LayerNormalization": 7, "Gelu": 16, "Erf": 12,
    "Tanh": 12, "Sigmoid": 14, "Exp": 10, "Log": 10, "Sqrt": 4, "Reciprocal": 4, "Div": 4,
    "Pow": 10, "Add": 1, "Sub": 1, "Mul": 1, "Bias": 1, "Max": 1, "Min": 1, "Relu": 1,
    "Clip": 2, "LeakyRelu": 2, "HardSigmoid": 3, "HardSwish": 4, "Where": 1, "Neg": 1,
    "Abs": 1, "MaxPool": 1, "AveragePool": 2, "GlobalAveragePool": 2, "GlobalMaxPool": 1,
    "ReduceMean": 2, "ReduceSum": 1, "ReduceMax": 1, "Transpose": 1, "Concat": 1,
    "Gather": 1, "Slice": 1, "Split": 1, "Expand": 1, "Tile": 1, "Pad": 1, "Resize": 4,
    "Cast": 1, "QuantizeLinear": 4, "DequantizeLinear": 2, "Requantize": 1,
}  # fmt: skip
#: Operators whose output is a view, or that a runtime folds at load: no work at run time.
FOLDED_OPS = frozenset({
    "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Shape", "Constant",
    "ConstantOfShape", "Dropout",
})  # fmt: skip
#: Operators the fused output path takes when they follow a GEMM alone: its bias and activation.
FUSABLE_OPS = frozenset({"Bias", "Relu", "Clip"})
#: Host operations per element to bring an integer tensor into fp32 (subtract the zero point,
#: scale) and to take one back (scale, round, add the zero point, saturate).
DEQUANTIZE_OPS, QUANTIZE_OPS = 2, 4


#: The fused output path's logic per output element at 45 nm (pJ): a 32 x 32-bit multiply (3.1
#: pJ) and five 32-bit adds or compares (0.1 pJ each: the bias, the rounding, the zero point,
#: the clamp's two bounds), Horowitz's figures (ISSCC 2014, 45 nm). An estimate from published
#: operation energies, not yet calibrated against the gate level as the array's logic is; its
#: table's DRAM traffic and buffer are priced with the device's.
FUSED_OUTPUT_PJ_45NM = 3.1 + 5 * 0.1


def fused_output_pj(coefficients: Coefficients) -> float:
    """:data:`FUSED_OUTPUT_PJ_45NM` at the coefficients' node."""
    return FUSED_OUTPUT_PJ_45NM * factor("energy", 45, coefficients.node_nm)


#: ONNX operators the vector unit runs, as its operators (:data:`contract.vector.VECTOR_OPS`).
VECTOR_KINDS = {"Add": "add", "Sum": "add", "Max": "max", "MaxPool": "max_pool",
                "AveragePool": "average_pool", "GlobalAveragePool": "average_pool"}  # fmt: skip

#: The vector unit's logic per element at 45 nm (pJ), Horowitz's figures (ISSCC 2014) as the
#: fused path's: per input element folded, an add's scaling (a 32 x 32-bit multiply, 3.1, and
#: two adds) or a max's compare or an average's add (0.1); per output element, the add's output
#: scaling (a multiply and three adds), the average's reciprocal multiply (about 2.0 for 25 x 28
#: bits, and three adds), and the clamp's two compares. An estimate, not yet calibrated against
#: the gate level; the unit's DRAM traffic is priced at the DRAM's energy per bit.
VECTOR_PJ_45NM = {"add": (3.3, 3.6), "max": (0.1, 0.2), "max_pool": (0.1, 0.2),
                  "average_pool": (0.1, 2.5)}  # fmt: skip


def vector_pj(
    kind: str,
    inputs: int,
    outputs: int,
    read_bytes: int,
    write_bytes: int,
    coefficients: Coefficients,
    dram: DramEnergy,
) -> float:
    """One vector descriptor's energy: its logic (:data:`VECTOR_PJ_45NM` at the coefficients'
    node) on ``inputs`` elements folded and ``outputs`` written, and its DRAM bytes."""
    per_in, per_out = VECTOR_PJ_45NM[kind]
    logic = (inputs * per_in + outputs * per_out) * factor("energy", 45, coefficients.node_nm)
    return logic + 8 * (read_bytes * dram.read_pj_per_bit + write_bytes * dram.write_pj_per_bit)


def placement(op: str, config: ArrayConfig, follows_gemm: bool, vectorizable: bool = False) -> str:
    """Where ``op`` runs: ``"fused"`` (in a GEMM's output path: ``follows_gemm``, it takes the
    GEMM's output alone), ``"vector"`` (on the vector unit: ``vectorizable``, its geometry is
    one the unit takes), ``"folded"`` (nowhere at run time) or ``"host"``."""
    if op in FOLDED_OPS:
        return "folded"
    if follows_gemm and op in FUSABLE_OPS and config.requant:
        return "fused"
    if vectorizable and config.vector and op in VECTOR_KINDS:
        return "vector"
    return "host"


@dataclass(frozen=True)
class HostCost:
    """One run of a host operator: its time (ns), energy (pJ), operations and DRAM bytes."""

    ns: float
    pj: float
    ops: int
    bytes: int


def host_cost(op: str, elements: int, inputs: int, window: int, read_bytes: int,
              write_bytes: int, integer: bool, host: Host, dram: DramEnergy,
              extra: int = 0) -> HostCost:  # fmt: skip
    """The host's price of one run of ``op`` (see module) reading ``inputs`` elements of
    ``read_bytes`` each and writing ``elements`` of ``write_bytes``, ``window`` read per output
    (pooling, reductions), the tensors integers (``integer``: converted to and from fp32) or
    not; ``extra`` operations per output element of operators done in the same pass."""
    ops = elements * (HOST_OP_COSTS.get(op, 1) + (window if window > 1 else 0) + extra)
    if integer:
        ops += inputs * DEQUANTIZE_OPS + elements * QUANTIZE_OPS
    read, written = inputs * read_bytes, elements * write_bytes
    ns = host.dispatch_ns + max(ops / host.ops_per_ns, (read + written) / host.gb_per_s)
    pj = ops * host.pj_per_op + 8 * (read * dram.read_pj_per_bit
                                     + written * dram.write_pj_per_bit)  # fmt: skip
    return HostCost(ns, pj, ops, read + written)


@dataclass(frozen=True)
class DriverCosts:
    """The driver's time per descriptor (ns): posting it (a GEMM's, or a vector descriptor's
    fields), its interrupt's latency, and the completion's reads and acknowledgement."""

    post_ns: float
    irq_ns: float
    complete_ns: float
    vector_post_ns: float = 0.0


def driver_costs(config: ArrayConfig, host: Host) -> DriverCosts:
    n = driver_accesses(config, host)
    vector = driver_accesses(config, host, vector=True)["post"] if config.vector else 0
    return DriverCosts(n["post"] * host.write_ns, host.irq_ns,
                       n["reads"] * host.read_ns + n["acks"] * host.write_ns,
                       vector * host.write_ns)  # fmt: skip


@dataclass(frozen=True)
class Step:
    """One step of an inference: ``runs`` descriptors of ``ns`` each on the device
    (``device``; the vector unit's with ``vector``), or ``runs`` host operators of ``ns``
    each."""

    device: bool
    ns: float
    runs: int
    vector: bool = False


@dataclass(frozen=True)
class Timeline:
    """An inference's time (ns): ``total_ns`` from the first post to the last completion or
    host operator; the device's busy time; the host operators'; the driver's own (the host
    posting, completing); ``descriptors`` posted."""

    total_ns: float
    device_ns: float
    host_ns: float
    driver_ns: float
    descriptors: int

    @property
    def exposed_ns(self) -> float:
        """What the driver (its accesses and the interrupts' latency) added to the total."""
        return self.total_ns - self.device_ns - self.host_ns


def timeline(steps: list[Step], driver: DriverCosts, queue_depth: int) -> Timeline:
    """Run ``steps`` in order (see module); the device holds the running descriptor and
    ``queue_depth`` more."""
    t = device_free = device = host = busy = 0.0
    outstanding: deque[float] = deque()  # end times of posted, uncompleted descriptors
    posted = 0

    def complete() -> None:
        nonlocal t, busy
        end = outstanding.popleft()
        t = max(t, end + driver.irq_ns) + driver.complete_ns
        busy += driver.complete_ns

    for step in steps:
        if not step.device:
            while outstanding:
                complete()
            t += step.ns * step.runs
            host += step.ns * step.runs
            continue
        for _ in range(step.runs):
            if len(outstanding) > queue_depth:
                complete()
            post = driver.vector_post_ns if step.vector else driver.post_ns
            t += post
            busy += post
            device_free = max(t, device_free) + step.ns
            device += step.ns
            outstanding.append(device_free)
            posted += 1
    while outstanding:
        complete()
    return Timeline(t, device, host, busy, posted)


def where_counts(rows: list[tuple[str, str, int]]) -> dict[str, dict[str, int]]:
    """``{where: {op: runs}}`` of ``(op, where, runs)`` rows: the record's account of which
    operators ran where."""
    out: dict[str, Counter] = {}
    for op, where, runs in rows:
        out.setdefault(where, Counter())[op] += runs
    return {w: dict(sorted(c.items())) for w, c in sorted(out.items())}
