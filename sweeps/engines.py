"""Where a sweep's tasks run: a local process pool (the default), or a Dask cluster.

Both are ``concurrent.futures`` executors behind one small interface, :class:`Engine`: the
sweep submits tasks (batches of model points, groups of RTL points of one configuration) and
takes their results back as they finish; only the sweep's own process writes the results file.
A task whose worker dies is run again: Dask reschedules it on another worker by itself (up to
its ``distributed.scheduler.allowed-failures``), and the local engine replaces a broken pool
and resubmits what had not finished (up to :data:`RESTARTS` times).

A Dask cluster is reached by the scheduler's address (``tcp://HOST:PORT``; ``--scheduler`` or
``SYSTOLIC_SCHEDULER``). Its workers must run this project's code, installed the same way
(start them from this checkout's ``.venv``); RTL points build their Verilator models under
``SYSTOLIC_BUILD_DIR`` (default ``build/`` in the worker's folder), shared by workers that see
the same folder and locked per configuration, so two workers never build one design at once.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import re
from collections.abc import Callable, Iterator
from concurrent.futures.process import BrokenProcessPool

__all__ = [
    "CONNECT_TIMEOUT",
    "RESTARTS",
    "Engine",
    "EngineError",
    "check_address",
    "open_engine",
]

#: Seconds to wait for a Dask scheduler to answer (``SYSTOLIC_SCHEDULER_TIMEOUT``).
CONNECT_TIMEOUT = 10.0
#: How many times the local engine replaces a pool whose worker died, in one run.
RESTARTS = 3


class EngineError(RuntimeError):
    """The tasks could not be run: no scheduler answered, or workers kept dying."""


Call = tuple[Callable, tuple]


class Engine:
    """Runs calls on workers and yields ``(index, result)`` as each finishes."""

    name = "local"
    workers = 1

    def run(self, calls: list[Call]) -> Iterator[tuple[int, object]]:
        raise NotImplementedError

    def close(self) -> None:
        """Stop what this engine started (a local pool; a Dask client's connection)."""


class Inline(Engine):
    """The calls one after another in this process (one local worker: no pool to start)."""

    def run(self, calls):
        for i, (fn, args) in enumerate(calls):
            yield i, fn(*args)


class LocalPool(Engine):
    """A process pool on this machine; a pool broken by a dead worker is replaced and the
    unfinished calls resubmitted."""

    def __init__(self, workers: int):
        self.workers = workers
        self.pool: cf.ProcessPoolExecutor | None = None

    def run(self, calls):
        todo = dict(enumerate(calls))
        restarts = 0
        while todo:
            if self.pool is None:
                self.pool = cf.ProcessPoolExecutor(max_workers=self.workers)
            futures = {self.pool.submit(fn, *args): i for i, (fn, args) in todo.items()}
            try:
                for future in cf.as_completed(futures):
                    result = future.result()
                    i = futures[future]
                    del todo[i]
                    yield i, result
            except BrokenProcessPool:
                for future, i in futures.items():  # what finished before the pool broke
                    finished = future.done() and not future.cancelled()
                    if i in todo and finished and future.exception() is None:
                        del todo[i]
                        yield i, future.result()
                self.pool.shutdown(wait=False, cancel_futures=True)
                self.pool = None
                restarts += 1
                if restarts > RESTARTS:
                    raise EngineError(
                        f"local workers died {restarts} times (a task that kills its worker?)"
                    ) from None

    def close(self):
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


class DaskCluster(Engine):
    """The workers of a Dask distributed scheduler."""

    name = "dask"

    def __init__(self, address: str, timeout: float):
        try:
            from distributed import Client
        except ImportError:  # pragma: no cover - distributed is a pinned dependency
            raise EngineError("--scheduler needs the 'distributed' package") from None
        check_address(address)
        self.address = address
        try:
            self.client = Client(address, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError) as e:
            raise EngineError(
                f"no Dask scheduler answered at {address} within {timeout:g} s ({e}); start "
                f"one with `dask scheduler` and workers with `dask worker {address}` "
                f"(see docs/sweeps.md, 'On a cluster: Dask')"
            ) from None
        try:
            self.client.wait_for_workers(1, timeout=timeout)
        except TimeoutError:
            self.client.close()
            raise EngineError(
                f"the Dask scheduler at {address} has no workers (waited {timeout:g} s); "
                f"start some with `dask worker {address}`"
            ) from None
        self.workers = len(self.client.scheduler_info()["workers"])

    def run(self, calls):
        from distributed.scheduler import KilledWorker

        executor = self.client.get_executor(pure=False)
        futures = {executor.submit(fn, *args): i for i, (fn, args) in enumerate(calls)}
        try:
            for future in cf.as_completed(futures):
                try:
                    result = future.result()
                except KilledWorker as e:
                    raise EngineError(f"a task kept killing Dask workers: {e}") from None
                yield futures[future], result
        finally:
            for future in futures:
                future.cancel()

    def close(self):
        self.client.close()


def check_address(address: str) -> str:
    """A Dask scheduler's address, ``tcp://HOST:PORT`` (or ``tls://``): ``ValueError`` if not."""
    if not re.fullmatch(r"(tcp|tls)://[^/:\s]+:\d+", address):
        raise ValueError(f"--scheduler must be tcp://HOST:PORT (or tls://), not {address!r}")
    return address


def open_engine(scheduler: str | None, jobs: int | None, tasks: int) -> Engine:
    """The engine for ``tasks`` tasks: the Dask cluster at ``scheduler`` (or
    ``SYSTOLIC_SCHEDULER``), else a local pool of ``jobs`` workers (default: one per core, at
    most one per task; a single worker runs the tasks in this process)."""
    scheduler = scheduler or os.environ.get("SYSTOLIC_SCHEDULER") or None
    if scheduler:
        timeout = float(os.environ.get("SYSTOLIC_SCHEDULER_TIMEOUT", CONNECT_TIMEOUT))
        return DaskCluster(scheduler, timeout)
    workers = max(1, min(jobs or os.cpu_count() or 1, tasks))
    return Inline() if workers == 1 else LocalPool(workers)
