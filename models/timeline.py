"""The chunk pipeline of :mod:`models.pipeline`, walked job by job in compiled code (Numba).

A sweep asks the pipeline model for every GEMM of every point, and the chunk tuner
(:mod:`models.chunking`) asks it several times more; a GEMM can have thousands of chunks. This
module holds the per-chunk work: which operands each chunk loads and stores (from the loop
order), the DRAM time of each transfer, and the timeline itself. It reads plain numbers only,
so Numba compiles it once (cached beside the sources) and one call costs microseconds.
:mod:`models.pipeline` describes the model and turns these sums into the device's counters.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = [
    "A",
    "A_FIRST",
    "B",
    "B_FIRST",
    "C_IN",
    "FINAL",
    "PARTIAL",
    "SPLIT_A",
    "SPLIT_B",
    "transfer_time",
    "walk",
]

#: Cycles the device spends around the data: from the descriptor's start to the first AR, from
#: the last beat of a chunk's loads to its compute, and from a chunk's end to its store's first
#: beat.
START, HANDOFF, STORE_START = 1, 1, 3

#: The transfers of a chunk, rows of ``walk``'s ``formats`` and of the words it returns: A and
#: B loaded, C loaded (to accumulate into, or partial sums back), finished C and partial sums
#: stored.
A, B, C_IN, FINAL, PARTIAL = range(5)
#: How a chunk that loads A and B loads them (``walk``'s ``order``): A first, B first, or A's
#: (B's) first tile row, the other, then the rest (:func:`contract.dma.split_first`).
A_FIRST, B_FIRST, SPLIT_A, SPLIT_B = range(4)
#: The dimensions (0: M, 1: K, 2: N) each transfer's block spans, rows by columns.
_SPANS = ((0, 1), (1, 2), (0, 2), (0, 2), (0, 2))


@njit(cache=True)
def transfer_time(runs, per_run, beat, window, bw, latency, max_burst, max_requests, max_bytes):
    """``(bus cycles, cycles the transfer keeps its engine busy)`` of a transfer of ``runs``
    contiguous runs of ``per_run`` beats of ``beat`` bytes: its beats on the bus (at the
    bandwidth ``bw``, at most one a cycle) or, when only ``window`` bursts may be in flight and
    each is a round trip (latency, then its beats), those round trips (a burst never spans two
    runs)."""
    beats = runs * per_run
    per_beat = max(1.0, beat / bw)
    burst = min(max_burst, max_bytes // beat)
    bursts = runs * -(-per_run // burst)
    window = min(window, max_requests)
    trip = latency + min(burst, max(per_run, 1)) * per_beat
    bus = beats * per_beat
    rounds = bursts * trip / window if bursts > 0 else 0.0
    return bus, max(bus, rounds)


@njit(cache=True)
def walk(counts, dims, chunk, total, accumulate, compute, after, order, formats, bus, table,
         read_window, staged, slices, expand, expander):  # fmt: skip
    """Every chunk of a descriptor, in loop order, and the pipeline's timeline.

    ``counts``/``dims``: the chunks along each loop, outermost first, and the dimension each loop
    runs over; ``chunk``/``total``: M, K and N of a chunk and of the GEMM; ``compute``: the compute
    cycles of each chunk class (bit 0: M ragged, 1: K ragged, 2: N ragged, 3: accumulating), and
    ``after[o]`` of operand ``o`` (A, B): the cycles it still computes after its last word lands
    (:func:`models.cycles.landing_tails`); ``order``: how a chunk's A and B load (:data:`A_FIRST`,
    :data:`B_FIRST`, :data:`SPLIT_A`, :data:`SPLIT_B`); ``formats``: per transfer, ``(rowwise, tile,
    container / beat, beat, window)``; ``bus``: ``(bandwidth, latency, max_burst, max_requests, max
    burst bytes)``; ``table``: cycles to load the requantization table first.

    A convolution's A loads stage and expand (:func:`contract.dma.staging`): ``staged`` holds
    per M chunk the words each slice stages, ``slices`` per K chunk its slices, ``expand`` the
    cycles from a chunk's last staged word to its bank full per raggedness (bit 0: M, 1: K,
    :func:`contract.timing.expansion_cycles`), ``expander`` the cycles of the expander's setup
    and any further latency; ``staged`` is empty for a GEMM.

    Returns the words each transfer moved, the chunks of each class, and the cycles, the
    array's and the read engine's waits and the cycles the chunks computed past their closed
    forms, waiting for their first words and for the rest (see :func:`timeline`).
    """
    jobs = counts[0] * counts[1] * counts[2]
    last = np.empty(3, np.int64)
    for x in range(3):
        last[x] = total[x] - (-(-total[x] // chunk[x]) - 1) * chunk[x]
    index = np.empty((jobs, 3), np.int64)
    j = 0
    for i0 in range(counts[0]):
        for i1 in range(counts[1]):
            for i2 in range(counts[2]):
                index[j, dims[0]], index[j, dims[1]], index[j, dims[2]] = i0, i1, i2
                j += 1
    per_dim = np.empty(3, np.int64)
    for x in range(3):
        per_dim[dims[x]] = counts[x]
    # per transfer and raggedness of its two dimensions: words, bus cycles, span
    cost = np.zeros((5, 4, 4))
    for t in range(5):
        rowwise, tile, ratio = formats[t, 0], formats[t, 1], formats[t, 2]
        beat, window = formats[t, 3], formats[t, 4]
        for r in range(4):
            rows = last[_SPANS[t][0]] if r & 1 else chunk[_SPANS[t][0]]
            cols = last[_SPANS[t][1]] if r & 2 else chunk[_SPANS[t][1]]
            runs, words = (-(-cols // tile), rows) if rowwise else (-(-rows // tile), cols)
            b, s = transfer_time(runs, words * ratio, beat, window, bus[0], bus[1], bus[2],
                                 bus[3], bus[4])  # fmt: skip
            cost[t, r, 0], cost[t, r, 1], cost[t, r, 2] = runs * words, b, s
            cost[t, r, 3] = runs
    busy = np.empty(jobs)
    tails = np.empty((2, jobs))
    moves = np.zeros((5, jobs), np.bool_)  # which transfers each chunk makes
    new_c = np.empty(jobs, np.bool_)
    partial = np.empty(jobs, np.bool_)
    ragged = np.empty((5, jobs), np.int64)
    classes = np.zeros(16, np.int64)
    for j in range(jobs):
        m, k, n = index[j, 0], index[j, 1], index[j, 2]
        first = j == 0
        new_a = first or m != index[j - 1, 0] or k != index[j - 1, 1]
        new_b = first or k != index[j - 1, 1] or n != index[j - 1, 2]
        new_c[j] = first or m != index[j - 1, 0] or n != index[j - 1, 2]
        leaves = j == jobs - 1 or index[j + 1, 0] != m or index[j + 1, 2] != n
        last_k = k == per_dim[1] - 1
        acc = k > 0 or accumulate
        rm = m == per_dim[0] - 1 and last[0] != chunk[0]
        rk = k == per_dim[1] - 1 and last[1] != chunk[1]
        rn = n == per_dim[2] - 1 and last[2] != chunk[2]
        cls = rm + 2 * rk + 4 * rn + 8 * acc
        classes[cls] += 1
        busy[j] = compute[cls] + 2
        tails[0, j], tails[1, j] = after[0, cls] + 2, after[1, cls] + 2
        moves[A, j], moves[B, j], moves[C_IN, j] = new_a, new_b, new_c[j] and acc
        moves[FINAL, j], moves[PARTIAL, j] = leaves and last_k, leaves and not last_k
        partial[j] = new_c[j] and acc and k > 0
        ragged[A, j], ragged[B, j] = rm + 2 * rk, rk + 2 * rn
        ragged[C_IN, j] = ragged[FINAL, j] = ragged[PARTIAL, j] = rm + 2 * rn
    words = np.zeros(5, np.int64)
    buses = np.zeros((5, jobs))
    spans = np.zeros((5, jobs))
    expanded = np.zeros(jobs)  # a convolution's chunk's expansion cycles (0: a plain load)
    head = np.ones(jobs)  # the share of the split operand's load its first tile row is
    for t in range(5):
        for j in range(jobs):
            if t == A and moves[t, j] and staged.shape[0] > 0:
                runs, per_run = slices[index[j, 1]], staged[index[j, 0]]
                b, s = transfer_time(runs, per_run * formats[A, 2], formats[A, 3], formats[A, 4],
                                     bus[0], bus[1], bus[2], bus[3], bus[4])  # fmt: skip
                words[A] += runs * per_run
                buses[A, j], spans[A, j] = b, s
                expanded[j] = expand[ragged[A, j]]
            elif moves[t, j]:
                c = cost[t, ragged[t, j]]
                words[t] += np.int64(c[0])
                buses[t, j], spans[t, j] = c[1], c[2]
                if order >= SPLIT_A and t == order - SPLIT_A:
                    head[j] = 1 / c[3]
    cycles, waiting, dma_wait, filled, stalled = timeline(
        busy, tails, order, head, buses[:3], spans[:3], buses[FINAL] + buses[PARTIAL],
        spans[FINAL] + spans[PARTIAL], moves[:3], new_c, partial, bus[1], table, read_window,
        expanded, expander)  # fmt: skip
    return words, classes, cycles, waiting, dma_wait, filled, stalled


@njit(cache=True)
def timeline(busy, tails, order, head, buses, spans, store_bus, store_span, loads, new_c,
             partial, latency, table, read_window, expanded, expander):  # fmt: skip
    """Cycles of the chunk pipeline, the array's and the read engine's waits, and the cycles
    chunks spent computing past ``busy``: waiting for their first words, and for the rest.

    Chunk ``j`` computes from ``S[j]`` (the first words of its A and B loads in, a convolution's A
    and its C in, the previous chunk done, its C bank stored from two C chunks back) to ``F[j]``:
    ``busy[j]`` cycles later, or ``tails[o, j]`` after operand ``o``'s last word lands if that is
    later (it computes on a partly loaded chunk). The read engine takes the chunks' loads in order
    (A and B as ``order`` says, a split operand's first tile row ``head[j]`` of its load); a load
    starts once the engine has issued the previous one and its bank is free (the last chunk using
    what the bank holds is done), and partial sums once every write is answered; its data arrives
    ``spans`` after it starts, or later when the bus is still busy. A chunk's store starts when it
    is done and ends ``store_span`` later, or later behind the reads already requested (at most
    ``read_window`` cycles of them); the reads behind it move back by its bus time. A convolution's
    A load (``expanded[j]`` words) waits for the expander to finish the one before, sets it up
    (``expander[0]`` cycles), stages, and fills its bank ``expander[1] + expanded[j]`` cycles after
    its last staged word.
    """
    jobs = busy.shape[0]
    bank_of = np.empty((3, jobs), np.int64)  # the bank each load goes to
    for i in range(3):
        count = 0
        for j in range(jobs):
            count += loads[i, j]
            bank_of[i, j] = count % 2
    free = np.zeros((3, 2))  # per operand: when each bank is free
    ready = np.zeros(jobs)  # when chunk j may start: its loads issued, what it awaits whole in
    landed = np.zeros((3, jobs))  # when the last word of its A and of its B load lands, and
    # (row 2) when the first word of the later of the two lands
    # the bus free, the read engine's next issue, writes answered, its wait, the expander free
    state = np.zeros(5)
    state[1] = START + table
    bus_free = acked = end = waiting = prev = written = stalled = filled = 0.0
    c_free = np.zeros(2)
    c_bank = 1
    for j in range(min(jobs, 2)):
        _loaded_before(j, loads, ready, state)
        _load(j, 0, 3, order, head, loads, free, bank_of, partial, buses, spans, ready, landed,
              state, latency, expanded, expander)  # fmt: skip
    for j in range(jobs):
        if new_c[j]:
            c_bank ^= 1
        begin = max(prev, ready[j] + HANDOFF, c_free[c_bank])
        waiting += begin - prev
        progress = max(begin, landed[2, j] + HANDOFF)  # busy, waiting for its first words
        prev = max(progress + busy[j], landed[0, j] + tails[0, j], landed[1, j] + tails[1, j])
        filled += progress - begin
        stalled += prev - progress - busy[j]
        for i in range(3):  # the banks whose chunk this was the last to use
            if j + 1 == jobs or loads[i, j + 1]:
                free[i, bank_of[i, j] ^ 1] = prev
        if j + 2 < jobs:  # A and B of the chunk after next go out before this store
            _loaded_before(j + 2, loads, ready, state)
            _load(j + 2, 0, 2, order, head, loads, free, bank_of, partial, buses, spans, ready,
                  landed, state, latency, expanded, expander)  # fmt: skip
        if store_bus[j]:  # one store at a time, behind the reads already requested
            bus_free = state[0]
            start = max(prev + STORE_START, written)
            behind = max(min(bus_free, start + latency + read_window), written)
            written = max(start + store_span[j], behind + store_bus[j])
            state[0] = max(bus_free, start) + store_bus[j]
            acked = written + latency
            state[2] = acked
            end = max(end, acked)
            c_free[c_bank] = written + 1
        if j + 2 < jobs:
            _load(j + 2, 2, 3, order, head, loads, free, bank_of, partial, buses, spans, ready,
                  landed, state, latency, expanded, expander)  # fmt: skip
    return max(end, prev, state[0]) + 1, waiting, state[3], filled, stalled


@njit(cache=True)
def _loaded_before(j, loads, ready, state):
    """A chunk that loads nothing is ready when the one before it is."""
    if not (loads[0, j] or loads[1, j] or loads[2, j]):
        ready[j] = ready[j - 1] if j else state[1]


@njit(cache=True)
def _load(j, first, stop, order, head, loads, free, bank_of, partial, buses, spans, ready, landed,
          state, latency, expanded, expander):  # fmt: skip
    """The read engine serves chunk ``j``'s loads ``first..stop-1`` in order: A and B (as
    ``order`` says), then C or partial sums. The chunk may start once its A and B loads are
    under way, their first words in (not a convolution's A: once expanded), and its C is in."""
    split = order >= SPLIT_A and loads[0, j] and loads[1, j]
    for x in range(first, stop):
        if split and x == 0:  # the first tile row of one, the other, the rest of the first
            y = order - SPLIT_A
            _part(j, y, head[j], True, head[j] == 1, free, bank_of, partial, buses, spans,
                  ready, landed, state, latency, expanded, expander)  # fmt: skip
            _part(j, 1 - y, 1.0, True, True, free, bank_of, partial, buses, spans, ready,
                  landed, state, latency, expanded, expander)  # fmt: skip
            if head[j] < 1:
                _part(j, y, 1 - head[j], False, True, free, bank_of, partial, buses, spans,
                      ready, landed, state, latency, expanded, expander)  # fmt: skip
            continue
        if split and x == 1:
            continue
        i = 1 - x if order == B_FIRST and x < 2 else x
        if loads[i, j]:
            _part(j, i, 1.0, True, True, free, bank_of, partial, buses, spans, ready, landed,
                  state, latency, expanded, expander)  # fmt: skip


@njit(cache=True)
def _part(j, i, share, opens, closes, free, bank_of, partial, buses, spans, ready, landed,
          state, latency, expanded, expander):  # fmt: skip
    """``share`` of chunk ``j``'s load of operand ``i``: its first part if ``opens`` (it waits
    for its bank), its last if ``closes``."""
    issued = state[1]
    gate = max(issued, free[i, bank_of[i, j] ^ 1]) if opens else issued
    if i == 2 and partial[j]:  # partial sums: once every write is answered
        gate = max(gate, state[2])
    conv = i == 0 and expanded[j] > 0
    if conv:  # the expander takes the load once done with the one before, then sets up
        gate = max(gate, state[4])
    state[3] += gate - issued
    if conv:
        gate += expander[0]
    first_beat = max(gate + latency, state[0])
    state[0] = max(gate + latency + spans[i, j] * share, state[0] + buses[i, j] * share)
    if i < 2:  # the chunk starts once its loads are issued, computes from its first words
        if closes:
            landed[i, j] = state[0]
        if opens:
            landed[2, j] = max(landed[2, j], first_beat)
            ready[j] = max(ready[j], gate)
    else:
        ready[j] = max(ready[j], state[0])
    if conv:
        state[4] = state[0] + expander[1] + expanded[j]
        ready[j] = max(ready[j], state[4])
    state[1] = max(gate, state[0] - latency)
