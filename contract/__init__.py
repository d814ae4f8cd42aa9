"""The contract: facts the generator, the models and the simulation runtime share, in plain Python.

Configuration, interface widths and counters, buffer word layouts, the host's chunk plan, the
timing formulas and the activity classes live here once. Nothing here imports Amaranth or any
other layer of the project: ``rtl`` builds hardware from these facts, ``golden`` and ``models``
compute with them, and the tests check that the hardware does what they say.
"""
