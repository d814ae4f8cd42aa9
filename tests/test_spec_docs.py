"""docs/specs.md against the spec readers: every key the readers accept has a row on the page and
no row names a key they refuse; the required keys, the enumerated values and the literal
defaults the page gives are the readers'; and the page's complete examples load with the real
readers (and its error example fails as it says).

The keys come from the readers' key tuples where they have them (``_TOP_KEYS``,
``_EVALUATE_KEYS``, ``_CONFIG_KEYS``, ``_MEMORY_KEYS``, ``_TOP``, ``_STREAM``) and, where the
keys are written inline in a function (the keys of each workload kind, the arrival forms, the
policies), from the function's source, read with :mod:`ast`. A table on the page says which
section it documents with a ``<!-- keys: SCOPE -->`` comment on the line before it; a complete
example is a ``yaml`` block after ``<!-- example: sweep -->`` or ``<!-- example: serving -->``.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from pathlib import Path

import pytest
import yaml
from systolic.contract.config import Dataflow
from systolic.contract.host import Host
from systolic.contract.memory import DRAM_PRESETS
from systolic.serving import study_spec
from systolic.serving.batching import POLICIES
from systolic.serving.generation import GEN_POLICIES
from systolic.serving.study_spec import load_serving_spec
from systolic.sweeps import sweep_spec
from systolic.sweeps.sweep_spec import RTL_MODES, load_spec
from systolic.workloads import spec_reader
from systolic.workloads.library import CNNS, PHASES, TRANSFORMERS, transformer
from systolic.workloads.spec_reader import PRECISION_NAMES, SpecError

PAGE = Path(__file__).resolve().parent.parent / "docs" / "specs.md"


# -- the page ------------------------------------------------------------------------------------


def tables() -> dict[str, dict[str, list[str]]]:
    """``scope -> key -> the row's cells`` (key, type, unit, default, allowed values, meaning) of
    each table the page marks with ``<!-- keys: SCOPE -->``."""
    out: dict[str, dict[str, list[str]]] = {}
    lines = PAGE.read_text().splitlines()
    for i, line in enumerate(lines):
        m = re.fullmatch(r"<!-- keys: ([\w.]+) -->", line.strip())
        if not m:
            continue
        scope = m.group(1)
        assert scope not in out, f"docs/specs.md documents {scope} twice"
        rows: dict[str, list[str]] = {}
        body = lines[i + 1 :]
        assert body and body[0].startswith("| key |"), f"{scope}: no table after its marker"
        for row in body[2:]:
            if not row.startswith("|"):
                break
            cells = [c.strip() for c in row.strip().strip("|").split("|")]
            key = re.fullmatch(r"`([^`]+)`", cells[0])
            assert key, f"{scope}: a row's first cell is not a key in backticks: {row}"
            assert len(cells) == 6, f"{scope}.{key.group(1)}: {len(cells)} cells, not 6"
            assert key.group(1) not in rows, f"{scope}.{key.group(1)} is documented twice"
            rows[key.group(1)] = cells
        out[scope] = rows
    return out


TABLES = tables()
COLUMNS = {"type": 1, "unit": 2, "default": 3, "allowed": 4, "meaning": 5}


def cell(scope: str, key: str, column: str) -> str:
    return TABLES[scope][key][COLUMNS[column]]


def code_values(text: str) -> list[str]:
    return re.findall(r"`([^`]+)`", text)


def marked_blocks(marker: str) -> list[tuple[str, str]]:
    """``(kind, text)`` of each ``yaml`` block that follows ``<!-- MARKER: KIND -->``."""
    pattern = rf"<!-- {marker}: (\w+) -->\n```yaml\n(.*?)```"
    return re.findall(pattern, PAGE.read_text(), re.S)


# -- the readers' keys ---------------------------------------------------------------------------


def function(module, name: str) -> ast.FunctionDef:
    tree = ast.parse(textwrap.dedent(inspect.getsource(module)))
    found = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name]
    assert len(found) == 1, f"{module.__name__}.{name}: the test reads its source; update it"
    return found[0]


def strings(node) -> tuple[str, ...] | None:
    """A literal tuple (or string) of strings, else None."""
    try:
        value = ast.literal_eval(node)
    except ValueError:
        return None
    if isinstance(value, str):
        return tuple(value)
    if isinstance(value, tuple) and all(isinstance(v, str) for v in value):
        return value
    return None


def _branch(test) -> str | None:
    """``"x"`` for a test ``name == "x"``."""
    if (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
            and isinstance(test.comparators[0], ast.Constant)
            and isinstance(test.comparators[0].value, str)):  # fmt: skip
        return test.comparators[0].value
    return None


def mapping_calls(fn: ast.FunctionDef) -> dict[str | None, tuple[str, ...]]:
    """The literal key tuples of the function's ``mapping(doc, value, path, KEYS)`` calls, by
    what the call reads: the branch it is in (``if kind == "on_off":``), or the item it is
    given (``item["gemm"]``), or None for the function's own mapping."""
    out: dict[str | None, tuple[str, ...]] = {}

    def visit(node, branch):
        if isinstance(node, ast.If):
            visit(node.test, branch)
            for child in node.body:
                visit(child, _branch(node.test) or branch)
            for child in node.orelse:
                visit(child, branch)
            return
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "mapping":
            keys = strings(node.args[3]) if len(node.args) > 3 else None
            if keys is not None:
                value = node.args[1]
                where = branch
                if isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Constant):
                    where = value.slice.value
                assert where not in out, f"{fn.name}: two mappings read {where}; update the test"
                out[where] = keys
        for child in ast.iter_child_nodes(node):
            visit(child, branch)

    for statement in fn.body:
        visit(statement, None)
    return out


def required_loops(fn: ast.FunctionDef) -> set[str]:
    """Keys of ``for key in LITERAL: if key not in ...: raise`` (missing-key checks)."""
    out: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            keys = strings(node.iter)
            checks = [c for c in ast.walk(node) if isinstance(c, ast.Compare)
                      and isinstance(c.left, ast.Name) and c.left.id == node.target.id
                      and isinstance(c.ops[0], ast.NotIn)]  # fmt: skip
            if keys and checks:
                out |= set(keys)
    return out


def read_spec_required(fn: ast.FunctionDef) -> set[str]:
    """The required top-level keys a loader hands ``read_spec``."""
    calls = [n for n in ast.walk(fn)
             if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "read_spec"]  # fmt: skip
    assert len(calls) == 1, f"{fn.name}: not one read_spec call; update the test"
    return set(strings(calls[0].args[2]))


def workload_keys() -> dict[str, tuple[str, ...]]:
    """Each workload kind's keys, from ``parse_workloads``'s ``kinds`` and ``allowed``."""
    fn = function(spec_reader, "parse_workloads")
    assigned = {t.id: n.value for n in ast.walk(fn) if isinstance(n, ast.Assign)
                for t in n.targets if isinstance(t, ast.Name)}  # fmt: skip
    kinds = strings(assigned["kinds"])
    allowed = assigned["allowed"]
    assert isinstance(allowed, ast.BinOp) and isinstance(allowed.left, ast.Subscript), (
        "parse_workloads: `allowed` is no longer `{kind: keys}[kind] + common`; update the test"
    )
    table = ast.literal_eval(allowed.left.value)
    common = strings(allowed.right)
    assert set(table) == set(kinds), (table, kinds)
    return {kind: (*table[kind], *common) for kind in kinds}


def accepted() -> dict[str, set[str]]:
    """``scope -> keys`` the readers accept, in the page's scopes."""
    out = {
        "sweep": set(sweep_spec._TOP_KEYS),
        "sweep.evaluate": set(sweep_spec._EVALUATE_KEYS),
        "configs": set(spec_reader._CONFIG_KEYS),
        "memory": set(spec_reader._MEMORY_KEYS),
        "serving": set(study_spec._TOP),
        "serving.streams": set(study_spec._STREAM),
    }
    for kind, keys in workload_keys().items():
        out[f"sweep.workloads.{kind}"] = set(keys)
    gemm = mapping_calls(function(spec_reader, "parse_workloads"))
    assert set(gemm) == {"gemm"}, gemm
    out["sweep.workloads.gemm.gemm"] = set(gemm["gemm"])
    arrival = mapping_calls(function(study_spec, "_arrival"))
    assert set(arrival) == {None, "on_off"}, arrival
    out["serving.arrival"] = set(arrival[None])
    out["serving.arrival.on_off"] = set(arrival["on_off"])
    policies = function(study_spec, "_policies")
    nested = mapping_calls(policies)
    assert set(nested) == {"dynamic"}, nested
    out["serving.policies.dynamic"] = set(nested["dynamic"])
    named = {v for n in ast.walk(policies) if isinstance(n, ast.IfExp)
             for v in (strings(n.body) or ()) + (strings(n.orelse) or ())}  # fmt: skip
    strings_compared = {n.comparators[0].value for n in ast.walk(policies)
                        if isinstance(n, ast.Compare) and _branch(n)
                        and getattr(n.left, "id", None) == "item"}  # fmt: skip
    assert named and strings_compared == {"none"}, (named, strings_compared)
    out["serving.policies"] = named | strings_compared
    return out


ACCEPTED = accepted()


# -- keys ----------------------------------------------------------------------------------------


def test_the_page_documents_every_section_the_readers_read():
    assert set(TABLES) == set(ACCEPTED), (
        f"sections without a table: {sorted(set(ACCEPTED) - set(TABLES))}; tables of no "
        f"section: {sorted(set(TABLES) - set(ACCEPTED))}"
    )


@pytest.mark.parametrize("scope", sorted(ACCEPTED))
def test_the_page_documents_exactly_the_keys_the_readers_accept(scope):
    documented = set(TABLES.get(scope, {}))
    assert documented - ACCEPTED[scope] == set(), f"{scope}: documented, refused by the reader"
    assert ACCEPTED[scope] - documented == set(), f"{scope}: accepted, not documented"


def test_the_policies_the_reader_names_are_the_batching_modules():
    assert ACCEPTED["serving.policies"] == set(POLICIES) | set(GEN_POLICIES)


def test_the_required_keys_are_marked_required():
    required = {
        "sweep": read_spec_required(function(sweep_spec, "load_spec")),
        "serving": read_spec_required(function(study_spec, "load_serving_spec")),
        "configs": required_loops(function(spec_reader, "parse_configs")),
        "memory": required_loops(function(spec_reader, "parse_memories")),
        "sweep.workloads.gemm.gemm": required_loops(function(spec_reader, "parse_workloads")),
        "serving.streams": required_loops(function(study_spec, "_stream")),
        "serving.arrival.on_off": required_loops(function(study_spec, "_arrival")),
    }
    assert all(required.values()), required
    for scope, keys in required.items():
        for key in keys:
            assert "required" in cell(scope, key, "default"), f"{scope}.{key}: not marked required"
    for kind in workload_keys():  # the key that names the kind
        assert cell(f"sweep.workloads.{kind}", kind, "default").startswith("required")


# -- values --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scope", "key", "values"),
    [
        ("configs", "dataflow", [d.value for d in Dataflow]),
        ("configs", "precision", PRECISION_NAMES),
        ("sweep.evaluate", "rtl", RTL_MODES),
        ("sweep.evaluate", "rtl_precision", PRECISION_NAMES),
        ("sweep.workloads.transformer", "transformer", TRANSFORMERS),
        ("sweep.workloads.transformer", "phase", PHASES),
        ("sweep.workloads.cnn", "cnn", CNNS),
        ("serving.streams", "model", [*TRANSFORMERS, *CNNS]),
    ],
)
def test_the_allowed_values_are_the_readers(scope, key, values):
    assert sorted(code_values(cell(scope, key, "allowed"))) == sorted(values)


def test_every_memory_preset_is_on_the_page():
    text = PAGE.read_text()
    for name in DRAM_PRESETS:
        assert f"`{name}`" in text, name


# -- defaults ------------------------------------------------------------------------------------

MINIMAL_SWEEP = """\
configs: {dataflow: ws, array: 8x8}
workloads:
  - transformer: bert-base
  - cnn: resnet50
  - gemm: {m: 1, k: 2, n: 3}
"""

MINIMAL_SERVING = """\
configs: {dataflow: ws, array: 8x8}
streams:
  - model: bert-base
    lengths: 64
    arrival: {poisson: 1}
    sla_p99_ms: 100
    policies: [{dynamic: {}}]
  - model: resnet50
    arrival: {on_off: {on_rate: 1, on_s: 1, off_s: 1}}
    sla_p99_ms: 100
    policies: none
"""


def _policy(study):
    return study.streams[0].policies[0]


def _phase(workload) -> str:
    return next(p for p in PHASES if transformer("bert-base", 1, 128, p) == workload)


#: ``(scope, key) -> (which minimal spec, the value the reader gave when the key was left out)``
#: for every default the page gives as a literal (a cell that starts with a value in backticks).
DEFAULTS = {
    ("sweep", "memory"): ("sweep", lambda s: [m.name for m in s.memories]),
    ("sweep", "evaluate"): ("sweep", lambda s: {} if s.rtl == "none" else s.rtl),  # model only
    ("sweep", "data"): ("sweep", lambda s: s.data),
    ("sweep", "seed"): ("sweep", lambda s: s.seed),
    ("sweep", "host"): ("sweep", lambda s: (s.host or Host.preset()).name),
    ("sweep", "coefficients"): ("sweep", lambda s: s.coefficients),
    ("configs", "precision"): ("sweep", lambda s: [c.precision for c in s.configs]),
    ("configs", "depth"): ("sweep", lambda s: [c.a_depth for c in s.configs]),
    ("configs", "requant"): ("sweep", lambda s: [c.requant for c in s.configs]),
    ("configs", "vector"): ("sweep", lambda s: [c.vector for c in s.configs]),
    ("configs", "stage_depth"): ("sweep", lambda s: [c.stage_depth for c in s.configs]),
    ("sweep.evaluate", "rtl"): ("sweep", lambda s: s.rtl),
    ("sweep.evaluate", "sample"): ("sweep", lambda s: s.sample),
    ("sweep.evaluate", "max_macs"): ("sweep", lambda s: s.max_macs),
    ("sweep.evaluate", "timeout"): ("sweep", lambda s: s.timeout),
    ("sweep.evaluate", "synth"): ("sweep", lambda s: s.synth),
    ("sweep.workloads.transformer", "batch"): ("sweep", lambda s: s.workloads[0].batch),
    ("sweep.workloads.transformer", "seq"): ("sweep", lambda s: s.workloads[0].seq),
    ("sweep.workloads.transformer", "phase"): ("sweep", lambda s: _phase(s.workloads[0])),
    ("sweep.workloads.transformer", "rtl"): ("sweep", lambda s: not s.model_only),
    ("sweep.workloads.cnn", "batch"): ("sweep", lambda s: s.workloads[1].batch),
    ("sweep.workloads.cnn", "rtl"): ("sweep", lambda s: not s.model_only),
    ("sweep.workloads.gemm", "count"): ("sweep", lambda s: s.workloads[2].gemms[0].count),
    ("sweep.workloads.gemm", "name"): ("sweep", lambda s: s.workloads[2].name),
    ("sweep.workloads.gemm", "rtl"): ("sweep", lambda s: not s.model_only),
    ("serving", "memory"): ("serving", lambda s: s.memory.name),
    ("serving", "synth"): ("serving", lambda s: s.synth),
    ("serving", "replicas"): ("serving", lambda s: s.replicas),
    ("serving", "thermal_tau_s"): ("serving", lambda s: s.thermal_tau_s),
    ("serving", "seed"): ("serving", lambda s: s.seed),
    ("serving", "coefficients"): ("serving", lambda s: s.coefficients),
    ("serving.streams", "requests"): ("serving", lambda s: s.streams[0].requests),
    ("serving.arrival.on_off", "off_rate"): ("serving", lambda s: s.streams[1].process.off_rate),
    ("serving.policies.dynamic", "max_batch"): ("serving", lambda s: _policy(s).max_batch),
    ("serving.policies.dynamic", "max_wait_ms"): ("serving", lambda s: _policy(s).max_wait_s * 1e3),
}  # fmt: skip

#: Literal defaults of kinds that need a file to load (the test writes none).
UNCHECKED_DEFAULTS = {
    ("sweep.workloads.scalesim", "batch"),
    ("sweep.workloads.scalesim", "rtl"),
    ("sweep.workloads.onnx", "dims"),
    ("sweep.workloads.onnx", "rtl"),
}


def literal_defaults() -> dict[tuple[str, str], str]:
    out = {}
    for scope, rows in TABLES.items():
        for key, cells in rows.items():
            m = re.match(r"`([^`]+)`", cells[COLUMNS["default"]])
            if m:
                out[(scope, key)] = m.group(1)
    return out


def test_every_literal_default_is_checked():
    assert set(literal_defaults()) == set(DEFAULTS) | UNCHECKED_DEFAULTS


def _expected(documented: str, scope: str, key: str):
    """What the reader holds for a documented default: a list for a crossed key, the file the
    reader leaves as None (the energy model's default), a template name filled in."""
    if key == "coefficients":
        return None  # the reader leaves it to models.energy's default, the file named
    if (scope, key) == ("sweep.workloads.gemm", "name"):
        return documented.replace("MxKxN", "1x2x3")
    value = yaml.safe_load(documented)
    if (scope, key) in {("sweep", "memory"), ("configs", "precision"), ("configs", "depth"),
                        ("configs", "requant"), ("configs", "vector"),
                        ("configs", "stage_depth"), ("serving", "replicas")}:  # fmt: skip
        return [value]
    return value


@pytest.mark.parametrize(("scope", "key"), sorted(DEFAULTS))
def test_a_documented_default_is_the_readers(scope, key, tmp_path):
    which, read = DEFAULTS[(scope, key)]
    spec = tmp_path / f"{which}.yaml"
    spec.write_text(MINIMAL_SWEEP if which == "sweep" else MINIMAL_SERVING)
    loaded = load_spec(spec) if which == "sweep" else load_serving_spec(spec)
    documented = literal_defaults()[(scope, key)]
    assert read(loaded) == _expected(documented, scope, key), f"{scope}.{key}: `{documented}`"


def test_the_default_coefficients_are_the_energy_models():
    from systolic.models.energy import DEFAULT_COEFFICIENTS

    for scope in ("sweep", "serving"):
        documented = literal_defaults()[(scope, "coefficients")]
        assert DEFAULT_COEFFICIENTS.as_posix().endswith(documented), documented


# -- examples ------------------------------------------------------------------------------------


def test_the_page_has_a_complete_example_of_each_format():
    assert sorted(kind for kind, _ in marked_blocks("example")) == ["serving", "sweep"]


@pytest.mark.parametrize("kind", ["sweep", "serving"])
def test_a_complete_example_loads_with_the_reader(kind, tmp_path):
    text = PAGE.read_text()
    ((body,),) = [(b,) for k, b in marked_blocks("example") if k == kind]
    spec = tmp_path / "spec.yaml"
    spec.write_text(body)
    if kind == "sweep":
        sweep = load_spec(spec)
        m = re.search(r"(\d+) configurations, (\d+) workloads and (\d+) memories: (\d+) points",
                      text)  # fmt: skip
        assert m, "the sweep example's count of points is not on the page"
        counts = (len(sweep.configs), len(sweep.workloads), len(sweep.memories), sweep.points)
        assert counts == tuple(int(g) for g in m.groups())
        raw = yaml.safe_load(body)
        assert set(raw) == set(sweep_spec._TOP_KEYS) - {"serving", "coefficients"}, (
            "the complete example shows every top-level key but the two that name files"
        )
        assert set(raw["evaluate"]) == set(sweep_spec._EVALUATE_KEYS)
    else:
        study = load_serving_spec(spec)
        m = re.search(r"= (\d+) operating points", text)
        assert m, "the serving example's count of operating points is not on the page"
        points = (len(study.configs) * len(study.clocks_mhz) * len(study.replicas)
                  * sum(len(s.policies) for s in study.streams))  # fmt: skip
        assert points == int(m.group(1))
        raw = yaml.safe_load(body)
        assert set(raw) == set(study_spec._TOP) - {"coefficients"}
        shown = {k for s in raw["streams"] for k in s}
        assert shown == set(study_spec._STREAM), "the example shows every stream key"


def test_the_error_example_fails_as_the_page_says(tmp_path):
    text = PAGE.read_text()
    ((kind, body),) = marked_blocks("error-example")
    assert kind == "sweep"
    after = text.split(body, 1)[1]
    message = re.search(r"```text\n(spec\.yaml:.*?)\n```", after).group(1)
    spec = tmp_path / "spec.yaml"
    spec.write_text(body)
    with pytest.raises(SpecError) as e:
        load_spec(spec)
    assert str(e.value) == str(spec) + message.removeprefix("spec.yaml")


def test_every_yaml_block_on_the_page_is_yaml():
    for block in re.findall(r"```yaml\n(.*?)```", PAGE.read_text(), re.S):
        yaml.safe_load(block)
