"""Fan-out buffering of a synthesized netlist, the step a physical flow takes before timing.

ABC buffers the nets inside the logic it maps, but not the nets that enter it: a flip-flop's
output or a module's input port that drives hundreds of gates (a FIFO's read pointer selecting
every bit of a wide word, a synchronous reset) stays on one minimum-size driver, and OpenSTA
then times a 10 ns slew no placed design would have. This pass gives every net with more than
``limit`` cell inputs in one module a tree of buffers, ``limit`` loads per buffer, as
placement tools' design repair does. Clock pins are left alone (the clock is ideal in timing).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .liberty import Cell

__all__ = ["FANOUT_LIMIT", "Buffered", "buffer_fanout"]

#: The most cell inputs one net drives after buffering.
FANOUT_LIMIT = 16

_MODULE = re.compile(r"^module (\S+) ?\(.*?^endmodule\n", re.M | re.S)
_INSTANCE = re.compile(r"^  (\S+) +(\S+) +\(\n(.*?)\n  \);\n", re.M | re.S)
_CONNECTION = re.compile(r"^    \.(\w+)\((.*?)\)(,?)$", re.M)
# one bit of a net: a plain or escaped identifier, with an optional bit select
_NET = re.compile(r"^(\\\S+ |[A-Za-z_][\w$]*)(\[\d+\])?\s*$")


@dataclass(frozen=True)
class Buffered:
    """The buffered netlist, and the buffers added to each module (by module name)."""

    netlist: str
    buffers: dict[str, int]
    cell: str


def buffer_fanout(netlist: str, cells: dict[str, Cell], *, buffer: str = "BUFX4",
                  limit: int = FANOUT_LIMIT) -> Buffered:  # fmt: skip
    """Buffer every net of ``netlist`` (Yosys's ``write_verilog -noattr -noexpr``, cells of
    ``cells``) that drives more than ``limit`` cell inputs in its module."""
    if limit < 2:
        raise ValueError(f"limit must be at least 2, not {limit}")
    (pin_in,), (pin_out,) = cells[buffer].inputs, cells[buffer].outputs
    added: dict[str, int] = {}
    out, pos = [], 0
    for module in _MODULE.finditer(netlist):
        out.append(netlist[pos : module.start()])
        text, n = _buffer_module(module.group(0), cells, buffer, pin_in, pin_out, limit)
        out.append(text)
        if n:
            added[module.group(1).lstrip("\\")] = n
        pos = module.end()
    out.append(netlist[pos:])
    return Buffered("".join(out), added, buffer)


def _buffer_module(text: str, cells: dict[str, Cell], buffer: str, pin_in: str, pin_out: str,
                   limit: int) -> tuple[str, int]:  # fmt: skip
    instances = list(_INSTANCE.finditer(text))
    bodies = [m.group(3) for m in instances]
    loads: dict[str, list[tuple[int, int, int]]] = {}  # net -> (instance, start, end) in body
    for i, inst in enumerate(instances):
        cell = cells.get(inst.group(1))
        if cell is None:
            continue  # a submodule or a macro: its ports count in its own module
        for conn in _CONNECTION.finditer(bodies[i]):
            if conn.group(1) in cell.inputs and _NET.match(conn.group(2)):
                loads.setdefault(conn.group(2), []).append((i, *conn.span(2)))
    heavy = {net: sites for net, sites in loads.items() if len(sites) > limit}
    if not heavy:
        return text, 0
    sources: list[str] = []  # each new buffer's input net
    renames: dict[int, list[tuple[int, int, str]]] = {}  # instance -> (start, end, new net)
    for net, sites in sorted(heavy.items()):
        level = [("pin", site) for site in sites]
        while len(level) > limit:  # a buffer per `limit` loads, until the net drives few enough
            next_level = []
            for j in range(0, len(level), limit):
                name = f"fanout_{len(sources)}_"
                sources.append("")
                for kind, load in level[j : j + limit]:
                    if kind == "pin":
                        renames.setdefault(load[0], []).append((load[1], load[2], name))
                    else:
                        sources[load] = name
                next_level.append(("buffer", len(sources) - 1))
            level = next_level
        for _, k in level:  # the root buffers hang on the net itself
            sources[k] = net
    for i, edits in renames.items():
        body = bodies[i]
        for start, end, name in sorted(edits, reverse=True):
            body = body[:start] + name + body[end:]
        bodies[i] = body
    parts = [text[: instances[0].start()]]
    parts += [f"  wire fanout_{k}_;\n" for k in range(len(sources))]
    pos = instances[0].start()
    for i, inst in enumerate(instances):
        parts += [text[pos : inst.start(3)], bodies[i]]
        pos = inst.end(3)
    end = text.rindex("endmodule")
    parts.append(text[pos:end])
    for k, source in enumerate(sources):
        parts.append(f"  {buffer} fanout_{k}_buf (\n    .{pin_in}({source}),\n"
                     f"    .{pin_out}(fanout_{k}_)\n  );\n")  # fmt: skip
    parts.append(text[end:])
    return "".join(parts), len(sources)
