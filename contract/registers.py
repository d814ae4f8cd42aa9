"""The accelerator's control registers on its AXI4-Lite port: one definition that the generator
builds (rtl/control.py), the register map and the C header document (:mod:`contract.regdocs`),
and the drivers program (the cocotb host, a bare-metal CPU).

32-bit registers at byte offsets in a 4 KB window:

- identification (``ID``, ``VERSION``, ``CONFIG_HASH`` and the ``HW_*`` parameters): what a
  driver checks before programming;
- ``DOORBELL``, ``STATUS``, ``IRQ_ENABLE``, ``IRQ_PENDING``: a GEMM is posted by writing its
  descriptor's fields (``DESC_*``) and then ``DOORBELL``; ``STATUS`` and the interrupt report
  when it is done and whether it was refused (:class:`contract.dma.Refusal`);
- ``DESC_*``: one register per field of :func:`contract.dma.descriptor_fields`;
- ``COUNTER_*_LO`` / ``_HI``: every :data:`contract.interface.DEVICE_COUNTERS` of the last
  descriptor, :data:`contract.interface.COUNTER_BITS` bits split in two words, valid from done
  (of a queue's descriptors overlapping on the device, their sum).
"""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass

from .config import ArrayConfig, Dataflow
from .dma import descriptor_fields
from .interface import COUNTER_BITS, DEVICE_COUNTERS
from .timing import GATE_LINGER

__all__ = [
    "always_on_bits",
    "ADDR_BITS",
    "ID_VALUE",
    "IRQ_DONE",
    "IRQ_ERROR",
    "OKAY",
    "SLVERR",
    "VERSION",
    "Access",
    "Field",
    "Register",
    "config_hash",
    "counter_words",
    "descriptor_writes",
    "lite_signals",
    "register_map",
]

#: Address bits of the AXI4-Lite port: a 4 KB window.
ADDR_BITS = 12
#: ``ID``'s value: "SYST" in ASCII.
ID_VALUE = 0x53595354
#: The register map's version, raised when an offset or a field moves.
VERSION = 2
#: Bits of ``IRQ_ENABLE`` and ``IRQ_PENDING``.
IRQ_DONE, IRQ_ERROR = 0, 1

_DESCRIPTORS_AT = 0x100
_COUNTERS_AT = 0x200


#: ``BRESP``/``RRESP``: done, or no register at the address.
OKAY, SLVERR = 0, 2


def lite_signals() -> list[tuple[str, str, int]]:
    """The AXI4-Lite slave port: ``(name, direction into the accelerator, bits)`` with the
    spec's names (``awaddr``, ``wstrb``, ``rdata``, ...); 32-bit data."""
    return [
        ("awaddr", "in", ADDR_BITS), ("awprot", "in", 3), ("awvalid", "in", 1),
        ("awready", "out", 1),
        ("wdata", "in", 32), ("wstrb", "in", 4), ("wvalid", "in", 1), ("wready", "out", 1),
        ("bresp", "out", 2), ("bvalid", "out", 1), ("bready", "in", 1),
        ("araddr", "in", ADDR_BITS), ("arprot", "in", 3), ("arvalid", "in", 1),
        ("arready", "out", 1),
        ("rdata", "out", 32), ("rresp", "out", 2), ("rvalid", "out", 1), ("rready", "in", 1),
    ]  # fmt: skip


class Access(enum.StrEnum):
    """How software may use a register."""

    RO = "ro"  # read only; writes are ignored
    RW = "rw"  # read and write
    WO = "wo"  # write only (an action); reads return 0
    W1C = "w1c"  # read; writing 1 to a bit clears it


@dataclass(frozen=True)
class Field:
    """Bits ``lsb .. lsb + bits - 1`` of a register."""

    name: str
    lsb: int
    bits: int
    doc: str

    @property
    def mask(self) -> int:
        """The field's bits in place."""
        return ((1 << self.bits) - 1) << self.lsb


@dataclass(frozen=True)
class Register:
    """One 32-bit register; ``value`` is the read-only value of an identification register."""

    name: str
    offset: int
    access: Access
    doc: str
    fields: tuple[Field, ...]
    value: int | None = None

    def pack(self, **values: int) -> int:
        """The register's word with these field values (two's complement cut to the field)."""
        word = 0
        for f in self.fields:
            word |= (values.pop(f.name, 0) & ((1 << f.bits) - 1)) << f.lsb
        if values:
            raise ValueError(f"{self.name} has no field {', '.join(sorted(values))}")
        return word

    def unpack(self, word: int) -> dict[str, int]:
        """Each field's value (unsigned) in ``word``."""
        return {f.name: (word >> f.lsb) & ((1 << f.bits) - 1) for f in self.fields}


def config_hash(config: ArrayConfig) -> int:
    """32 bits of the SHA-256 of the configuration's JSON: ``CONFIG_HASH``, which tells a
    driver whether the hardware is the configuration it was written for."""
    return int(hashlib.sha256(config.to_json().encode()).hexdigest()[:8], 16)


def _one(name: str, offset: int, access: Access, doc: str, bits: int = 32,
         value: int | None = None) -> Register:  # fmt: skip
    return Register(name, offset, access, doc, (Field("value", 0, bits, doc),), value)


_DATAFLOW_CODES = {Dataflow.WS: 0, Dataflow.OS: 1, Dataflow.IS: 2}


def _identification(config: ArrayConfig) -> list[Register]:
    array = Register("HW_ARRAY", 0x00C, Access.RO, "the array's shape", (
        Field("rows", 0, 16, "processing elements per column"),
        Field("cols", 16, 16, "processing elements per row"),
    ))  # fmt: skip
    fmt = Register("HW_FORMAT", 0x010, Access.RO, "dataflow and arithmetic", (
        Field("dataflow", 0, 2, "0 weight-, 1 output-, 2 input-stationary"),
        Field("bf16", 2, 1, "1: bf16 operands, fp32 sums; 0: integers"),
        Field("zero_points", 3, 1, "1: DESC_A_ZERO and DESC_B_ZERO exist"),
        Field("requant", 4, 1, "1: outputs can be requantized (DESC_REQUANT ...)"),
        Field("vector", 5, 1, "1: a vector unit takes vector descriptors (DESC_VECTOR ...)"),
        Field("requant_float", 6, 1, "1: requantization can scale by float32 "
              "(DESC_FLOAT_SCALE)"),
        Field("a_width", 8, 5, "bits of an A (activation) element"),
        Field("b_width", 16, 5, "bits of a B (weight) element"),
        Field("acc_width", 24, 7, "bits of an accumulator and of a C element"),
    ))  # fmt: skip
    bus = Register("HW_BUS", 0x014, Access.RO, "the AXI4 memory port and the queue", (
        Field("bus_width", 0, 16, "bits of the AXI4 data bus"),
        Field("queue_depth", 16, 8, "descriptors queued behind the running one"),
    ))  # fmt: skip
    hw = {
        "HW_ARRAY": array.pack(rows=config.rows, cols=config.cols),
        "HW_FORMAT": fmt.pack(
            dataflow=_DATAFLOW_CODES[config.dataflow],
            bf16=int(config.number == "bf16"),
            zero_points=int(config.zero_points),
            requant=int(config.requant),
            vector=int(config.vector),
            requant_float=int(config.requant_float),
            a_width=config.a_width,
            b_width=config.b_width,
            acc_width=config.acc_width,
        ),  # fmt: skip
        "HW_BUS": bus.pack(bus_width=config.bus_width, queue_depth=config.queue_depth),
    }
    regs = [
        _one("ID", 0x000, Access.RO, 'identifies the accelerator: "SYST"', value=ID_VALUE),
        _one("VERSION", 0x004, Access.RO, "the register map's version", value=VERSION),
        _one(
            "CONFIG_HASH",
            0x008,
            Access.RO,
            "32 bits of the SHA-256 of config.json",
            value=config_hash(config),
        ),  # fmt: skip
    ]
    for reg in (array, fmt, bus):
        regs.append(Register(reg.name, reg.offset, reg.access, reg.doc, reg.fields, hw[reg.name]))
    for i, buf in enumerate("abcq"):
        depth = getattr(config, f"{buf}_depth") if buf != "q" or config.requant else 0
        doc = (f"words per bank of the {buf.upper()} buffer" if buf != "q" else
               "words of the requantization table's buffer (0: no requantization)")  # fmt: skip
        regs.append(_one(f"HW_{buf.upper()}_DEPTH", 0x018 + 4 * i, Access.RO, doc, value=depth))
    return regs


def _control() -> list[Register]:
    irq = (
        Field("done", IRQ_DONE, 1, "a descriptor finished (ran or was refused)"),
        Field("error", IRQ_ERROR, 1, "a descriptor was refused (STATUS.error says why)"),
    )
    return [
        Register(
            "DOORBELL",
            0x040,
            Access.WO,
            "post the descriptor in DESC_* to the queue",
            (
                Field(
                    "post",
                    0,
                    1,
                    "write 1: queue the GEMM; the write's response waits while "
                    "the queue is full (STATUS.queue_full)",
                ),
            ),
        ),
        Register(
            "STATUS",
            0x044,
            Access.RO,
            "the device's state",
            (
                Field("busy", 0, 1, "a descriptor is being checked or run"),
                Field("queue_full", 1, 1, "DOORBELL would wait: the queue holds queue_depth"),
                Field("error", 4, 4, "the last finished descriptor's refusal (0: it ran)"),
                Field("finished", 16, 16, "descriptors finished since reset (wraps)"),
            ),
        ),
        Register("IRQ_ENABLE", 0x048, Access.RW, "which pending bits raise irq", irq),
        Register(
            "IRQ_PENDING",
            0x04C,
            Access.W1C,
            "events since last cleared; irq is high while any enabled bit is set",
            irq,
        ),
    ]


def _every_field() -> list[tuple[str, int]]:
    """The descriptor fields of a configuration with every option: each has its slot, so an
    offset is the same in every configuration that has the field. 63 slots of the 64 between
    the descriptor registers and the counters are taken: the next field after one more needs
    the counters moved (a new VERSION)."""
    return descriptor_fields(ArrayConfig("ws", 1, 1, zero_points=True, requant=True, vector=True,
                                         stage_depth=1, requant_float=True))  # fmt: skip


def register_map(config: ArrayConfig) -> tuple[Register, ...]:
    """Every register of ``config``'s accelerator, by offset."""
    regs = _identification(config) + _control()
    slots = {name: i for i, (name, _) in enumerate(_every_field())}
    for name, bits in descriptor_fields(config):
        doc = f"descriptor field {name} ({bits} bits; contract.dma.Descriptor)"
        at = _DESCRIPTORS_AT + 4 * slots[name]
        regs.append(_one(f"DESC_{name.upper()}", at, Access.RW, doc, bits))
    for i, (name, doc) in enumerate(DEVICE_COUNTERS.items()):
        at = _COUNTERS_AT + 8 * i
        regs.append(_one(f"COUNTER_{name.upper()}_LO", at, Access.RO, f"{doc}: bits 31..0"))
        regs.append(_one(f"COUNTER_{name.upper()}_HI", at + 4, Access.RO,
                         f"{doc}: bits {COUNTER_BITS - 1}..32", COUNTER_BITS - 32))  # fmt: skip
    if _DESCRIPTORS_AT + 4 * len(slots) > _COUNTERS_AT or regs[-1].offset >= 1 << ADDR_BITS:
        raise AssertionError("the register map outgrew its window")
    return tuple(regs)


def descriptor_writes(config: ArrayConfig, values: dict[str, int]) -> list[tuple[int, int]]:
    """``(offset, word)`` writes that post a descriptor (its fields, as
    :func:`contract.dma.descriptor_values` or :func:`contract.vector.vector_values` give them):
    the ``DESC_*`` register of each, then ``DOORBELL``. The device takes every field's register
    as it stands; the fields a descriptor does not set are not its."""
    by_name = {r.name: r for r in register_map(config)}
    writes = []
    for name, _ in descriptor_fields(config):
        if name not in values:
            continue
        reg = by_name[f"DESC_{name.upper()}"]
        writes.append((reg.offset, reg.pack(value=values[name])))
    writes.append((by_name["DOORBELL"].offset, by_name["DOORBELL"].pack(post=1)))
    return writes


def counter_words(config: ArrayConfig) -> dict[str, tuple[int, int]]:
    """Each device counter's ``(LO offset, HI offset)``."""
    by_name = {r.name: r.offset for r in register_map(config)}
    return {name: (by_name[f"COUNTER_{name.upper()}_LO"], by_name[f"COUNTER_{name.upper()}_HI"])
            for name in DEVICE_COUNTERS}  # fmt: skip


def always_on_bits(config: ArrayConfig) -> int:
    """Flip-flop bits the device clocks while it idles (rtl.clock_gate gates the rest): the
    control registers (the descriptor's fields; the interrupt enables and pending bits and the
    16-bit completion count; a read's valid, response and data; a write's word address, data,
    strobes, their full flags, its response's valid and code; each response's low bit is
    always zero), the descriptor queue (``queue_depth`` descriptors, its read and write
    pointers and its level) and the gate's own (its enable and its linger count)."""
    descriptor = sum(bits for _, bits in descriptor_fields(config))
    registers = descriptor + 2 + 2 + 16 + (1 + 1 + 32) + ((ADDR_BITS - 2) + 32 + 4 + 1 + 1 + 1 + 1)
    depth = config.queue_depth
    pointers = 2 * max(1, (depth - 1).bit_length()) + depth.bit_length()
    return registers + depth * descriptor + pointers + 1 + GATE_LINGER.bit_length()
