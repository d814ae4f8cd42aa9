"""One random seed for the whole run, the same in every xdist worker, printed so that a run (or
one test) can be replayed; and one build cache for every test."""

from __future__ import annotations

import os
import random
import re
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


def replay(nodeid: str | None = None) -> str:
    """The command that replays this run's data (one test's, with ``nodeid``)."""
    only = f" PYTEST_ARGS='{nodeid}'" if nodeid else ""
    return f"SYSTOLIC_SEED={SEED} make test{only}"


def pytest_report_header(config):
    return f"systolic seed: {SEED} (replay with {replay()})"


@pytest.hookimpl(optionalhook=True)  # an xdist hook: plain pytest runs without it
def pytest_configure_node(node):
    """xdist, in the controller: hand the seed to each worker explicitly as well."""
    node.workerinput["systolic_seed"] = SEED


def pytest_configure(config):
    worker = getattr(config, "workerinput", None)
    if worker is not None and int(worker["systolic_seed"]) != SEED:
        raise pytest.UsageError(
            f"xdist worker seed {SEED} differs from the controller's {worker['systolic_seed']}"
        )


#: ``SYSTOLIC_WAVES_ON_FAIL=DIR``: a test that fails after simulating leaves its waveform in
#: DIR (``<test id>.fst``): its last simulation run again with tracing, the GEMMs the failing
#: check judged and nothing before them (``sim.simulate.replay_last_with_waves``).
WAVES_ON_FAIL = "SYSTOLIC_WAVES_ON_FAIL"


def pytest_runtest_setup(item):
    simulate.forget_last_call()  # a test's waveform is of its own simulations only


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Every failure report ends with the seed and the command that replays it (and, with
    :data:`WAVES_ON_FAIL`, where the waveform is)."""
    report = yield
    if report.failed:
        report.sections.append(("systolic seed", f"seed {SEED}; replay: {replay(item.nodeid)}"))
    where = os.environ.get(WAVES_ON_FAIL)
    if where and report.failed and report.when == "call":
        path = Path(where) / (re.sub(r"[^\w.-]+", "_", item.nodeid) + ".fst")
        path.parent.mkdir(parents=True, exist_ok=True)
        if simulate.replay_last_with_waves(path) is not None:
            report.sections.append(("waveform", f"{path} (open it with gtkwave or surfer)"))
    return report


@pytest.fixture
def seed() -> int:
    print(f"SYSTOLIC_SEED={SEED}")
    return SEED
