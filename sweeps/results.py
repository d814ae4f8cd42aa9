"""The results file of a sweep: one JSON record per line, appended whole, read back tolerantly.

Records are appended whole by :func:`append_records` (a line each, under a file lock, then an
``fsync``), by the sweep's own process only, so a crash loses at most the line being written,
and :func:`load_results` skips a line cut short.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

__all__ = ["SPEC_COPY", "append_records", "load_results"]

#: The spec a results folder was made from, copied beside its results file by the first run.
SPEC_COPY = "spec.yaml"


def load_results(path: Path) -> list[dict]:
    """Every complete line of a results file (a line cut short by a kill is ignored)."""
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


def append_records(path: Path, records: list[dict]) -> None:
    """Append ``records``, a line each, under one lock and one ``fsync``."""
    if not records:
        return
    text = "".join(json.dumps(record, sort_keys=True) + "\n" for record in records)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
