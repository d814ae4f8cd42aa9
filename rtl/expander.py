"""The convolution expander (contract.conv): for each A chunk of a convolution descriptor it
works out which input rows the chunk's windows read, hands the read engine that staging load
(every slice's run of those rows, each row once) into its staging buffer, then writes the
chunk's A words into the A bank from the staged rows, one a cycle, padding with the input's
zero point. On WS a word of A is one slice of one input pixel, a staged word; on OS and IS a
word of A holds ``tile`` pixels of one channel, so the staged words gather into blocks of
``tile`` pixels that leave transposed (:meth:`Expander._transpose`).

Setup takes :data:`contract.timing.CONV_SETUP_CYCLES`: the first cycle steps the chunk's first
output row and slice on from the load before (an M chunk is whole output rows that tile each
image, or whole images; a K chunk whole slices: contract.conv.check_conv), the second registers
the staging command. The staging load's last word starts the expansion, whose first A word is
written :data:`contract.timing.EXPAND_LATENCY` cycles later (OS and IS: a block later,
:func:`contract.timing.expansion_cycles`); ``expanded`` marks the last. The
walk over (slice, kernel row, kernel column) and, inside it, over the chunk's output pixels
keeps its input coordinates and staging address as running sums, so no step multiplies.
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, Value, signed, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from systolic.contract.axi import ADDR_BITS
from systolic.contract.config import ArrayConfig, Dataflow
from systolic.contract.dma import containers
from systolic.contract.interface import DIM_BITS
from systolic.contract.layouts import layouts

from .arith import divide
from .array import Flow
from .buffers import address_shape
from .sram import SramMacro

__all__ = ["Expander", "chunk_layout", "geometry_layout"]

_DIM = unsigned(DIM_BITS)
#: Input pixels and staging offsets: a batch's input may hold more pixels than DIM_BITS counts
#: (M counts the output's); signed, for windows that leave the plane.
_PIX = signed(2 * DIM_BITS + 2)


def geometry_layout(config: ArrayConfig) -> data.StructLayout:
    """A convolution descriptor's geometry (contract.dma.conv_fields), its A region and zero
    point, and its chunks' shape as the check found it: output rows (``rows``) and images
    (``images_per_chunk``) per M chunk, slices per K chunk (``slices_per_chunk``)."""
    fields = {"images": _DIM, "height": _DIM, "width": _DIM, "channels": _DIM,
              "out_height": _DIM, "out_width": _DIM, "kh": 4, "kw": 4, "sh": 3, "sw": 3,
              "dh": 3, "dw": 3, "top": 4, "left": 4, "a_addr": ADDR_BITS,
              "a_stride": ADDR_BITS, "rows": _DIM, "images_per_chunk": _DIM,
              "slices_per_chunk": _DIM}  # fmt: skip
    if config.zero_points:
        fields["a_zero"] = signed(config.a_width) if config.a_signed else unsigned(config.a_width)
    return data.StructLayout(fields)


def chunk_layout() -> data.StructLayout:
    """The chunk an A load is for: its first output pixel and slice element, sizes, bank."""
    return data.StructLayout({"m0": _DIM, "mlen": _DIM, "k0": _DIM, "klen": _DIM, "bank": 1})


class Expander(wiring.Component):
    """A convolution's A loads: setup, staging, expansion (see the module).

    Ports
    -----
    geo : in, the descriptor's geometry (:func:`geometry_layout`), read at ``start``.
    chunk : in, the load's chunk (:func:`chunk_layout`), read at ``start``.
    start : in, take the load (only when ``idle``).
    cmd_valid, cmd_addr, cmd_stride, cmd_tiles, cmd_lines : out, the staging load, valid from
        :data:`contract.timing.CONV_SETUP_CYCLES` cycles after ``start`` until ``accepted``.
    accepted : in, the read engine took the staging load: its words follow on ``fill``.
    fill : in Flow {addr, data}, the staging load's words; ``staged`` with the last.
    write : out Flow {bank, addr, data}, the A bank's words; ``expanded`` with the last.
    idle : out, no load taken; ``setting``: from ``start`` to ``accepted``; ``staging``: from
        ``accepted`` to ``staged``.
    """

    def __init__(self, config: ArrayConfig):
        if not config.stage_depth:
            raise ValueError("an Expander needs a staging buffer (stage_depth > 0)")
        self._config = config
        self._word = layouts(config)["a"]
        self._transposed = config.dataflow is not Dataflow.WS
        bits = self._word.bits
        super().__init__({
            "geo": In(geometry_layout(config)),
            "chunk": In(chunk_layout()),
            "start": In(1),
            "cmd_valid": Out(1),
            "cmd_addr": Out(ADDR_BITS),
            "cmd_stride": Out(ADDR_BITS),
            "cmd_tiles": Out(DIM_BITS + 1),
            "cmd_lines": Out(DIM_BITS + 1),
            "accepted": In(1),
            "fill": In(Flow(data.StructLayout({"addr": address_shape(),
                                                "data": unsigned(bits)}))),  # fmt: skip
            "staged": In(1),
            "write": Out(Flow(data.StructLayout({"bank": 1, "addr": address_shape(),
                                                 "data": unsigned(bits)}))),  # fmt: skip
            "expanded": Out(1),
            "idle": Out(1),
            "setting": Out(1),
            "staging": Out(1),
        })  # fmt: skip

    def elaborate(self, platform):
        m = Module()
        cfg, word = self._config, self._word
        g = Signal(geometry_layout(cfg), name="exp_geo")  # latched at start
        ch = Signal(chunk_layout(), name="exp_chunk")
        # states: idle, two setup cycles, the command out, staging, expanding
        state = Signal(range(6), name="exp_state")
        IDLE, SETUP, READY, STAGING, EXPAND, LAST = 0, 1, 2, 3, 4, 5  # LAST: the last write
        m.d.comb += [self.idle.eq(~state.any()), self.staging.eq(state == STAGING),
                     self.setting.eq((state == SETUP) | (state == READY)),
                     self.cmd_valid.eq(state == READY)]  # fmt: skip

        # -- the tracker: the chunk's first image, output row and slice --------------------
        img0, oy0, s0 = (Signal(_DIM, name=f"exp_{n}") for n in ("img0", "oy0", "s0"))
        last_m0, last_k0 = Signal(_DIM, name="exp_last_m0"), Signal(_DIM, name="exp_last_k0")
        geo, c = self.geo, self.chunk
        with m.If(self.start):
            m.d.sync += [g.eq(geo), ch.eq(c), state.eq(SETUP), last_m0.eq(c.m0),
                         last_k0.eq(c.k0)]  # fmt: skip
            with m.If(~c.m0.any()):
                m.d.sync += [img0.eq(0), oy0.eq(0)]
            with m.Elif(c.m0 != last_m0):  # the next M chunk: R more rows, or q more images
                with m.If(geo.rows >= geo.out_height):
                    m.d.sync += [img0.eq(img0 + geo.images_per_chunk), oy0.eq(0)]
                with m.Elif(oy0 + geo.rows == geo.out_height):
                    m.d.sync += [img0.eq(img0 + 1), oy0.eq(0)]
                with m.Else():
                    m.d.sync += oy0.eq(oy0 + geo.rows)
            with m.If(~c.k0.any()):
                m.d.sync += s0.eq(0)
            with m.Elif(c.k0 != last_k0):
                m.d.sync += s0.eq(s0 + geo.slices_per_chunk)

        # -- the staging command (registered in the second setup cycle) ----------------------
        tile = word.tile
        total_slices = divide(g.channels + tile - 1, tile, DIM_BITS + 1)
        hw = Signal(unsigned(2 * DIM_BITS), name="exp_hw")
        m.d.comb += hw.eq(g.height * g.width)
        whole = g.rows > g.out_height  # whole images a chunk
        img1 = Signal(_DIM, name="exp_img1")  # the chunk's last image and output row
        oy1 = Signal(_DIM, name="exp_oy1")
        with m.If(whole):
            past = img0 + g.images_per_chunk
            m.d.comb += [img1.eq(Mux(past > g.images, g.images, past) - 1),
                         oy1.eq(g.out_height - 1)]  # fmt: skip
        with m.Else():
            m.d.comb += [img1.eq(img0), oy1.eq(oy0 + g.rows - 1)]
        span = Signal(unsigned(8), name="exp_span")  # (kh - 1) * dh
        m.d.comb += span.eq((g.kh - 1) * g.dh)

        def clamp(v):
            top = g.height - 1
            return Mux(v < 0, 0, Mux(v > top, top, v))

        lo = Signal(_PIX, name="exp_row_lo")
        hi = Signal(_PIX, name="exp_row_hi")
        m.d.comb += [lo.eq(clamp(oy0 * g.sh - g.top)), hi.eq(clamp(oy1 * g.sh - g.top + span))]
        p_lo = Signal(_PIX, name="exp_p_lo")
        lines = Signal(_PIX, name="exp_lines")
        s1 = Mux(s0 + g.slices_per_chunk > total_slices, total_slices, s0 + g.slices_per_chunk)
        cont = containers(cfg)["a"]
        with m.If(state == SETUP):
            p_first = img0 * hw + lo * g.width
            p_past = img1 * hw + (hi + 1) * g.width
            m.d.sync += [
                state.eq(READY),
                p_lo.eq(p_first),
                lines.eq(p_past - p_first),
                self.cmd_addr.eq(g.a_addr + s0 * g.a_stride + p_first * cont),
                self.cmd_stride.eq(g.a_stride),
                self.cmd_tiles.eq(s1 - s0),
                self.cmd_lines.eq(p_past - p_first),
            ]
        with m.If((state == READY) & self.accepted):
            m.d.sync += state.eq(STAGING)

        # -- the staging buffer --------------------------------------------------------------
        m.submodules.staging = sram = SramMacro(width=word.bits, depth=cfg.stage_depth)
        r_en, r_addr, r_data = sram.read_port(0)
        m.d.comb += [sram.w_en.eq(self.fill.valid), sram.w_addr.eq(self.fill.payload.addr),
                     sram.w_data.eq(self.fill.payload.data)]  # fmt: skip
        with m.If((state == STAGING) & self.staged):
            m.d.sync += state.eq(EXPAND)
        last = self._expand(m, g, ch, state == EXPAND, (state == STAGING) & self.staged,
                            (img0, oy0, p_lo, lines), (r_en, r_addr, r_data))  # fmt: skip
        with m.If(last):  # the last staging read: nothing more to read
            m.d.sync += state.eq(LAST)
        with m.If(self.expanded):
            m.d.sync += state.eq(IDLE)
        return m

    def _expand(self, m: Module, g, ch, expanding, begin, chunk, port):
        """The A words of the chunk, slice by kernel row by kernel column (K's order), each over
        the chunk's output pixels: a staging read a cycle, its word (or the zero point's) into
        the A bank the cycle after; returns the last read's cycle."""
        cfg, word = self._config, self._word
        img0, oy0, p_lo, lines = chunk
        r_en, r_addr, r_data = port
        tlen = Signal(_DIM, name="exp_tlen")  # K words of the chunk
        m.d.comb += tlen.eq(divide(ch.klen, word.tile, DIM_BITS))
        # the walk's position: K word t = (slot, ky, kx); pixel i = (img, oy, ox)
        t, i = Signal(_DIM, name="exp_t"), Signal(_DIM, name="exp_i")
        ky, kx = Signal(4, name="exp_ky"), Signal(4, name="exp_kx")
        slot = Signal(_PIX, name="exp_slot")  # staging offset of the slice: (s - s0) * lines
        iy_k = Signal(_PIX, name="exp_iy_k")  # ky * dh - top
        ix_k = Signal(_PIX, name="exp_ix_k")  # kx * dw - left
        img, oy, ox = (Signal(_DIM, name=f"exp_{n}") for n in ("img", "oy", "ox"))
        iy, ix = Signal(_PIX, name="exp_iy"), Signal(_PIX, name="exp_ix")
        row = Signal(_PIX, name="exp_row")  # staging address of (img, iy, 0)
        image = Signal(_PIX, name="exp_image")  # staging address of (img, iy_k, 0)
        out = Signal(_DIM, name="exp_out")  # the A bank address
        width = g.width
        hw = Signal(_PIX, name="exp_hw_s")
        m.d.comb += hw.eq(g.height * width)
        oy0_sh = oy0 * g.sh

        def restart(iy_k_, slot_):
            """The pixel walk from the chunk's first output pixel, at kernel row offset
            ``iy_k_`` (``ky * dh - top``) and slice offset ``slot_``."""
            first = img0 * hw - p_lo + slot_ + iy_k_ * width
            return [img.eq(img0), oy.eq(oy0), ox.eq(0), iy.eq(iy_k_ + oy0_sh),
                    image.eq(first), row.eq(first + oy0_sh * width), i.eq(0)]  # fmt: skip

        with m.If(begin):
            m.d.sync += [t.eq(0), ky.eq(0), kx.eq(0), slot.eq(0), iy_k.eq(-g.top),
                         ix_k.eq(-g.left), ix.eq(-g.left), out.eq(0)]  # fmt: skip
            m.d.sync += restart(-g.top, 0)
        valid = Signal(name="exp_valid")
        m.d.comb += valid.eq((iy >= 0) & (iy < g.height) & (ix >= 0) & (ix < width))
        go = Signal(name="exp_go")  # the walk reads this cycle
        last_i = i + 1 == ch.mlen
        last = go & last_i & (t + 1 == tlen)
        zero = Const(0, word.bits)
        if cfg.zero_points:
            zero = Cat(*[Value.cast(g.a_zero)[: word.width]] * word.tile)
        if self._transposed:
            m.d.comb += go.eq(expanding & self._transpose(m, ch, go, begin, last_i, last, valid,
                                                          r_data, zero))  # fmt: skip
        else:
            m.d.comb += go.eq(expanding)
        m.d.comb += [r_en.eq(go & valid), r_addr.eq(row + ix)]
        with m.If(go):
            m.d.sync += out.eq(out + 1)
            with m.If(~last_i):
                m.d.sync += i.eq(i + 1)
                with m.If(ox + 1 == g.out_width):
                    m.d.sync += [ox.eq(0), ix.eq(ix_k)]
                    with m.If(oy + 1 == g.out_height):
                        m.d.sync += [oy.eq(0), img.eq(img + 1), iy.eq(iy_k),
                                     image.eq(image + hw), row.eq(image + hw)]  # fmt: skip
                    with m.Else():
                        m.d.sync += [oy.eq(oy + 1), iy.eq(iy + g.sh), row.eq(row + g.sh * width)]
                with m.Else():
                    m.d.sync += [ox.eq(ox + 1), ix.eq(ix + g.sw)]
            with m.Else():  # the next K word: the next kernel column, row or slice
                m.d.sync += t.eq(t + 1)
                with m.If(kx + 1 < g.kw):
                    m.d.sync += [kx.eq(kx + 1), ix_k.eq(ix_k + g.dw), ix.eq(ix_k + g.dw)]
                    m.d.sync += restart(iy_k, slot)
                with m.Else():
                    m.d.sync += [kx.eq(0), ix_k.eq(-g.left), ix.eq(-g.left)]
                    with m.If(ky + 1 < g.kh):
                        m.d.sync += [ky.eq(ky + 1), iy_k.eq(iy_k + g.dh)]
                        m.d.sync += restart(iy_k + g.dh, slot)
                    with m.Else():
                        m.d.sync += [ky.eq(0), iy_k.eq(-g.top), slot.eq(slot + lines)]
                        m.d.sync += restart(-g.top, slot + lines)
        if self._transposed:
            return last
        # the word read this cycle goes to the bank the next (the zero point where padding)
        w_valid = Signal(name="exp_w_valid")
        w_pad = Signal(name="exp_w_pad")
        w_addr = Signal.like(out, name="exp_w_addr")
        w_last = Signal(name="exp_w_last")
        m.d.sync += [w_valid.eq(go), w_pad.eq(~valid), w_addr.eq(out), w_last.eq(last)]
        m.d.comb += [
            self.write.valid.eq(w_valid),
            self.write.payload.bank.eq(ch.bank),
            self.write.payload.addr.eq(w_addr),
            self.write.payload.data.eq(Mux(w_pad, zero, r_data)),
            self.expanded.eq(w_valid & w_last),
        ]
        return last

    def _transpose(self, m: Module, ch, go, begin, last_i, last, valid, r_data, zero):
        """OS and IS: the walk's words (a slice of ``tile`` channels of one pixel) gather into
        a block of ``tile`` pixels, then leave as ``tile`` A words (``tile`` pixels of one
        channel), a word a cycle, while the next block gathers into the other of two blocks;
        pixels past the chunk's are 0. Returns whether the walk may read this cycle (the block
        it gathers into is empty, or writing its last word)."""
        word = self._word
        tile, width = word.tile, word.width
        blocks = [[Signal(word.bits, name=f"exp_blk{b}_{p}") for p in range(tile)] for b in (0, 1)]
        full = [Signal(name=f"exp_full{b}") for b in (0, 1)]
        lanes_in = [Signal(tile, name=f"exp_lanes{b}") for b in (0, 1)]  # pixels it holds
        base = [Signal(_DIM, name=f"exp_base{b}") for b in (0, 1)]
        ends = [Signal(name=f"exp_ends{b}") for b in (0, 1)]  # holds the chunk's last pixel
        gather = Signal(name="exp_gather")
        pos = Signal(tile, name="exp_pos", init=1)  # the gathering pixel's place, one-hot
        emit, col = Signal(name="exp_emit"), Signal(range(tile), name="exp_col")
        block = Signal(_DIM, name="exp_block")  # the gathering block's first A word
        kword = Signal(_DIM, name="exp_kword")  # the walk's K word times tile
        # -- gathering: the walk's reads, stored the cycle after --------------------------------
        done = last_i | pos[-1]  # the block ends with this pixel
        with m.If(begin):
            m.d.sync += [gather.eq(0), pos.eq(1), block.eq(0), kword.eq(0), emit.eq(0),
                         col.eq(0), full[0].eq(0), full[1].eq(0)]  # fmt: skip
        with m.Elif(go):
            with m.If(done):
                m.d.sync += [pos.eq(1), gather.eq(~gather)]
                with m.If(last_i):  # the next K word: its first block
                    m.d.sync += [kword.eq(kword + tile), block.eq(kword + tile)]
                with m.Else():
                    m.d.sync += block.eq(block + ch.klen)
            with m.Else():
                m.d.sync += pos.eq(Cat(Const(0, 1), pos[:-1]))
        s_valid, s_pad, s_done, s_last = (Signal(name=f"exp_s_{n}")
                                          for n in ("valid", "pad", "done", "last"))  # fmt: skip
        s_buf, s_pos = Signal(name="exp_s_buf"), Signal(tile, name="exp_s_pos")
        s_base = Signal(_DIM, name="exp_s_base")
        m.d.sync += [s_valid.eq(go), s_pad.eq(~valid), s_done.eq(done), s_last.eq(last),
                     s_buf.eq(gather), s_pos.eq(pos), s_base.eq(block)]  # fmt: skip
        got = Mux(s_pad, zero, r_data)
        for b in (0, 1):
            with m.If(s_valid & (s_buf == b)):
                for p in range(tile):
                    with m.If(s_pos[p]):
                        m.d.sync += blocks[b][p].eq(got)
                with m.If(s_done):  # pixel p is in the block where the last is p or past it
                    inside = Cat(*[s_pos[p:].any() for p in range(tile)])
                    m.d.sync += [full[b].eq(1), lanes_in[b].eq(inside), base[b].eq(s_base),
                                 ends[b].eq(s_last)]  # fmt: skip
        # -- writing: the full blocks in order, a channel's word a cycle ------------------------
        busy = Mux(emit, full[1], full[0])
        lanes = []
        for p in range(tile):
            held = Signal(width, name=f"exp_lane{p}")  # channel `col` of the block's pixel p
            pixel = Mux(emit, blocks[1][p], blocks[0][p])
            with m.Switch(col):
                for c in range(tile):
                    with m.Case(c) if c < tile - 1 else m.Default():
                        m.d.comb += held.eq(pixel[c * width : (c + 1) * width])
            lanes.append(Mux(Mux(emit, lanes_in[1], lanes_in[0])[p], held, 0))
        freeing = busy & (col == tile - 1)
        m.d.comb += [
            self.write.valid.eq(busy),
            self.write.payload.bank.eq(ch.bank),
            self.write.payload.addr.eq(Mux(emit, base[1], base[0]) + col),
            self.write.payload.data.eq(Cat(*lanes)),
            self.expanded.eq(freeing & Mux(emit, ends[1], ends[0])),
        ]
        with m.If(busy & ~begin):
            m.d.sync += col.eq(Mux(freeing, 0, col + 1))
            with m.If(freeing):
                m.d.sync += emit.eq(~emit)
                for b in (0, 1):
                    with m.If(emit == b):
                        m.d.sync += full[b].eq(0)
        gathering_full = Mux(gather, full[1], full[0])
        return ~gathering_full | (freeing & (emit == gather))
