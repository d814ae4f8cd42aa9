"""serving/service.py and traffic.py: service times are the device model's, cached per batch
shape; streams are what their parameters say; bad parameters name themselves."""

from __future__ import annotations

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig
from systolic.contract.memory import Memory
from systolic.models.energy import load_coefficients
from systolic.serving.batching import Policy, serve
from systolic.serving.metrics import measure
from systolic.serving.service import ModelService
from systolic.serving.traffic import (
    Mix,
    OnOff,
    Poisson,
    RequestKind,
    Trace,
    TrafficError,
    stream,
)
from systolic.workloads.evaluate import model_record
from systolic.workloads.library import transformer

from ..helpers import at_least, at_most

CONFIG = ArrayConfig("ws", 8, 8)
#: Bounds of sampled statistics, from their spread over seeds 1-200 (make seeds). The share of
#: the 200 requests that found the device idle is binomial: 2 of 200 waited at worst (0.99, in
#: one seed), so 0.97 allows six. The rates: mean + 6 sd, rounded up (Poisson: mean 0.0018, sd
#: 0.0013; on/off: mean 0.0105, sd 0.0073, worst 0.040). The mix's shares likewise (kind: 6 sd
#: bound 0.0092; length: 0.0107, worst 0.0077).
IDLE_SHARE = 0.97
RATE_TOLERANCE = {"Poisson": 0.01, "OnOff": 0.055}
MIX_TOLERANCE = 0.011
MEMORY = Memory.preset("lpddr4x-4266-x16")


def test_one_request_at_a_time_at_low_load_takes_the_models_single_batch_latency(seed):
    mix = Mix((RequestKind("bert-base", 1, (16,)),))
    service = ModelService(CONFIG, mix, MEMORY)
    coefficients = load_coefficients()
    alone = model_record(CONFIG, transformer("bert-base", 1, 16), MEMORY, coefficients,
                         "random", 0)  # fmt: skip
    requests = stream(Poisson(0.01), mix, 200, seed)  # a request every 100 s, each ~10 ms
    served = serve(requests, Policy("static", 1), service)
    # a request that finds the device idle (nearly all: ~22 ms of work every 100 s) takes
    # exactly one batch's time
    alone_ones = served.wait == 0
    at_least(alone_ones.mean(), IDLE_SHARE, "share of requests that found the device idle")
    whole = alone["inference"]  # the whole inference: GEMMs, host operators, driver
    assert whole["latency_s"] > alone["latency_s"]
    np.testing.assert_allclose(served.latency[alone_ones], whole["latency_s"], rtol=1e-9)
    m = measure(served)
    assert m.p50_s == pytest.approx(whole["latency_s"], rel=1e-9)
    dynamic = whole["energy_pj"] - alone["components_pj"]["leakage"]  # leakage is a power
    assert m.energy_per_request_pj == pytest.approx(dynamic)
    assert list(service.records) == [(0, 1, 16)]  # one shape, evaluated once


def test_a_batch_runs_at_the_services_clock():
    mix = Mix((RequestKind("bert-base", 1, (16,)),))
    fast, slow = (ModelService(CONFIG, mix, MEMORY, clock_mhz=f) for f in (1000.0, 250.0))
    (t_fast, _), (t_slow, _) = fast(0, 4, 16), slow(0, 4, 16)
    # the same work in cycles, except the DRAM's latency (in ns) costs fewer cycles at 250 MHz
    assert fast.record(0, 4, 16)["cycles"] >= slow.record(0, 4, 16)["cycles"]
    assert slow.record(0, 4, 16)["latency_s"] == pytest.approx(
        slow.record(0, 4, 16)["cycles"] / 250e6)  # fmt: skip
    assert t_slow == pytest.approx(slow.record(0, 4, 16)["inference"]["latency_s"])
    assert t_slow > t_fast


def test_arrival_processes_give_their_mean_rate(seed):
    mix = Mix((RequestKind("bert-base"),))
    for process in (Poisson(500.0), OnOff(2000.0, 100.0, 0.02, 0.05)):
        # bursts make the on/off count vary: its rate's spread is seven times Poisson's (the
        # bounds above)
        r = stream(process, mix, 200_000, seed)
        assert np.all(np.diff(r.arrivals) >= 0)
        rate = (len(r) - 1) / (r.arrivals[-1] - r.arrivals[0])
        at_most(
            abs(rate / process.mean_rate - 1),
            RATE_TOLERANCE[type(process).__name__],
            f"|rate / mean rate - 1| of {type(process).__name__}",
        )


def test_a_mix_draws_kinds_and_lengths_by_their_weights(seed):
    mix = Mix((RequestKind("bert-base", 3, (16, 128), (1, 3)), RequestKind("gpt2-small", 1)))
    r = stream(Poisson(100.0), mix, 40_000, seed)
    at_most(abs(np.mean(r.kind == 0) - 0.75), MIX_TOLERANCE, "|share of kind 0 - 0.75|")
    lengths = r.length[r.kind == 0]
    at_most(abs(np.mean(lengths == 128) - 0.75), MIX_TOLERANCE, "|share of length 128 - 0.75|")
    assert np.all(r.length[r.kind == 1] == 0)


def test_a_trace_is_read_and_checked(tmp_path):
    good = tmp_path / "trace.csv"
    good.write_text("t_s\n1.5\n1.75\n2.0\n")
    r = stream(Trace.read(good), Mix((RequestKind("bert-base"),)), 3, 0)
    np.testing.assert_allclose(r.arrivals, [0.0, 0.25, 0.5])
    bad = tmp_path / "bad.csv"
    bad.write_text("1.0\n0.5\n")
    with pytest.raises(TrafficError, match=r"bad.csv:2: out of order"):
        Trace.read(bad)
    bad.write_text("t\n")
    with pytest.raises(TrafficError, match="no timestamps"):
        Trace.read(bad)
    with pytest.raises(TrafficError, match="holds 3 requests, not 4"):
        stream(Trace.read(good), Mix((RequestKind("bert-base"),)), 4, 0)


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: Poisson(-1.0), "rate must be a positive number, not -1.0"),
        (lambda: OnOff(10.0, 20.0, 1.0, 1.0), "off_rate must be at least 0 and below on_rate"),
        (lambda: Mix(()), "mix must name at least one request kind"),
        (lambda: RequestKind("bert-base", 1, (16, 32), (1,)), "one weight per length"),
        (lambda: RequestKind("gpt2-small", 1, (16,), (), (0,)), "outputs must be positive"),
        (lambda: RequestKind("bert-base", 1, (0,)), "lengths must be positive integers"),
        (lambda: Policy("greedy"), "policy must be one of none, static, dynamic"),
        (lambda: Policy("dynamic", 0), "max_batch must be an integer from 1 to 4096"),
        (lambda: Policy("dynamic", 4, -1.0), "max_wait_s must be a finite number"),
        (
            lambda: stream(Poisson(1.0), Mix((RequestKind("bert-base"),)), 0, 0),
            "count must be a positive integer",
        ),
    ],
)
def test_bad_traffic_names_the_parameter(build, message):
    with pytest.raises(TrafficError, match=message):
        build()
