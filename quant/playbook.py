"""The quantization playbook, end to end, on each task's networks (``quant/tasks.py``):

1. train in float; write the network as ONNX and read it back (the model quantized from here on
   is the file's);
2. calibration measured: every activation range method x weights per tensor or per channel, at
   int8 and int4; the calibration-set size from 8 to 512 samples; clipping on the layer whose
   input is most heavy-tailed;
3. quantization-aware training from the float weights (fake-quant forward, straight-through
   backward), against post-training quantization at int8 and int4;
4. per-layer sensitivity (one layer at int4 or bf16, the rest int8), then every mix of int8,
   int4 and bf16 over the layers, priced by the energy model: the accuracy-energy Pareto front
   and the cheapest mix above the accuracy floor;
5. deployment checks on that mix (``quant/deploy_checks.py``), through the simulated RTL;
6. onnxruntime's own post-training quantization of the same ONNX file (``quantize_static``,
   per tensor and per channel) as a baseline row, its accuracy as onnxruntime runs it; in both
   its formats, through the simulated RTL, every layer's output equal to onnxruntime's.

Every choice is made on the validation split; every reported accuracy is on the test split.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, field, replace
from itertools import product
from pathlib import Path

import numpy as np
from systolic.contract.memory import DEFAULT_MEMORY_PRESET, Memory
from systolic.models.energy import figures_energy, load_coefficients
from systolic.quant.calibrate import choose_scale, fake_quantize, sqnr_db
from systolic.workloads.evaluate import model_record
from systolic.workloads.library import Gemm, Workload
from systolic.workloads.onnx_import import onnx_workload

from .deploy_checks import Check, deployment_checks
from .deployment import LAYER_PRECISIONS, Plan, Recipe, layer_config, make_plan, run_integer
from .nets import Net, train
from .onnx_io import net_from_onnx, write_onnx
from .ort_check import check_model, fused, quantize_with_ort
from .ort_device import device_config
from .tasks import MODELS, build_net, load_task

__all__ = ["Options", "run_model", "run_playbook"]

#: The activation recipes the calibration study compares (weights by min/max).
ACT_RECIPES = (("minmax", 100.0), ("percentile", 99.9), ("percentile", 99.99), ("mse", 100.0),
               ("entropy", 100.0))  # fmt: skip
#: Training epochs of each network (float), and of quantization-aware fine-tuning.
EPOCHS = {"digits:mlp": 40, "digits:cnn": 30, "cancer:mlp": 80}


@dataclass
class Options:
    models: tuple[str, ...] = ("digits:mlp", "digits:cnn", "cancer:mlp")
    out: Path = Path("results/quantize")
    floor: float = 0.99  # the least accuracy retention (test) a deployed mix may have
    qat_epochs: int = 10
    cal_sizes: tuple[int, ...] = (8, 32, 128, 512)
    cal_draws: int = 5
    rtl_samples: int = 16
    rows: int = 8
    energy_batch: int = 16  # samples per inference for the energy figures
    seed: int = 0
    epochs_scale: float = 1.0  # shorter training (tests)
    onnx: Path | None = None  # a user's network for the first model's task, instead of training
    timeout: float | None = None
    log: callable = field(default=print, repr=False)


def _acc(pred, labels) -> float:
    return float(np.mean(pred == labels))


def _int_accuracy(plan: Plan, x, y, rows: int) -> float:
    return _acc(np.argmax(run_integer(plan, x, rows=rows).logits, axis=1), y)


def _per_sample_shapes(net: Net, x1) -> list[tuple[int, int, int]]:
    """Each array layer's GEMM ``(M, K, N)`` for one sample."""
    outs = net.outputs(x1[:1])
    return [(o.shape[0], layer.matrix().shape[0], o.shape[1])
            for o, layer in zip(outs, net.array_layers, strict=True)]  # fmt: skip


@functools.lru_cache(maxsize=4096)
def _layer_energy(precision: str, out_precision: str | None, rows: int, shape, batch: int
                  ) -> tuple[float, float, float]:  # fmt: skip
    """A layer's model energy (pJ) and the low and high ends of its range."""
    config = layer_config(precision, rows, out_precision)
    m, k, n = shape
    work = Workload("layer", "layer", "gemm", batch, None, (Gemm("layer", m * batch, k, n),))
    record = model_record(config, work, Memory.preset(DEFAULT_MEMORY_PRESET),
                          load_coefficients(), "random", 0)  # fmt: skip
    return (record["energy_pj"], *record["energy_range_pj"])


def energy_range_per_inference(precisions, shapes, rows: int, batch: int
                               ) -> tuple[float, float, float]:  # fmt: skip
    """Model energy (pJ) per sample of a mix and its range (the energy model's, every term at
    its low or its high end), the array running ``batch`` samples at a time, each layer in its
    own mode (requantizing into the next layer's width)."""
    total = [0.0, 0.0, 0.0]
    for i, (p, shape) in enumerate(zip(precisions, shapes, strict=True)):
        nxt = precisions[i + 1] if i + 1 < len(precisions) else None
        out = nxt if p.startswith("int") and nxt and nxt.startswith("int") else None
        for j, pj in enumerate(_layer_energy(p, out, rows, shape, batch)):
            total[j] += pj
    return total[0] / batch, total[1] / batch, total[2] / batch


def energy_per_inference(precisions, shapes, rows: int, batch: int) -> float:
    """Model energy (pJ) per sample of a mix (:func:`energy_range_per_inference`)."""
    return energy_range_per_inference(precisions, shapes, rows, batch)[0]


def _kurtosis(x) -> float:
    x = np.asarray(x, dtype=np.float64).ravel()
    s = x.std()
    return float(np.mean((x - x.mean()) ** 4) / s**4 - 3) if s > 0 else 0.0


def _best_recipe(net, task, x_cal, bits: int, rows: int) -> tuple[Recipe, list[dict]]:
    """Every activation method x weight granularity at ``bits``: validation and test accuracy;
    the recipe with the best validation accuracy (the first of equals)."""
    rows_out, best = [], None
    for (method, pct), per_channel in product(ACT_RECIPES, (False, True)):
        recipe = Recipe(method, pct, "minmax", per_channel)
        plan = make_plan(net, x_cal, f"int{bits}", recipe)
        val = _int_accuracy(plan, task.x_val, task.y_val, rows)
        test = _int_accuracy(plan, task.x_test, task.y_test, rows)
        rows_out.append({"bits": bits, "recipe": recipe.label(), "val": val, "test": test})
        if best is None or val > best[0]:
            best = (val, recipe)
    return best[1], rows_out


def _calibration_sizes(net, task, recipe, bits, opts, rng) -> list[dict]:
    out = []
    for size in opts.cal_sizes:
        size = min(size, len(task.x_train))
        accs = []
        for _ in range(opts.cal_draws):
            pick = rng.choice(len(task.x_train), size, replace=False)
            plan = make_plan(net, task.x_train[pick], f"int{bits}", recipe)
            accs.append(_int_accuracy(plan, task.x_test, task.y_test, opts.rows))
        out.append({"bits": bits, "samples": size, "mean": float(np.mean(accs)),
                    "min": float(np.min(accs)), "max": float(np.max(accs))})  # fmt: skip
    return out


def _outliers(net, task, x_cal, recipes: dict, opts) -> dict:
    """Clipping on the array layer whose input is most heavy-tailed (excess kurtosis): per
    method, its range, the share of values clipped, the SQNR of that tensor and test accuracy
    with only that layer's range changed."""
    acts = net.activations(x_cal)
    kurt = [_kurtosis(a) for a in acts]
    layer = int(np.argmax(kurt))
    act = acts[layer]
    test_act = net.activations(task.x_test)[layer]
    rows = []
    for bits in (8, 4):
        base = make_plan(net, x_cal, f"int{bits}", recipes[bits])
        for method, pct in ACT_RECIPES:
            s = choose_scale(act, bits, signed=False, method=method, percentile=pct)
            lo, hi = s.range
            top = float((hi - s.zero_point) * s.scale)
            layers = list(base.layers)
            layers[layer] = replace(layers[layer], act=s)
            plan = replace(base, layers=layers)
            rows.append({
                "bits": bits, "method": method if method != "percentile" else f"percentile {pct:g}",
                "range_max": top, "clipped": float(np.mean(test_act > top)),
                "sqnr_db": sqnr_db(test_act, fake_quantize(test_act, s)),
                "test": _int_accuracy(plan, task.x_test, task.y_test, opts.rows),
            })  # fmt: skip
    return {"layer": layer, "kurtosis": kurt, "max": float(act.max()),
            "p99_99": float(np.percentile(act, 99.99)), "rows": rows}  # fmt: skip


def _qat(net, task, x_cal, bits, recipe, opts, rng) -> tuple[Net, Plan, list[float]]:
    """Fine-tune a copy of ``net`` with fake quantization at ``bits`` (ranges recalibrated
    after each epoch), and its calibrated plan."""
    tuned = copy.deepcopy(net)
    state = {"plan": replace(make_plan(tuned, x_cal, f"int{bits}", recipe), live_weights=True)}

    def recalibrate(n):
        state["plan"] = replace(make_plan(n, x_cal, f"int{bits}", recipe), live_weights=True)

    losses = train(tuned, task.x_train, task.y_train, rng, epochs=opts.qat_epochs, lr=1e-3,
                   hook=lambda *a: state["plan"].hook(*a), ste=lambda *a: state["plan"].ste(*a),
                   on_epoch=recalibrate)  # fmt: skip
    return tuned, make_plan(tuned, x_cal, f"int{bits}", recipe), losses


#: onnxruntime's quantization of each network: quantize_static's two formats, weights per tensor
#: and per channel; u8 activations calibrated by MinMax, int8 weights within +-64
#: (``reduce_range``: where its x86 kernels are exact on every CPU).
ORT_FORMATS = ("QDQ", "QOperator")
ORT_WEIGHTS = {"per-tensor": False, "per-channel": True}


def _ort_quantizations(path: Path, shape: tuple, x_cal) -> dict:
    """onnxruntime's quantizations of the model at ``path`` (samples of ``shape``), calibrated
    on ``x_cal``: ``{(format, weights): model}``."""
    x_cal = np.asarray(x_cal, np.float32).reshape(-1, *shape)
    return {(fmt, name): quantize_with_ort(path, path.with_suffix(f".ort-{fmt}-{name}.onnx"),
                                           x_cal, fmt=fmt, per_channel=per_channel)
            for fmt in ORT_FORMATS for name, per_channel in ORT_WEIGHTS.items()}  # fmt: skip


def _ort_baselines(models: dict, shape: tuple, task, energy_pj: float) -> list[dict]:
    """Retention rows of onnxruntime's QDQ quantizations: their accuracy on the test split as
    onnxruntime's InferenceSession computes it; the array work is int8's (``energy_pj``; its
    float scales change the output path only)."""
    import onnxruntime as ort

    rows = []
    x_test = np.asarray(task.x_test, np.float32).reshape(-1, *shape)
    for name in ORT_WEIGHTS:
        model = models["QDQ", name]
        session = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])  # fmt: skip
        logits = session.run(None, {session.get_inputs()[0].name: x_test})[0]
        test = float(np.mean(np.argmax(logits, axis=-1) == task.y_test))
        rows.append({"name": f"onnxruntime int8 {name} (QDQ, MinMax, weights +-64)",
                     "test": test, "energy_pj": energy_pj})  # fmt: skip
    return rows


def _ort_on_the_rtl(models: dict, shape: tuple, x, rows: int) -> tuple[Check, list[dict]]:
    """onnxruntime's every quantization run on the simulated ``rows x rows`` WS device (every
    QLinearConv, QLinearMatMul and QGemm layer; :mod:`quant.ort_device`) on the samples ``x``:
    the check that each output element equals onnxruntime's, and each case's layers."""
    device = device_config("ws", rows, rows)
    x = np.asarray(x, np.float32).reshape(-1, *shape)
    cases = []
    for (fmt, name), model in models.items():
        graph = fused(model)
        found, host = check_model(graph, {graph.graph.input[0].name: x}, device)
        cases.append({"format": fmt, "weights": name, "host": host,
                      "layers": [{"name": c.name, "op": c.op, "elements": c.elements,
                                  "golden": c.equal, "device": c.device}
                                 for c in found]})  # fmt: skip
    ran = [layer for case in cases for layer in case["layers"] if layer["device"] is not None]
    exact = bool(ran) and all(layer["device"] == layer["elements"] for layer in ran)
    detail = (f"{len(cases)} quantizations (QDQ and QOperator, weights per tensor and per "
              f"channel) of {len(x)} test samples on the simulated {rows}x{rows} WS device: "
              f"{sum(layer['device'] for layer in ran)} of "
              f"{sum(layer['elements'] for layer in ran)} output elements of {len(ran)} layers "
              f"equal onnxruntime's")  # fmt: skip
    return Check("onnxruntime's quantization on the RTL", exact, detail), cases


def run_model(spec: str, opts: Options) -> dict:
    """The playbook on one ``task:model`` (see module); a JSON-able record."""
    task_name, _, model = spec.partition(":")
    if task_name not in MODELS or model not in MODELS[task_name]:
        known = ", ".join(f"{t}:{m}" for t, ms in MODELS.items() for m in ms)
        raise ValueError(f"model must be one of {known}, not {spec!r}")
    task = load_task(task_name)
    rng = np.random.default_rng(opts.seed)
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    log = opts.log
    if opts.onnx:
        net = net_from_onnx(opts.onnx)
        source = f"read from {opts.onnx}"
        if net.input_shape != task.input_shape and np.prod(net.input_shape) != np.prod(
                task.input_shape):  # fmt: skip
            raise ValueError(f"{opts.onnx}: input shape {net.input_shape} does not fit task "
                             f"{task_name}'s {task.input_shape}")  # fmt: skip
    else:
        net = build_net(task, model, rng)
        epochs = max(1, round(EPOCHS[spec] * opts.epochs_scale))
        train(net, task.x_train, task.y_train, rng, epochs=epochs)
        source = f"trained here, {epochs} epochs of Adam"
    for layer in net.array_layers:  # float32, as the ONNX file stores them
        layer.w = layer.w.astype(np.float32).astype(np.float64)
        if layer.b is not None:
            layer.b = layer.b.astype(np.float32).astype(np.float64)
    path = write_onnx(net, out / f"{net.name}.onnx")
    back = net_from_onnx(path)
    onnx_same = np.array_equal(back.forward(task.x_test), net.forward(task.x_test))
    net = back
    workload = onnx_workload(path, batch=1)
    log(f"{spec}: float model {source}; ONNX {path} read back "
        f"{'identical' if onnx_same else 'DIFFERENT'}")  # fmt: skip
    float_val = net.accuracy(task.x_val, task.y_val)
    float_test = net.accuracy(task.x_test, task.y_test)
    cal_n = min(512, len(task.x_train))
    x_cal = task.x_train[rng.choice(len(task.x_train), cal_n, replace=False)]
    shapes = _per_sample_shapes(net, task.x_test)
    L = len(net.array_layers)

    def energy(precisions):
        return energy_per_inference(list(precisions), shapes, opts.rows, opts.energy_batch)

    # 2. calibration
    recipes, calibration = {}, []
    for bits in (8, 4):
        recipes[bits], rows = _best_recipe(net, task, x_cal, bits, opts.rows)
        calibration += rows
    log(f"{spec}: best recipes int8 [{recipes[8].label()}], int4 [{recipes[4].label()}]")
    sizes = []
    for bits in (8, 4):
        sizes += _calibration_sizes(net, task, recipes[bits], bits, opts, rng)
    outliers = _outliers(net, task, x_cal, recipes, opts)
    # 3. PTQ against QAT
    ptq = {b: make_plan(net, x_cal, f"int{b}", recipes[b]) for b in (8, 4)}
    qat = {}
    for bits in (8, 4):
        tuned, plan, losses = _qat(net, task, x_cal, bits, recipes[bits], opts, rng)
        qat[bits] = (tuned, plan, losses)
    control = copy.deepcopy(net)  # the same fine-tuning without quantization: what QAT owes to
    train(control, task.x_train, task.y_train, rng, epochs=opts.qat_epochs, lr=1e-3)  # training
    log(f"{spec}: QAT done")
    # 4. sensitivity and the mix
    mix_recipe = recipes[4]
    base8 = make_plan(net, x_cal, "int8", mix_recipe)
    base_val = _int_accuracy(base8, task.x_val, task.y_val, opts.rows)
    sensitivity = []
    for i in range(L):
        row = {"layer": i, "shape": shapes[i]}
        for p in ("int4", "bf16"):
            precisions = ["int8"] * L
            precisions[i] = p
            plan = make_plan(net, x_cal, precisions, mix_recipe)
            row[p] = _int_accuracy(plan, task.x_val, task.y_val, opts.rows) - base_val
        sensitivity.append(row)
    mixes = []
    for precisions in product(LAYER_PRECISIONS, repeat=L):
        plan = make_plan(net, x_cal, list(precisions), mix_recipe)
        mixes.append({"precisions": list(precisions),
                      "val": _int_accuracy(plan, task.x_val, task.y_val, opts.rows),
                      "test": _int_accuracy(plan, task.x_test, task.y_test, opts.rows),
                      "energy_pj": energy(precisions)})  # fmt: skip
    for m in mixes:
        m["front"] = not any(o["val"] >= m["val"] and o["energy_pj"] <= m["energy_pj"] and
                             (o["val"] > m["val"] or o["energy_pj"] < m["energy_pj"])
                             for o in mixes)  # fmt: skip
    feasible = [m for m in mixes if m["val"] >= opts.floor * float_val]
    chosen = min(feasible or mixes, key=lambda m: (m["energy_pj"], -m["val"]))
    chosen_plan = make_plan(net, x_cal, chosen["precisions"], mix_recipe)
    log(f"{spec}: chosen mix {'/'.join(chosen['precisions'])}; deployment checks"
        + (f" through RTL ({opts.rtl_samples} samples)" if opts.rtl_samples else ""))  # fmt: skip
    # 5. deployment checks
    checks, figures = deployment_checks(chosen_plan, task.x_test, task.y_test, float_test,
                                        opts.floor, rtl_samples=opts.rtl_samples,
                                        rows=opts.rows)  # fmt: skip
    if not feasible:
        checks[-1].detail += "; no mix met the floor on validation (the most accurate is shown)"
    rtl = figures.pop("rtl", None)
    rtl_energy = None
    if rtl is not None:
        toggles = sum(figures_energy(r, r.toggles, source="toggles").total
                      for r in rtl.rtl_results) / opts.rtl_samples  # fmt: skip
        model = energy_per_inference(chosen["precisions"], shapes, opts.rows, opts.rtl_samples)
        rtl_energy = {"samples": opts.rtl_samples, "rtl_toggles_pj": toggles, "model_pj": model}
    bf16 = make_plan(net, x_cal, "bf16", mix_recipe)
    retention = [{"name": "float", "test": float_test, "energy_pj": None}]
    for bits in (8, 4):
        retention.append({"name": f"PTQ int{bits} ({recipes[bits].label()})",
                          "test": _int_accuracy(ptq[bits], task.x_test, task.y_test, opts.rows),
                          "energy_pj": energy([f"int{bits}"] * L)})  # fmt: skip
    for bits in (8, 4):
        retention.append({"name": f"QAT int{bits}, {opts.qat_epochs} epochs",
                          "test": _int_accuracy(qat[bits][1], task.x_test, task.y_test,
                                                opts.rows),
                          "energy_pj": energy([f"int{bits}"] * L)})  # fmt: skip
    ort_models = _ort_quantizations(path, net.input_shape, x_cal)
    retention += _ort_baselines(ort_models, net.input_shape, task, energy(["int8"] * L))
    ort_rtl = None
    if opts.rtl_samples:
        check, ort_rtl = _ort_on_the_rtl(ort_models, net.input_shape,
                                         task.x_test[: opts.rtl_samples], opts.rows)  # fmt: skip
        checks.append(check)
        log(f"{spec}: {check.line()}")
    retention.append(
        {
            "name": f"float fine-tuned {opts.qat_epochs} epochs (QAT's control)",
            "test": control.accuracy(task.x_test, task.y_test),
            "energy_pj": None,
        }
    )
    retention.append({"name": "bf16", "test": _int_accuracy(bf16, task.x_test, task.y_test,
                                                            opts.rows),
                      "energy_pj": energy(["bf16"] * L)})  # fmt: skip
    retention.append({"name": f"chosen mix {'/'.join(chosen['precisions'])}",
                      "test": figures["accuracy"], "energy_pj": chosen["energy_pj"],
                      "energy_range_pj": list(energy_range_per_inference(
                          chosen["precisions"], shapes, opts.rows,
                          opts.energy_batch)[1:])})  # fmt: skip
    for r in retention:
        r["retention"] = r["test"] / float_test if float_test else 0.0
    return {
        "model": spec, "name": net.name, "task": task.source, "source": source,
        "onnx": str(path), "onnx_identical": bool(onnx_same),
        "splits": [len(task.x_train), len(task.x_val), len(task.x_test)],
        "gemms": [[g.name, g.m, g.k, g.n] for g in workload.gemms], "macs": workload.macs,
        "float": {"val": float_val, "test": float_test},
        "recipes": {b: recipes[b].label() for b in (8, 4)},
        "calibration": calibration, "cal_sizes": sizes, "outliers": outliers,
        "qat_losses": {b: qat[b][2] for b in (8, 4)},
        "sensitivity": sensitivity, "base_val": base_val, "mixes": mixes, "chosen": chosen,
        "retention": retention, "checks": [c.__dict__ for c in checks],
        "check_figures": {k: v for k, v in figures.items()}, "rtl_energy": rtl_energy,
        "ort_rtl": ort_rtl,
        "floor": opts.floor, "energy_batch": opts.energy_batch, "rows": opts.rows,
    }  # fmt: skip


def run_playbook(opts: Options) -> list[dict]:
    """:func:`run_model` on every model of ``opts``."""
    return [run_model(spec, opts) for spec in opts.models]
