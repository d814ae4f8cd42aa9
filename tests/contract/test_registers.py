"""contract/registers.py and contract/regdocs.py: a register map a driver can rely on (aligned,
non-overlapping, every descriptor field and counter reachable at full width, the same offset
in every configuration), and a C header that compiles under ``cc -Wall -Werror`` and gives a
compiled program the same numbers."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from systolic.contract.config import ArrayConfig
from systolic.contract.dma import LOOP_ORDERS, Refusal, descriptor_fields
from systolic.contract.interface import COUNTER_BITS, DEVICE_COUNTERS
from systolic.contract.regdocs import HEADER_NAME, c_header, markdown
from systolic.contract.registers import (
    ADDR_BITS,
    Access,
    config_hash,
    counter_words,
    descriptor_writes,
    register_map,
)

CONFIGS = [
    ArrayConfig("ws", 4, 4),
    ArrayConfig("os", 2, 3, zero_points=True, a_width=6, b_width=5, acc_width=20),
    ArrayConfig("is", 8, 2, requant=True, out_width=4, requant_float=True),
    ArrayConfig("ws", 3, 5, number="bf16", bus_width=64, queue_depth=4),
]
IDS = [c.name for c in CONFIGS]


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_registers_are_aligned_distinct_and_inside_the_window(config):
    regs = register_map(config)
    offsets = [r.offset for r in regs]
    assert len(set(offsets)) == len(offsets)
    assert all(o % 4 == 0 and 0 <= o < 1 << ADDR_BITS for o in offsets)
    assert len({r.name for r in regs}) == len(regs)
    for r in regs:
        bits = set()
        for f in r.fields:
            assert f.lsb >= 0 and f.lsb + f.bits <= 32, (r.name, f.name)
            span = set(range(f.lsb, f.lsb + f.bits))
            assert not bits & span, f"{r.name}.{f.name} overlaps another field"
            bits |= span


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_every_descriptor_field_and_counter_has_a_register_wide_enough(config):
    by_name = {r.name: r for r in register_map(config)}
    for name, bits in descriptor_fields(config):
        reg = by_name[f"DESC_{name.upper()}"]
        assert reg.access is Access.RW and reg.fields[0].bits == bits
    words = counter_words(config)
    assert set(words) == set(DEVICE_COUNTERS)
    for lo, hi in words.values():
        assert hi == lo + 4
    hi = by_name["COUNTER_CYCLES_HI"]
    assert 32 + hi.fields[0].bits == COUNTER_BITS


def test_a_field_keeps_its_offset_across_configurations():
    offsets: dict[str, set[int]] = {}
    for config in CONFIGS:
        for r in register_map(config):
            offsets.setdefault(r.name, set()).add(r.offset)
    assert all(len(o) == 1 for o in offsets.values()), offsets


def test_identification_registers_describe_the_configuration():
    config = CONFIGS[1]
    by_name = {r.name: r for r in register_map(config)}
    assert by_name["ID"].value == int.from_bytes(b"SYST", "big")
    fmt = by_name["HW_FORMAT"].unpack(by_name["HW_FORMAT"].value)
    assert fmt == {"dataflow": 1, "bf16": 0, "zero_points": 1, "requant": 0, "vector": 0,
                   "requant_float": 0, "a_width": 6, "b_width": 5, "acc_width": 20}  # fmt: skip
    other = {r.name: r for r in register_map(CONFIGS[2])}["HW_FORMAT"]
    assert other.unpack(other.value)["requant_float"] == 1  # float scales, DESC_FLOAT_SCALE
    assert by_name["HW_ARRAY"].unpack(by_name["HW_ARRAY"].value) == {"rows": 2, "cols": 3}
    assert by_name["HW_Q_DEPTH"].value == 0  # no requantization unit
    assert config_hash(config) != config_hash(CONFIGS[0])


def test_descriptor_writes_cut_signed_values_to_their_field_and_ring_last():
    config = CONFIGS[1]
    values = {name: 0 for name, _ in descriptor_fields(config)} | {"m": 7, "a_zero": -3}
    writes = dict(descriptor_writes(config, values))
    by_name = {r.name: r for r in register_map(config)}
    assert writes[by_name["DESC_M"].offset] == 7
    assert writes[by_name["DESC_A_ZERO"].offset] == (1 << 6) - 3  # 6 bits, two's complement
    assert descriptor_writes(config, values)[-1] == (by_name["DOORBELL"].offset, 1)
    with pytest.raises(ValueError, match="no field"):
        by_name["STATUS"].pack(bogus=1)


def _compiler() -> str:
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "a C compiler (cc) is needed: the Verilator builds use it too"
    return cc


@pytest.mark.parametrize("config", CONFIGS[1:3], ids=IDS[1:3])
def test_the_c_header_compiles_cleanly_and_gives_a_program_the_same_numbers(config, tmp_path):
    (tmp_path / HEADER_NAME).write_text(c_header(config))
    regs = register_map(config)
    checks = [(f"SYSTOLIC_{r.name}", r.offset) for r in regs]
    checks += [(f"SYSTOLIC_{r.name}_EXPECTED", r.value) for r in regs if r.value is not None]
    for r in regs:
        if [f.name for f in r.fields] != ["value"]:
            for f in r.fields:
                checks.append((f"SYSTOLIC_{r.name}_{f.name.upper()}_SHIFT", f.lsb))
                checks.append((f"SYSTOLIC_{r.name}_{f.name.upper()}_MASK", f.mask))
    checks += [(f"SYSTOLIC_ORDER_{o.upper()}", i) for i, o in enumerate(LOOP_ORDERS)]
    checks += [(f"SYSTOLIC_REFUSAL_{r.name}", r.value) for r in Refusal]
    lines = "\n".join(
        f'    printf("{name} %lu\\n", (unsigned long)({name}));' for name, _ in checks
    )
    (tmp_path / "main.c").write_text(
        f'#include <stdio.h>\n#include "{HEADER_NAME}"\n'
        "static uint32_t fake[SYSTOLIC_WINDOW_BYTES / 4];\n"
        "int main(void) {\n"
        "    SYSTOLIC_REG(fake, SYSTOLIC_IRQ_ENABLE) = 3u;\n"
        "    if (fake[SYSTOLIC_IRQ_ENABLE / 4] != 3u) return 1;\n"
        f"{lines}\n    return 0;\n}}\n"
    )
    cc = _compiler()
    flags = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]
    subprocess.run([cc, *flags, "-o", "main", "main.c"], cwd=tmp_path, check=True)
    out = subprocess.run(["./main"], cwd=tmp_path, check=True, capture_output=True, text=True)
    got = dict(line.split() for line in out.stdout.splitlines())
    assert {k: int(v) for k, v in got.items()} == dict(checks)


def test_the_register_map_document_lists_every_register():
    config = CONFIGS[2]
    text = markdown(config)
    for r in register_map(config):
        assert re.search(rf"\| 0x{r.offset:03x} \| `{r.name}` \| {r.access.value} \|", text), r.name


def test_the_readmes_bare_metal_example_compiles_against_a_generated_header(tmp_path):
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("## Using the Verilog in your design", 1)[1]
    example = re.search(r"```c\n(.*?)```", section, re.S).group(1)
    (tmp_path / HEADER_NAME).write_text(c_header(ArrayConfig("ws", 8, 8)))
    (tmp_path / "gemm.c").write_text(
        example
        + "\nint main(void) { return (int)gemm(1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0); }\n"
    )
    flags = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]
    subprocess.run([_compiler(), *flags, "-c", "gemm.c"], cwd=tmp_path, check=True)
