# Two entry points that work on a fresh machine with Python, Java and a C compiler:
#   make demo   -- create .venv, install lancenb[spark], run the demo job (embedded Spark)
#   make test   -- create .venv, install lancenb with dev extras, run the whole suite, then
#                  build the sdist and wheel and use the wheel in a fresh virtualenv
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip

.PHONY: demo test test-kernels-nojit lint protos bench clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(VENV)/bin/python
	$(PIP) install --quiet -e '.[spark]'
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(VENV)/bin/python
	$(PIP) install --quiet -e '.[dev,spark]'
	touch $@ $(VENV)/.installed

# warmup compiles lancenb's kernels into the Numba cache first (in parallel, once per
# machine), so Spark's Python workers load them instead of each compiling them
demo: $(VENV)/.installed
	$(PY) -m lancenb.cli warmup
	$(PY) -m lancenb.cli demo

test: $(VENV)/.installed-dev
	$(PY) -m ruff check lancenb kernels tests property_tests benchmarks scripts
	$(PY) -m pytest -q
	NUMBA_DISABLE_JIT=1 $(PY) -m pytest -q tests/kernels
	$(PY) scripts/smoke_wheel.py

lint: $(VENV)/.installed-dev
	$(PY) -m ruff check lancenb kernels tests property_tests benchmarks scripts

protos: $(VENV)/.installed-dev
	$(PY) scripts/gen_protos.py

bench: $(VENV)/.installed-dev
	$(PY) benchmarks/bench_file.py

clean:
	rm -rf $(VENV) build *.egg-info
