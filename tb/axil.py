"""The host's AXI4-Lite master, as a CPU's bus port drives the accelerator's control registers
(``s_axil_*`` at the simulation wrapper's edge, where the design's outputs show the values it
drove before each rising edge: sim/build.py's ``_at_edge``).

One transaction at a time: inputs change after a rising edge, handshakes are read at the next.
The master counts its writes, reads and the clock cycles they took (the driver's cost as the
simulation measures it).
"""

from __future__ import annotations

from cocotb.triggers import RisingEdge

__all__ = ["AxiLiteError", "AxiLiteMaster"]


class AxiLiteError(RuntimeError):
    """A response other than OKAY."""


class AxiLiteMaster:
    def __init__(self, dut, prefix: str = "s_axil_"):
        self.dut, self.prefix = dut, prefix
        for name in ("awvalid", "wvalid", "bready", "arvalid", "rready", "awprot", "arprot"):
            self._set(name, 0)
        self.writes = self.reads = self.cycles = 0

    async def _edge(self) -> None:
        await RisingEdge(self.dut.clk)
        self.cycles += 1

    def _set(self, name: str, value: int) -> None:
        getattr(self.dut, self.prefix + name).value = value

    def _get(self, name: str) -> int:
        return int(getattr(self.dut, self.prefix + name).value)  # a Logic under Icarus

    async def write(self, addr: int, data: int, strobes: int = 0xF, check: bool = True) -> int:
        """Write ``data`` at byte address ``addr``; returns ``BRESP`` (raises on an error
        response when ``check``)."""
        for name, value in (("awaddr", addr), ("awvalid", 1), ("wdata", data),
                            ("wstrb", strobes), ("wvalid", 1), ("bready", 1)):  # fmt: skip
            self._set(name, value)
        self.writes += 1
        address = data_taken = False
        while not (address and data_taken):
            await self._edge()
            if not address and self._get("awready"):
                address = True
                self._set("awvalid", 0)
            if not data_taken and self._get("wready"):
                data_taken = True
                self._set("wvalid", 0)
        while not self._get("bvalid"):
            await self._edge()
        resp = self._get("bresp")
        self._set("bready", 0)
        if check and resp:
            raise AxiLiteError(f"write of 0x{data:x} at 0x{addr:03x}: BRESP {resp}")
        return resp

    async def read(self, addr: int, check: bool = True) -> tuple[int, int]:
        """Read the word at byte address ``addr``: ``(RDATA, RRESP)`` (raises on an error
        response when ``check``)."""
        for name, value in (("araddr", addr), ("arvalid", 1), ("rready", 1)):
            self._set(name, value)
        self.reads += 1
        while True:
            await self._edge()
            if self._get("arready"):
                self._set("arvalid", 0)
                break
        while not self._get("rvalid"):
            await self._edge()
        data, resp = self._get("rdata"), self._get("rresp")
        self._set("rready", 0)
        if check and resp:
            raise AxiLiteError(f"read at 0x{addr:03x}: RRESP {resp}")
        return data, resp
