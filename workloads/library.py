"""Workloads as GEMMs: transformer blocks and CNN layers (lowered by im2col), and SCALE-Sim
topology files.

Every layer becomes ``C[M,N] = A[M,K] @ B[K,N]`` with A the activations and, where the layer has
them, B the weights. A :class:`Gemm` repeated ``count`` times (attention heads, depthwise
channels, identical blocks) is evaluated once and scaled, which the results state.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

from systolic.contract.checks import is_integer
from systolic.contract.conv import Conv

__all__ = [
    "CNNS",
    "TRANSFORMERS",
    "Gemm",
    "Operator",
    "Workload",
    "PHASES",
    "WorkloadError",
    "cnn",
    "read_scalesim_topology",
    "transformer",
]


class WorkloadError(ValueError):
    """A workload that cannot be built; the message names the parameter or file line."""


@dataclass(frozen=True)
class Gemm:
    """One layer as a GEMM, run ``count`` times per inference of the workload's batch. A
    convolution's GEMM is its im2col GEMM (one group's, ``count`` counting the groups) and
    ``conv`` its geometry, from which the driver chooses how it runs on a configuration
    (:func:`contract.lowering.lower_conv`). ``diagonal``: the driver posts it with
    block-diagonal weights (a depthwise convolution's slice, :class:`contract.lowering.Piece`).
    """

    name: str
    m: int
    k: int
    n: int
    count: int = 1
    weights: bool = True  # B holds trained weights (False: attention's activation x activation)
    conv: Conv | None = None
    diagonal: bool = False

    def to_dict(self) -> dict:
        """The fields; ``conv`` and ``diagonal`` only where set (GEMM lists keep their old
        form)."""
        out = asdict(self)
        if self.conv is None:
            del out["conv"]
        if not self.diagonal:
            del out["diagonal"]
        return out

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.m, self.k, self.n

    @property
    def macs(self) -> int:
        return self.m * self.k * self.n * self.count


@dataclass(frozen=True)
class Operator:
    """One operator between the GEMMs of an inference, run ``count`` times: ``op`` (an ONNX
    operator type, ``Bias`` for a GEMM's bias, ``Gelu`` for GELU however exported), the
    elements it writes and reads in a run, the elements each output reads (``window``: a
    pooling window, a reduction's length), and ``gemm``: the GEMM whose output it takes
    directly and alone (so the GEMM's output path may absorb it), else None. Where the
    geometry is known, ``tensor`` is the (first) input as ``(N, H, W, C)`` and a pooling's
    ``pool`` is ``(kh, kw, stride_h, stride_w, pad_top, pad_left, out_h, out_w)``: what a
    vector unit's descriptor needs. ``follows`` names the operator whose output an activation
    takes directly and alone (so a vector unit running that one may clamp it), else None."""

    name: str
    op: str
    elements: int
    inputs: int
    window: int = 1
    count: int = 1
    gemm: str | None = None
    tensor: tuple[int, int, int, int] | None = None
    pool: tuple[int, ...] | None = None
    follows: str | None = None


@dataclass(frozen=True)
class Workload:
    """One inference of a model (or a file's layers) on a batch: the GEMMs it runs, the
    operators between them, and the order of both (``schedule``: ``(name, runs)`` steps; by
    default every GEMM ``count`` times in turn, then every operator)."""

    name: str  # e.g. "bert-base b8 s128"
    model: str
    family: str  # "transformer", "cnn", "scalesim", "gemm", "onnx"
    batch: int
    seq: int | None
    gemms: tuple[Gemm, ...] = field(default_factory=tuple)
    #: Operators that are not array work, ``(op type, nodes)``: an ONNX model's elementwise,
    #: normalization and shape operators (``host_ops``) and those with multiply-accumulates the
    #: array does not run (``unsupported_ops``). They cost no array time; reports list them.
    host_ops: tuple[tuple[str, int], ...] = ()
    unsupported_ops: tuple[tuple[str, int], ...] = ()
    operators: tuple[Operator, ...] = ()
    schedule: tuple[tuple[str, int], ...] = ()

    @property
    def macs(self) -> int:
        return sum(g.macs for g in self.gemms)

    def steps(self) -> list[tuple[Gemm | Operator, int]]:
        """The schedule with its names resolved; every GEMM and operator runs its ``count``
        times in all (a schedule that says otherwise is an error)."""
        named = {x.name: x for x in (*self.gemms, *self.operators)}
        if len(named) != len(self.gemms) + len(self.operators):
            raise WorkloadError(f"{self.name}: GEMM and operator names must be unique")
        if not self.schedule:
            return [(x, x.count) for x in (*self.gemms, *self.operators)]
        runs = dict.fromkeys(named, 0)
        out = []
        for name, times in self.schedule:
            if name not in named:
                raise WorkloadError(f"{self.name}: the schedule names {name!r}, which is "
                                    f"neither a GEMM nor an operator")  # fmt: skip
            runs[name] += times
            out.append((named[name], times))
        wrong = [f"{n} ({runs[n]} of {x.count})" for n, x in named.items() if runs[n] != x.count]
        if wrong:
            raise WorkloadError(f"{self.name}: the schedule runs {', '.join(wrong)} times")
        return out

    def summary(self) -> dict:
        """:meth:`to_dict` without the GEMMs."""
        out = {"name": self.name, "model": self.model, "family": self.family,
               "batch": self.batch, "seq": self.seq}  # fmt: skip
        for key in ("host_ops", "unsupported_ops"):  # only where there are any
            if getattr(self, key):
                out[key] = dict(getattr(self, key))
        return out

    def to_dict(self) -> dict:
        out = self.summary() | {"gemms": [g.to_dict() for g in self.gemms]}
        if self.operators:  # only where there are any: GEMM lists keep their old form
            out |= {"operators": [asdict(o) for o in self.operators],
                    "schedule": [list(step) for step in self.schedule]}  # fmt: skip
        return out


# -- transformers ------------------------------------------------------------------------------

#: Encoder/decoder stacks: layers, hidden size d, heads h, feed-forward size.
TRANSFORMERS = {
    # Devlin et al., "BERT", NAACL 2019, section 3: BERT-base L=12, H=768, A=12, FFN 4H.
    "bert-base": {"layers": 12, "d": 768, "heads": 12, "ffn": 3072},
    # Devlin et al. 2019: BERT-large L=24, H=1024, A=16, FFN 4H.
    "bert-large": {"layers": 24, "d": 1024, "heads": 16, "ffn": 4096},
    # Radford et al., "Language Models are Unsupervised Multitask Learners", 2019, table 2: the
    # smallest GPT-2 has 12 layers of d_model 768 (12 heads, FFN 4 x 768).
    "gpt2-small": {"layers": 12, "d": 768, "heads": 12, "ffn": 3072},
}


PHASES = ("prefill", "decode")


def transformer(model: str, batch: int, seq: int, phase: str = "prefill") -> Workload:
    """The GEMMs of every block of ``model`` for ``batch`` sequences, and the operators between
    them (biases, softmax, residual adds, layer norms, GELU); the embeddings and the output head
    are not included.

    ``prefill`` processes ``seq`` tokens per sequence at once; ``decode`` generates one token
    per sequence against a cache of ``seq`` earlier keys and values, so every weight GEMM has
    only ``batch`` rows: the case where batch alone sets weight reuse.
    """
    if model not in TRANSFORMERS:
        raise WorkloadError(
            f"transformer model must be one of {', '.join(TRANSFORMERS)}, not {model!r}"
        )
    if phase not in PHASES:
        raise WorkloadError(f"phase must be one of {', '.join(PHASES)}, not {phase!r}")
    batch, seq = _positive("batch", batch), _positive("seq", seq)
    p = TRANSFORMERS[model]
    d, h, ffn, layers = p["d"], p["heads"], p["ffn"], p["layers"]
    dh = d // h
    if phase == "decode":
        gemms = (
            Gemm("qkv", batch, d, 3 * d, layers),
            Gemm("scores", 1, dh, seq, layers * batch * h, weights=False),  # q K^T, cached K
            Gemm("context", 1, seq, dh, layers * batch * h, weights=False),  # cached V
            Gemm("out_proj", batch, d, d, layers),
            Gemm("ffn_up", batch, d, ffn, layers),
            Gemm("ffn_down", batch, ffn, d, layers),
        )
        name = f"{model} decode"
        ops, schedule = _block_operators(p, batch, batch, 1, seq)
        return Workload(f"{name} b{batch} s{seq}", name, "transformer", batch, seq, gemms,
                        operators=ops, schedule=schedule)  # fmt: skip
    tokens = batch * seq
    gemms = (
        Gemm("qkv", tokens, d, 3 * d, layers),
        Gemm("scores", seq, dh, seq, layers * batch * h, weights=False),  # Q K^T per head
        Gemm("context", seq, seq, dh, layers * batch * h, weights=False),  # softmax(.) V
        Gemm("out_proj", tokens, d, d, layers),
        Gemm("ffn_up", tokens, d, ffn, layers),
        Gemm("ffn_down", tokens, ffn, d, layers),
    )
    ops, schedule = _block_operators(p, batch, tokens, seq, seq)
    return Workload(f"{model} b{batch} s{seq}", model, "transformer", batch, seq, gemms,
                    operators=ops, schedule=schedule)  # fmt: skip


def _block_operators(p: dict, batch: int, rows: int, queries: int, keys: int):
    """The operators of every block (post-norm, as BERT and the GPT-2 layer shapes here):
    each GEMM's bias, softmax over the scores, the two residual adds and layer norms, GELU;
    and the schedule of GEMMs and operators, block after block. ``rows`` is the tokens each
    weight GEMM takes, ``queries`` and ``keys`` the attention's per sequence."""
    d, h, ffn, layers = p["d"], p["heads"], p["ffn"], p["layers"]
    heads = batch * h
    scores = heads * queries * keys
    ops = (
        Operator("qkv_bias", "Bias", rows * 3 * d, rows * 3 * d, count=layers, gemm="qkv"),
        Operator("softmax", "Softmax", scores, scores, count=layers),
        Operator("out_proj_bias", "Bias", rows * d, rows * d, count=layers, gemm="out_proj"),
        Operator(
            "attn_residual", "Add", rows * d, 2 * rows * d, count=layers, tensor=(1, 1, rows, d)
        ),
        Operator("attn_norm", "LayerNormalization", rows * d, rows * d, count=layers),
        Operator("ffn_up_bias", "Bias", rows * ffn, rows * ffn, count=layers, gemm="ffn_up"),
        Operator("gelu", "Gelu", rows * ffn, rows * ffn, count=layers),
        Operator("ffn_down_bias", "Bias", rows * d, rows * d, count=layers, gemm="ffn_down"),
        Operator(
            "ffn_residual", "Add", rows * d, 2 * rows * d, count=layers, tensor=(1, 1, rows, d)
        ),
        Operator("ffn_norm", "LayerNormalization", rows * d, rows * d, count=layers),
    )
    block = (("qkv", 1), ("qkv_bias", 1), ("scores", heads), ("softmax", 1), ("context", heads),
             ("out_proj", 1), ("out_proj_bias", 1), ("attn_residual", 1), ("attn_norm", 1),
             ("ffn_up", 1), ("ffn_up_bias", 1), ("gelu", 1), ("ffn_down", 1),
             ("ffn_down_bias", 1), ("ffn_residual", 1), ("ffn_norm", 1))  # fmt: skip
    return ops, block * layers


# -- CNNs --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Conv:
    name: str
    out: int  # output height = width (the input's is ``out * stride``, pads ``kernel // 2``)
    cin: int
    cout: int
    kernel: int
    count: int = 1
    depthwise: bool = False
    stride: int = 1

    def geometry(self, batch: int) -> Conv:
        size, k = self.out * self.stride, self.kernel
        conv = Conv(batch, size, size, self.cin, self.cout, (k, k), (self.stride,) * 2,
                    (k // 2,) * 4, groups=self.cin if self.depthwise else 1)  # fmt: skip
        assert conv.out == (self.out, self.out), (self, conv.out)
        return conv


# He et al., "Deep Residual Learning", CVPR 2016, table 1 (50-layer), in the torchvision v1.5
# form (stride on the 3x3 convolution), 224 x 224 input. Identical convolutions are counted.
_RESNET50 = [
    _Conv("conv1", 112, 3, 64, 7, stride=2),
    _Conv("l1_reduce_first", 56, 64, 64, 1),
    _Conv("l1_reduce", 56, 256, 64, 1, 2),
    _Conv("l1_3x3", 56, 64, 64, 3, 3),
    _Conv("l1_expand", 56, 64, 256, 1, 3),
    _Conv("l1_down", 56, 64, 256, 1),
    _Conv("l2_reduce_first", 56, 256, 128, 1),
    _Conv("l2_3x3_first", 28, 128, 128, 3, stride=2),
    _Conv("l2_reduce", 28, 512, 128, 1, 3),
    _Conv("l2_3x3", 28, 128, 128, 3, 3),
    _Conv("l2_expand", 28, 128, 512, 1, 4),
    _Conv("l2_down", 28, 256, 512, 1, stride=2),
    _Conv("l3_reduce_first", 28, 512, 256, 1),
    _Conv("l3_3x3_first", 14, 256, 256, 3, stride=2),
    _Conv("l3_reduce", 14, 1024, 256, 1, 5),
    _Conv("l3_3x3", 14, 256, 256, 3, 5),
    _Conv("l3_expand", 14, 256, 1024, 1, 6),
    _Conv("l3_down", 14, 512, 1024, 1, stride=2),
    _Conv("l4_reduce_first", 14, 1024, 512, 1),
    _Conv("l4_3x3_first", 7, 512, 512, 3, stride=2),
    _Conv("l4_reduce", 7, 2048, 512, 1, 2),
    _Conv("l4_3x3", 7, 512, 512, 3, 2),
    _Conv("l4_expand", 7, 512, 2048, 1, 3),
    _Conv("l4_down", 7, 1024, 2048, 1, stride=2),
    _Conv("fc", 1, 2048, 1000, 1),
]

# Howard et al., "MobileNets", 2017, table 1: 224 x 224 input, width multiplier 1. Each
# depthwise 3x3 convolution's im2col is one GEMM per channel (K = 9, N = 1).
_MOBILENET_V1 = [
    _Conv("conv1", 112, 3, 32, 3, stride=2),
    _Conv("dw1", 112, 32, 32, 3, depthwise=True),
    _Conv("pw1", 112, 32, 64, 1),
    _Conv("dw2", 56, 64, 64, 3, depthwise=True, stride=2),
    _Conv("pw2", 56, 64, 128, 1),
    _Conv("dw3", 56, 128, 128, 3, depthwise=True),
    _Conv("pw3", 56, 128, 128, 1),
    _Conv("dw4", 28, 128, 128, 3, depthwise=True, stride=2),
    _Conv("pw4", 28, 128, 256, 1),
    _Conv("dw5", 28, 256, 256, 3, depthwise=True),
    _Conv("pw5", 28, 256, 256, 1),
    _Conv("dw6", 14, 256, 256, 3, depthwise=True, stride=2),
    _Conv("pw6", 14, 256, 512, 1),
    _Conv("dw7", 14, 512, 512, 3, 5, depthwise=True),
    _Conv("pw7", 14, 512, 512, 1, 5),
    _Conv("dw8", 7, 512, 512, 3, depthwise=True, stride=2),
    _Conv("pw8", 7, 512, 1024, 1),
    _Conv("dw9", 7, 1024, 1024, 3, depthwise=True),
    _Conv("pw9", 7, 1024, 1024, 1),
    _Conv("fc", 1, 1024, 1000, 1),
]

CNNS = {"resnet50": _RESNET50, "mobilenet-v1": _MOBILENET_V1}


def _conv_gemm(c: _Conv, batch: int) -> Gemm:
    """im2col: one row per output pixel of the batch, one column per filter tap x channel (a
    depthwise convolution's: a GEMM per channel), with the convolution's geometry."""
    conv = c.geometry(batch)
    return Gemm(c.name, *conv.gemm, c.count * conv.groups, conv=conv)


def cnn(model: str, batch: int) -> Workload:
    """The convolution and fully connected layers of ``model`` for ``batch`` images, and the
    operators between them: each layer's bias (its BatchNormalization folded in) and
    activation, ResNet's residual adds, the pooling layers and the classifier's softmax."""
    if model not in CNNS:
        raise WorkloadError(f"CNN model must be one of {', '.join(CNNS)}, not {model!r}")
    batch = _positive("batch", batch)
    convs = CNNS[model]
    gemms = tuple(_conv_gemm(c, batch) for c in convs)
    build = _resnet_schedule if model == "resnet50" else _mobilenet_schedule
    ops, schedule = build({c.name: c for c in convs}, batch)
    return Workload(f"{model} b{batch}", model, "cnn", batch, None, gemms, operators=ops,
                    schedule=schedule)  # fmt: skip


class _Graph:
    """Collects a CNN's operators (summing the runs of those that repeat) and its schedule."""

    def __init__(self, convs: dict, batch: int):
        self.convs, self.batch = convs, batch
        self.ops: dict[str, Operator] = {}
        self.schedule: list[tuple[str, int]] = []

    def op(self, name: str, op: str, elements: int, inputs: int, window: int = 1,
           gemm: str | None = None, plane: tuple[int, int, int] | None = None,
           pool: tuple[int, ...] | None = None, follows: str | None = None) -> None:  # fmt: skip
        """Operator ``name`` (its sizes per image; ``plane`` is its input's H, W, C)."""
        known = self.ops.get(name)
        count = known.count + 1 if known else 1
        tensor = (self.batch, *plane) if plane else None
        self.ops[name] = Operator(name, op, elements * self.batch, inputs * self.batch, window,
                                  count, gemm, tensor, pool, follows)  # fmt: skip
        self.schedule.append((name, 1))

    def conv(self, name: str, activation: str | None) -> int:
        """Conv ``name`` (one run: a GEMM per channel if depthwise), its bias and activation;
        its output elements per image."""
        c = self.convs[name]
        self.schedule.append((name, c.cin if c.depthwise else 1))
        out = c.out * c.out * c.cout
        self.op(f"{name}_bias", "Bias", out, out, gemm=name)
        if activation:
            self.op(f"{name}_{activation.lower()}", activation, out, out, gemm=name)
        return out

    def global_pool(self, last) -> None:
        """The global average pool over conv ``last``'s output plane."""
        size, c = last.out, last.cout
        self.op("avgpool", "GlobalAveragePool", c, size * size * c, window=size * size,
                plane=(size, size, c), pool=(size, size, 1, 1, 0, 0, 1, 1))  # fmt: skip

    def result(self) -> tuple[tuple[Operator, ...], tuple[tuple[str, int], ...]]:
        return tuple(self.ops.values()), tuple(self.schedule)


def _resnet_schedule(convs: dict, batch: int):
    """ResNet-50's bottlenecks in order: 1x1 reduce, 3x3, 1x1 expand (and the projection of a
    stage's first block), the residual add, then ReLU."""
    g = _Graph(convs, batch)
    stem = g.conv("conv1", "Relu")
    first = convs["conv1"]
    half = first.out // 2
    g.op("maxpool", "MaxPool", stem // 4, stem, window=9,
         plane=(first.out, first.out, first.cout), pool=(3, 3, 2, 2, 1, 1, half, half))  # fmt: skip
    for stage, blocks in (("l1", 3), ("l2", 4), ("l3", 6), ("l4", 3)):
        for i in range(blocks):
            g.conv(f"{stage}_reduce_first" if i == 0 else f"{stage}_reduce", "Relu")
            opening = f"{stage}_3x3_first"  # the stride-2 3x3 opening a stage (not l1)
            g.conv(opening if i == 0 and opening in convs else f"{stage}_3x3", "Relu")
            out = g.conv(f"{stage}_expand", None)
            if i == 0:
                g.conv(f"{stage}_down", None)
            c = convs[f"{stage}_expand"]
            g.op(f"{stage}_add", "Add", out, 2 * out, plane=(c.out, c.out, c.cout))
            g.op(f"{stage}_add_relu", "Relu", out, out, follows=f"{stage}_add")
    g.global_pool(convs["l4_expand"])
    g.conv("fc", None)
    g.op("softmax", "Softmax", convs["fc"].cout, convs["fc"].cout)
    return g.result()


def _mobilenet_schedule(convs: dict, batch: int):
    """MobileNet v1's convolutions in order, each with its bias and ReLU6 (a Clip), the global
    average pool, the classifier and its softmax."""
    g = _Graph(convs, batch)
    layers = [c for c in convs.values() if c.name != "fc"]
    i = 0
    while i < len(layers):  # a depthwise-pointwise pair that repeats runs pair after pair
        repeats = layers[i].depthwise and layers[i].count > 1
        pair = layers[i : i + 2] if repeats else layers[i : i + 1]
        for _ in range(pair[0].count):
            for c in pair:
                g.conv(c.name, "Clip")
        i += len(pair)
    g.global_pool(convs["pw9"])
    g.conv("fc", None)
    g.op("softmax", "Softmax", convs["fc"].cout, convs["fc"].cout)
    return g.result()


def _positive(name: str, value) -> int:
    """``value`` as a plain int (numpy's too), or a clear error."""
    if not is_integer(value) or value < 1:
        raise WorkloadError(f"{name} must be a positive integer, not {value!r}")
    return int(value)


# -- SCALE-Sim topology files ------------------------------------------------------------------

_CONV_COLUMNS = 7  # name, ifmap h, ifmap w, filter h, filter w, channels, filters, stride
_GEMM_COLUMNS = 3  # name, M, N, K


def read_scalesim_topology(path: str | Path, batch: int = 1, form: str | None = None) -> Workload:
    """A SCALE-Sim topology CSV as a workload.

    ``form`` is ``"conv"`` (``Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width,
    Channels, Num Filter, Strides``) or ``"gemm"`` (``Layer, M, N, K``); by default it is told by
    the column count. As in SCALE-Sim: the first line is a header; a trailing comma ends each
    row (and may be missing); an optional last column ``N:M`` gives sparsity (ignored here);
    outputs are ``ceil((ifmap - filter + stride) / stride)`` (no padding); a conv layer whose
    name contains ``DP`` is depthwise, one single-channel layer per channel.
    """
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise WorkloadError(f"{path}: cannot read: {e.strerror}") from None
    if form not in (None, "conv", "gemm"):
        raise WorkloadError(f"{path}: form must be 'conv' or 'gemm', not {form!r}")
    batch = _positive("batch", batch)
    gemms = []
    for number, line in enumerate(lines, start=1):
        if number == 1 or not line.strip():
            continue  # the header
        cells = [c.strip() for c in line.split(",")]
        if cells and cells[-1] == "":
            cells.pop()  # the trailing comma
        if cells and ":" in cells[-1]:
            cells.pop()  # sparsity N:M
        name, values = cells[0], cells[1:]
        kind = form or {_CONV_COLUMNS: "conv", _GEMM_COLUMNS: "gemm"}.get(len(values))
        expected = {"conv": _CONV_COLUMNS, "gemm": _GEMM_COLUMNS}.get(kind)
        if expected is None or len(values) != expected:
            raise WorkloadError(
                f"{path}:{number}: expected a layer name and {_CONV_COLUMNS} numbers (conv: ifmap "
                f"h, w, filter h, w, channels, filters, stride) or {_GEMM_COLUMNS} (gemm: M, N, "
                f"K), got {len(values)} value(s)"
            )
        try:
            nums = [int(v) for v in values]
        except ValueError:
            raise WorkloadError(f"{path}:{number}: values must be integers, got {values}") from None
        if min(nums) < 1:
            raise WorkloadError(f"{path}:{number}: values must be positive, got {nums}")
        if kind == "gemm":
            m, n, k = nums
            gemms.append(Gemm(name or f"layer{number}", batch * m, k, n))
            continue
        ih, iw, fh, fw, ch, filters, stride = nums
        if fh > ih or fw > iw:
            raise WorkloadError(f"{path}:{number}: filter {fh}x{fw} larger than ifmap {ih}x{iw}")
        oh = math.ceil((ih - fh + stride) / stride)
        ow = math.ceil((iw - fw + stride) / stride)
        if "DP" in name:
            gemms.append(Gemm(name, batch * oh * ow, fh * fw, filters, ch))
        else:
            gemms.append(Gemm(name, batch * oh * ow, fh * fw * ch, filters))
    if not gemms:
        raise WorkloadError(f"{path}: no layers (the first line is taken as a header)")
    return Workload(f"{path.stem} b{batch}", path.stem, "scalesim", batch, None, tuple(gemms))
