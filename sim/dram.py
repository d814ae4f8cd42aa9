"""The simulation's DRAM: an AXI4 slave in Verilog, with the latency, bandwidth and request limit
of :class:`contract.memory.Dram`, run inside the simulation wrapper at full Verilator speed.

The rules are docs/memory.md's: requests are accepted while fewer than ``max_requests`` are
outstanding; one data bus serves bursts in acceptance order (a read ``latency`` cycles after its
AR, a write from the cycle after its AW); beats follow :class:`contract.memory.BeatClock`; a
write's response comes ``latency`` cycles after its last beat. Its parameters are registers the
testbench sets at run time, so one compiled model serves every memory setting. It counts the
beats and bytes it served per operand (the requests' ``AxUSER``), an account independent of the
accelerator's counters and of the model. Its contents are loaded and read back through
``$readmemh``/``$writememh`` (:data:`BACKDOOR`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from systolic.contract.axi import ID_BITS, OPERANDS, USER_BITS, channel_fields, field_slices

__all__ = [
    "BACKDOOR",
    "COUNTERS",
    "DRAM_BYTES",
    "DUMP_FILE",
    "LOAD_FILE",
    "PARAMETERS",
    "PROTOCOL_ERRORS",
    "QUEUE",
    "bench_top",
    "dram_model",
    "image_lines",
    "instance",
    "read_dump",
    "slave_ports",
]

#: Bytes of simulated DRAM (addresses wrap past it).
DRAM_BYTES = 1 << 24
#: Requests the model can hold (the largest ``max_requests``).
QUEUE = 4096
#: Run-time parameters, registers of the wrapper: ``dram_<name>``.
PARAMETERS = ("bw_num", "bw_den", "latency", "max_requests")
#: The backdoor's registers: a rising edge on ``dram_load`` reads :data:`LOAD_FILE` (hex bus
#: words, ``@<word>`` lines setting the address), one on ``dram_dump`` writes words
#: ``dram_dump_first .. dram_dump_last`` to :data:`DUMP_FILE`, in the simulator's directory.
BACKDOOR = ("dram_load", "dram_dump", "dram_dump_first", "dram_dump_last")
LOAD_FILE = "dram_load.hex"
DUMP_FILE = "dram_dump.hex"
#: Counters per operand (``dram_<counter>_<operand>``, by ``AxUSER``): beats and bytes served.
COUNTERS = ("read_beats", "read_bytes", "write_beats", "write_bytes")
#: The net counting requests and beats that break an AXI4 rule the model checks: a burst that
#: is not INCR, wider than the bus or crossing a 4 KB boundary, and WLAST off a burst's last beat.
PROTOCOL_ERRORS = "dram_protocol_errors"


def slave_ports(bus_width: int) -> list[tuple[str, str, int]]:
    """``(name, direction, bits)`` of the slave's channel ports, ``<channel>_valid`` etc."""
    ports = []
    for channel, fields in channel_fields(bus_width).items():
        to_slave = channel in ("ar", "aw", "w")
        bits = sum(b for _, b in fields)
        ports += [(f"{channel}_valid", "in" if to_slave else "out", 1),
                  (f"{channel}_ready", "out" if to_slave else "in", 1),
                  (f"{channel}_payload", "in" if to_slave else "out", bits)]  # fmt: skip
    return ports


def _field(bus_width: int, channel: str, name: str, signal: str) -> str:
    lsb, bits = field_slices(bus_width, channel)[name]
    return f"{signal}[{lsb + bits - 1}:{lsb}]"


@dataclass(frozen=True)
class _Shape:
    """The sizes the DRAM model's Verilog is written for."""

    bus_width: int
    size: int

    @property
    def lanes(self) -> int:
        return self.bus_width // 8

    @property
    def shift(self) -> int:  # log2 of the bytes a bus word holds
        return int(math.log2(self.lanes))

    @property
    def words(self) -> int:
        return self.size // self.lanes

    @property
    def wbits(self) -> int:
        return int(math.log2(self.words))

    @property
    def qbits(self) -> int:
        return int(math.log2(QUEUE))

    def field(self, channel: str, name: str) -> str:
        """Verilog: the slice of ``<channel>_payload`` that holds field ``name``."""
        return _field(self.bus_width, channel, name, f"{channel}_payload")


_REQUEST_FIELDS = ("addr", "len", "size", "id", "user")


def dram_model(bus_width: int, size: int = DRAM_BYTES) -> str:
    """Verilog of module ``dram_model`` for a ``bus_width``-bit AXI4 port and ``size`` bytes
    (a power of two)."""
    g = _Shape(bus_width, size)
    return (_module_ports(g) + _module_state(g) + _data_channels(g) + _request_channels(g)
            + _response_channel(g) + _rule_checks(g) + _clocked(g))  # fmt: skip


def _module_ports(g: _Shape) -> str:
    decls = ",\n".join(
        f"  {'input' if d == 'in' else 'output'} wire [{b - 1}:0] {name}"
        for name, d, b in slave_ports(g.bus_width)
    )
    params = ",\n".join(f"  input wire [31:0] {p}" for p in PARAMETERS)
    return f"""// The simulation's DRAM (sim/dram.py): fixed latency, bandwidth and request limit.
module dram_model (
  input wire clk,
  input wire rst,
{params},
{decls}
);
"""


def _module_state(g: _Shape) -> str:
    """The memory, the clocks, the request queue, the write responses' queue, the counters."""
    bus_width, words, qbits = g.bus_width, g.words, g.qbits
    counters = [f"  reg [63:0] {c}_{op} = 64'd0;" for c in COUNTERS for op in OPERANDS]
    return f"""  reg [{bus_width - 1}:0] mem [0:{words - 1}];
  reg [63:0] now = 64'd0;
  reg [95:0] v = 96'd0;  // the bus's virtual clock, in 1/bw_num cycles
  // requests, in acceptance order
  reg        q_wr    [0:{QUEUE - 1}];
  reg [31:0] q_addr  [0:{QUEUE - 1}];
  reg [7:0]  q_len   [0:{QUEUE - 1}];
  reg [2:0]  q_size  [0:{QUEUE - 1}];
  reg [{ID_BITS - 1}:0]  q_id    [0:{QUEUE - 1}];
  reg [{USER_BITS - 1}:0]  q_user  [0:{QUEUE - 1}];
  reg [63:0] q_ready [0:{QUEUE - 1}];
  reg [{qbits}:0] q_head = 0, q_tail = 0;
  reg [{qbits}:0] outstanding = 0;
  reg [8:0]  beat = 9'd0;  // beats served of the head burst
  // write responses, in order
  reg [63:0] b_time [0:{QUEUE - 1}];
  reg [{ID_BITS - 1}:0]  b_ids  [0:{QUEUE - 1}];
  reg [{qbits}:0] b_head = 0, b_tail = 0;
{chr(10).join(counters)}
  reg [31:0] protocol_errors = 32'd0;  // requests and beats breaking a rule (sim/dram.py)

"""


def _data_channels(g: _Shape) -> str:
    """The one data bus: the head request's beats on R or W, on the beat clock."""
    qbits, wbits, shift = g.qbits, g.wbits, g.shift
    r = {name: f"r_payload[{lsb + bits - 1}:{lsb}]"
         for name, (lsb, bits) in field_slices(g.bus_width, "r").items()}  # fmt: skip
    return f"""  wire [{qbits - 1}:0] hq = q_head[{qbits - 1}:0];
  wire pending = q_head != q_tail;
  wire [95:0] ready_v = {{32'd0, q_ready[hq]}} * {{64'd0, bw_num}};
  wire [95:0] u = (v > ready_v) ? v : ready_v;
  wire eligible = pending && ({{32'd0, now}} * {{64'd0, bw_num}} >= u);
  wire [31:0] beat_bytes32 = 32'd1 << q_size[hq];
  wire [63:0] beat_bytes = {{32'd0, beat_bytes32}};
  wire [95:0] cost = {{64'd0, beat_bytes32}} * {{64'd0, bw_den}};
  wire [95:0] step = (cost > {{64'd0, bw_num}}) ? cost : {{64'd0, bw_num}};
  wire [31:0] addr = q_addr[hq] + ({{23'd0, beat}} << q_size[hq]);
  wire [{wbits - 1}:0] word = addr[{shift + wbits - 1}:{shift}];  // wraps past the end
  wire last_beat = beat[7:0] == q_len[hq];

  assign r_valid = eligible && !q_wr[hq];
  assign w_ready = eligible && q_wr[hq];
  wire r_take = r_valid && r_ready;
  wire w_take = w_valid && w_ready;
  assign {r["data"]} = mem[word];
  assign {r["resp"]} = 2'd0;
  assign {r["last"]} = last_beat;
  assign {r["id"]} = q_id[hq];

"""


def _request_channels(g: _Shape) -> str:
    """AR and AW: accepted while fewer than ``max_requests`` are outstanding, an AR first."""
    qbits = g.qbits
    return f"""  assign ar_ready = outstanding < max_requests[{qbits}:0];
  wire ar_take = ar_valid && ar_ready;
  assign aw_ready = (outstanding + {{{qbits}'d0, ar_take}}) < max_requests[{qbits}:0];
  wire aw_take = aw_valid && aw_ready;

"""


def _response_channel(g: _Shape) -> str:
    """B: each write's response ``latency`` cycles after its last beat, in order."""
    qbits = g.qbits
    b = {name: f"b_payload[{lsb + bits - 1}:{lsb}]"
         for name, (lsb, bits) in field_slices(g.bus_width, "b").items()}  # fmt: skip
    return f"""  wire [{qbits - 1}:0] hb = b_head[{qbits - 1}:0];
  assign b_valid = (b_head != b_tail) && now >= b_time[hb];
  assign {b["resp"]} = 2'd0;
  assign {b["id"]} = b_ids[hb];
  wire b_take = b_valid && b_ready;

"""


def _breaks(g: _Shape, ch: str) -> str:
    """Verilog: request ``ch`` breaks a rule (not INCR, wider than the bus, crosses 4 KB)."""
    f = {n: g.field(ch, n) for n in ("len", "size", "burst")}
    lsb = field_slices(g.bus_width, ch)["addr"][0]
    low = f"{ch}_payload[{lsb + 11}:{lsb}]"  # the address within its 4 KB page
    end = f"({{4'd0, {low}}} + (({{8'd0, {f['len']}}} + 16'd1) << {f['size']}))"
    return f"({f['burst']} != 2'd1) || ({f['size']} > 3'd{g.shift}) || ({end} > 16'd4096)"


def _rule_checks(g: _Shape) -> str:
    """The AXI4 rules the model checks (:data:`PROTOCOL_ERRORS`)."""
    qbits = g.qbits
    return f"""  wire [{qbits}:0] tail_aw = q_tail + {{{qbits}'d0, ar_take}};
  wire ar_breaks = {_breaks(g, "ar")};
  wire aw_breaks = {_breaks(g, "aw")};
  wire w_breaks = {g.field("w", "last")} != last_beat;
"""


def _enqueue(g: _Shape, take: str, tail: str, channel: str, write: int, ready: str) -> str:
    """Verilog that records an accepted request at queue slot ``tail``."""
    slot = f"{tail}[{g.qbits - 1}:0]"
    lines = [f"      if ({take}) begin", f"        q_wr[{slot}] <= 1'b{write};"]
    lines += [f"        q_{n}[{slot}] <= {g.field(channel, n)};" for n in _REQUEST_FIELDS]
    lines += [f"        q_ready[{slot}] <= {ready};", "      end"]
    return "\n".join(lines) + "\n"


def _clocked(g: _Shape) -> str:
    """The registers' updates: requests queued, beats served, responses sent, counts kept."""
    qbits = g.qbits
    count_updates = []
    for op, i in OPERANDS.items():
        count_updates.append(
            f"      if (r_take && q_user[hq] == {USER_BITS}'d{i}) begin "
            f"read_beats_{op} <= read_beats_{op} + 64'd1; "
            f"read_bytes_{op} <= read_bytes_{op} + beat_bytes; end"
        )
        count_updates.append(
            f"      if (w_take && q_user[hq] == {USER_BITS}'d{i}) begin "
            f"write_beats_{op} <= write_beats_{op} + 64'd1; "
            f"write_bytes_{op} <= write_bytes_{op} + beat_bytes; end"
        )
    # one bit and one byte of the W payload each, indexed directly (a part-select of a
    # part-select is SystemVerilog, which Icarus refuses)
    strb_lsb = field_slices(g.bus_width, "w")["strb"][0]
    data_lsb = field_slices(g.bus_width, "w")["data"][0]
    strobes = "\n".join(
        f"        if (w_payload[{strb_lsb + i}]) mem[word][{8 * i + 7}:{8 * i}] <= "
        f"w_payload[{data_lsb + 8 * i + 7}:{data_lsb + 8 * i}];"
        for i in range(g.lanes)
    )
    # requests in acceptance order; an AR and an AW in the same cycle: the AR first
    enqueue = _enqueue(g, "ar_take", "q_tail", "ar", 0, "now + {32'd0, latency}") + _enqueue(
        g, "aw_take", "tail_aw", "aw", 1, "now + 64'd1")  # fmt: skip
    return f"""  always @(posedge clk) begin
    if (rst) begin
      now <= 64'd0; v <= 96'd0; q_head <= 0; q_tail <= 0; outstanding <= 0; beat <= 9'd0;
      b_head <= 0; b_tail <= 0;
{chr(10).join(f"      {c}_{op} <= 64'd0;" for c in COUNTERS for op in OPERANDS)}
      protocol_errors <= 32'd0;
    end else begin
      protocol_errors <= protocol_errors + {{31'd0, ar_take && ar_breaks}}
                         + {{31'd0, aw_take && aw_breaks}} + {{31'd0, w_take && w_breaks}};
      now <= now + 64'd1;
{enqueue}      q_tail <= q_tail + {{{qbits}'d0, ar_take}} + {{{qbits}'d0, aw_take}};
      if (w_take) begin
{strobes}
      end
      if (r_take || w_take) begin
        v <= u + step;
        if (last_beat) begin
          q_head <= q_head + 1;
          beat <= 9'd0;
        end else begin
          beat <= beat + 9'd1;
        end
      end
      if (w_take && last_beat) begin
        b_time[b_tail[{qbits - 1}:0]] <= now + {{32'd0, latency}};
        b_ids[b_tail[{qbits - 1}:0]] <= q_id[hq];
        b_tail <= b_tail + 1;
      end
      if (b_take) b_head <= b_head + 1;
      outstanding <= outstanding + {{{qbits}'d0, ar_take}} + {{{qbits}'d0, aw_take}}
                     - {{{qbits}'d0, r_take && last_beat}} - {{{qbits}'d0, b_take}};
{chr(10).join(count_updates)}
    end
  end
endmodule
"""


def instance(
    bus_width: int, connections: dict[str, str]
) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """Verilog declaring the run-time parameters (``dram_<name>`` registers), instantiating
    ``dram_model`` as ``dram`` with its channel ports wired to ``connections`` (port -> net),
    and exposing its counters as ``dram_<counter>_<operand>``; with the names the testbench
    writes (parameters) and reads (counters)."""
    defaults = {"bw_num": 1, "bw_den": 1, "latency": 1, "max_requests": 64}
    lines = [f"  reg [31:0] dram_{p} = 32'd{defaults[p]};" for p in PARAMETERS]
    conns = ["    .clk(clk)", "    .rst(rst)"]
    conns += [f"    .{p}(dram_{p})" for p in PARAMETERS]
    conns += [f"    .{name}({connections[name]})" for name, _, _ in slave_ports(bus_width)]
    lines.append("  dram_model dram(\n" + ",\n".join(conns) + "\n  );")
    counters = tuple(f"dram_{c}_{op}" for c in COUNTERS for op in OPERANDS) + (PROTOCOL_ERRORS,)
    lines += [f"  wire [63:0] dram_{c}_{op} = dram.{c}_{op};" for c in COUNTERS for op in OPERANDS]
    lines.append(f"  wire [31:0] {PROTOCOL_ERRORS} = dram.protocol_errors;")
    lines += [
        "  reg dram_load = 1'b0;  // rising edge: load LOAD_FILE (with @word addresses)",
        f'  always @(posedge dram_load) $readmemh("{LOAD_FILE}", dram.mem);',
        "  reg dram_dump = 1'b0;  // rising edge: words first .. last to DUMP_FILE",
        "  reg [31:0] dram_dump_first = 32'd0;",
        "  reg [31:0] dram_dump_last = 32'd0;",
        f'  always @(posedge dram_dump) $writememh("{DUMP_FILE}", dram.mem, dram_dump_first, '
        "dram_dump_last);",
    ]
    writable = tuple(f"dram_{p}" for p in PARAMETERS) + BACKDOOR
    return "\n".join(lines) + "\n", writable, counters


def bench_top(bus_width: int) -> tuple[str, list[tuple[str, str, int]], tuple, tuple]:
    """``sim_top`` of the DRAM model alone, its channels at the top for a cocotb master: the
    Verilog, its ports, and the writable and readable nets."""
    ports = [("rst", "in", 1)] + slave_ports(bus_width)
    decls = ",\n".join(f"  {'input' if d == 'in' else 'output'} wire [{b - 1}:0] {name}"
                       for name, d, b in ports)  # fmt: skip
    body, writable, readable = instance(bus_width, {name: name for name, _, _ in ports})
    text = (f"`timescale 1ns/1ps\nmodule sim_top(\n{decls}\n);\n  reg clk = 1'b0;\n"
            f"  always #5 clk = ~clk;\n{body}endmodule\n")  # fmt: skip
    return text, ports, writable, readable


def image_lines(bus_width: int, regions: dict[int, bytes]) -> str:
    """The text of :data:`LOAD_FILE` placing each ``bytes`` at its byte address (aligned to the
    bus; the last word of a region is zero-padded)."""
    lanes = bus_width // 8
    out = []
    for address, blob in sorted(regions.items()):
        if address % lanes:
            raise ValueError(f"a DRAM region must start on a {lanes}-byte boundary, not {address}")
        out.append(f"@{address // lanes:x}")
        padded = blob + bytes(-len(blob) % lanes)
        for i in range(0, len(padded), lanes):
            out.append(padded[i : i + lanes][::-1].hex())  # little-endian: byte 0 lowest
    return "\n".join(out) + "\n"


def read_dump(text: str, bus_width: int) -> bytes:
    """The bytes of a :data:`DUMP_FILE`, in address order."""
    lanes = bus_width // 8
    words = []
    for line in text.splitlines():  # Icarus heads the dump with an address comment
        words += [w for w in line.split("//", 1)[0].split() if not w.startswith("@")]
    return b"".join(bytes.fromhex(w.rjust(2 * lanes, "0"))[::-1] for w in words)
