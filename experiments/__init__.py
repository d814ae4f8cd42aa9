"""Experiments over the whole stack: model-versus-RTL comparison, the accuracy experiment,
benchmarks and the SCALE-Sim bridge. Nothing below imports them."""
