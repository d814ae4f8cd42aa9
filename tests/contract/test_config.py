"""contract/config.py: ArrayConfig's defaults, names, JSON, validation messages, and the
difference between what the model takes and what the RTL generator builds."""

from __future__ import annotations

import json

import numpy as np
import pytest
from systolic.contract.config import ArrayConfig, Dataflow, check_buildable


def test_defaults_and_name():
    cfg = ArrayConfig("ws", 8, 8)
    assert cfg.dataflow is Dataflow.WS
    assert (cfg.a_width, cfg.b_width, cfg.a_signed, cfg.b_signed, cfg.acc_width) == (
        8,
        8,
        True,
        True,
        32,
    )
    assert cfg.name == "ws-8x8-i8-acc32"


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        (
            dict(
                dataflow="os",
                rows=4,
                cols=2,
                a_width=4,
                a_signed=False,
                b_width=4,
                b_signed=False,
                acc_width=16,
            ),
            "os-4x2-u4-acc16",
        ),
        (
            dict(dataflow="is", rows=3, cols=5, a_width=8, b_width=4, b_signed=False),
            "is-3x5-ai8-bu4-acc32",
        ),
        (
            dict(dataflow=Dataflow.WS, rows=32, cols=1, a_width=16, b_width=16, acc_width=64),
            "ws-32x1-i16-acc64",
        ),
    ],
)
def test_names_distinguish_precisions(kwargs, name):
    assert ArrayConfig(**kwargs).name == name


def test_json_round_trip():
    cfg = ArrayConfig("is", 3, 5, a_width=4, a_signed=False, b_width=16, acc_width=40)
    text = cfg.to_json()
    assert json.loads(text)["dataflow"] == "is"
    assert ArrayConfig.from_json(text) == cfg


def test_frozen():
    cfg = ArrayConfig("ws", 2, 2)
    with pytest.raises(AttributeError):
        cfg.rows = 3


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (dict(dataflow="ss"), ValueError, "dataflow must be one of 'ws', 'os', 'is', not 'ss'"),
        (dict(rows=0), ValueError, "rows must be an integer between 1 and 512, not 0"),
        (dict(rows=513), ValueError, "rows must be an integer between 1 and 512, not 513"),
        (dict(cols=-3), ValueError, "cols must be an integer between 1 and 512, not -3"),
        (dict(cols=2.0), TypeError, "cols must be an integer between 1 and 512, not 2.0"),
        (dict(rows=True), TypeError, "rows must be an integer between 1 and 512, not True"),
        (dict(a_depth=0), ValueError, "a_depth must be an integer between 1 and 16777216, not 0"),
        (dict(a_width=1), ValueError, "a_width must be an integer between 2 and 16, not 1"),
        (dict(a_width=17), ValueError, "a_width must be an integer between 2 and 16, not 17"),
        (dict(b_width=0), ValueError, "b_width must be an integer between 2 and 16, not 0"),
        (dict(b_width="8"), TypeError, "b_width must be an integer between 2 and 16, not '8'"),
        (dict(acc_width=1), ValueError, "acc_width must be an integer between 2 and 64, not 1"),
        (dict(acc_width=65), ValueError, "acc_width must be an integer between 2 and 64, not 65"),
        (dict(a_signed=1), TypeError, "a_signed must be True or False, not 1"),
        (dict(b_signed="yes"), TypeError, "b_signed must be True or False, not 'yes'"),
    ],
)
def test_invalid_values_are_named(kwargs, error, message):
    args = dict(dataflow="ws", rows=2, cols=2) | kwargs
    with pytest.raises(error) as info:
        ArrayConfig(**args)
    assert str(info.value) == message


def test_from_dict_rejects_unknown_and_missing_keys():
    with pytest.raises(ValueError, match=r"unknown ArrayConfig key\(s\) 'colums'"):
        ArrayConfig.from_dict({"dataflow": "ws", "rows": 2, "colums": 2})
    with pytest.raises(ValueError, match=r"missing ArrayConfig key\(s\) 'cols'"):
        ArrayConfig.from_dict({"dataflow": "ws", "rows": 2})
    with pytest.raises(ValueError, match="JSON is malformed"):
        ArrayConfig.from_json("{rows: 2")
    with pytest.raises(TypeError, match="mapping, not list"):
        ArrayConfig.from_dict([1, 2])


@pytest.mark.parametrize(
    ("kwargs", "name", "value", "hi"),
    [
        (dict(rows=65), "rows", 65, 64),
        (dict(cols=256, rows=256), "rows", 256, 64),
        (dict(c_depth=(1 << 16) + 1), "c_depth", 65537, 65536),
    ],
)
def test_rtl_builds_a_smaller_range_than_the_model(kwargs, name, value, hi):
    """The model takes 256 x 256 arrays and deep buffers; the generator refuses them by name."""
    config = ArrayConfig("ws", **(dict(rows=2, cols=2) | kwargs))  # valid for the model
    with pytest.raises(ValueError) as info:
        check_buildable(config)
    assert str(info.value).startswith(f"{name} = {value} is beyond what the RTL generator builds "
                                      f"(1 to {hi})")  # fmt: skip
    check_buildable(ArrayConfig("os", 64, 64, a_depth=1 << 16))  # the largest one it builds


def test_bf16_config_rules():
    c = ArrayConfig("os", 4, 4, number="bf16")
    assert (c.a_width, c.b_width, c.acc_width, c.name) == (16, 16, 32, "os-4x4-bf16")
    with pytest.raises(ValueError, match="number must be one of 'int', 'bf16'"):
        ArrayConfig("os", 4, 4, number="fp8")
    with pytest.raises(ValueError, match="bf16' takes no zero_points or requant"):
        ArrayConfig("ws", 4, 4, number="bf16", requant=True)


def test_numpy_integers_are_stored_as_python_integers():
    """A configuration built from numpy values (a sweep's grid, say) still serializes."""
    config = ArrayConfig("os", np.int64(4), np.int32(3), a_depth=np.uint16(64))
    assert type(config.rows) is int and type(config.a_depth) is int
    assert ArrayConfig.from_json(config.to_json()) == config
