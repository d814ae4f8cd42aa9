"""quant/deployment.py and quant/deploy_checks.py: the integer pipeline against the fake-quant float
model, zero-point padding of convolutions, and checks that fail when they should."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from systolic.quant.calibrate import Scale
from systolic.quant.deploy_checks import deployment_checks, rounding_disagreements
from systolic.quant.deployment import Recipe, make_plan, run_integer
from systolic.quant.nets import Conv, Dense, Flatten, Net, Relu

from ..helpers import at_least

#: Over seeds 1-200 (make seeds) the share is 0.9945 on average (sd 0.013), 30 of 32 at worst;
#: mean - 6 sd is 0.918, so the bound allows 29 of 32.
MIXED_AGREEMENT = 0.9


def _net(rng):
    return Net("t", (2, 6, 6), [
        Conv(rng.standard_normal((4, 2, 3, 3)) * 0.4, 1, 1), Relu(),
        Conv(rng.standard_normal((5, 4, 3, 3)) * 0.3, 2, 1), Relu(), Flatten(),
        Dense(rng.standard_normal((45, 3)) * 0.3),
    ])  # fmt: skip


@pytest.mark.parametrize("precision", ["int8", "int4"])
def test_integer_layers_equal_the_fake_quantized_float_layers(seed, precision):
    """With inputs of both signs the first layer's zero point is not 0: padding the integer
    im2col with anything but the zero point would break the equality at the borders."""
    rng = np.random.default_rng(seed)
    net = _net(rng)
    x = rng.standard_normal((16, 72)) + 0.7
    plan = make_plan(net, x, precision, Recipe("minmax"))
    assert int(plan.layers[0].act.zero_point) != 0
    run = run_integer(plan, x)
    fake = net.outputs(x, plan.hook)
    np.testing.assert_allclose(run.outputs[0], fake[0], rtol=1e-9, atol=1e-9)
    # later layers: the same up to the requantization's double rounding, which the check
    # attributes element by element
    differing, explained, total = rounding_disagreements(plan, run)
    print(f"seed {seed}: {differing} of {total} differ, {explained} explained")
    assert differing == explained


def test_rounding_check_catches_a_wrong_requantization(seed):
    rng = np.random.default_rng(seed)
    net = _net(rng)
    x = np.abs(rng.standard_normal((16, 72)))
    plan = make_plan(net, x, "int8", Recipe("minmax"))
    run = run_integer(plan, x)
    run.codes[0] = run.codes[0].copy()
    run.codes[0][3, 1] += 2  # off by two: no rounding explains it
    differing, explained, _ = rounding_disagreements(plan, run)
    assert differing > explained


def test_checks_fail_on_a_flushed_channel_and_a_low_floor(seed):
    rng = np.random.default_rng(seed)
    net = Net("m", (8,), [Dense(rng.standard_normal((8, 6))), Relu(),
                          Dense(rng.standard_normal((6, 3)))])  # fmt: skip
    x = rng.standard_normal((64, 8))
    y = net.predict(x)
    plan = make_plan(net, x, "int8")
    checks, _ = deployment_checks(plan, x, y, 1.0, 0.5, rtl_samples=0, rows=4)
    assert all(c.passed for c in checks), [c.line() for c in checks]
    # the next layer's scale so large that layer 0's requantization scale is below 2**-31
    huge = replace(plan.layers[1], act=Scale(np.asarray(1e12), np.asarray(0), 8, False))
    bad = replace(plan, layers=[plan.layers[0], huge])
    checks, _ = deployment_checks(bad, x, y, 1.0, 0.5, rtl_samples=0, rows=4)
    by = {c.name: c for c in checks}
    assert not by["requantization parameters in range"].passed
    assert "flushed to zero" in by["requantization parameters in range"].detail
    checks, _ = deployment_checks(plan, x, y, 1.0, 1.01, rtl_samples=0, rows=4)
    assert not {c.name: c for c in checks}["accuracy retention guard"].passed


def test_mixed_precision_boundaries(seed):
    """int -> bf16 -> int: the bf16 layer's output is quantized on the host into the next
    layer's scale; the pipeline stays close to float."""
    rng = np.random.default_rng(seed)
    net = _net(rng)
    x = np.abs(rng.standard_normal((32, 72)))
    plan = make_plan(net, x, ["int8", "bf16", "int8"])
    assert plan.requant(0) is None and plan.requant(1) is None
    run = run_integer(plan, x)
    ref = net.forward(x)
    at_least(
        np.mean(np.argmax(run.logits, 1) == np.argmax(ref, 1)),
        MIXED_AGREEMENT,
        "share of predictions equal to float's",
    )
    with pytest.raises(ValueError, match="one per array layer"):
        make_plan(net, x, ["int8", "int8"])
    with pytest.raises(ValueError, match="layer precision must be one of"):
        make_plan(net, x, ["int8", "int2", "int8"])
