"""The layering rules of docs/architecture.md, read off the sources (imports) and checked by
running the model path in an interpreter where Amaranth cannot be imported."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
from systolic.contract.layers import CLI, allowed
from systolic.contract.layers import LAYERS as LAYER_LIST

ROOT = Path(__file__).resolve().parent.parent

#: Each layer: the folder that holds it, and the layers it may import (itself included), from
#: the one list (contract/layers.py).
LAYERS = {name: (folder, allowed(name)) for name, (folder, _) in LAYER_LIST.items()}


def _modules() -> dict[str, Path]:
    """Every project module by its installed name (``systolic.models.cycles``)."""
    found = {}
    for layer, (folder, _) in LAYERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            prefix = ["systolic"] if layer == "cli" else ["systolic", layer]
            found[".".join(prefix + parts)] = path
    return found


MODULES = _modules()
#: The folders, which are importable only through ``systolic`` (``import rtl`` is a mistake).
FOLDERS = {folder for folder, _ in LAYERS.values()} - {"systolic"}


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "systolic":
        return None  # a folder imported by its bare name: no layer allows it
    if len(parts) > 1 and parts[1] in LAYERS and parts[1] != "cli":
        return parts[1]
    return "cli"


def _references(path: Path) -> list[tuple[str, int, str]]:
    """Project modules reached without an import statement: ``(module, line, how)`` for each
    attribute chain rooted at ``systolic`` (``systolic.rtl.pe.X`` after importing some other
    subpackage) and each string naming one (``"systolic.tb.device_tb"``, run by name)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute):
            parts, inner = [], node
            while isinstance(inner, ast.Attribute):
                parts.append(inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name) and inner.id == "systolic":
                out.append((_owner(".".join(["systolic", *reversed(parts)])) or "systolic",
                            node.lineno, "attribute"))  # fmt: skip
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and node.value in MODULES and node.value.count(".") >= 2):  # fmt: skip
            out.append((node.value, node.lineno, "string"))
    return out


#: References by name the layers allow: the simulation runtime starts the cocotb testbench in
#: the simulator's process (tb imports sim, sim names tb).
BY_NAME = {
    ("systolic.sim.simulate", "systolic.tb.device_tb"),
}


def _imports(module: str, path: Path) -> list[tuple[str, int, bool]]:
    """``(imported module, line, at module level)`` for every import of a project module."""
    tree = ast.parse(path.read_text())
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    top_level = {id(n) for n in tree.body}
    top_level |= {id(n) for node in tree.body if isinstance(node, ast.If) for n in node.body}
    out = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            # ``from pkg import mod`` imports the submodule when there is one
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                     for a in node.names]  # fmt: skip
        for name in names:
            top = name.split(".")[0]
            if top == "systolic" or top in FOLDERS:
                out.append((name, node.lineno, id(node) in top_level))
    return out


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}


def test_every_import_follows_the_layers():
    """contract imports nothing of ours; rtl only the contract; golden and models never rtl; the
    generator and the models never import each other."""
    wrong = []
    for module, imports in GRAPH.items():
        allowed = LAYERS[_layer(module)][1]
        for name, line, _ in imports:
            if _layer(name) not in allowed:
                wrong.append(f"{MODULES[module].relative_to(ROOT)}:{line} imports {name}")
    assert not wrong, "imports across the layers' rules:\n" + "\n".join(wrong)
    assert len(MODULES) > 40  # the walk found the project (a wrong ROOT would pass vacuously)


def test_no_layer_is_reached_around_its_imports():
    """Attribute chains through ``systolic`` and modules named in strings follow the same rule
    (one allowed exception: sim starts the testbench by name)."""
    wrong = []
    for module, path in MODULES.items():
        allowed = LAYERS[_layer(module)][1]
        for name, line, how in _references(path):
            if _layer(name) not in allowed and (module, name) not in BY_NAME:
                wrong.append(f"{path.relative_to(ROOT)}:{line} reaches {name} by {how}")
    assert not wrong, "\n".join(wrong)
    named = {(m, n) for m, p in MODULES.items() for n, _, how in _references(p) if how == "string"}
    assert named >= BY_NAME  # the exception is still needed (and the scan sees strings)


#: Third-party packages each lower layer may import (the standard library always).
THIRD_PARTY = {
    "contract": {"numpy"},
    "golden": {"numpy", "ml_dtypes"},
    "models": {"numpy", "numba"},  # numba: the pipeline model's walk over the chunks, compiled
}


def test_lower_layers_import_no_hardware_tools():
    """The contract, the references and the models import nothing but the standard library and
    numpy (ml_dtypes for bf16, numba for the models' compiled loops), at any level, inside
    functions too."""
    wrong = []
    for module, path in MODULES.items():
        layer = _layer(module)
        if layer not in THIRD_PARTY:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top not in THIRD_PARTY[layer] | {"systolic"} | sys.stdlib_module_names:
                    wrong.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {name}")
    assert not wrong, "\n".join(wrong)


def test_no_function_level_imports_of_project_modules():
    """An import inside a function marks a module in the wrong place (or a cycle dodged); the
    command line's subcommands are the exception (docs/architecture.md: startup time)."""
    inner = [f"{MODULES[m].relative_to(ROOT)}:{line} imports {name}"
             for m, imports in GRAPH.items() for name, line, top in imports
             if not top and not m.startswith("systolic.cli.")]  # fmt: skip
    assert not inner, "function-level imports of project modules:\n" + "\n".join(inner)


def test_no_import_cycles():
    edges = {
        m: {_owner(name) for name, _, _ in imports} - {m, None} for m, imports in GRAPH.items()
    }
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for n in sorted(edges.get(m, ())):
            if state.get(n) == 1:
                cycle = path[path.index(n) :] + [n]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if n not in state:
                visit(n, path + [n])
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m, [m])


def _owner(name: str) -> str | None:
    """The project module an imported name lives in (``systolic.rtl.device.Device`` ->
    ``systolic.rtl.device``)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


MODEL_PATH = textwrap.dedent(
    """
    import importlib.abc, sys

    class NoAmaranth(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] in ("amaranth", "cocotb", "cocotb_tools"):
                raise ImportError(f"{name} is made unimportable for this test")

    sys.meta_path.insert(0, NoAmaranth())

    import numpy as np
    from systolic.contract.config import ArrayConfig
    from systolic.golden.data import random_operands
    from systolic.golden.reference import reference
    from systolic.models.cycles import predict
    from systolic.models.energy import model_energy
    from systolic.golden import bf16, data, requant  # noqa: F401
    from systolic.workloads import evaluate, library, pareto, spec_reader  # noqa: F401
    from systolic.sweeps import report, results, sweep_spec  # noqa: F401
    from systolic.quant import calibrate  # noqa: F401
    from systolic.workloads.evaluate import model_record
    from systolic.contract.memory import Memory
    from systolic.models.energy import load_coefficients

    config = ArrayConfig("ws", 4, 4)
    (a, b), = random_operands(np.random.default_rng(1), config, [(9, 10, 11)])
    c = reference(config, a, b)
    assert (c == a.astype(np.int64) @ b.astype(np.int64)).all()
    assert predict(config, 9, 10, 11).cycles > 0
    assert model_energy(config, a, b).total > 0
    big = ArrayConfig("os", 256, 256, a_depth=1 << 20)  # larger than the RTL builds
    assert predict(big, 128, 768, 768).cycles > 0
    work = library.transformer("bert-base", 1, 16)
    record = model_record(ArrayConfig("ws", 8, 8), work, Memory.preset("hbm2e-pc"),
                          load_coefficients(), "random", 1)
    assert record["cycles"] > 0
    loaded = [m for m in sys.modules if m.split(".")[0] in ("amaranth", "cocotb", "cocotb_tools")]
    assert not loaded, loaded
    print("model path ok")
    """
)


def test_models_and_references_run_without_amaranth():
    """golden/, models/ and the sweeps' model path import no Amaranth or cocotb, even
    transitively: a fresh interpreter that cannot import them still predicts and references."""
    run = subprocess.run([sys.executable, "-c", MODEL_PATH], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "model path ok" in run.stdout


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_pyproject_installs_every_layer_and_nothing_else():
    """pyproject.toml's package-dir maps ``systolic.<layer>`` to each layer's folder, and its
    packages list every package folder under them (data folders included)."""
    tool = _pyproject()
    expected_dirs = {"systolic": "systolic"} | {
        f"systolic.{name}": folder for name, (folder, _) in LAYER_LIST.items() if name != CLI
    }
    assert tool["package-dir"] == expected_dirs  # fmt: skip
    found = set()
    for name, (folder, _) in LAYER_LIST.items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base).parts
            found.add(".".join(["systolic", *(() if name == CLI else (name,)), *rel]))
    data = {p for p in tool["packages"] if not (ROOT / p.replace("systolic.", "", 1).replace(
        ".", "/") / "__init__.py").exists() and p not in found}  # fmt: skip
    assert set(tool["packages"]) - data == found
    for package in data:  # data folders: present, with the files package-data ships
        folder = ROOT / package.replace("systolic.", "", 1).replace(".", "/")
        assert folder.is_dir() and package in tool["package-data"], package


def test_the_mutant_runner_links_every_layer():
    """The mutant runner's scratch copy makes each layer's folder a subpackage of ``systolic``:
    its list is the layer list's."""
    from systolic.experiments import mutants

    assert set(mutants.subpackages()) == {f for n, (f, _) in LAYER_LIST.items() if n != CLI}


def test_the_architecture_page_shows_every_layer():
    """docs/architecture.md's picture names every layer's folder, and its table has a row for
    each layer listing exactly the layers it may import."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    picture = text[text.index("```") : text.index("```", text.index("```") + 3)]
    for name, (folder, _) in LAYER_LIST.items():
        shown = "systolic/cli" if name == CLI else f"{folder}/"
        assert shown in picture, f"the picture lacks {shown}"
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 3:
            rows[cells[0].strip("`").rstrip("/")] = cells[2]
    for name, (folder, imports) in LAYER_LIST.items():
        key = "systolic/cli" if name == CLI else folder
        assert key in rows, f"the table has no row for {key}"
        listed = {w.strip() for w in rows[key].split(",")} if imports else set()
        if name == CLI:
            assert rows[key] == "every layer but tb", rows[key]
            assert set(imports) == set(LAYER_LIST) - {"tb", CLI}
        else:
            assert listed == set(imports) or (not imports and "nothing of ours" in rows[key]), (
                key, rows[key])  # fmt: skip


#: Module names more than one layer uses, each for one thing seen from each side: the contract
#: describes it, the generator builds it, a reference or a model computes it; a subcommand's
#: module (systolic/cli) is named after the command and drives the module that does its work.
MIRRORS = {
    "axi": {"contract", "rtl"},  # AXI4 channel fields; the bus in hardware
    "dma": {"contract", "rtl"},  # DRAM format and descriptors; the DMA engines
    "device": {"models", "rtl"},  # the device cycle for cycle; the device in hardware
    "sram": {"models", "rtl"},  # SRAM macros' area and energy; the SRAM modules
    "requant": {"golden", "rtl"},  # requantization arithmetic; its hardware
    "conv": {"contract", "golden"},  # a convolution's geometry on the device; its output
    # the vector unit: its descriptor and walk, reference, hardware, cycles and driver
    "vector": {"contract", "golden", "rtl", "models", "sim"},
    "generate": {"rtl", "cli"},  # `systolic generate`
    "regress": {"verify", "cli"},  # `systolic regress`
    "compare": {"verify", "cli"},  # `systolic compare`
    "accuracy": {"quant", "cli"},  # `systolic accuracy`
    "ort_check": {"quant", "cli"},  # `systolic ort-check`
}


def test_module_names_are_unique_across_layers_but_for_mirrors():
    """Two layers' modules share a name only when they are the same thing from two sides
    (:data:`MIRRORS`); otherwise a name says which layer's thing it is (serving/batching.py, not
    a second simulate.py)."""
    layers_of: dict[str, set[str]] = {}
    for module in MODULES:
        name = module.rpartition(".")[2]
        if MODULES[module].name != "__init__.py":
            layers_of.setdefault(name, set()).add(_layer(module))
    shared = {name: layers for name, layers in layers_of.items() if len(layers) > 1}
    assert shared == MIRRORS


def test_no_test_hooks_in_the_product():
    """Faults and recorders the tests need live in tests/ (tests/faults.py, conftest's waveform
    recorder); no product function exists for a test's sake."""
    hooks = [f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"
             for path in MODULES.values() for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
             and (node.name.startswith("_test_") or node.name.endswith("_hook"))]  # fmt: skip
    assert not hooks, "\n".join(hooks)


#: The longest a function of the generator, the models, the simulation runtime or the contract
#: may be: past it, a function's sections want to be functions of their own.
LONGEST_FUNCTION = 120


def test_no_function_is_longer_than_the_limit():
    long = [f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {length} lines"
            for module, path in MODULES.items()
            if _layer(module) in ("rtl", "models", "sim", "contract")
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and (length := node.end_lineno - node.lineno + 1) > LONGEST_FUNCTION]  # fmt: skip
    assert not long, "\n".join(long)


def _mirror(module: str) -> Path:
    """``tests/<layer>/<subfolders>/test_<name>.py`` of a module."""
    path = MODULES[module]
    layer = _layer(module)
    folder = ROOT / LAYERS[layer][0]
    rel = path.relative_to(folder)
    parts = rel.parts[1:-1] if layer == CLI else rel.parts[:-1]  # systolic/cli/x.py: tests/cli
    return ROOT / "tests" / layer / Path(*parts) / f"test_{path.stem}.py"


def test_every_module_has_its_tests_or_a_row_saying_where_they_are():
    """A module's tests are ``tests/<layer>/test_<module>.py``, or docs/testing.md's table
    names the tests that exercise it; the table names only existing files and no module that
    is gone or has a mirror."""
    text = (ROOT / "docs" / "testing.md").read_text()
    rows = {}
    for line in text[text.index("<!-- tested-by -->") :].splitlines()[3:]:
        if not line.startswith("| `"):
            break
        module_cell, tests_cell = (c.strip() for c in line.strip().strip("|").split("|"))
        rows[module_cell.strip("`")] = re.findall(r"`(tests/[^`]+\.py)`", tests_cell)
    wrong = []
    modules = {str(MODULES[m].relative_to(ROOT)): m for m in MODULES
               if MODULES[m].name != "__init__.py"}  # fmt: skip
    for path, module in sorted(modules.items()):
        mirrored = _mirror(module).exists()
        if mirrored and path in rows:
            wrong.append(f"{path} has {_mirror(module).relative_to(ROOT)}: drop its row")
        elif not mirrored and path not in rows:
            wrong.append(f"{path}: no {_mirror(module).relative_to(ROOT)} and no row")
    for path, tests in rows.items():
        if path not in modules:
            wrong.append(f"a row for {path}, which is not a module")
        wrong += [f"{path}: its row names {t}, which does not exist"
                  for t in tests if not (ROOT / t).exists()]  # fmt: skip
    assert not wrong, "\n".join(wrong)
    assert len(rows) > 20  # the table was found
