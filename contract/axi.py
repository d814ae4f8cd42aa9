"""The accelerator's AXI4 memory port: channel fields, widths, ID and user codes, as the AMBA
AXI4 spec names them (``ARADDR`` is field ``addr`` of channel ``ar``).

Every request carries one ID (:data:`AXI_ID`), so any AXI4 slave or interconnect returns read
data and write responses in request order, the order the DMA matches them in; the operand a
burst moves (:data:`OPERANDS`) travels in ``AxUSER``, for a memory that counts traffic per
operand (the simulation's DRAM model does).

The generator builds each channel as a valid/ready stream whose payload packs these fields in
this order, least significant first; the simulation's DRAM model slices the same payloads, and
the DMA's burst plan (:mod:`contract.dma`) fills them.
"""

from __future__ import annotations

from .checks import check_integer

__all__ = [
    "ADDR_BITS",
    "BURST_INCR",
    "BUS_WIDTHS",
    "AXI_ID",
    "ID_BITS",
    "LEN_BITS",
    "MAX_BURST_BYTES",
    "OPERANDS",
    "USER_BITS",
    "channel_fields",
    "field_slices",
    "master_signals",
]

#: DRAM byte addresses.
ADDR_BITS = 32
#: AXI4 burst lengths: ``len + 1`` beats, up to 256.
LEN_BITS = 8
#: Transaction IDs: one for every request (same-ID transactions complete in order).
ID_BITS = 1
AXI_ID = 0
#: ``AxUSER``: the operand a burst moves (C and partial sums are both ``c``).
USER_BITS = 2
OPERANDS = {"a": 0, "b": 1, "c": 2, "q": 3}
#: ``AxBURST`` of an incrementing burst, the only kind the DMA issues.
BURST_INCR = 1
#: Data widths the DMA is built for.
BUS_WIDTHS = (64, 128, 256, 512)
#: A burst never crosses a 4 KB boundary (AXI4); the DMA's bursts are aligned to their size.
MAX_BURST_BYTES = 4096


def channel_fields(data_width: int) -> dict[str, list[tuple[str, int]]]:
    """Each channel's payload fields ``(name, bits)``, least significant first."""
    if data_width not in BUS_WIDTHS:
        raise ValueError(f"bus_width must be one of {', '.join(map(str, BUS_WIDTHS))} bits, "
                         f"not {data_width!r}")  # fmt: skip
    address = [("addr", ADDR_BITS), ("len", LEN_BITS), ("size", 3), ("burst", 2),
               ("id", ID_BITS), ("user", USER_BITS)]  # fmt: skip
    return {
        "ar": address,
        "r": [("data", data_width), ("resp", 2), ("last", 1), ("id", ID_BITS)],
        "aw": address,
        "w": [("data", data_width), ("strb", data_width // 8), ("last", 1)],
        "b": [("resp", 2), ("id", ID_BITS)],
    }


def field_slices(data_width: int, channel: str) -> dict[str, tuple[int, int]]:
    """``name -> (lsb, bits)`` of each field in the packed payload of ``channel``."""
    check_integer("data_width", data_width, 8)
    out, lsb = {}, 0
    for name, bits in channel_fields(data_width)[channel]:
        out[name] = (lsb, bits)
        lsb += bits
    return out


def master_signals(data_width: int) -> list[tuple[str, str, int]]:
    """The AXI4 master port as an SoC sees it, one signal per field: ``(name, direction from
    the master, bits)`` with the spec's names (``araddr``, ``arvalid``, ``rready``, ...), in
    channel order ``ar``, ``r``, ``aw``, ``w``, ``b``."""
    out = []
    for channel in ("ar", "r", "aw", "w", "b"):
        sends = channel in ("ar", "aw", "w")
        out += [(f"{channel}valid", "out" if sends else "in", 1),
                (f"{channel}ready", "in" if sends else "out", 1)]  # fmt: skip
        for name, bits in channel_fields(data_width)[channel]:
            out.append((f"{channel}{name}", "out" if sends else "in", bits))
    return out
