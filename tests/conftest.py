"""One random seed for the whole run, the same in every xdist worker, printed so that a run (or
one test) can be replayed; one build cache for every test; and ``--seeds FIRST-LAST`` (``make
seeds``), which runs every test that takes the ``seed`` fixture once per seed of the range and
deselects the others."""

from __future__ import annotations

import contextlib
import os
import random
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from systolic.sim import simulate

# Compiled models live in the repository's build/ for every test, the command-line tools they
# start in other folders included (one cache, not one per temporary directory).
os.environ.setdefault("SYSTOLIC_BUILD_DIR", str(Path(__file__).resolve().parent.parent / "build"))

# The seed is drawn once, by the process that imports this file first (pytest's controller), and
# put in the environment, which the xdist workers it starts inherit; SYSTOLIC_SEED=<seed> replays.
os.environ.setdefault("SYSTOLIC_SEED", str(random.SystemRandom().randrange(2**31)))
#: The run's seed: every randomized test derives its data from it.
SEED = int(os.environ["SYSTOLIC_SEED"])

#: A folder of this run's own (the controller's and its xdist workers'; a pytest started inside
#: a test makes its own): what an expensive fixture computed once, for the workers the scheduler
#: hands the fixture's other tests to (:func:`tests.helpers.computed_once`).
RUN_DIR = "SYSTOLIC_RUN_DIR"


def replay(nodeid: str | None = None, seed: int = SEED) -> str:
    """The command that replays this run's data (one test's, with ``nodeid``)."""
    only = f" PYTEST_ARGS='{nodeid}'" if nodeid else ""
    return f"SYSTOLIC_SEED={seed} make test{only}"


def base_nodeid(nodeid: str) -> str:
    """``nodeid`` without the seed parameter ``--seeds`` gave it: the test's id in a plain run."""
    out = re.sub(r"\[seed\d+\]$", "", nodeid)
    return re.sub(r"-seed\d+(?=\])|(?<=\[)seed\d+-", "", out)


def pytest_addoption(parser):
    parser.addoption("--seeds", metavar="FIRST-LAST", default=None,
                     help="run each test that takes the seed fixture once per seed of the "
                          "range (make seeds); deselect every other test")  # fmt: skip
    parser.addoption("--seeds-exclude", metavar="FILE", default=None,
                     help="with --seeds: a file of test ids (one a line, without the seed "
                          "parameter) to leave out")  # fmt: skip


def seed_range(text: str) -> range:
    """``"FIRST-LAST"`` (inclusive) or ``"N"`` (seeds 1 to N) as a range."""
    first, _, last = text.partition("-")
    try:
        lo, hi = (int(first), int(last)) if last else (1, int(first))
    except ValueError:
        raise pytest.UsageError(f"--seeds takes FIRST-LAST or a count, not {text!r}") from None
    if not 0 <= lo <= hi:
        raise pytest.UsageError(f"--seeds: FIRST-LAST with 0 <= FIRST <= LAST, not {text!r}")
    return range(lo, hi + 1)


def pytest_generate_tests(metafunc):
    seeds = metafunc.config.getoption("--seeds")
    if seeds and "seed" in metafunc.fixturenames:
        metafunc.parametrize("seed", list(seed_range(seeds)), ids=lambda s: f"seed{s}")


def pytest_collection_modifyitems(config, items):
    if not config.getoption("--seeds"):
        # the longest tests first (the order stays otherwise the same): run last, one of them
        # keeps a worker busy while the other has nothing left (the worksteal scheduler)
        items.sort(key=lambda item: item.get_closest_marker("long") is None)
        return
    excluded = set()
    if config.getoption("--seeds-exclude"):
        excluded = set(Path(config.getoption("--seeds-exclude")).read_text().split())
    keep = [i for i in items if "seed" in getattr(i, "fixturenames", ())
            and base_nodeid(i.nodeid) not in excluded]  # fmt: skip
    config.hook.pytest_deselected(items=[i for i in items if i not in keep])
    items[:] = keep


def item_seed(item) -> int:
    """The seed ``item`` runs with: its ``--seeds`` parameter, else the run's."""
    callspec = getattr(item, "callspec", None)
    return callspec.params["seed"] if callspec and "seed" in callspec.params else SEED


def pytest_report_header(config):
    return f"systolic seed: {SEED} (replay with {replay()})"


@pytest.hookimpl(optionalhook=True)  # an xdist hook: plain pytest runs without it
def pytest_configure_node(node):
    """xdist, in the controller: hand the seed (explicitly as well) and the run's folder to each
    worker."""
    node.workerinput["systolic_seed"] = SEED
    node.workerinput["systolic_run_dir"] = os.environ[RUN_DIR]


def pytest_configure(config):
    worker = getattr(config, "workerinput", None)
    if worker is not None and int(worker["systolic_seed"]) != SEED:
        raise pytest.UsageError(
            f"xdist worker seed {SEED} differs from the controller's {worker['systolic_seed']}"
        )
    # made by the controller (or a run without xdist), which removes it at the end
    os.environ[RUN_DIR] = (worker["systolic_run_dir"] if worker is not None
                           else tempfile.mkdtemp(prefix="systolic-run-"))  # fmt: skip


def pytest_unconfigure(config):
    if getattr(config, "workerinput", None) is None:
        shutil.rmtree(os.environ[RUN_DIR], ignore_errors=True)


#: ``SYSTOLIC_WAVES_ON_FAIL=DIR``: a test that fails after simulating leaves its waveform in
#: DIR (``<test id>.fst``): its last simulation run again with tracing, the GEMMs the failing
#: check judged and nothing before them.
WAVES_ON_FAIL = "SYSTOLIC_WAVES_ON_FAIL"


class _LastRun:
    """The last ``sim.simulate.run_gemms`` call of the current test, kept by a wrapper that
    stands in for the function in ``sim.simulate`` and in every module that imported it by
    name, from the test's setup to its teardown."""

    def __init__(self):
        self.call: tuple | None = None
        self.original = simulate.run_gemms

        def recording(config, operands, **kwargs):
            self.call = (config, operands, kwargs)
            return self.original(config, operands, **kwargs)

        self.wrapper = recording

    def _swap(self, old, new) -> None:
        for module in list(sys.modules.values()):
            if getattr(module, "__name__", "").startswith("systolic.") and getattr(
                    module, "run_gemms", None) is old:  # fmt: skip
                module.run_gemms = new

    def start(self) -> None:
        self.call = None
        self._swap(self.original, self.wrapper)

    def stop(self) -> None:
        self._swap(self.wrapper, self.original)

    def replay_with_waves(self, path: Path) -> Path | None:
        """Run the test's last simulation again with its waveform written to ``path``."""
        if self.call is None:
            return None
        config, operands, kwargs = self.call
        with contextlib.suppress(simulate.SimulationError):  # the failure is what waves are for
            self.original(config, operands, **kwargs | {"waves": path})
        return path if path.exists() else None


_LAST_RUN = _LastRun()


def pytest_runtest_setup(item):
    if os.environ.get(WAVES_ON_FAIL):
        _LAST_RUN.start()  # a test's waveform is of its own simulations only


def pytest_runtest_teardown(item):
    _LAST_RUN.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Every failure report ends with the seed and the command that replays it (and, with
    :data:`WAVES_ON_FAIL`, where the waveform is)."""
    report = yield
    if report.failed:
        s = item_seed(item)
        report.sections.append(
            ("systolic seed", f"seed {s}; replay: {replay(base_nodeid(item.nodeid), s)}")
        )
    where = os.environ.get(WAVES_ON_FAIL)
    if where and report.failed and report.when == "call":
        path = Path(where) / (re.sub(r"[^\w.-]+", "_", item.nodeid) + ".fst")
        path.parent.mkdir(parents=True, exist_ok=True)
        if _LAST_RUN.replay_with_waves(path) is not None:
            report.sections.append(("waveform", f"{path} (open it with gtkwave or surfer)"))
    return report


@pytest.fixture
def seed() -> int:
    """The run's seed (``--seeds`` parametrizes this name over its range instead)."""
    print(f"SYSTOLIC_SEED={SEED}")
    return SEED
