"""workloads/evaluate.py: the GEMMs the driver posts (a layer past a descriptor's fields in pieces),
and a model point's figures for them."""

from __future__ import annotations

import pytest
from systolic.contract.config import ArrayConfig
from systolic.contract.interface import DIM_BITS
from systolic.contract.memory import Memory
from systolic.contract.vector import place_vector
from systolic.models.energy import leakage_pj_per_cycle, load_coefficients
from systolic.models.vector import predict_vector
from systolic.workloads.evaluate import driver_workload, model_record
from systolic.workloads.library import Gemm, Workload, cnn

TOP = (1 << DIM_BITS) - 1


def _one(m, k, n, count=1):
    return Workload("w", "w", "gemm", 1, None, (Gemm("g", m, k, n, count),))


def test_layers_past_a_descriptor_run_in_pieces_with_the_same_macs():
    for m, n in ((TOP, 7), (TOP + 1, 7), (100_352, 64), (70_000, 140_001), (5, 3 * TOP + 2)):
        whole = _one(m, 9, n, count=3)
        posted = driver_workload(whole)
        assert posted.macs == whole.macs, (m, n)
        assert all(g.m <= TOP and g.n <= TOP and g.k == 9 for g in posted.gemms), (m, n)
        pieces_m, pieces_n = -(-m // TOP), -(-n // TOP)  # the fewest descriptors that fit
        assert sum(g.count for g in posted.gemms) == 3 * pieces_m * pieces_n, (m, n)
    assert driver_workload(_one(TOP, TOP, TOP)) == _one(TOP, TOP, TOP)  # fits: unchanged
    with pytest.raises(ValueError, match=f"K = {TOP + 1}, past the descriptor's {TOP}"):
        driver_workload(_one(4, TOP + 1, 4))


def test_a_layer_past_a_descriptor_costs_its_cycles():
    """ResNet-50's first convolution at batch 8 (M = 100,352) once counted no cycles (its one
    descriptor was refused): in pieces, at least its MACs over the PEs."""
    config = ArrayConfig("ws", 8, 8, a_depth=4096, b_depth=4096, c_depth=4096)
    record = model_record(config, cnn("resnet50", 8), Memory.preset("lpddr4x-4266-x16"),
                          load_coefficients(), "random", 0)  # fmt: skip
    conv1 = [g for g in record["gemms"] if g["name"].startswith("conv1")]
    assert sum(g["count"] for g in conv1) == 2
    for g in record["gemms"]:
        assert g["cycles"] * config.pes >= g["macs"] > 0, g["name"]


def _small_inference() -> Workload:
    from systolic.workloads.library import Operator

    gemms = (Gemm("fc", 8, 16, 8, count=2),)
    ops = (Operator("act", "Relu", 64, 64, count=2, gemm="fc"),
           Operator("sm", "Softmax", 64, 64))  # fmt: skip
    schedule = (("fc", 1), ("act", 1), ("fc", 1), ("act", 1), ("sm", 1))
    return Workload("small", "small", "gemm", 1, None, gemms, operators=ops, schedule=schedule)


def test_a_whole_inference_splits_its_latency_and_places_its_operators():
    """Two GEMMs, each with a ReLU, then a softmax: with the fused output path the ReLUs and
    the requantization ride in the device; without it the host does them, and takes longer."""
    memory, co = Memory.preset("ddr4-3200-x64"), load_coefficients()
    out = {}
    for requant in (True, False):
        config = ArrayConfig("ws", 4, 4, requant=requant)
        record = model_record(config, _small_inference(), memory, co, "random", 0, 1000.0)
        inf = out[requant] = record["inference"]
        assert inf["latency_s"] == pytest.approx(sum(inf["latency_split_s"].values()), rel=1e-12)
        assert inf["descriptors"] == 2
        assert inf["utilization"] == pytest.approx(
            record["macs"] / (16 * inf["latency_s"] * 1e9), rel=1e-12)  # fmt: skip
        assert inf["utilization"] < record["utilization"]
        assert inf["latency_split_s"]["driver"] > 0 and inf["energy_split_pj"]["driver"] > 0
    assert out[True]["where"] == {"fused": {"Relu": 2, "Requantize": 2}, "host": {"Softmax": 1}}
    assert out[False]["where"] == {"host": {"Relu": 2, "Requantize": 2, "Softmax": 1}}
    assert out[False]["latency_split_s"]["host"] > out[True]["latency_split_s"]["host"]
    assert out[True]["energy_split_pj"]["fused"] > 0 == out[False]["energy_split_pj"]["fused"]


def test_a_split_gemm_keeps_its_place_in_the_schedule():
    """A GEMM of M = 70,000 runs as two descriptors of 35,000 rows; the schedule follows."""
    from systolic.workloads.library import Operator

    w = Workload("big", "big", "gemm", 1, None, (Gemm("big", 70_000, 8, 8),),
                 operators=(Operator("sm", "Softmax", 8, 8),),
                 schedule=(("big", 1), ("sm", 1)))  # fmt: skip
    split = driver_workload(w)
    assert [(x.name, runs) for x, runs in split.steps()] == [
        ("big (2 of 2 descriptors, 35000x8x8)", 2), ("sm", 1)]  # fmt: skip
    # an odd M: pieces of 50,177 and 50,176 rows, one each, named apart
    whole = Workload("odd", "odd", "gemm", 1, None, (Gemm("g", 100_353, 8, 8),))
    assert [(g.name, g.m, g.count) for g in driver_workload(whole).gemms] == [
        ("g (1 of 2 descriptors, 50177x8x8)", 50_177, 1),
        ("g (1 of 2 descriptors, 50176x8x8)", 50_176, 1)]  # fmt: skip
    record = model_record(ArrayConfig("ws", 4, 4), whole, Memory.preset("ddr4-3200-x64"),
                          load_coefficients(), "random", 0)  # fmt: skip
    assert record["inference"]["descriptors"] == 2 and record["macs"] == 100_353 * 64


def test_a_vector_device_runs_resnets_adds_and_pools_at_the_exact_models_cycles():
    """ResNet-50's max pool, 16 residual adds (their ReLUs as the adds' clamps) and global
    average pool on the vector unit, their latency the exact model's cycles on descriptors
    built here from the network's published geometry."""
    config = ArrayConfig("ws", 4, 4, requant=True, vector=True)
    memory = Memory.preset("ddr4-3200-x64")
    co = load_coefficients()
    record = model_record(config, cnn("resnet50", 1), memory, co, "random", 0, 1000.0)
    inference = record["inference"]
    assert inference["where"]["vector"] == {"Add": 16, "GlobalAveragePool": 1, "MaxPool": 1,
                                            "Relu": 16}  # fmt: skip
    assert "Add" not in inference["where"].get("host", {})
    dram = memory.at(record["clock_mhz"])
    shapes = [((1, 112, 112, 64), "max_pool", {"window": (3, 3), "stride": (2, 2),
                                               "pads": (1, 1), "out": (56, 56)})]  # fmt: skip
    for blocks, size, channels in ((3, 56, 256), (4, 28, 512), (6, 14, 1024), (3, 7, 2048)):
        shapes += [((1, size, size, channels), "add", {})] * blocks
    shapes.append(((1, 7, 7, 2048), "average_pool", {"window": (7, 7), "out": (1, 1)}))
    cycles = sum(predict_vector(config, place_vector(config, op, shape, **fields), dram)["cycles"]
                 for shape, op, fields in shapes)  # fmt: skip
    ns = cycles * 1000 / record["clock_mhz"]
    assert inference["latency_split_s"]["vector"] == pytest.approx(ns / 1e9, rel=1e-12)
    # the device leaks while the unit runs: at least that, plus the unit's traffic and logic
    assert inference["energy_split_pj"]["vector"] > cycles * leakage_pj_per_cycle(config, co)


def test_convolutions_run_as_the_driver_lowers_them():
    """MobileNet v1 at batch 2 on a staging device: the posted workload keeps every MAC and
    every run of the schedule (depthwise slices stand for their channels); the record's MACs
    are the convolutions' own (not the block-diagonal array's); staging moves fewer DRAM bytes
    and costs less DRAM energy than the same device running im2col; each convolution
    descriptor's A bytes are what its chunks stage (contract.dma.staging over its jobs)."""
    from systolic.contract.conv import device_gemm
    from systolic.contract.dma import containers, jobs, place, staging

    memory, co = Memory.preset("lpddr4x-4266-x16"), load_coefficients()
    plain = ArrayConfig("ws", 8, 8, requant=True, a_depth=1024, b_depth=1024, c_depth=1024)
    staged = ArrayConfig("ws", 8, 8, requant=True, a_depth=1024, b_depth=1024, c_depth=1024,
                         stage_depth=4096)  # fmt: skip
    work = cnn("mobilenet-v1", 2)
    posted = driver_workload(work, staged)
    assert posted.macs == work.macs
    steps = [(g, runs) for g, runs in posted.steps() if isinstance(g, Gemm)]  # names resolve
    assert {g.name for g, _ in steps} == {g.name for g in posted.gemms}
    convs = [g for g in posted.gemms if g.conv is not None]
    assert {g.name.split(" ")[0] for g in convs} >= {"dw1", "dw9"}
    records = {c.stage_depth: model_record(c, work, memory, co, "random", 0)
               for c in (plain, staged)}  # fmt: skip
    assert records[0]["macs"] == records[4096]["macs"] == work.macs
    assert records[4096]["dram_bytes"] < 0.5 * records[0]["dram_bytes"]
    assert records[4096]["energy_terms_pj"]["dram"] < records[0]["energy_terms_pj"]["dram"]
    by_name = {g["name"]: g for g in records[4096]["gemms"]}
    for g in convs[:3]:
        d = place(staged, *device_gemm(g.conv, 8), conv=g.conv, requant=True)
        words = sum(staging(staged, d, j).words for j in jobs(staged, d) if j.load_a)
        assert by_name[g.name]["read_bytes"]["a"] == words * containers(staged)["a"], g.name


def test_without_a_staging_buffer_a_convolution_is_its_im2col_gemm():
    """The geometry a CNN's GEMMs carry changes nothing on a device without staging: the record
    equals the one of the same GEMMs with no geometry (the sweeps' figures stay as they were)."""
    from dataclasses import replace

    memory, co = Memory.preset("lpddr4x-4266-x16"), load_coefficients()
    config = ArrayConfig("ws", 8, 8, requant=True)
    work = cnn("mobilenet-v1", 1)
    bare = replace(work, gemms=tuple(replace(g, conv=None) for g in work.gemms))
    got, want = (model_record(config, w, memory, co, "random", 0) for w in (work, bare))
    assert got["gemms"] == want["gemms"]
    assert got["cycles"] == want["cycles"] and got["energy_pj"] == want["energy_pj"]


def test_a_depthwise_slice_is_priced_and_simulated_on_block_diagonal_weights(monkeypatch):
    """MobileNet v1's depthwise layers on a staging device run as slices with block-diagonal
    weights (contract.lowering): the posted GEMMs say so; the record prices each on such
    weights (less energy than the same slice on dense weights, the other GEMMs unchanged); and
    a sweep's RTL point draws such weights (an output channel reads its own input channel)."""
    from dataclasses import replace

    import numpy as np
    from systolic.workloads import evaluate

    memory, co = Memory.preset("lpddr4x-4266-x16"), load_coefficients()
    config = ArrayConfig("ws", 8, 8, requant=True, a_depth=1024, b_depth=1024, c_depth=1024,
                         stage_depth=4096)  # fmt: skip
    work = cnn("mobilenet-v1", 1)
    posted = driver_workload(work, config)
    slices = {g.name for g in posted.gemms if g.diagonal}
    assert slices and all(g.name.startswith("dw") for g in posted.gemms if g.diagonal)
    assert all(g.conv.groups == 1 for g in posted.gemms if g.diagonal)
    got = model_record(config, work, memory, co, "random", 0)
    real = evaluate.lower_conv

    def dense(config, conv, requant=False):
        return tuple(replace(p, diagonal=False) for p in real(config, conv, requant))

    monkeypatch.setattr(evaluate, "lower_conv", dense)
    want = model_record(config, work, memory, co, "random", 0)
    for mine, theirs in zip(got["gemms"], want["gemms"], strict=True):
        assert mine["name"] == theirs["name"]
        if mine["name"] in slices:
            assert mine["energy_pj"] < theirs["energy_pj"], mine["name"]
        else:
            assert mine == theirs
    monkeypatch.undo()
    operands = evaluate.rtl_operands(config, posted, "random", 0)
    for g, (_, w) in zip(posted.gemms, operands, strict=True):
        if g.diagonal:  # O x kh x kw x C: zero wherever o != c, random where o == c
            o, c = np.meshgrid(np.arange(g.conv.out_channels), np.arange(g.conv.channels),
                               indexing="ij")  # fmt: skip
            assert not w.transpose(0, 3, 1, 2)[o != c].any()
            assert w.transpose(0, 3, 1, 2)[o == c].any()
