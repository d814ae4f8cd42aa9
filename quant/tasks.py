"""The playbook's tasks: real data bundled with scikit-learn (no download), split once with a
fixed seed into training, validation (every choice is made on it) and test (every reported
figure), and the networks trained on them.

- ``digits``: 1,797 handwritten digits, 8x8 pixels of 0..16 (Alpaydin and Kaynak, UCI), scaled
  to [0, 1]; ten classes. An MLP (64-64-10) and a CNN (two 3x3 convolutions, the second strided,
  then a dense layer) whose convolutions run on the array by im2col.
- ``cancer``: the Wisconsin diagnostic breast-cancer set, 569 tumours by 30 measurements,
  standardized with the training set's mean and deviation; two classes. Its features are heavy
  tailed (measurements of area reach 9 standard deviations), which is where range calibration
  and clipping matter. An MLP (30-32-16-2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .nets import Conv, Dense, Flatten, Net, Relu

__all__ = ["MODELS", "TASKS", "Task", "build_net", "load_task"]

TASKS = ("digits", "cancer")
#: The networks of each task (``build_net``).
MODELS = {"digits": ("mlp", "cnn"), "cancer": ("mlp",)}
SPLIT_SEED = 2026


@dataclass
class Task:
    name: str
    input_shape: tuple[int, ...]
    classes: int
    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    source: str


def _split(x, y, val: float, test: float):
    order = np.random.default_rng(SPLIT_SEED).permutation(len(x))
    n_test, n_val = round(test * len(x)), round(val * len(x))
    te, va, tr = order[:n_test], order[n_test : n_test + n_val], order[n_test + n_val :]
    return x[tr], y[tr], x[va], y[va], x[te], y[te]


def load_task(name: str) -> Task:
    """The task ``name`` (one of :data:`TASKS`), split 60/15/25 (train/validation/test)."""
    from sklearn.datasets import load_breast_cancer, load_digits  # 2 s to import: only here

    if name == "digits":
        data = load_digits()
        x = data.data / 16.0
        parts = _split(x, data.target, 0.15, 0.25)
        return Task(name, (1, 8, 8), 10, *parts,
                    source="scikit-learn load_digits: 1,797 8x8 handwritten digits")  # fmt: skip
    if name == "cancer":
        data = load_breast_cancer()
        xt, yt, xv, yv, xs, ys = _split(data.data, data.target, 0.15, 0.25)
        mean, std = xt.mean(axis=0), xt.std(axis=0)
        xt, xv, xs = ((v - mean) / std for v in (xt, xv, xs))
        return Task(name, (30,), 2, xt, yt, xv, yv, xs, ys,
                    source="scikit-learn load_breast_cancer: 569 tumours, 30 features")  # fmt: skip
    raise ValueError(f"task must be one of {', '.join(TASKS)}, not {name!r}")


def build_net(task: Task, model: str, rng) -> Net:
    """An untrained network ``model`` (one of ``MODELS[task.name]``), He-initialized, with
    biases (zero to start)."""
    if model not in MODELS.get(task.name, ()):
        raise ValueError(f"model for task {task.name} must be one of "
                         f"{', '.join(MODELS[task.name])}, not {model!r}")  # fmt: skip

    def dense(k, n):
        return Dense(rng.standard_normal((k, n)) * np.sqrt(2 / k), np.zeros(n))

    def conv(cout, cin, stride):
        w = rng.standard_normal((cout, cin, 3, 3)) * np.sqrt(2 / (cin * 9))
        return Conv(w, stride, 1, np.zeros(cout))

    if task.name == "digits" and model == "cnn":
        layers = [conv(8, 1, 1), Relu(), conv(16, 8, 2), Relu(), Flatten(), dense(256, 10)]
    elif task.name == "digits":
        layers = [Flatten(), dense(64, 64), Relu(), dense(64, 10)]
    else:
        layers = [dense(30, 32), Relu(), dense(32, 16), Relu(), dense(16, 2)]
    return Net(f"{task.name}-{model}", task.input_shape, layers)
