"""The GEMM sequencer's chunk walker: the loop nest of :func:`contract.dma.jobs` in hardware.

Each engine of the device (loads, compute, stores) walks the same nest with its own walker, so
each can run ahead of the next as far as the banks allow, and none needs a queue of jobs. A
walker shows its current job's chunk, what to load, which banks, and what to store; ``advance``
moves to the next job in the descriptor's loop order.
"""

from __future__ import annotations

from amaranth import Module, Mux, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from systolic.contract.axi import ADDR_BITS
from systolic.contract.dma import LOOP_ORDERS
from systolic.contract.interface import DIM_BITS

__all__ = ["ChunkWalker", "nest_layout"]

_DIM = unsigned(DIM_BITS)
_WIDE = unsigned(DIM_BITS + 1)
DIMS = "mkn"


def nest_layout() -> data.StructLayout:
    """What a walker needs of the descriptor: the dimensions, the chunk sizes, the order."""
    return data.StructLayout({"m": _DIM, "k": _DIM, "n": _DIM, "mc": _DIM, "kc": _DIM,
                              "nc": _DIM, "order": 3, "accumulate": 1})  # fmt: skip


class ChunkWalker(wiring.Component):
    """One pass over the chunks of a descriptor (:func:`contract.dma.jobs`).

    Ports
    -----
    nest : in, the descriptor's dimensions, chunk sizes, loop order and accumulate flag.
    next_nest : in, those of the descriptor a restart begins (the device's next slot; ``nest``
        shows it from the cycle after): no input of a restart's cycle passes through to an
        output.
    restart : in, go to the first job of ``next_nest``; its banks are the
        other ones than the previous descriptor's last job's (the first descriptor's are 0), so
        the next descriptor's first loads can go while that job computes.
    advance : in, go to the next job; past the last, ``valid`` falls.
    valid : out, a current job exists.
    m0, k0, n0, mlen, klen, nlen : out, its chunk.
    load_a, load_b : out, its A (B) chunk differs from the previous job's.
    c_in : out, 0 none, 1 C (accumulate into C), 2 partial sums.
    store : out, 0 none, 1 finished outputs, 2 partial sums.
    bank_a, bank_b, bank_c : out, the banks it uses.
    last : out, it is the final job.
    next_load_a, next_load_b : out, the next job loads a new A (B) chunk: this job's bank is
        free after it.
    step_<name> : in, for each of ``tracks``: what its offset gains per chunk along its dimension.
    offset_<name> : out, ``step_<name>`` times the chunks before the current one along that
        dimension (the DRAM offset of a chunk's first tile row, with the step a chunk's tile rows
        times the matrix's stride): kept as a running sum so that no engine multiplies.
    """

    def __init__(self, tracks: dict[str, str] | None = None):
        self._tracks = dict(tracks or {})
        for name, dim in self._tracks.items():
            if dim not in DIMS:
                raise ValueError(
                    f"track {name!r} must follow one of {', '.join(DIMS)}, not {dim!r}"
                )
        super().__init__({
            **{f"step_{name}": In(ADDR_BITS) for name in self._tracks},
            **{f"offset_{name}": Out(ADDR_BITS) for name in self._tracks},
            "nest": In(nest_layout()),
            "next_nest": In(nest_layout()),
            "restart": In(1),
            "advance": In(1),
            "valid": Out(1),
            **{f"{d}0": Out(_DIM) for d in DIMS},
            **{f"{d}len": Out(_DIM) for d in DIMS},
            "load_a": Out(1),
            "load_b": Out(1),
            "new_c": Out(1),
            "c_in": Out(2),
            "store": Out(2),
            # banks start from 1, so a walker's first descriptor after reset uses banks 0
            "bank_a": Out(1, init=1),
            "bank_b": Out(1, init=1),
            "bank_c": Out(1, init=1),
            "last": Out(1),
            "next_load_a": Out(1),
            "next_load_b": Out(1),
        })  # fmt: skip

    def elaborate(self, platform):
        m = Module()
        nest = self.nest
        origin = {d: getattr(self, f"{d}0") for d in DIMS}
        # rank 0 is the innermost loop: each order's letters, outermost first; registered at a
        # restart from ``next_nest`` (``nest`` shows it from the next cycle on), so that the
        # device's slot multiplexers do not stand in front of the walker's outputs
        rank = {d: Signal(2, name=f"rank_{d}") for d in DIMS}
        with m.If(self.restart), m.Switch(self.next_nest.order):
            for code, order in enumerate(LOOP_ORDERS):  # codes past them: refused, any will do
                with m.Case(code) if code < len(LOOP_ORDERS) - 1 else m.Default():
                    m.d.sync += [rank[d].eq(2 - order.index(d)) for d in DIMS]
        # Each dimension's chunk end, wrap flag and length are registers, computed with the
        # origin they belong to: the walkers' outputs feed every engine's command and address
        # logic, and computing them from the origin there would put two adders and a comparator
        # in front of all of it.
        end = {d: Signal(_WIDE, name=f"end_{d}") for d in DIMS}  # origin + size
        wrap = {d: Signal(name=f"wrap_{d}") for d in DIMS}  # end >= total: the last chunk
        # a dimension moves when every loop inside it wraps; it changes unless it has one chunk
        moves, changes, nxt = {}, {}, {}
        for d in DIMS:
            inner = [wrap[e] & (rank[e] < rank[d]) | (rank[e] >= rank[d]) for e in DIMS if e != d]
            moves[d] = Signal(name=f"moves_{d}")
            m.d.comb += moves[d].eq(inner[0] & inner[1])
            nxt[d] = Signal(_DIM, name=f"next_{d}")
            m.d.comb += nxt[d].eq(Mux(moves[d], Mux(wrap[d], 0, end[d]), origin[d]))
            changes[d] = Signal(name=f"changes_{d}")
            m.d.comb += changes[d].eq(nxt[d] != origin[d])

        # The origin from which a chunk reaches the dimension's end (a chunk is at most its
        # dimension: contract.dma refuses it otherwise), taken at a restart: a chunk wraps when
        # its origin is at least that, a comparison beside the end's adder rather than after it.
        reach = {d: Signal(_DIM, name=f"reach_{d}") for d in DIMS}

        def enter(origins, nest=nest, restart=False):
            """Register the chunk at ``origins`` (one per dimension) of ``nest`` as the current
            one."""
            for d in DIMS:
                size, total = getattr(nest, f"{d}c"), getattr(nest, d)
                if restart:  # origins are 0
                    new_wrap = size >= total
                    m.d.sync += reach[d].eq(total - size)
                else:
                    new_wrap = origins[d] >= reach[d]
                length = getattr(self, f"{d}len")
                m.d.sync += [origin[d].eq(origins[d]), end[d].eq(origins[d] + size),
                             wrap[d].eq(new_wrap),
                             length.eq(Mux(new_wrap, total - origins[d], size))]  # fmt: skip

        def track(restart: bool):
            """Each tracked offset follows its dimension's origin: zero on a restart or a wrap,
            one step more when the origin moves on."""
            for name, d in self._tracks.items():
                offset, step = getattr(self, f"offset_{name}"), getattr(self, f"step_{name}")
                if restart:
                    m.d.sync += offset.eq(0)
                else:
                    with m.If(moves[d]):
                        m.d.sync += offset.eq(Mux(wrap[d], 0, offset + step))

        m.d.comb += self.last.eq(wrap["m"] & wrap["k"] & wrap["n"])
        leaves = self.last | changes["m"] | changes["n"]
        last_k = wrap["k"]
        m.d.comb += [
            self.store.eq(Mux(leaves, Mux(last_k, 1, 2), 0)),
            self.c_in.eq(Mux(self.new_c, Mux(origin["k"].any(), 2, Mux(nest.accumulate, 1, 0)), 0)),
        ]
        load_a = changes["m"] | changes["k"]
        load_b = changes["k"] | changes["n"]
        new_c = changes["m"] | changes["n"]
        m.d.comb += [self.next_load_a.eq(load_a), self.next_load_b.eq(load_b)]
        with m.If(self.restart):
            m.d.sync += [self.valid.eq(1), self.load_a.eq(1), self.load_b.eq(1),
                         self.new_c.eq(1), self.bank_a.eq(~self.bank_a),
                         self.bank_b.eq(~self.bank_b), self.bank_c.eq(~self.bank_c)]  # fmt: skip
            enter({d: 0 for d in DIMS}, self.next_nest, restart=True)
            track(restart=True)
        with m.Elif(self.advance & self.valid):
            with m.If(self.last):
                m.d.sync += self.valid.eq(0)
            with m.Else():
                enter(nxt)
                track(restart=False)
                m.d.sync += [self.load_a.eq(load_a), self.load_b.eq(load_b), self.new_c.eq(new_c),
                             self.bank_a.eq(self.bank_a ^ load_a),
                             self.bank_b.eq(self.bank_b ^ load_b),
                             self.bank_c.eq(self.bank_c ^ new_c)]  # fmt: skip
        return m
