"""Read what synthesis needs from a Liberty file (each cell's area, leakage, pins and whether it
is a flip-flop), and write one for the SRAM macros, so that OpenSTA times the paths into and out
of them instead of leaving them unconstrained."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from systolic.contract.memories import Sram

__all__ = ["Cell", "read_cells", "sram_liberty"]


@dataclass(frozen=True)
class Cell:
    name: str
    area: float  # square micrometres
    leakage_nw: float
    sequential: bool  # a flip-flop or latch
    inputs: tuple[str, ...] = ()  # data input pins (clock pins excluded)
    outputs: tuple[str, ...] = ()
    clocks: tuple[str, ...] = ()  # clock input pins


_CELL = re.compile(r"^\s*cell\s*\(\s*\"?(\w+)\"?\s*\)\s*\{", re.M)
_PIN = re.compile(r"^\s*pin\s*\(\s*\"?(\w+)\"?\s*\)\s*\{", re.M)


def _pins(body: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """A cell's data input pins, output pins and clock pins."""
    starts = [(m.group(1), m.start()) for m in _PIN.finditer(body)]
    inputs, outputs, clocks = [], [], []
    for i, (name, start) in enumerate(starts):
        pin = body[start : starts[i + 1][1] if i + 1 < len(starts) else len(body)]
        direction = re.search(r"\bdirection\s*:\s*(\w+)", pin)
        if direction and direction.group(1) == "output":
            outputs.append(name)
        elif direction and re.search(r"\bclock\s*:\s*true", pin) is None:
            inputs.append(name)
        elif direction:
            clocks.append(name)
    return tuple(inputs), tuple(outputs), tuple(clocks)


def read_cells(path: Path) -> dict[str, Cell]:
    """Every cell of the Liberty file ``path``, by name."""
    text = path.read_text()
    starts = [(m.group(1), m.start()) for m in _CELL.finditer(text)]
    cells = {}
    for i, (name, start) in enumerate(starts):
        body = text[start : starts[i + 1][1] if i + 1 < len(starts) else len(text)]
        area = re.search(r"\barea\s*:\s*([\d.eE+-]+)", body)
        leak = re.search(r"\bcell_leakage_power\s*:\s*([\d.eE+-]+)", body)
        if area is None:
            raise ValueError(f"cell {name} of {path} has no area")
        sequential = re.search(r"^\s*(ff|latch)\s*\(", body, re.M) is not None
        cells[name] = Cell(name, float(area.group(1)), float(leak.group(1)) if leak else 0.0,
                           sequential, *_pins(body))  # fmt: skip
    if not cells:
        raise ValueError(f"{path} defines no cells")
    return cells


def _bus(name: str, width: int, direction: str, timing: str) -> list[str]:
    return [f"    bus ({name}) {{", f"      bus_type : bus{width};",
            f"      direction : {direction};", timing, "    }"]  # fmt: skip


_SETUP = """      timing () {
        related_pin : "clk";
        timing_type : setup_rising;
        rise_constraint (scalar) { values ("%(setup)s"); }
        fall_constraint (scalar) { values ("%(setup)s"); }
      }"""
_OUTPUT = """      timing () {
        related_pin : "clk";
        timing_type : rising_edge;
        cell_rise (scalar) { values ("%(access)s"); }
        cell_fall (scalar) { values ("%(access)s"); }
        rise_transition (scalar) { values ("0.1"); }
        fall_transition (scalar) { values ("0.1"); }
      }"""


def sram_liberty(srams: list[Sram], area: dict[str, float], access_ns: dict[str, float],
                 setup_ns: float = 0.0) -> str:  # fmt: skip
    """A Liberty library with a cell per SRAM module of ``srams``: its ports, ``area[module]``
    (square micrometres), and timing arcs from ``clk``: outputs ``access_ns[module]`` after the
    edge, inputs ``setup_ns`` before it."""
    modules = {s.module: s for s in srams}
    widths = sorted({w for s in modules.values() for w in (s.width, s.addr_bits)})
    lines = ["library (systolic_srams) {", "  delay_model : table_lookup;",
             '  time_unit : "1ns";', '  voltage_unit : "1V";', '  current_unit : "1uA";',
             '  leakage_power_unit : "1nW";', "  capacitive_load_unit (1,pf);",
             '  pulling_resistance_unit : "1kohm";', "  nom_process : 1;",
             "  nom_voltage : 1.8;", "  nom_temperature : 25;"]  # fmt: skip
    for edge in ("rise", "fall"):  # the thresholds OpenSTA requires, as in the cell library
        lines += [f"  input_threshold_pct_{edge} : 50;", f"  output_threshold_pct_{edge} : 50;",
                  f"  slew_lower_threshold_pct_{edge} : 20;",
                  f"  slew_upper_threshold_pct_{edge} : 80;"]  # fmt: skip
    for w in widths:
        lines.append(f"  type (bus{w}) {{ base_type : array; data_type : bit; bit_width : {w}; "
                     f"bit_from : {w - 1}; bit_to : 0; downto : true; }}")  # fmt: skip
    setup = _SETUP % {"setup": setup_ns}
    for module, s in modules.items():
        out = _OUTPUT % {"access": access_ns[module]}
        lines += [f"  cell ({module}) {{", f"    area : {area.get(module, 0.0)};",
                  "    dont_use : true;", "    dont_touch : true;",
                  "    pin (clk) { direction : input; clock : true; capacitance : 0.01; }",
                  "    pin (w_en) {", "      direction : input;", "      capacitance : 0.01;",
                  setup, "    }"]  # fmt: skip
        lines += _bus("w_addr", s.addr_bits, "input", setup)
        lines += _bus("w_data", s.width, "input", setup)
        for i in range(s.reads):
            lines += [f"    pin (r{i}_en) {{", "      direction : input;",
                      "      capacitance : 0.01;", setup, "    }"]  # fmt: skip
            lines += _bus(f"r{i}_addr", s.addr_bits, "input", setup)
            lines += _bus(f"r{i}_data", s.width, "output", out)
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"
