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

__all__ = [
    "CNNS",
    "TRANSFORMERS",
    "Gemm",
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
    """One layer as a GEMM, run ``count`` times per inference of the workload's batch."""

    name: str
    m: int
    k: int
    n: int
    count: int = 1
    weights: bool = True  # B holds trained weights (False: attention's activation x activation)

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.m, self.k, self.n

    @property
    def macs(self) -> int:
        return self.m * self.k * self.n * self.count


@dataclass(frozen=True)
class Workload:
    """One inference of a model (or a file's layers) on a batch: the GEMMs it runs."""

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

    @property
    def macs(self) -> int:
        return sum(g.macs for g in self.gemms)

    def summary(self) -> dict:
        """:meth:`to_dict` without the GEMMs."""
        out = {"name": self.name, "model": self.model, "family": self.family,
               "batch": self.batch, "seq": self.seq}  # fmt: skip
        for key in ("host_ops", "unsupported_ops"):  # only where there are any
            if getattr(self, key):
                out[key] = dict(getattr(self, key))
        return out

    def to_dict(self) -> dict:
        return self.summary() | {"gemms": [asdict(g) for g in self.gemms]}


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
    """The GEMMs of every block of ``model`` for ``batch`` sequences (embeddings, softmax,
    normalization and the output head are not GEMMs on the array).

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
        return Workload(f"{name} b{batch} s{seq}", name, "transformer", batch, seq, gemms)
    tokens = batch * seq
    gemms = (
        Gemm("qkv", tokens, d, 3 * d, layers),
        Gemm("scores", seq, dh, seq, layers * batch * h, weights=False),  # Q K^T per head
        Gemm("context", seq, seq, dh, layers * batch * h, weights=False),  # softmax(.) V
        Gemm("out_proj", tokens, d, d, layers),
        Gemm("ffn_up", tokens, d, ffn, layers),
        Gemm("ffn_down", tokens, ffn, d, layers),
    )
    return Workload(f"{model} b{batch} s{seq}", model, "transformer", batch, seq, gemms)


# -- CNNs --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Conv:
    name: str
    out: int  # output height = width
    cin: int
    cout: int
    kernel: int
    count: int = 1
    depthwise: bool = False


# He et al., "Deep Residual Learning", CVPR 2016, table 1 (50-layer), in the torchvision v1.5
# form (stride on the 3x3 convolution), 224 x 224 input. Identical convolutions are counted.
_RESNET50 = [
    _Conv("conv1", 112, 3, 64, 7),
    _Conv("l1_reduce_first", 56, 64, 64, 1),
    _Conv("l1_reduce", 56, 256, 64, 1, 2),
    _Conv("l1_3x3", 56, 64, 64, 3, 3),
    _Conv("l1_expand", 56, 64, 256, 1, 3),
    _Conv("l1_down", 56, 64, 256, 1),
    _Conv("l2_reduce_first", 56, 256, 128, 1),
    _Conv("l2_reduce", 28, 512, 128, 1, 3),
    _Conv("l2_3x3", 28, 128, 128, 3, 4),
    _Conv("l2_expand", 28, 128, 512, 1, 4),
    _Conv("l2_down", 28, 256, 512, 1),
    _Conv("l3_reduce_first", 28, 512, 256, 1),
    _Conv("l3_reduce", 14, 1024, 256, 1, 5),
    _Conv("l3_3x3", 14, 256, 256, 3, 6),
    _Conv("l3_expand", 14, 256, 1024, 1, 6),
    _Conv("l3_down", 14, 512, 1024, 1),
    _Conv("l4_reduce_first", 14, 1024, 512, 1),
    _Conv("l4_reduce", 7, 2048, 512, 1, 2),
    _Conv("l4_3x3", 7, 512, 512, 3, 3),
    _Conv("l4_expand", 7, 512, 2048, 1, 3),
    _Conv("l4_down", 7, 1024, 2048, 1),
    _Conv("fc", 1, 2048, 1000, 1),
]

# Howard et al., "MobileNets", 2017, table 1: 224 x 224 input, width multiplier 1. Each
# depthwise 3x3 convolution is one GEMM per channel (K = 9, N = 1).
_MOBILENET_V1 = [
    _Conv("conv1", 112, 3, 32, 3),
    _Conv("dw1", 112, 32, 32, 3, depthwise=True),
    _Conv("pw1", 112, 32, 64, 1),
    _Conv("dw2", 56, 64, 64, 3, depthwise=True),
    _Conv("pw2", 56, 64, 128, 1),
    _Conv("dw3", 56, 128, 128, 3, depthwise=True),
    _Conv("pw3", 56, 128, 128, 1),
    _Conv("dw4", 28, 128, 128, 3, depthwise=True),
    _Conv("pw4", 28, 128, 256, 1),
    _Conv("dw5", 28, 256, 256, 3, depthwise=True),
    _Conv("pw5", 28, 256, 256, 1),
    _Conv("dw6", 14, 256, 256, 3, depthwise=True),
    _Conv("pw6", 14, 256, 512, 1),
    _Conv("dw7", 14, 512, 512, 3, 5, depthwise=True),
    _Conv("pw7", 14, 512, 512, 1, 5),
    _Conv("dw8", 7, 512, 512, 3, depthwise=True),
    _Conv("pw8", 7, 512, 1024, 1),
    _Conv("dw9", 7, 1024, 1024, 3, depthwise=True),
    _Conv("pw9", 7, 1024, 1024, 1),
    _Conv("fc", 1, 1024, 1000, 1),
]

CNNS = {"resnet50": _RESNET50, "mobilenet-v1": _MOBILENET_V1}


def _conv_gemm(c: _Conv, batch: int) -> Gemm:
    """im2col: one row per output pixel of the batch, one column per filter tap x channel."""
    m = batch * c.out * c.out
    if c.depthwise:
        return Gemm(c.name, m, c.kernel * c.kernel, 1, c.count * c.cin)
    return Gemm(c.name, m, c.kernel * c.kernel * c.cin, c.cout, c.count)


def cnn(model: str, batch: int) -> Workload:
    """The convolution and fully connected layers of ``model`` for ``batch`` images."""
    if model not in CNNS:
        raise WorkloadError(f"CNN model must be one of {', '.join(CNNS)}, not {model!r}")
    batch = _positive("batch", batch)
    gemms = tuple(_conv_gemm(c, batch) for c in CNNS[model])
    return Workload(f"{model} b{batch}", model, "cnn", batch, None, gemms)


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
