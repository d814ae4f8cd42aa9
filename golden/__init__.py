"""Bit-exact references: the GEMM every output is checked against (reference.py), requantization
(requant.py), bf16 arithmetic (bf16.py), calibration and operand data. Pure numpy on the
contract; no Amaranth."""
