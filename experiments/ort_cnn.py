"""A float CNN with biases, two residual adds, a depthwise convolution, max and global average
pooling, written as ONNX beside sample inputs: the network issue 35's closing note quantizes
with onnxruntime and runs through the RTL (``systolic ort-check OUT/cnn.onnx --data
OUT/data.npy --rtl``). Weights are He-scaled normal draws (seed 35), biases small; a 3x16x16
input: a stem 3x3 convolution to 16 channels, two 3x3 ones and an add, a depthwise 3x3 of
stride 2, a 1x1 to 32 channels, 2x2 max pooling, a 3x3 and an add, global average pooling and a
dense layer to 10, ReLUs between.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

#: The input: channels, height, width.
INPUT = (3, 16, 16)


def residual_cnn(rng) -> onnx.ModelProto:
    """The network (see module), its weights drawn from ``rng``."""
    weights: dict[str, np.ndarray] = {}
    nodes = []

    def conv(name, x, cin, cout, k, stride=1, group=1, relu=True) -> str:
        fan_in = cin // group * k * k
        weights[f"{name}_w"] = rng.normal(0, (2.0 / fan_in) ** 0.5, (cout, cin // group, k, k))
        weights[f"{name}_b"] = rng.normal(0, 0.1, cout)
        nodes.append(helper.make_node("Conv", [x, f"{name}_w", f"{name}_b"], [f"{name}_c"],
                                      pads=[k // 2] * 4, strides=[stride] * 2,
                                      group=group))  # fmt: skip
        if not relu:
            return f"{name}_c"
        nodes.append(helper.make_node("Relu", [f"{name}_c"], [name]))
        return name

    stem = conv("stem", "x", 3, 16, 3)
    b1 = conv("b1b", conv("b1a", stem, 16, 16, 3), 16, 16, 3, relu=False)
    nodes += [helper.make_node("Add", [b1, stem], ["s1"]), helper.make_node("Relu", ["s1"], ["r1"])]
    pw = conv("pw", conv("dw", "r1", 16, 16, 3, stride=2, group=16), 16, 32, 1)
    nodes.append(helper.make_node("MaxPool", [pw], ["mp"], kernel_shape=[2, 2], strides=[2, 2]))
    b2 = conv("b2a", "mp", 32, 32, 3)
    nodes += [helper.make_node("Add", [b2, "mp"], ["s2"]), helper.make_node("Relu", ["s2"], ["r2"]),
              helper.make_node("GlobalAveragePool", ["r2"], ["gap"]),
              helper.make_node("Flatten", ["gap"], ["flat"])]  # fmt: skip
    weights["fc_w"] = rng.normal(0, 0.25, (32, 10))
    weights["fc_b"] = rng.normal(0, 0.1, 10)
    nodes.append(helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["y"]))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", *INPUT])
    graph = helper.make_graph(
        nodes, "residual_cnn", [x],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 10])],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in weights.items()])  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m systolic.experiments.ort_cnn",
                                     description=__doc__.splitlines()[0])  # fmt: skip
    parser.add_argument("out", type=Path, help="folder for cnn.onnx and data.npy")
    parser.add_argument("--samples", type=int, default=16, help="sample inputs (16)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(35)
    onnx.save(residual_cnn(rng), str(args.out / "cnn.onnx"))
    np.save(args.out / "data.npy", rng.normal(0, 1, (args.samples, *INPUT)).astype(np.float32))
    print(f"{args.out / 'cnn.onnx'}, {args.out / 'data.npy'} ({args.samples} samples)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
