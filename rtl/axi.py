"""The AXI4 master port of the accelerator: one valid/ready stream per channel, payloads packed
as :func:`contract.axi.channel_fields` orders them."""

from __future__ import annotations

from amaranth import unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from systolic.contract.axi import channel_fields

__all__ = ["AxiMaster", "channel_layout"]


def channel_layout(bus_width: int, channel: str) -> data.StructLayout:
    """The payload of one channel (``ar``, ``r``, ``aw``, ``w``, ``b``)."""
    fields = channel_fields(bus_width)[channel]
    return data.StructLayout({name: unsigned(bits) for name, bits in fields})


class AxiMaster(wiring.Signature):
    """An AXI4 master: requests and write data out (``ar``, ``aw``, ``w``), read data and write
    responses in (``r``, ``b``)."""

    def __init__(self, bus_width: int):
        self.bus_width = bus_width
        members = {}
        for channel in ("ar", "r", "aw", "w", "b"):
            sig = stream.Signature(channel_layout(bus_width, channel))
            members[channel] = Out(sig) if channel in ("ar", "aw", "w") else In(sig)
        super().__init__(members)
