"""sim/dram.py: the simulation's DRAM, played by a scripted AXI master (tb/dram_tb.py) and held,
handshake for handshake, to docs/memory.md's rules as this file restates them cycle by cycle:
acceptance while fewer than ``max_requests`` are outstanding, one bus in acceptance order, reads
``latency`` after their AR, writes from the cycle after their AW, beats by the contract's
virtual clock, write responses ``latency`` after the last beat; data and per-ID counters too."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
from systolic.contract.axi import OPERANDS
from systolic.contract.memory import BeatClock, Dram
from systolic.sim.build import build_bench, run_cocotb
from systolic.sim.dram import COUNTERS, PROTOCOL_ERRORS, bench_top, dram_model

SIZE = 1 << 16  # bytes of DRAM in the bench


def _bench(bus_width: int):
    text, ports, writable, readable = bench_top(bus_width)
    files = {"dram_model.v": dram_model(bus_width, SIZE), "sim_top.v": text}
    return build_bench(f"dram-{bus_width}", files, ports, readable=readable, writable=writable)


def reference(scenario: dict) -> dict:
    """The rules, cycle by cycle, from the same scenario the master plays."""
    lanes = scenario["bus_width"] // 8
    p = scenario["params"]
    dram = Dram(Fraction(p["bw_num"], p["bw_den"]), p["latency"], p["max_requests"])
    clock = BeatClock.of(dram)
    memory = bytearray(SIZE)
    for address, blob in scenario["image"].items():
        memory[int(address) : int(address) + len(bytes.fromhex(blob))] = bytes.fromhex(blob)
    reads = [r for r in scenario["requests"] if r["kind"] == "r"]
    writes = [r for r in scenario["requests"] if r["kind"] == "w"]
    rec = {"ar": [], "aw": [], "r": [], "w": [], "b": []}
    counters = {f"dram_{c}_{op}": 0 for c in COUNTERS for op in OPERANDS}
    counters[PROTOCOL_ERRORS] = 0  # the scripted traffic keeps every rule
    queue = []  # accepted bursts: [request, ready cycle, beats served]
    outstanding = 0
    w_offer = []  # cycles from which the master offers each accepted write's data
    b_due = []  # (cycle the response may go, id)
    cycle = 0
    while len(rec["r"]) < sum(r["len"] + 1 for r in reads) or len(rec["b"]) < len(writes):
        done = 0
        ar = reads[len(rec["ar"])] if len(rec["ar"]) < len(reads) else None
        aw = writes[len(rec["aw"])] if len(rec["aw"]) < len(writes) else None
        took_ar = ar is not None and cycle >= ar["at"] and outstanding < dram.max_requests
        took_aw = aw is not None and cycle >= aw["at"] and outstanding + took_ar < dram.max_requests
        if queue:
            req, ready, served = queue[0]
            size = 1 << req["size"]
            u = max(clock.v, ready * clock.num)
            eligible = cycle * clock.num >= u
            is_write = req["kind"] == "w"
            if eligible and (not is_write or cycle >= w_offer[0]):
                clock.v = u + clock.step(size)
                address = req["addr"] + served * size
                word = (address % SIZE) // lanes * lanes
                op = next(k for k, v in OPERANDS.items() if v == req["user"])
                last = served == req["len"]
                if is_write:
                    data = int(req["data"][served], 16).to_bytes(lanes, "little")
                    strb = int(req["strb"][served], 16)
                    for i in range(lanes):
                        if strb >> i & 1:
                            memory[word + i] = data[i]
                    rec["w"].append(cycle)
                    counters[f"dram_write_beats_{op}"] += 1
                    counters[f"dram_write_bytes_{op}"] += size
                    if last:
                        b_due.append((cycle + dram.latency, req["id"]))
                        w_offer.pop(0)
                else:
                    data = int.from_bytes(memory[word : word + lanes], "little")
                    rec["r"].append([cycle, f"{data:x}", int(last), req["id"]])
                    counters[f"dram_read_beats_{op}"] += 1
                    counters[f"dram_read_bytes_{op}"] += size
                    done += last
                queue[0][2] += 1
                if last:
                    queue.pop(0)
        if b_due and cycle >= b_due[0][0]:
            rec["b"].append([cycle, b_due.pop(0)[1]])
            done += 1
        if took_ar:
            rec["ar"].append(cycle)
            queue.append([ar, cycle + dram.latency, 0])
        if took_aw:
            rec["aw"].append(cycle)
            queue.append([aw, cycle + 1, 0])
            w_offer.append(cycle + 1)
        outstanding += took_ar + took_aw - done
        cycle += 1
    rec["counters"] = counters
    first, last = scenario["dump"]
    rec["dump"] = memory[first * lanes : (last + 1) * lanes].hex()
    return rec


def _scenario(rng, bus_width: int, apart: bool = False) -> dict:
    """Random bursts; ``apart`` keeps reads below 2 KB and writes above, so the data read does
    not depend on how reads and writes interleave."""
    lanes = bus_width // 8
    image = {"0": rng.integers(0, 256, 4096, dtype=np.uint8).tobytes().hex()}
    requests, t = [], 0
    for _ in range(int(rng.integers(10, 30))):
        size = int(rng.integers(0, int(np.log2(lanes)) + 1))
        beats = int(rng.integers(1, 17))
        kind = str(rng.choice(["r", "w"]))
        lo, hi = (0, 4096) if not apart else (0, 2048) if kind == "r" else (2048, 4096)
        address = int(rng.integers(lo, hi - beats * (1 << size)) >> size << size)
        req = {
            "kind": kind,
            "at": t,
            "addr": address,
            "len": beats - 1,
            "size": size,
            "id": int(rng.integers(0, 2)),
            "user": int(rng.integers(0, 4)),
        }
        if req["kind"] == "w":
            req["data"] = [f"{int.from_bytes(rng.bytes(lanes), 'little'):x}" for _ in range(beats)]
            req["strb"] = [f"{int(rng.integers(0, 1 << lanes)):x}" for _ in range(beats)]
        requests.append(req)
        t += int(rng.integers(0, 6))
    params = {
        "bw_num": int(rng.integers(1, 40)),
        "bw_den": int(rng.integers(1, 6)),
        "latency": int(rng.integers(1, 30)),
        "max_requests": int(rng.integers(1, 9)),
    }
    return {
        "bus_width": bus_width,
        "params": params,
        "image": image,
        "requests": requests,
        "dump": [0, 4096 // lanes - 1],
        "seed": int(rng.integers(0, 1 << 31)),
        "counters": [f"dram_{c}_{op}" for c in COUNTERS for op in OPERANDS] + [PROTOCOL_ERRORS],
    }


def _play(tmp_path, scenario: dict, name: str) -> dict:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(scenario))
    out = tmp_path / f"{name}-results.json"
    build = _bench(scenario["bus_width"])
    run = run_cocotb(
        build,
        "systolic.tb.dram_tb",
        name=name,
        env={"SYSTOLIC_DRAM_SCENARIO": str(path), "SYSTOLIC_DRAM_RESULTS": str(out)},
    )
    assert run.failed == 0, f"the DRAM bench failed; see {run.log}"
    return json.loads(out.read_text())


def test_one_read_burst_by_hand(tmp_path):
    # 8 bytes a cycle, 16-byte beats, latency 5: an AR in cycle 0 gets beats in 5, 7, 9, 11
    scenario = {
        "bus_width": 128,
        "params": {"bw_num": 8, "bw_den": 1, "latency": 5, "max_requests": 4},
        "image": {"0": bytes(range(64)).hex()},
        "dump": [0, 0],
        "counters": [],
        "requests": [{"kind": "r", "at": 0, "addr": 0, "len": 3, "size": 4, "id": 1, "user": 1}],
    }
    got = _play(tmp_path, scenario, "hand")
    assert got["ar"] == [0]
    assert [beat[0] for beat in got["r"]] == [5, 7, 9, 11]
    assert got["r"][1][1] == bytes(range(16, 32))[::-1].hex()  # the second 16 bytes
    assert [beat[2] for beat in got["r"]] == [0, 0, 0, 1]


@pytest.mark.parametrize("bus_width", [64, 128])
def test_random_traffic_follows_the_rules(tmp_path, seed, bus_width):
    rng = np.random.default_rng([seed, bus_width])
    for i in range(3):
        scenario = _scenario(rng, bus_width)
        got = _play(tmp_path, scenario, f"random{i}")
        want = reference(scenario)
        for key in ("ar", "aw", "w", "r", "b", "counters", "dump"):
            assert got[key] == want[key], (key, scenario["params"])


def test_read_pauses_change_timing_not_data(tmp_path, seed):
    """With the master holding RREADY low at random, beats come later (so requests may
    interleave differently) but carry the same data, and the same bytes are counted."""
    rng = np.random.default_rng(seed)
    scenario = _scenario(rng, 64, apart=True) | {"r_pause": 0.4}
    got, want = _play(tmp_path, scenario, "paused"), reference(scenario)
    assert [b[1:] for b in got["r"]] == [b[1:] for b in want["r"]]
    assert got["dump"] == want["dump"] and got["counters"] == want["counters"]


def test_rule_breaks_are_counted(tmp_path):
    """The model checks what the device must never do: a read crossing 4 KB, a FIXED burst,
    and a write whose WLAST comes a beat early (counted on that beat and on the real last)."""
    lanes = 16
    data = [f"{i:x}" for i in range(3)]
    scenario = {
        "bus_width": 8 * lanes,
        "params": {"bw_num": 16, "bw_den": 1, "latency": 3, "max_requests": 8},
        "image": {"0": bytes(8192).hex()},
        "dump": [0, 0],
        "counters": [PROTOCOL_ERRORS],
        "requests": [
            {"kind": "r", "at": 0, "addr": 4096 - 32, "len": 3, "size": 4, "id": 0, "user": 0},
            {"kind": "r", "at": 1, "addr": 0, "len": 0, "size": 4, "id": 0, "user": 1,
             "burst": 0},
            {"kind": "r", "at": 2, "addr": 4096 - 64, "len": 3, "size": 4, "id": 0, "user": 0},
            {"kind": "w", "at": 0, "addr": 256, "len": 2, "size": 4, "id": 0, "user": 2,
             "data": data, "strb": ["ffff"] * 3, "last_at": 1},
        ],
    }  # fmt: skip
    got = _play(tmp_path, scenario, "rules")
    # the crossing read, the FIXED one, and the write's two wrong WLASTs; the read that ends
    # exactly at the 4 KB boundary is legal
    assert got["counters"][PROTOCOL_ERRORS] == 4
