"""The configurations the Verilator tests build: shared by the simulation and lint tests."""

from systolic.contract.config import ArrayConfig, Dataflow

SHAPES = [(1, 1), (2, 3), (3, 2), (4, 4), (8, 8), (1, 32), (32, 1)]

# Narrow, wide and mixed operands, and an accumulator narrow enough to overflow on every tile.
PRECISIONS = [
    dict(a_width=4, a_signed=False, b_width=4, b_signed=False, acc_width=16),
    dict(a_width=16, b_width=16, acc_width=48),
    dict(a_width=8, a_signed=False, b_width=3, b_signed=True, acc_width=24),
    dict(a_width=8, b_width=8, acc_width=10),
    dict(a_width=16, a_signed=False, b_width=16, b_signed=False, acc_width=64),
    dict(a_width=2, b_width=2, acc_width=5),
]

SIM_CONFIGS = [ArrayConfig(d, r, c) for d in Dataflow for r, c in SHAPES] + [
    ArrayConfig(d, 3, 2, **p) for d in Dataflow for p in PRECISIONS
]

# Small buffers, so that moderate GEMMs already exceed them and the host must tile.
DEPTHS = dict(a_depth=48, b_depth=48, c_depth=48)
