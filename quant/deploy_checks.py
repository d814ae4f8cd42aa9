"""Deployment checks: each a line of the playbook's report with pass or fail, run on the plan
that will be deployed.

- the integer pipeline through the simulated RTL equals golden/ bit for bit, every layer;
- the fake-quant float model (what was evaluated and trained) and the integer pipeline agree on
  every prediction, or every disagreement is explained: TFLite's requantization rounds twice
  (to the Q31 product, then by the shift), so a value within ``2**-(right shift + 1)`` of a
  rounding tie may land one step from the float model's single rounding;
- per-layer SQNR against float: each layer's own (its quantized inputs and weights, fed the
  float model's activations) above a floor per precision, and the pipeline's (errors of the
  layers before included) reported beside it;
- requantization parameters in the hardware's range (Q31 multipliers in [2**30, 2**31), shifts
  in ``SHIFT_RANGE``, no channel flushed to zero, zero points in range);
- accuracy retention on the test set at or above the floor the playbook states.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from systolic.contract.interface import SHIFT_RANGE
from systolic.quant.calibrate import quantize, sqnr_db

from .deployment import IntegerRun, Plan, run_integer
from .nets import Conv, im2col

__all__ = [
    "SQNR_FLOOR_DB",
    "Check",
    "deployment_checks",
    "layer_sqnr",
    "rounding_disagreements",
]

#: The least SQNR (dB) of a layer's outputs against float that the playbook accepts, per
#: precision: about 6 dB per bit less the clipping and accumulation of the layers before.
SQNR_FLOOR_DB = {"int8": 25.0, "int4": 8.0, "bf16": 35.0}


@dataclass
class Check:
    name: str
    passed: bool
    detail: str

    def line(self) -> str:
        return f"{'PASS' if self.passed else 'FAIL'}  {self.name}: {self.detail}"


def rounding_disagreements(plan: Plan, run: IntegerRun) -> tuple[int, int, int]:
    """Hidden activations where the integer pipeline's requantized value differs from the
    fake-quant model's rounding of the same accumulators: ``(differing, explained, total)``,
    explained when one step apart and within the double rounding's reach of a tie."""
    differing = explained = total = 0
    for i, (_, _, _, _, quant) in enumerate(run.gemms):
        if quant is None or quant.params is None:
            continue
        nxt = plan.layers[i + 1]
        real = np.maximum(run.outputs[i], 0)
        fake = quantize(real, nxt.act)
        got = run.codes[i]
        x = real / nxt.act.scale + nxt.act.zero_point
        right = np.maximum(-np.asarray(quant.params.shift), 0)
        # the first rounding's error in output steps (none without a right shift), and the
        # Q31 multiplier's relative error
        reach = np.where(right > 0, 2.0 ** -(right + 1.0), 0.0) + np.abs(x) * 2.0**-30 + 1e-9
        diff = got != fake
        near_tie = np.abs(np.abs(x - np.floor(x)) - 0.5) <= reach
        differing += int(diff.sum())
        explained += int((diff & (np.abs(got - fake) == 1) & near_tie).sum())
        total += diff.size
    return differing, explained, total


def layer_sqnr(plan: Plan, x) -> list[float]:
    """Each array layer's own SQNR (dB): its output from its quantized float-model input and
    quantized weights, against the float output."""
    net = plan.net
    acts, reference = net.activations(x), net.outputs(x)
    out = []
    for i, (layer, act, ref) in enumerate(zip(net.array_layers, acts, reference, strict=True)):
        a = plan.hook(i, "act", act)
        if isinstance(layer, Conv):
            _, _, kh, kw = layer.w.shape
            a = im2col(a, kh, kw, layer.stride, layer.pad)
        out.append(sqnr_db(ref, a @ plan.hook(i, "weight", layer.matrix())))
    return out


def deployment_checks(plan: Plan, x_test, y_test, float_accuracy: float, floor: float, *,
                      rtl_samples: int, rows: int) -> tuple[list[Check], dict]:  # fmt: skip
    """The checks (see module) on ``plan``, and their figures."""
    checks, figures = [], {}
    gold = run_integer(plan, x_test, rows=rows)
    int_pred = np.argmax(gold.logits, axis=1)
    accuracy = float(np.mean(int_pred == y_test))
    figures["accuracy"] = accuracy
    # 1. RTL = golden
    if rtl_samples:
        rtl = run_integer(plan, x_test[:rtl_samples], rtl=True, rows=rows)
        sub = run_integer(plan, x_test[:rtl_samples], rows=rows)
        same = all(rtl.rtl_exact) and np.array_equal(rtl.logits, sub.logits)
        figures["rtl"] = rtl
        checks.append(Check(
            "RTL equals golden/", same,
            f"{len(rtl.rtl_exact)} layer GEMMs of {rtl_samples} test samples through the "
            f"simulated {rows}x{rows} WS device: "
            + ", ".join(f"layer {i} {'bit-exact' if e else 'DIFFERS'}"
                        for i, e in enumerate(rtl.rtl_exact))))  # fmt: skip
    # 2. fake-quant model against the integer pipeline
    fake_pred = plan.net.predict(x_test, plan.hook)
    agree = float(np.mean(fake_pred == int_pred))
    differing, explained, total = rounding_disagreements(plan, gold)
    figures["agreement"] = agree
    figures["rounding"] = (differing, explained, total)
    cause = (f"; {differing} of {total} hidden activations differ by one step, "
             f"{explained} of them at a tie of the requantization's double rounding")  # fmt: skip
    checks.append(Check(
        "fake-quant model = integer pipeline", agree == 1.0 or explained == differing,
        f"predictions agree on {100 * agree:.2f}% of {len(y_test)} test "
        f"samples{cause}"))  # fmt: skip
    # 3. SQNR per layer
    reference = plan.net.outputs(x_test)
    own = layer_sqnr(plan, x_test)
    chained = [sqnr_db(r, o) for r, o in zip(reference, gold.outputs, strict=True)]
    figures["sqnr_db"] = own
    figures["pipeline_sqnr_db"] = chained
    floors = [SQNR_FLOOR_DB.get(p, 0.0) for p in plan.precisions]
    checks.append(Check(
        "per-layer SQNR against float", all(s >= f for s, f in zip(own, floors, strict=True)),
        ", ".join(f"layer {i} ({p}) {s:.1f} dB (floor {f:g}; {c:.1f} dB through the pipeline)"
                  for i, (p, s, f, c) in
                  enumerate(zip(plan.precisions, own, floors, chained, strict=True)))))  # fmt: skip
    # 4. requantization parameters
    problems = []
    for i in range(len(plan.layers)):
        params = plan.requant(i)
        if params is None:
            continue
        m, s = np.asarray(params.multiplier), np.asarray(params.shift)
        try:
            params.check(plan.config(i, rows), len(m))
        except ValueError as e:
            problems.append(f"layer {i}: {e}")
        if np.any(m == 0):
            problems.append(f"layer {i}: {int((m == 0).sum())} channel(s) flushed to zero")
        if np.any((m != 0) & ((m < 1 << 30) | (m >= 1 << 31))):
            problems.append(f"layer {i}: a multiplier outside [2^30, 2^31)")
        if np.any((s < SHIFT_RANGE[0]) | (s > SHIFT_RANGE[1])):
            problems.append(f"layer {i}: a shift outside {SHIFT_RANGE}")
    shifts = [int(x) for i in range(len(plan.layers)) if (p := plan.requant(i)) is not None
              for x in p.shift]  # fmt: skip
    span = f"shifts {min(shifts)} to {max(shifts)}" if shifts else "no requantized layer"
    checks.append(
        Check(
            "requantization parameters in range",
            not problems,
            "; ".join(problems) or f"Q31 multipliers in [2^30, 2^31), {span}",
        )
    )
    # 5. the guard
    retention = accuracy / float_accuracy if float_accuracy else 0.0
    figures["retention"] = retention
    checks.append(Check(
        "accuracy retention guard", retention >= floor,
        f"{100 * accuracy:.2f}% on the test set = {100 * retention:.2f}% of float "
        f"({100 * float_accuracy:.2f}%); floor {100 * floor:g}%"))  # fmt: skip
    return checks, figures
