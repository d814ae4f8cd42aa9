"""quant/accuracy.py: a quantized MLP through the RTL keeps its accuracy, bit-exact with
golden/."""

from __future__ import annotations

import pytest


@pytest.mark.long
def test_accuracy_retention_through_the_rtl():
    from systolic.quant.accuracy import run_accuracy

    experiment = run_accuracy(test_samples=100, rows=4)  # seed 0
    print(experiment.table())
    assert experiment.float_accuracy > 0.8  # the task is learnable, and not trivially
    by_name = {r.precision: r for r in experiment.results}
    assert all(r.rtl_equals_golden for r in experiment.results)
    assert by_name["int8"].retention >= 0.97 and by_name["bf16"].retention >= 0.98
    assert by_name["int4"].pj_per_mac < by_name["int8"].pj_per_mac
