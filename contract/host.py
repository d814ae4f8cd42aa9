"""The host beside the accelerator: the CPU that runs its driver and the operators neither the
array nor the vector unit runs (docs/inference.md).

A host is a handful of numbers, each an assumption to vary rather than a measurement (the
presets are round figures of the class of machine they name):

- its arithmetic rate on the elementwise and reduction kernels it runs (scalar-equivalent
  operations per ns: a core's clock times the fp32 lanes of its SIMD unit) and what one such
  operation costs in energy (pJ; an in-order application core's instruction costs about 70 pJ
  at 45 nm with fetch and decode included, Horowitz, ISSCC 2014, shared here by the SIMD lanes);
- its share of the DRAM's bandwidth (GB/s) and a runtime's cost of dispatching one operator (ns);
- the driver's bus accesses: a posted AXI4-Lite write and a read's round trip through the SoC's
  interconnect (ns), and the interrupt's latency from the device's ``irq`` to the driver's
  handler (ns).

The driver's accesses per descriptor are counted from :mod:`contract.registers`, never
restated (:func:`driver_accesses`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .checks import is_number
from .config import ArrayConfig
from .dma import gemm_fields
from .registers import counter_words, register_map
from .vector import vector_fields

__all__ = ["DEFAULT_HOST", "HOST_PRESETS", "Host", "driver_accesses"]

#: Named hosts: ``(ops per ns, pJ per op, GB/s, dispatch ns, write ns, read ns, irq ns)``.
HOST_PRESETS = {
    # one in-order core at 1.2 GHz, 2 fp32 lanes; a microcontroller-class interconnect
    "embedded": (2.4, 35.0, 4.0, 2000.0, 60.0, 300.0, 10000.0),
    # one application core at 2 GHz with 128-bit SIMD (4 fp32 lanes); the device on-chip
    "mobile": (8.0, 17.5, 10.0, 1000.0, 50.0, 200.0, 5000.0),
    # one server core at 3 GHz with 256-bit SIMD, 2 units (16 lanes); the device over PCIe
    "server": (48.0, 4.4, 20.0, 500.0, 100.0, 1000.0, 10000.0),
}
DEFAULT_HOST = "mobile"

_FIELDS = ("ops_per_ns", "pj_per_op", "gb_per_s", "dispatch_ns", "write_ns", "read_ns", "irq_ns")
_LIMITS = {"ops_per_ns": (1e-3, 1e4), "pj_per_op": (1e-3, 1e5), "gb_per_s": (1e-3, 1e5),
           "dispatch_ns": (0.0, 1e9), "write_ns": (0.0, 1e9), "read_ns": (0.0, 1e9),
           "irq_ns": (0.0, 1e9)}  # fmt: skip


@dataclass(frozen=True)
class Host:
    """A host CPU (see module); ``counters``: the driver reads every device counter after
    each descriptor (both words of each), as the simulation's driver does; a deployed driver
    reads none (the default)."""

    name: str
    ops_per_ns: float
    pj_per_op: float
    gb_per_s: float
    dispatch_ns: float
    write_ns: float
    read_ns: float
    irq_ns: float
    counters: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"a host needs a name, not {self.name!r}")
        for key in _FIELDS:
            lo, hi = _LIMITS[key]
            value = getattr(self, key)
            if not is_number(value) or not lo <= value <= hi:
                raise ValueError(f"host {key} must be a number in [{lo:g}, {hi:g}], "
                                 f"not {value!r}")  # fmt: skip
            object.__setattr__(self, key, float(value))
        if not isinstance(self.counters, bool):
            raise ValueError(f"host counters must be true or false, not {self.counters!r}")

    @classmethod
    def preset(cls, name: str = DEFAULT_HOST) -> Host:
        if name not in HOST_PRESETS:
            raise ValueError(f"unknown host preset {name!r}; presets: {', '.join(HOST_PRESETS)}")
        return cls(name, *HOST_PRESETS[name])

    @property
    def active_mw(self) -> float:
        """The core's power while it computes (or spins in the driver): its rate times its
        energy per operation (pJ/ns = mW)."""
        return self.ops_per_ns * self.pj_per_op

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Host:
        return cls(**d)


def driver_accesses(config: ArrayConfig, host: Host, vector: bool = False) -> dict[str, int]:
    """The AXI4-Lite accesses the driver makes for one descriptor on ``config``'s device (a
    GEMM's, or with ``vector`` the vector unit's): ``post`` writes (the ``DESC_*`` register of
    each field the descriptor sets, then ``DOORBELL``) and, once the interrupt comes, ``reads``
    (``IRQ_PENDING``, ``STATUS`` and, with ``host.counters``, both words of every counter) and
    ``acks`` (the write that clears ``IRQ_PENDING``)."""
    names = {r.name for r in register_map(config)}
    own = vector_fields(config) if vector else gemm_fields(config)
    fields = sum(f"DESC_{name.upper()}" in names for name, _ in own)
    reads = 2 + (2 * len(counter_words(config)) if host.counters else 0)
    return {"post": fields + 1, "reads": reads, "acks": 1}
