"""The simulation wrapper's Verilog: the design under a module (``SIM_TOP``) whose clock runs
inside the simulation, with what the bench needs around it: the DRAM model behind the device's
AXI4 port (or the port at the wrapper's edge), the bench monitor that counts a descriptor's
cycles itself, the trace logger, the activity counters, and the Verilator control file that
makes only the wrapper's ports public. sim/build.py compiles it."""

from __future__ import annotations

from systolic.contract import axi
from systolic.contract.activity import UNPRICED
from systolic.contract.config import ArrayConfig
from systolic.contract.interface import COUNTER_BITS, DEVICE_COUNTERS
from systolic.contract.trace import LOG_FILE
from systolic.rtl.dma import load_layout

from . import dram
from .probes import Probe

__all__ = [
    "ACTIVITY_PREFIX",
    "counter_names",
    "CLOCK_PERIOD_NS",
    "MEMORIES",
    "SIM_TOP",
    "activity_counters",
    "device_wrapper",
    "public_ports",
    "wrapper",
]

#: The module cocotb sees: the design under a wrapper whose clock runs inside the simulation.
SIM_TOP = "sim_top"

#: The wrapper's clock period.
CLOCK_PERIOD_NS = 10


def wrapper(
    top: str, ports: list[tuple[str, str, int]], extra: str = "", internal: list | None = None,
    top_only: list | None = None, nets: dict[str, str] | None = None,
) -> str:  # fmt: skip
    """``SIM_TOP``: the design with a free-running clock, its other ports passed through (but
    ``internal`` ones, wires inside the wrapper), ``top_only`` ports of the wrapper alone, and
    ``extra`` Verilog (activity counters, backdoor loads, the DRAM model) inside. ``nets``:
    the wrapper net a design port connects to, where it is not the port's own name."""
    internal, nets = internal or [], nets or {}
    decls = ",\n".join(
        f"  {'input' if d == 'in' else 'output'} wire [{w - 1}:0] {name}"
        for name, d, w in ports + (top_only or [])
    )
    wires = "".join(f"  wire [{w - 1}:0] {nets.get(name, name)};\n" for name, _, w in internal)
    conns = ",\n".join(f"    .{name}({nets.get(name, name)})" for name, _, _ in ports + internal)
    half = CLOCK_PERIOD_NS // 2
    return (
        f"`timescale 1ns/1ps\nmodule {SIM_TOP}(\n{decls}\n);\n"
        f"  reg clk = 1'b0;\n  always #{half} clk = ~clk;\n{wires}"
        f"  {top} dut(\n    .clk(clk),\n{conns}\n  );\n{extra}endmodule\n"
    )


_BENCH_MONITOR = """  // bench monitor: cycles from a descriptor's acceptance to its done
  wire posted = dut.control.desc__valid & dut.control.desc__ready;  // DOORBELL into the queue
  reg [63:0] bench_cycles = 64'd0;
  reg bench_running = 1'b0;
  always @(posedge clk) begin
    if (posted & ~bench_running) begin
      bench_running <= 1'b1;
      bench_cycles <= 64'd0;
    end else if (bench_running) begin
      if (done) bench_running <= 1'b0;
      else bench_cycles <= bench_cycles + 64'd1;
    end
  end
"""


# The events of contract/trace.py, logged from the engines' handshakes with the bench monitor's
# cycle: a load's code is its kind (the read command's low bits) and bank, a store's its C bank.
# A load in parts (the command's ``more`` bit: rtl.dma.load_layout) starts with its first.
def _trace_logger(config: ArrayConfig) -> str:
    more = load_layout(config)["more"].offset
    return f"""  // trace logger (contract/trace.py): the engines' events while trace_on is set
  reg trace_on = 1'b0;
  integer trace_fd = 0;
  always @(posedge trace_on) trace_fd = $fopen("{LOG_FILE}", "w");
  always @(negedge trace_on) begin $fclose(trace_fd); trace_fd = 0; end
  reg [31:0] trace_chunk = 32'd0;
  reg [3:0] trace_part = 4'd0;  // per load kind: its last command had more parts to come
  always @(posedge clk) begin
    if (posted) trace_chunk <= 32'd0;
    if (dut.reader.cmd__valid & dut.reader.cmd__ready)
      trace_part[dut.reader.cmd__payload[1:0]] <= dut.reader.cmd__payload[{more}];
    if (trace_on) begin
      if (dut.reader.cmd__valid & dut.reader.cmd__ready & ~trace_part[dut.reader.cmd__payload[1:0]])
        $fwrite(trace_fd, "%0d load %0d %0d\\n", bench_cycles, dut.reader.cmd__payload[1:0],
                dut.reader.cmd__payload[2]);
      if (dut.reader.loaded__valid)
        $fwrite(trace_fd, "%0d loaded %0d %0d\\n", bench_cycles,
                dut.reader.loaded__payload[1:0], dut.reader.loaded__payload[2]);
      if (dut.controller.start) begin
        $fwrite(trace_fd, "%0d compute %0d\\n", bench_cycles, trace_chunk);
      end
      if (dut.controller.done) begin
        $fwrite(trace_fd, "%0d computed %0d\\n", bench_cycles, trace_chunk);
        trace_chunk <= trace_chunk + 32'd1;
      end
      if (dut.writer.cmd__valid & dut.writer.cmd__ready)
        $fwrite(trace_fd, "%0d store %0d\\n", bench_cycles, dut.writer.cmd__payload[2]);
      if (dut.writer.stored__valid)
        $fwrite(trace_fd, "%0d stored %0d\\n", bench_cycles, dut.writer.stored__payload);
    end
  end
"""


#: The queue log: while ``queue_on`` is set, each descriptor's acceptance (``<cycle> post``) and
#: completion (``<cycle of done> done <refusal> <counters>``, the counters the registers show
#: after it, in DEVICE_COUNTERS order), on the clock ``bench_clock``; ``bench_dones`` counts the
#: completions. A queued run (tb/device_tb.py) reads each descriptor's figures from it: the
#: next one may complete before a CPU could read them over AXI4-Lite.
QUEUE_LOG = "device_queue.txt"


def _queue_logger() -> str:
    slices = ", ".join(f"dut.device_counter[{COUNTER_BITS * i + COUNTER_BITS - 1}:"
                       f"{COUNTER_BITS * i}]" for i in range(len(DEVICE_COUNTERS)))  # fmt: skip
    formats = " ".join(["%0d"] * len(DEVICE_COUNTERS))
    return f"""  // queue log (sim/wrapper.py QUEUE_LOG)
  reg queue_on = 1'b0;
  integer queue_fd = 0;
  always @(posedge queue_on) queue_fd = $fopen("{QUEUE_LOG}", "w");
  always @(negedge queue_on) begin $fclose(queue_fd); queue_fd = 0; end
  reg [63:0] bench_clock = 64'd0;
  reg [63:0] bench_dones = 64'd0;
  reg done_seen = 1'b0;
  reg [3:0] done_error = 4'd0;
  always @(posedge clk) begin
    bench_clock <= bench_clock + 64'd1;
    done_seen <= done;
    if (done) begin
      bench_dones <= bench_dones + 64'd1;
      done_error <= dut.error;
    end
    if (queue_on) begin
      if (posted) $fwrite(queue_fd, "%0d post\\n", bench_clock);
      if (done_seen)
        $fwrite(queue_fd, "%0d done %0d {formats}\\n", bench_clock - 64'd1, done_error,
                {slices});
    end
  end
"""


#: Where the device's AXI4 port goes in a build: to the DRAM model inside the wrapper, or out
#: of it as ``m_axi_<channel><field>`` ports (the names SoC tools and cocotbext-axi expect).
MEMORIES = ("dram", "port")


def _at_edge(ports: list[tuple[str, str, int]]) -> tuple[list, dict, str]:
    """Design ports brought to the wrapper's edge for a cocotb model of the other side (the
    AXI4-Lite master that programs the device, or cocotbext-axi's RAM on its AXI4 port): the
    design's nets (``dut_<port>``, internal wires), their names, and the Verilog between.

    A cocotb bus model samples each handshake at the rising edge and expects the values the
    design saw at that edge; under Verilator with the clock inside the wrapper, what a
    coroutine reads after ``RisingEdge`` is the value after the edge (a write from it lands at
    the next edge, as expected). So the design's outputs reach the edge through registers that
    hold what it drove at the last edge, and the model's go in directly: each side then sees
    the other as a simulator with pre-edge sampling shows it."""
    nets = {name: f"dut_{name}" for name, _, _ in ports}
    lines = []
    for name, direction, bits in ports:
        if direction == "out":
            lines += [f"  reg [{bits - 1}:0] {name}_q = {bits}'d0;",
                      f"  always @(posedge clk) {name}_q <= dut_{name};",
                      f"  assign {name} = {name}_q;"]  # fmt: skip
        else:
            lines.append(f"  assign dut_{name} = {name};")
    return list(ports), nets, "\n".join(lines) + "\n"


def _channels_to_dram(config: ArrayConfig) -> tuple[dict[str, str], str]:
    """The ``m_axi_*`` signals packed into the DRAM model's channel payloads
    (:func:`contract.axi.field_slices`): its connections and the Verilog."""
    connections, lines = {}, []
    for channel in ("ar", "r", "aw", "w", "b"):
        sends = channel in ("ar", "aw", "w")
        fields = axi.field_slices(config.bus_width, channel)
        width = sum(bits for _, bits in fields.values())
        net = f"mem__{channel}__"
        lines.append(f"  wire {net}valid, {net}ready;\n  wire [{width - 1}:0] {net}payload;")
        packed = "{" + ", ".join(f"m_axi_{channel}{name}" for name in reversed(fields)) + "}"
        if sends:
            lines += [f"  assign {net}valid = m_axi_{channel}valid;",
                      f"  assign m_axi_{channel}ready = {net}ready;",
                      f"  assign {net}payload = {packed};"]  # fmt: skip
        else:
            lines += [f"  assign m_axi_{channel}valid = {net}valid;",
                      f"  assign {net}ready = m_axi_{channel}ready;",
                      f"  assign {packed} = {net}payload;"]  # fmt: skip
        connections |= {f"{channel}_{sig}": f"{net}{sig}" for sig in ("valid", "ready", "payload")}
    return connections, "\n".join(lines) + "\n"


def device_wrapper(config: ArrayConfig, ports: list[tuple[str, str, int]], memory: str):
    """How the device sits in ``SIM_TOP``: its AXI4-Lite port at the wrapper's edge
    (:func:`_at_edge`), its AXI4 port on the DRAM model (``memory="dram"``, sim/dram.py) or at
    the edge too (``"port"``, as ``m_axi_<channel><field>``). Returns the device's ports
    passed through, those on nets inside, the wrapper's own ports at the edge, the nets'
    names, the Verilog, and the writable and readable nets; the bench monitor counts the
    cycles from each descriptor's acceptance to its ``done``."""
    lite = [p for p in ports if p[0].startswith("s_axil_")]
    mem = [p for p in ports if p[0].startswith("m_axi_")]
    rest = [p for p in ports if p not in lite and p not in mem]
    edge, nets, text = _at_edge(lite)
    internal = list(lite)
    writable: tuple[str, ...] = ("trace_on", "queue_on")
    readable: tuple[str, ...] = ("bench_cycles", "bench_dones")
    if memory == "port":
        mem_edge, mem_nets, mem_text = _at_edge(mem)
        edge, text = edge + mem_edge, text + mem_text
        nets |= mem_nets
    else:
        connections, packing = _channels_to_dram(config)
        body, dram_writable, dram_readable = dram.instance(config.bus_width, connections)
        text += packing + body
        writable += dram_writable
        readable += dram_readable
    internal += mem
    text += _BENCH_MONITOR + _trace_logger(config) + _queue_logger()
    return rest, internal, edge, nets, text, writable, readable


#: Prefix of the activity counters' names in ``SIM_TOP`` (``act_<n>``).
ACTIVITY_PREFIX = "act_"
_TERMS_PER_WIRE = 64  # popcount terms summed per intermediate net (keeps expressions small)


#: The net that opens the activity window: the array's controller busy with a chunk.
ACTIVITY_WINDOW = "dut.controller.busy"


def _duty_counted(probe: Probe) -> bool:
    """Whether a per-net build counts the probe's high cycles bit by bit: the mesh's registers
    (the PEs' and the skew registers), whose logic the energy model's calibration prices. The
    rest keeps OpenSTA's default duty of one half: its propagation around the memory side's
    unmeasured FIFO and counter loops diverges with measured duties (docs/energy.md)."""
    return probe.flop and (probe.path.startswith("array.") or probe.path == "array")


def _partial_products(probes: list[Probe], per_net: bool, first: int, lines: list[str],
                      updates: list[str], described: list[dict]) -> None:  # fmt: skip
    """Counters of the multipliers' partial-product flips (group ``multiplier/products``; per
    PE with ``per_net``): partial product ``(i, j)`` of ``a * b`` is ``a_i b_j``, so from one
    cycle to the next ``ones(a) ones(b) + ones(a') ones(b') - 2 ones(a & a') ones(b & b')`` of
    them flip. The activity an array multiplier's AND plane sees, which operand flips alone do
    not tell: a flip of ``a`` against a zero ``b`` moves nothing."""
    operands: dict[str, dict[str, int]] = {}
    for i, probe in enumerate(probes):
        inst, _, name = probe.path.rpartition(".")
        if probe.component == "multiplier" and name in ("mul_a", "mul_b"):
            operands.setdefault(inst, {})[name] = i
    terms = []
    for k, (inst, ops) in enumerate(sorted(operands.items())):
        a, b = ops["mul_a"], ops["mul_b"]
        now_a, now_b = f"dut.{probes[a].verilog}", f"dut.{probes[b].verilog}"
        net = f"pp_{k}"
        lines.append(
            f"  wire [31:0] {net} = $countones({now_a}) * $countones({now_b}) "
            f"+ $countones(prev_{a}) * $countones(prev_{b}) "
            f"- 2 * $countones({now_a} & prev_{a}) * $countones({now_b} & prev_{b});"
        )
        terms.append((inst, net, probes[a].width * probes[b].width))
    groups = [[t] for t in terms] if per_net else [terms] if terms else []
    for n, group in enumerate(groups, start=first):
        counter = f"{ACTIVITY_PREFIX}{n}"
        parts = []
        for start in range(0, len(group), _TERMS_PER_WIRE):
            net = f"{counter}_{start // _TERMS_PER_WIRE}"
            lines.append(
                f"  wire [31:0] {net} = "
                + " + ".join(t[1] for t in group[start : start + _TERMS_PER_WIRE])
                + ";"
            )
            parts.append(net)
        lines.append(f"  reg [63:0] {counter} = 64'd0;")
        updates.append(f"    if ({ACTIVITY_WINDOW}) {counter} <= {counter} + "
                       f"{{32'd0, {' + '.join(parts)}}};")  # fmt: skip
        entry = {"counter": counter, "component": "multiplier", "traffic": "products",
                 "bits": sum(t[2] for t in group)}  # fmt: skip
        described.append(entry | ({"path": f"{group[0][0]}.partial_products"} if per_net else {}))


def counter_names(entry: dict) -> list[str]:
    """Every counter of one described group or net (:func:`activity_counters`)."""
    return [entry["counter"], *entry.get("bit_flips", ()), *entry.get("high", ())]


def activity_counters(probes: list[Probe], per_net: bool) -> tuple[str, list[dict]]:
    """Verilog counting the probed bits that change at each clock edge that starts a cycle of
    :data:`ACTIVITY_WINDOW`, per (component, traffic) group of the priced probes, or with
    ``per_net`` per probed net, every probe (gate-level power takes each register's activity);
    and the counters' descriptions for the testbench.

    Each probe's value is kept from the previous cycle; at every rising edge while the array's
    controller is busy the popcount of ``now ^ before`` is added to its counter (64 bits). So a
    counter holds the bit flips that happened at the edges opening the controller's busy cycles,
    chunk by chunk: from the edge that starts a chunk to the one before its ``busy`` falls (what
    the DMA moves between chunks is priced by the words, not by toggles). Per-net counting runs
    about 1.6x slower (OS 8x8), so it is a build of its own. For the mesh's registers
    (:func:`_duty_counted`) it also counts, bit by bit, the flips (``bit_flips``) and the cycles
    the bit held a 1 (``high``): the duty cycles gate-level power needs to propagate activity
    through the logic a register drives (a ``valid`` or ``last`` flag gates a whole word's
    muxes, a sign bit flips less than the bits below it)."""
    if not per_net:
        probes = [p for p in probes if p.component not in UNPRICED]
    keyed: dict[object, list[int]] = {}
    for i, probe in enumerate(probes):
        keyed.setdefault(probe.path if per_net else (probe.component, probe.traffic), []).append(i)
    lines = ["  // switching activity, per " + ("probed net" if per_net else "group")]
    lines += [f"  reg [{p.width - 1}:0] prev_{i} = {p.width}'d0;" for i, p in enumerate(probes)]
    updates, described = [], []
    for n, members in enumerate(keyed.values()):
        counter = f"{ACTIVITY_PREFIX}{n}"
        parts = []
        for start in range(0, len(members), _TERMS_PER_WIRE):
            chunk = members[start : start + _TERMS_PER_WIRE]
            net = f"{counter}_{start // _TERMS_PER_WIRE}"
            terms = " + ".join(f"$countones(prev_{i} ^ dut.{probes[i].verilog})" for i in chunk)
            lines.append(f"  wire [31:0] {net} = {terms};")
            parts.append(net)
        lines.append(f"  reg [63:0] {counter} = 64'd0;")
        total = " + ".join(parts)
        updates.append(f"    if ({ACTIVITY_WINDOW}) {counter} <= {counter} + {{32'd0, {total}}};")
        first = probes[members[0]]
        entry = {"counter": counter, "component": first.component, "traffic": first.traffic,
                 "bits": sum(probes[i].width for i in members)}  # fmt: skip
        if per_net:
            entry["path"] = first.path
            if len(members) == 1 and _duty_counted(first):
                i, net = members[0], f"dut.{first.verilog}"
                entry["bit_flips"] = [f"{counter}_f{b}" for b in range(first.width)]
                entry["high"] = [f"{counter}_h{b}" for b in range(first.width)]
                for b in range(first.width):
                    flips, high = entry["bit_flips"][b], entry["high"][b]
                    lines.append(f"  reg [63:0] {flips} = 64'd0;")
                    lines.append(f"  reg [63:0] {high} = 64'd0;")
                    updates.append(f"    if ({ACTIVITY_WINDOW}) {flips} <= {flips} + "
                                   f"{{63'd0, prev_{i}[{b}] ^ {net}[{b}]}};")  # fmt: skip
                    updates.append(f"    if ({ACTIVITY_WINDOW}) {high} <= {high} + "
                                   f"{{63'd0, {net}[{b}]}};")  # fmt: skip
        described.append(entry)
    _partial_products(probes, per_net, len(described), lines, updates, described)
    lines.append("  always @(posedge clk) begin")
    lines += [f"    prev_{i} <= dut.{probe.verilog};" for i, probe in enumerate(probes)]
    lines += updates
    lines.append("  end")
    return "\n".join(lines) + "\n", described


# Only the wrapper's ports (and its clock, read-only) are visible to cocotb through VPI. The
# runner always passes --public-flat-rw, which makes every signal public and slows the model
# several times; the negation after it undoes that, and this control file adds the ports back.
def public_ports(
    ports: list[tuple[str, str, int]],
    readable: tuple[str, ...] = (),
    writable: tuple[str, ...] = (),
) -> str:
    lines = [f'public_flat_rd -module "{SIM_TOP}" -var "{name}"' for name in ("clk", *readable)]
    lines += [f'public_flat_rw -module "{SIM_TOP}" -var "{name}"' for name in writable]
    for name, direction, _ in ports:
        access = "rw" if direction == "in" else "rd"
        lines.append(f'public_flat_{access} -module "{SIM_TOP}" -var "{name}"')
    return "\n".join(["`verilator_config", *lines, ""])
