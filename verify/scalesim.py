"""SCALE-Sim (PyPI ``scalesim`` 3.0.0) on the same array, dataflow and GEMM, for comparison.

SCALE-Sim's GEMM topology rows are ``name, M, N, K,`` for ``C[M,N] = A[M,K] @ B[K,N]`` (it maps
them to a 1-pixel-wide convolution: ``M`` output rows, ``N`` filters, window ``K``), and its
dataflows place M, K, N on rows, columns and time as ours do (OS: M x N, streaming K; WS: K x N,
streaming M; IS: K x M, streaming N). It simulates cycle by cycle in Python, so it is slow on
large layers: it runs in a subprocess (it prints and may call ``exit()``), and only when asked.
Its "Total Cycles" column (compute, without the SRAM prefetch) is what is reported here.
"""

from __future__ import annotations

import csv
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

from systolic.contract.config import ArrayConfig

__all__ = ["available", "scalesim_cycles"]

_CONFIG = """\
[general]
run_name = systolic

[run_presets]
InterfaceBandwidth = CALC
UseRamulatorTrace = False

[architecture_presets]
ArrayHeight = {rows}
ArrayWidth = {cols}
IfmapSramSzkB = 8192
FilterSramSzkB = 8192
OfmapSramSzkB = 8192
IfmapOffset = 0
FilterOffset = 100000000
OfmapOffset = 200000000
Dataflow = {dataflow}
Bandwidth = 10
ReadRequestBuffer = 32
WriteRequestBuffer = 32

[layout]
IfmapCustomLayout = False
FilterCustomLayout = False
IfmapSRAMBankBandwidth = 10
IfmapSRAMBankNum = 10
IfmapSRAMBankPort = 2
FilterSRAMBankBandwidth = 10
FilterSRAMBankNum = 10
FilterSRAMBankPort = 2

[sparsity]
SparsitySupport = false
"""

_RUN = """\
from scalesim.scale_sim import scalesim
sim = scalesim(save_disk_space=True, verbose=False, config="cfg.cfg", topology="topo.csv",
               layout="layout.csv", input_type_gemm=True)
sim.run_scale(top_path="out")
"""


def available() -> bool:
    """Whether the optional ``scalesim`` package is installed (``pip install .[scalesim]``)."""
    return importlib.util.find_spec("scalesim") is not None


def scalesim_cycles(config: ArrayConfig, m: int, k: int, n: int, timeout: float = 1800) -> int:
    """SCALE-Sim's total compute cycles for ``C[m,n] = A[m,k] @ B[k,n]`` on ``config``'s array."""
    if not available():
        raise RuntimeError("SCALE-Sim is not installed: pip install '.[scalesim]'")
    with tempfile.TemporaryDirectory(prefix="scalesim-") as tmp:
        work = Path(tmp)
        cfg = _CONFIG.format(rows=config.rows, cols=config.cols, dataflow=config.dataflow.value)
        (work / "cfg.cfg").write_text(cfg)
        (work / "topo.csv").write_text(f"Layer, M, N, K,\ngemm, {m}, {n}, {k},\n")
        (work / "layout.csv").write_text("Layer,\n")  # 3.0.0 requires a layout file
        proc = subprocess.run(
            [sys.executable, "-c", _RUN], cwd=work, capture_output=True, text=True,
            timeout=timeout, check=False,
        )  # fmt: skip
        report = work / "out" / "systolic" / "COMPUTE_REPORT.csv"
        if proc.returncode != 0 or not report.exists():
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
            raise RuntimeError(f"SCALE-Sim failed on {config.name} {m}x{k}x{n}: {tail}")
        with open(report) as f:
            rows = [[cell.strip() for cell in row] for row in csv.reader(f)]
        header, values = rows[0], rows[1]
        return int(values[header.index("Total Cycles")])
