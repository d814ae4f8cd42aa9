"""The random seed every randomized test uses, printed so that a run can be replayed."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

# Compiled models live in the repository's build/ for every test, the command-line tools they
# start in other folders included (one cache, not one per temporary directory).
os.environ.setdefault("SYSTOLIC_BUILD_DIR", str(Path(__file__).resolve().parent.parent / "build"))

#: Replay a run with SYSTOLIC_SEED=<seed> make test (or pytest).
SEED = int(os.environ.get("SYSTOLIC_SEED") or random.SystemRandom().randrange(2**31))


def pytest_report_header(config):
    return f"systolic seed: {SEED} (replay with SYSTOLIC_SEED={SEED})"


@pytest.fixture
def seed() -> int:
    print(f"SYSTOLIC_SEED={SEED}")
    return SEED
