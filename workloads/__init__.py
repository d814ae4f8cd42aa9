"""Workloads and what every study reads them with: the built-in layer library, ONNX models and
SCALE-Sim topologies as GEMMs, the YAML spec reader, a point's figures from the analytical model,
Pareto fronts and Markdown escaping. Sweeps, serving and the quantization playbook stand on it."""
