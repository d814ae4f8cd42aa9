"""The project's layers: the folder each one is, and the layers it may import.

This is the one list. pyproject.toml's packages, the architecture test, the mutant runner's
scratch copy and docs/architecture.md's picture and table are checked against it
(tests/test_architecture.py). Each folder is the subpackage ``systolic.<name>`` except the
command line, which is ``systolic`` itself (its modules are in ``systolic/cli``).

A layer may import itself and the layers listed for it, nothing else; the generator (``rtl``)
and the models (``golden``, ``models``) stand side by side on ``contract`` and never import each
other.
"""

from __future__ import annotations

__all__ = ["CLI", "LAYERS", "allowed"]

#: The command line's layer: its folder is the package ``systolic`` itself.
CLI = "cli"

#: Layer name -> (folder, layers it may import), bottom up.
LAYERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "contract": ("contract", ()),
    "rtl": ("rtl", ("contract",)),
    "golden": ("golden", ("contract",)),
    "models": ("models", ("contract", "golden")),
    "workloads": ("workloads", ("contract", "golden", "models")),
    "sim": ("sim", ("contract", "rtl", "golden")),
    "tb": ("tb", ("contract", "rtl", "golden", "sim")),
    "synth": ("synth", ("contract", "rtl", "models")),
    "serving": ("serving", ("contract", "golden", "models", "workloads", "synth")),
    "quant": ("quant", ("contract", "golden", "models", "workloads", "sim")),
    "sweeps": ("sweeps", ("contract", "golden", "models", "workloads", "sim", "synth", "serving")),
    "verify": ("verify", ("contract", "rtl", "golden", "models", "sim", "synth")),
    "experiments": (
        "experiments",
        ("contract", "rtl", "golden", "models", "workloads", "sim", "synth", "verify"),
    ),
    CLI: (
        "systolic",
        (
            "contract",
            "rtl",
            "golden",
            "models",
            "workloads",
            "sim",
            "synth",
            "serving",
            "quant",
            "sweeps",
            "verify",
            "experiments",
        ),
    ),  # fmt: skip
}


def allowed(layer: str) -> frozenset[str]:
    """The layers ``layer`` may import, itself included."""
    return frozenset((layer, *LAYERS[layer][1]))
