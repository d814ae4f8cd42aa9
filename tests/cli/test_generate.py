"""`systolic generate`: the Verilog and config.json it writes, from options or a config file."""

from __future__ import annotations

import json

from systolic.contract.config import ArrayConfig
from systolic.contract.registers import config_hash

from ..helpers import run_cli


def test_generate_writes_verilog_and_config(tmp_path):
    out = tmp_path / "gen"
    r = run_cli(
        "generate",
        "--dataflow",
        "is",
        "--rows",
        "3",
        "--cols",
        "2",
        "--a-width",
        "4",
        "--a-unsigned",
        "--acc-width",
        "20",
        "--out",
        str(out),
        "--lint",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["name"] == "is-3x2-au4-bi8-acc20"
    assert report["lint"]["clean"] is True
    assert "module systolic_device(" in (out / "systolic_device.v").read_text()
    config = ArrayConfig.from_json((out / "config.json").read_text())
    assert config == ArrayConfig("is", 3, 2, a_width=4, a_signed=False, acc_width=20)
    # beside the Verilog, the register map and the C header of the same definition
    assert report["registers"] == str(out / "registers.md")
    assert "| 0x044 | `STATUS` | ro |" in (out / "registers.md").read_text()
    header = (out / "systolic_regs.h").read_text()
    assert "#define SYSTOLIC_DOORBELL 0x040u" in header
    assert f"#define SYSTOLIC_CONFIG_HASH_EXPECTED 0x{config_hash(config):08x}u" in header


def test_generate_from_config_file(tmp_path):
    (tmp_path / "c.json").write_text(ArrayConfig("os", 2, 2).to_json())
    r = run_cli("generate", "--config", "c.json", "--cols", "4", "--design", "array", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "os-2x4-i8-acc32" / "systolic_array.v").is_file()
