"""Faults the tests inject from outside the product: a sweep's own process killed between two
RTL records, a sweep worker killed in the middle of an RTL task, a regression's model broken.

Run ``python tests/faults.py ARGS...`` in place of ``systolic ARGS...`` (:func:`run_faulty`),
or give a Dask worker ``--preload tests/faults.py``. Importing the module wraps the sweep
runner's functions according to the environment:

- ``SYSTOLIC_SWEEP_KILL_AFTER=N``: once the sweep's process has appended N RTL records (after
  the batch that reaches N) it SIGKILLs itself, with no cleanup;
- ``SYSTOLIC_SWEEP_DIE_IN_TASK=PATH``: the first worker to finish an RTL point creates ``PATH``
  and SIGKILLs itself in the middle of its task (only once: the file then exists). The local
  pool's workers are forked from the sweep's process and inherit the wrapper;
- ``SYSTOLIC_REGRESS_BREAK_MODEL=cycles``: ``systolic regress``'s model predicts one cycle more
  than the device's, a broken model the regression must catch.
"""

from __future__ import annotations

import os
import signal
import sys

KILL_AFTER = "SYSTOLIC_SWEEP_KILL_AFTER"
BREAK_MODEL = "SYSTOLIC_REGRESS_BREAK_MODEL"
DIE_IN_TASK = "SYSTOLIC_SWEEP_DIE_IN_TASK"


def _kill_after(limit: int) -> None:
    from systolic.sweeps import run

    append = run.append_records
    appended = 0

    def append_then_maybe_die(path, records) -> None:
        nonlocal appended
        append(path, records)
        appended += sum(r["kind"] == "rtl" for r in records)
        if appended >= limit:
            os.kill(os.getpid(), signal.SIGKILL)

    run.append_records = append_then_maybe_die


def _die_in_task(marker: str) -> None:
    from systolic.sweeps import run

    record = run.rtl_record

    def record_then_maybe_die(*args, **kwargs):
        out = record(*args, **kwargs)
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return out
        os.kill(os.getpid(), signal.SIGKILL)

    run.rtl_record = record_then_maybe_die


def _break_model() -> None:
    from systolic.verify import regress

    predict = regress.predict_device

    def one_cycle_more(*args, **kwargs) -> dict:
        out = dict(predict(*args, **kwargs))
        out["cycles"] += 1
        return out

    regress.predict_device = one_cycle_more


if os.environ.get(KILL_AFTER):
    _kill_after(int(os.environ[KILL_AFTER]))
if os.environ.get(DIE_IN_TASK):
    _die_in_task(os.environ[DIE_IN_TASK])
if os.environ.get(BREAK_MODEL) == "cycles":
    _break_model()

if __name__ == "__main__":
    from systolic.cli import main

    sys.exit(main(sys.argv[1:]))
