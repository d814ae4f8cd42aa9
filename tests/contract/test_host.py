"""contract/host.py: the host's parameters, their checks, and the driver's bus accesses per
descriptor, counted here from the register map's documentation, independently."""

from __future__ import annotations

import pytest
from systolic.contract.config import ArrayConfig
from systolic.contract.host import DEFAULT_HOST, HOST_PRESETS, Host, driver_accesses


def test_every_preset_is_a_valid_host_and_round_trips():
    for name in HOST_PRESETS:
        host = Host.preset(name)
        assert Host.from_dict(host.to_dict()) == host
    assert Host.preset().name == DEFAULT_HOST
    assert Host.preset("mobile").active_mw == 140.0  # 8 ops/ns at 17.5 pJ (docs/inference.md)
    with pytest.raises(ValueError, match="unknown host preset 'laptop'; presets: embedded"):
        Host.preset("laptop")


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [("ops_per_ns", 0, r"ops_per_ns must be a number in \[0.001, 10000\], not 0"),
     ("read_ns", -1.0, r"read_ns must be a number in \[0, 1e\+09\], not -1.0"),
     ("pj_per_op", "cheap", r"pj_per_op must be a number"),
     ("counters", 1, "counters must be true or false")],
)  # fmt: skip
def test_bad_host_parameters_are_named_with_their_range(key, value, message):
    fields = Host.preset().to_dict() | {key: value}
    with pytest.raises(ValueError, match=message):
        Host(**fields)


def test_the_driver_writes_every_descriptor_field_and_reads_every_counter():
    """A plain device's descriptor: M, K, N, three chunk sizes, the loop order, accumulate, the
    address and stride of A, B, C and the partial sums, the table's address (17 registers),
    then the doorbell. With zero points and requantization: two zero points, the requant flag,
    the output zero point, the bias flag, the clamp flag and its two bounds (8 more). After the
    interrupt: IRQ_PENDING and STATUS, then 24 counters of two words each; one write clears
    the interrupt."""
    host = Host(**(Host.preset().to_dict() | {"counters": True}))
    plain = driver_accesses(ArrayConfig("ws", 2, 2), host)
    assert plain == {"post": 18, "reads": 2 + 48, "acks": 1}
    full = ArrayConfig("os", 4, 4, zero_points=True, requant=True)
    assert driver_accesses(full, host) == {"post": 26, "reads": 50, "acks": 1}
    assert driver_accesses(full, Host.preset())["reads"] == 2  # a deployed driver's
