"""A descriptor's timeline: the events the device's engines go through, as the RTL logs them in
simulation and :mod:`models.device` predicts them, and their Chrome trace-event form (the JSON
that Perfetto and chrome://tracing open).

An event is ``(cycle, name, what)``: the cycle counts from the descriptor's acceptance, as the
simulation's bench monitor does; ``what`` is a load's buffer and bank (``a0``, ``b1``, ``c0``
for C or partial sums into C bank 0, ``q0`` for the requantization table), the chunk's index
for compute, the C bank for a store. A load starts when the read engine takes its command (the
first, for a load in parts: contract.dma.split_first) and ends with its last beat, a chunk
computes from the core's start to its done, a store runs from the write engine taking its
command to its last W beat.
"""

from __future__ import annotations

__all__ = ["EVENTS", "LOAD_KINDS", "LOG_FILE", "TRACKS", "chrome_trace", "parse_log", "trace_order"]

#: The file the simulation's logger writes (in the simulator's directory), read by parse_log.
LOG_FILE = "device_trace.txt"

#: Event names: each start is followed, on its own track, by its end.
EVENTS = ("load", "loaded", "compute", "computed", "store", "stored")
#: The read engine's load kinds by their code in the RTL's log (contract.axi.OPERANDS order).
LOAD_KINDS = ("a", "b", "c", "q")
#: Span name -> (start event, end event).
TRACKS = {"load": ("load", "loaded"), "compute": ("compute", "computed"),
          "store": ("store", "stored")}  # fmt: skip


def trace_order(event: tuple[int, str, object]) -> tuple:
    """A sort key: by cycle, then event name, then what (events of one cycle have no order)."""
    return event[0], EVENTS.index(event[1]), str(event[2])


def parse_log(text: str) -> list[tuple[int, str, object]]:
    """The events of the simulation's log: lines ``<cycle> <event> <code>``, a load's code its
    :data:`LOAD_KINDS` index and its bank."""
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        cycle, name, *code = line.split()
        if name not in EVENTS:
            raise ValueError(f"unknown trace event {name!r} in {line!r}")
        if name in ("load", "loaded"):
            what = f"{LOAD_KINDS[int(code[0])]}{int(code[1])}"
        else:
            what = int(code[0])
        out.append((int(cycle), name, what))
    return out


def _spans(events: list[tuple[int, str, object]]) -> list[tuple[str, object, int, int]]:
    """``(span, what, start, end)`` of each load, compute and store, pairing each start with
    the next end of the same kind and bank (a bank is loaded or stored once at a time)."""
    spans, pending = [], {}
    ends = {end: (span, start) for span, (start, end) in TRACKS.items()}
    for cycle, name, what in sorted(events, key=trace_order):
        span = ends[name][0] if name in ends else name
        key = (span, None if span == "compute" else what)
        if name in ends:
            if not pending.get(key):
                raise ValueError(f"trace: {name} {what} at cycle {cycle} without its "
                                 f"{ends[name][1]}")  # fmt: skip
            spans.append((span, what, pending[key].pop(0), cycle))
        else:
            pending.setdefault(key, []).append(cycle)
    return spans


def _track(span: str, what) -> str:
    if span == "load":
        buffer = {"a": "A", "b": "B", "c": "C", "q": "requantization table"}[what[0]]
        return f"read engine: {buffer}" + ("" if what[0] == "q" else f", bank {what[1:]}")
    return "array" if span == "compute" else f"write engine: C, bank {what}"


def chrome_trace(events: list[tuple[int, str, object]], *, clock_mhz: float = 1000.0,
                 label: str = "device") -> dict:  # fmt: skip
    """The Chrome trace-event JSON of ``events`` (``ts`` and ``dur`` in microseconds at
    ``clock_mhz``): a track per buffer bank with its loads, the array's track with each chunk's
    compute and the waits between them, a track per C bank with its stores, and the loads in
    flight as a counter. A chunk's span runs from its start to its done; the cycle after a done
    hands over to the next chunk (which starts then at the earliest), and the waits after it
    add up to the device's ``array_wait_cycles`` but for the wait before the first chunk."""
    us = 1.0 / clock_mhz
    spans = _spans(events)
    names = sorted({_track(span, what) for span, what, _, _ in spans},
                   key=lambda t: (not t.startswith("read"), t != "array", t))  # fmt: skip
    tid = {t: i + 1 for i, t in enumerate(names)}
    out = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": label}}]
    out += [{"ph": "M", "name": "thread_name", "pid": 1, "tid": i, "args": {"name": t}}
            for t, i in tid.items()]  # fmt: skip
    out += [{"ph": "M", "name": "thread_sort_index", "pid": 1, "tid": i, "args": {"sort_index": i}}
            for i in tid.values()]  # fmt: skip
    for span, what, start, end in spans:
        name = {"load": f"load {str(what)[0].upper()}", "compute": f"chunk {what}",
                "store": "store C"}[span]  # fmt: skip
        out.append({"ph": "X", "name": name, "cat": span, "pid": 1, "tid": tid[_track(span, what)],
                    "ts": start * us, "dur": max(end - start, 1) * us,
                    "args": {"start_cycle": start, "end_cycle": end}})  # fmt: skip
    computes = sorted((s, e) for span, _, s, e in spans if span == "compute")
    for (_, prev_end), (start, _) in zip(computes, computes[1:], strict=False):
        if start > prev_end + 1:
            out.append({"ph": "X", "name": "array waits", "cat": "wait", "pid": 1,
                        "tid": tid["array"], "ts": (prev_end + 1) * us,
                        "dur": (start - prev_end - 1) * us,
                        "args": {"cycles": start - prev_end - 1}})  # fmt: skip
    flight = 0  # loads the read engine has taken and not finished
    for cycle, name, _ in sorted(events, key=trace_order):
        if name in ("load", "loaded"):
            flight += 1 if name == "load" else -1
            out.append({"ph": "C", "name": "loads in flight", "pid": 1, "ts": cycle * us,
                        "args": {"loads": flight}})  # fmt: skip
    return {"traceEvents": out, "displayTimeUnit": "ns",
            "otherData": {"clock_mhz": clock_mhz, "events": len(events)}}  # fmt: skip
