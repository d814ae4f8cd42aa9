"""Analytical models: cycles and every counter (cycles.py), switching activity (toggles.py) and
energy (energy.py), from the contract alone. They import no Amaranth and no simulator."""
