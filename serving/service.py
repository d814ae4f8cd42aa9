"""Service times from the hardware model: how long a batch of requests takes on a configuration
behind its memory, at a clock, and what it costs in energy.

A batch of ``b`` requests of a transformer at sequence length ``s`` is the workload
``transformer(model, b, s)`` (its GEMMs one after another on the device, workloads.library), a CNN
batch is ``cnn(model, b)``; the analytical model of the device (the sweeps' model record:
models.pipeline behind the DRAM, energy from estimated toggles) gives its latency and energy.
Each distinct ``(kind, b, s)`` is evaluated once and kept.
"""

from __future__ import annotations

from systolic.contract.config import ArrayConfig
from systolic.contract.dma import place
from systolic.contract.memory import Memory
from systolic.models.device import predict_device
from systolic.models.energy import Coefficients, load_coefficients
from systolic.models.technology import dram_energy
from systolic.workloads.evaluate import gemm_chunk, model_record
from systolic.workloads.library import CNNS, TRANSFORMERS, Workload, cnn, transformer

from .traffic import Mix, TrafficError

__all__ = ["GemmService", "ModelService", "batch_workload"]


def batch_workload(model: str, batch: int, length: int, phase: str = "prefill") -> Workload:
    """The workload of a batch of ``batch`` requests of ``model`` at sequence ``length`` (for a
    transformer's ``decode`` phase: one token each against caches of ``length``)."""
    if model in TRANSFORMERS:
        if length < 1:
            raise TrafficError(f"{model}: a transformer request needs a sequence length")
        return transformer(model, batch, length, phase)
    if model in CNNS:
        return cnn(model, batch)
    raise TrafficError(f"model must be one of {', '.join([*TRANSFORMERS, *CNNS])}, not {model!r}")


class ModelService:
    """``service(kind, batch, length) -> (seconds, dynamic energy_pj)`` for
    :func:`serving.batching.serve`, from the model of ``config`` behind ``memory`` at
    ``clock_mhz`` (default: the coefficients' clock)."""

    def __init__(self, config: ArrayConfig, mix: Mix, memory: Memory,
                 coefficients: Coefficients | None = None, clock_mhz: float | None = None,
                 data: str = "random", seed: int = 0):  # fmt: skip
        self.config, self.mix, self.memory = config, mix, memory
        self.coefficients = coefficients or load_coefficients()
        self.clock_mhz = clock_mhz or self.coefficients.clock_mhz
        self.data, self.seed = data, seed
        self.records: dict[tuple, dict] = {}
        #: the busy energy of the batches served since the last reset, by uncertain term
        self.tally: dict[str, float] = {}
        self.ranges = self.coefficients.ranges(dram_energy(memory), config)

    def record(self, kind: int, batch: int, length: int, phase: str = "prefill") -> dict:
        """The model's record of the batch (cached)."""
        key = (kind, batch, length) if phase == "prefill" else (kind, batch, length, phase)
        if key not in self.records:
            work = batch_workload(self.mix.kinds[kind].model, batch, length, phase)
            self.records[key] = model_record(self.config, work, self.memory, self.coefficients,
                                             self.data, self.seed, self.clock_mhz)  # fmt: skip
        return self.records[key]

    def __call__(self, kind: int, batch: int, length: int) -> tuple[float, float]:
        return self._busy(self.record(kind, batch, length))

    def step(self, kind: int, batch: int, length: int, phase: str) -> tuple[float, float]:
        """A generation step (:func:`serving.generation.generate`)."""
        return self._busy(self.record(kind, batch, length, phase))

    def _busy(self, record: dict) -> tuple[float, float]:
        seconds, energy = _busy(record)
        terms = dict(record["energy_terms_pj"])
        terms["logic"] -= record["components_pj"]["leakage"]  # leakage: a power, apart
        for part in OFF_ARRAY:  # the whole inference's parts beside the GEMMs' terms
            terms[part] = record["inference"]["energy_split_pj"][part]
        for term, pj in terms.items():
            self.tally[term] = self.tally.get(term, 0.0) + pj
        return seconds, energy


#: The parts of a whole inference's energy beside its GEMMs' (models.inference).
OFF_ARRAY = ("fused", "vector", "host", "driver")


def _busy(record: dict) -> tuple[float, float]:
    """A batch's latency and its dynamic energy, the whole inference's (its GEMMs, the operators
    between them where they run, the driver: :func:`workloads.evaluate.inference_figures`):
    leakage is a power, which serving.power_budget accounts over the whole time, busy or
    idle."""
    inference = record["inference"]
    return inference["latency_s"], inference["energy_pj"] - record["components_pj"]["leakage"]


class GemmService:
    """Service times of requests that are one GEMM each (``m x k x n``: a layer served alone),
    from the exact device model: a batch of ``b`` requests is one descriptor of ``b*m x k x n``
    with the driver's chunks, taking :attr:`models.device.DevicePrediction.measured_cycles`
    from its acceptance to ``done`` (what the RTL bench counts) at ``clock_mhz``. Energy is not
    modelled here (0): it is for checking service times against the RTL and serving layers
    exactly."""

    def __init__(self, config: ArrayConfig, shape: tuple[int, int, int], memory: Memory,
                 clock_mhz: float):  # fmt: skip
        self.config, self.shape, self.memory, self.clock_mhz = config, shape, memory, clock_mhz
        self.dram = memory.at(clock_mhz)
        self.cycles: dict[int, int] = {}

    def gemm(self, batch: int) -> tuple[int, int, int]:
        m, k, n = self.shape
        return batch * m, k, n

    def descriptor(self, batch: int):
        shape = self.gemm(batch)
        return place(self.config, *shape, chunk=gemm_chunk(self.config, shape, self.dram))

    def __call__(self, kind: int, batch: int, length: int) -> tuple[float, float]:
        if batch not in self.cycles:
            p = predict_device(self.config, self.descriptor(batch), self.dram)
            self.cycles[batch] = p.measured_cycles
        return self.cycles[batch] / (self.clock_mhz * 1e6), 0.0
