"""A quantized deployment of a network: the precision of each array layer, the ranges chosen by
calibration, and the two ways of running it that must agree.

- :meth:`Plan.hook` is the *fake-quant* float model: every int layer's input and weights are
  quantized and read back, bf16 layers round theirs to bf16. Training (QAT) and evaluation use it.
- :func:`run_integer` is the *deployed* pipeline: integers into the array, int32 accumulators
  plus the int32 bias, requantized by the array's fused output path (TFLite arithmetic, ReLU
  fused) straight into the next layer's input scale, computed by ``golden/`` or by the simulated
  RTL (which must equal it bit for bit). Convolutions run by im2col, padded with the zero point.
  Where a layer's output leaves the array raw (the last layer, or a bf16 layer next), the host
  adds the bias.

Conventions (those of deployed int8 models): a layer's input is quantized per tensor,
asymmetric, unsigned (post-ReLU tensors get zero point 0); weights symmetric, per output channel
or per tensor. Boundaries between int and bf16 layers are crossed on the host. A mix of
precisions is priced as if the array ran each layer in its own mode.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from systolic.contract.config import PRECISIONS, ArrayConfig
from systolic.golden.bf16 import bf16_bits, bits_to_float, from_bf16_bits
from systolic.golden.reference import reference, requantized_reference
from systolic.golden.requant import RequantParams
from systolic.quant.calibrate import (
    Scale,
    choose_scale,
    fake_quantize,
    quantize,
    quantize_bias,
    requant_params,
)
from systolic.sim.simulate import Quantization, run_gemms

from .nets import ARRAY_LAYERS, Conv, Flatten, Net, Relu, conv_out, im2col

__all__ = [
    "LAYER_PRECISIONS",
    "IntegerRun",
    "Plan",
    "Recipe",
    "layer_config",
    "make_plan",
    "recalibrate",
    "run_integer",
]

LAYER_PRECISIONS = ("int8", "int4", "bf16")


def _bits(precision: str) -> int | None:
    return int(precision[3:]) if precision.startswith("int") else None


def layer_config(precision: str, rows: int, out_precision: str | None = None,
                 vector: bool = False) -> ArrayConfig:  # fmt: skip
    """The WS array of ``rows x rows`` a layer of ``precision`` runs on: int layers with unsigned
    inputs and zero points, and a requantization unit whose output width is the next layer's;
    with ``vector``, the vector unit beside it (int layers of at most 8 bits)."""
    if precision == "bf16":
        return ArrayConfig("ws", rows, rows, number="bf16")
    bits = _bits(precision)
    out_bits = _bits(out_precision or "") or bits
    return ArrayConfig("ws", rows, rows, a_width=bits, b_width=bits,
                       acc_width=PRECISIONS[precision][1], a_signed=False, zero_points=True,
                       requant=True, out_width=out_bits, out_signed=False,
                       vector=vector and out_bits <= 8)  # fmt: skip


@dataclass(frozen=True)
class Recipe:
    """How ranges are chosen: the activations' method (``quant.calibrate.METHODS``) and
    percentile, the weights' method and whether they are scaled per output channel."""

    act_method: str = "percentile"
    percentile: float = 99.99
    weight_method: str = "minmax"
    per_channel: bool = True

    def label(self) -> str:
        act = (f"percentile {self.percentile:g}" if self.act_method == "percentile"
               else self.act_method)  # fmt: skip
        return (f"activations {act}, weights {self.weight_method} "
                f"{'per channel' if self.per_channel else 'per tensor'}")  # fmt: skip


@dataclass(frozen=True)
class LayerPlan:
    precision: str
    act: Scale | None = None  # the input's quantization (int layers)
    weight: Scale | None = None  # the weights' (int layers)

    @property
    def bits(self) -> int | None:
        return _bits(self.precision)


def _bf16(x: np.ndarray) -> np.ndarray:
    return from_bf16_bits(bf16_bits(x)).astype(np.float64)


def _in_range(x: np.ndarray, s: Scale) -> np.ndarray:
    lo, hi = s.range
    return (x >= (lo - s.zero_point) * s.scale) & (x <= (hi - s.zero_point) * s.scale)


@dataclass
class Plan:
    """A network with a precision and ranges for each array layer."""

    net: Net
    layers: list[LayerPlan]
    recipe: Recipe
    #: Scale the weights from their current values on every pass (quantization-aware
    #: training, where they move); otherwise from calibration (the same on the same weights).
    live_weights: bool = False

    @property
    def precisions(self) -> tuple[str, ...]:
        return tuple(lp.precision for lp in self.layers)

    def label(self) -> str:
        p = self.precisions
        return p[0] if len(set(p)) == 1 else "/".join(p)

    def hook(self, i: int, kind: str, value: np.ndarray) -> np.ndarray:
        """The fake-quant forward pass (a :meth:`Net.forward` hook)."""
        lp = self.layers[i]
        if kind == "out" or lp.precision == "float":
            return value
        if kind == "bias":  # int32 at the accumulators' scale; bf16 layers' host adds floats
            if lp.bits is None:
                return value
            scale = lp.act.scale * self._channel_weights(i).scale
            return quantize_bias(value, lp.act, self._channel_weights(i)) * scale
        if lp.precision == "bf16":
            return _bf16(value)
        return fake_quantize(value, self._scale(i, kind, value))

    def _scale(self, i: int, kind: str, value: np.ndarray) -> Scale:
        lp = self.layers[i]
        if kind == "act":
            return lp.act
        if self.live_weights:
            return _choose(value, lp.bits, self.recipe, weights=True)
        return lp.weight

    def ste(self, i: int, kind: str, value: np.ndarray) -> np.ndarray:
        """Straight-through estimator: gradient 1 where the quantizer did not clip, 0 where it
        did (bf16 and float layers: 1)."""
        lp = self.layers[i]
        if lp.bits is None:
            return np.ones_like(value)
        return _in_range(value, self._scale(i, kind, value)).astype(np.float64)

    def requant(self, i: int) -> RequantParams | None:
        """The requantization of int layer ``i`` into int layer ``i + 1``'s input (ReLU fused);
        None where the output leaves raw (last layer, or a bf16 layer next)."""
        lp = self.layers[i]
        nxt = self.layers[i + 1] if i + 1 < len(self.layers) else None
        if lp.bits is None or nxt is None or nxt.bits is None:
            return None
        return requant_params(lp.act, self._channel_weights(i), nxt.act, relu=True,
                              bias=self.bias(i))  # fmt: skip

    def _channel_weights(self, i: int) -> Scale:
        """Int layer ``i``'s weight scale, one value per output channel (the hardware takes
        one per channel even when the weights have one per tensor); from the current weights
        in quantization-aware training."""
        layer = self.net.array_layers[i]
        w = self._scale(i, "weight", layer.matrix())
        if np.ndim(w.scale) == 0:
            n = layer.matrix().shape[1]
            w = Scale(np.full(n, float(w.scale)), np.zeros(n, dtype=np.int64), w.bits, w.signed)
        return w

    def bias(self, i: int) -> np.ndarray | None:
        """Int layer ``i``'s bias as int32 at its accumulators' scale (None: no bias)."""
        b = self.net.array_layers[i].b
        if b is None:
            return None
        return quantize_bias(b, self.layers[i].act, self._channel_weights(i))

    def config(self, i: int, rows: int, vector: bool = False) -> ArrayConfig:
        nxt = self.precisions[i + 1] if i + 1 < len(self.layers) else None
        return layer_config(self.precisions[i], rows, nxt if self.requant(i) else None, vector)


def _choose(x, bits, recipe: Recipe, *, weights: bool) -> Scale:
    if weights:
        return choose_scale(x, bits, signed=True, method=recipe.weight_method,
                            per_channel=recipe.per_channel, symmetric=True)  # fmt: skip
    return choose_scale(x, bits, signed=False, method=recipe.act_method,
                        percentile=recipe.percentile)  # fmt: skip


def make_plan(net: Net, x_cal, precisions, recipe: Recipe = Recipe()) -> Plan:
    """Calibrate ``net`` on ``x_cal`` (its float activations) for one precision per array layer
    (or one for all)."""
    array = net.array_layers
    if isinstance(precisions, str):
        precisions = [precisions] * len(array)
    if len(precisions) != len(array):
        raise ValueError(f"precisions: one per array layer ({len(array)}), not {len(precisions)}")
    for p in precisions:
        if p not in (*LAYER_PRECISIONS, "float"):
            raise ValueError(f"layer precision must be one of {', '.join(LAYER_PRECISIONS)}, "
                             f"not {p!r}")  # fmt: skip
    acts = net.activations(x_cal)
    layers = []
    for layer, act, p in zip(array, acts, precisions, strict=True):
        bits = _bits(p)
        if bits is None:
            layers.append(LayerPlan(p))
            continue
        layers.append(LayerPlan(p, _choose(act, bits, recipe, weights=False),
                                _choose(layer.matrix(), bits, recipe, weights=True)))  # fmt: skip
    return Plan(net, layers, recipe)


def recalibrate(plan: Plan, x_cal) -> Plan:
    """``plan`` with its ranges chosen again on ``net``'s current weights (after QAT steps)."""
    return make_plan(plan.net, x_cal, list(plan.precisions), plan.recipe)


@dataclass
class IntegerRun:
    """The deployed pipeline on a batch: logits, each array layer's output in real units (the
    dequantized accumulators, for SQNR), the GEMMs run (``(layer, config, A, B, quantization)``)
    and, through RTL, the simulator's results and whether each equalled golden/."""

    logits: np.ndarray
    outputs: list[np.ndarray]
    codes: list[np.ndarray]  # each layer's output as the array gives it (requantized integers)
    gemms: list[tuple]
    rtl_results: list = None
    rtl_exact: list[bool] = None


def run_integer(plan: Plan, x, *, rtl: bool = False, rows: int = 8, timeout: float | None = None,
                name: str = "quantize", vector: bool = False) -> IntegerRun:  # fmt: skip
    """The deployed pipeline on ``x`` (see module): golden/ computes every layer; with ``rtl``
    the simulated device computes it too (with ``vector``, a device with the vector unit), and
    its outputs feed the next layer."""
    net = plan.net
    h = np.asarray(x, dtype=np.float64).reshape(len(x), *net.input_shape)
    is_int = False  # h holds the integers of the current layer's input scale
    outputs, codes, gemms, results, exact = [], [], [], [], []
    index = 0
    for layer in net.layers:
        if isinstance(layer, Relu):
            if not is_int:  # integers arrive with ReLU fused in the requantization
                h = np.maximum(h, 0)
            continue
        if isinstance(layer, Flatten):
            h = h.reshape(len(h), -1)
            continue
        assert isinstance(layer, ARRAY_LAYERS)
        lp = plan.layers[index]
        config = plan.config(index, rows, vector)
        quant = None
        if lp.precision == "float":  # a layer left in float: on the host
            a, b = _operand(layer, h, 0.0), layer.matrix()
            c = layer.biased(a @ b)
        elif lp.precision == "bf16":
            a, b = bf16_bits(_operand(layer, h, 0.0)), bf16_bits(layer.matrix())
            c = reference(config, a, b)  # bf16 bit patterns of fp32 sums
        else:
            q = h if is_int else quantize(h, lp.act)
            za = int(lp.act.zero_point)
            a, b = _operand(layer, q, za), quantize(layer.matrix(), lp.weight)
            acc = reference(config, a, b, za, 0)
            quant = Quantization(za, 0, plan.requant(index))
            c = requantized_reference(config, a, b, za, 0, quant.params) if quant.params else acc
        if rtl and lp.precision != "float":
            (r,) = run_gemms(config, [(a, b)], quant=[quant] if quant else None, activity=True,
                             name=name, timeout=timeout)  # fmt: skip
            exact.append(bool(np.array_equal(r.c, c)))
            results.append(r)
            c = r.c  # the deployed pipeline goes on with what the device computed
        if lp.precision == "bf16":  # the host adds the bias to the fp32 sums
            out = real = layer.biased(bits_to_float(c).astype(np.float64))
        elif lp.precision == "float":
            out = real = c
        else:
            bias = plan.bias(index)
            acc = acc if bias is None else acc + bias  # the host's, where the output is raw
            real = acc * (lp.act.scale * lp.weight.scale)
            out = c if quant.params else real
        gemms.append((index, config, a, b, quant))
        outputs.append(real)
        codes.append(c)
        is_int = lp.bits is not None and plan.requant(index) is not None
        h = _reshape_out(layer, out, h)
        index += 1
    return IntegerRun(h, outputs, codes, gemms, results if rtl else None, exact if rtl else None)


def _operand(layer, h: np.ndarray, pad_value) -> np.ndarray:
    """The GEMM's A for ``layer`` from its input ``h`` (im2col for a convolution)."""
    if isinstance(layer, Conv):
        _, _, kh, kw = layer.w.shape
        return im2col(h, kh, kw, layer.stride, layer.pad, pad_value)
    return h


def _reshape_out(layer, out: np.ndarray, h_in: np.ndarray) -> np.ndarray:
    if isinstance(layer, Conv):
        n, _, hh, ww = h_in.shape
        cout, _, kh, kw = layer.w.shape
        oh = conv_out(hh, kh, layer.stride, layer.pad)
        ow = conv_out(ww, kw, layer.stride, layer.pad)
        return out.reshape(n, oh, ow, cout).transpose(0, 3, 1, 2)
    return out
