"""serving/generation.py: prefill and decode steps under request-level and continuous batching,
on schedules worked out by hand, with the cache growing block by block, and with the device
model's step times."""

from __future__ import annotations

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig
from systolic.contract.memory import Memory
from systolic.models.energy import load_coefficients
from systolic.serving.generation import KV_BLOCK, GenPolicy, generate, measure_generation
from systolic.serving.service import ModelService
from systolic.serving.traffic import Mix, Poisson, RequestKind, Requests, TrafficError, stream
from systolic.workloads.evaluate import model_record
from systolic.workloads.library import transformer

GPT = Mix((RequestKind("gpt2-small", 1, (16,), (), (3,)),))


def _flat(kind, batch, length, phase):
    return (1.0 if phase == "prefill" else 0.1), float(batch)


def _two(outputs=(3, 2)):
    return Requests(np.array([0.0, 0.05]), np.zeros(2, dtype=np.int64), np.array([16, 16]),
                    GPT, np.array(outputs))  # fmt: skip


@pytest.mark.parametrize(
    "policy, first, finish",
    [
        (GenPolicy("static", 1), [1.0, 2.2], [1.2, 2.3]),  # one after the other
        (GenPolicy("static", 2), [1.05, 1.05], [1.25, 1.15]),  # together once both are in
        (GenPolicy("continuous", 2), [1.0, 2.0], [2.2, 2.1]),  # the second joins at t = 1
    ],
    ids=["alone", "static", "continuous"],
)
def test_schedules_worked_out_by_hand(policy, first, finish):
    g = generate(_two(), policy, _flat)
    np.testing.assert_allclose(g.first_token, first)
    np.testing.assert_allclose(g.finish, finish)
    # every step makes one token for each sequence in it
    assert g.step_batch.sum() == 5


def test_the_cache_grows_block_by_block():
    seen = []

    def step(kind, batch, length, phase):
        seen.append((phase, length))
        return 0.01, 1.0

    r = Requests(np.array([0.0]), np.zeros(1, dtype=np.int64), np.array([100]), GPT,
                 np.array([100]))  # fmt: skip
    g = generate(r, GenPolicy("continuous", 4), step)
    assert seen[0] == ("prefill", 2 * KV_BLOCK)  # 100 tokens of prompt: two blocks
    decode = [length for phase, length in seen[1:]]
    # the cache holds 100 + t tokens at decode step t (1 to 99): 128 up to 128, then 192
    assert decode == [-(-(100 + t) // KV_BLOCK) * KV_BLOCK for t in range(1, 100)]
    assert g.finish[0] == pytest.approx(0.01 * 100)


def test_batch_one_takes_the_models_prefill_and_decode_step_times(seed):
    config, memory = ArrayConfig("ws", 8, 8), Memory.preset("lpddr4x-4266-x16")
    mix = Mix((RequestKind("gpt2-small", 1, (32,), (), (8,)),))  # caches stay in one block
    requests = stream(Poisson(0.01), mix, 20, seed)  # far apart: nothing waits
    g = generate(requests, GenPolicy("static", 1), ModelService(config, mix, memory).step)
    m = measure_generation(g)
    coefficients = load_coefficients()
    prefill, decode = (model_record(config, transformer("gpt2-small", 1, KV_BLOCK, phase), memory,
                                    coefficients, "random", 0)
                       for phase in ("prefill", "decode"))  # fmt: skip
    prefill, decode = prefill | prefill["inference"], decode | decode["inference"]  # whole
    assert m.ttft_p50_s == pytest.approx(prefill["latency_s"], rel=1e-9)  # most wait for none
    assert m.tpot_p50_s == pytest.approx(decode["latency_s"], rel=1e-9)
    assert m.tpot_p99_s == pytest.approx(decode["latency_s"], rel=1e-9)
    dynamic = [r["energy_pj"] - r["components_pj"]["leakage"] for r in (prefill, decode)]
    assert m.energy_per_token_pj == pytest.approx((dynamic[0] + 7 * dynamic[1]) / 8)


def test_continuous_batching_beats_one_at_a_time_under_load(seed):
    mix = Mix((RequestKind("gpt2-small", 1, (64, 256), (), (16, 64)),))
    requests = stream(Poisson(40.0), mix, 400, seed)

    def step(kind, batch, length, phase):  # weights dominate: a step costs little more per seq
        return (0.004 + 0.0005 * batch) if phase == "decode" else 0.02 * batch, 1.0

    alone = measure_generation(generate(requests, GenPolicy("static", 1), step))
    batched = measure_generation(generate(requests, GenPolicy("continuous", 16), step))
    assert batched.tokens == alone.tokens == requests.output.sum()
    assert batched.ttft_p99_s < alone.ttft_p99_s
    assert batched.tokens_per_s >= alone.tokens_per_s


def test_generation_needs_output_tokens():
    r = Requests(np.array([0.0]), np.zeros(1, dtype=np.int64), np.array([16]), GPT,
                 np.array([0]))  # fmt: skip
    with pytest.raises(TrafficError, match="output token counts of at least 1"):
        generate(r, GenPolicy("continuous", 4), _flat)
    with pytest.raises(TrafficError, match="generation policy must be one of static, continuous"):
        GenPolicy("dynamic")


def test_replicas_split_the_stream_and_each_runs_one_step_at_a_time(seed):
    mix = Mix((RequestKind("gpt2-small", 1, (64, 256), (), (4, 16)),))
    requests = stream(Poisson(20.0), mix, 200, seed)
    g = generate(requests, GenPolicy("continuous", 4), _flat, replicas=3)
    assert g.replicas == 3 and set(g.step_replica) == {0, 1, 2}
    assert g.step_batch.sum() == requests.output.sum()  # every token made once
    for r in range(3):
        mine = g.step_replica == r
        assert np.all(g.step_start[mine][1:] >= g.step_end[mine][:-1])
    one = measure_generation(generate(requests, GenPolicy("continuous", 4), _flat))
    assert measure_generation(g).ttft_p99_s < one.ttft_p99_s  # three share the load
