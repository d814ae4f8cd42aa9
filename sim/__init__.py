"""The simulation runtime and Verilog tooling: Verilator builds and their cache, the activity
probes, lint, the bare C++ harness, and ``run_gemm``, the one entry from Python to the simulated
accelerator."""
