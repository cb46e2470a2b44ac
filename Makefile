# Two entry points that work on a fresh machine with Python, Java and a C compiler:
#   make demo   -- create .venv, install lancenb[spark], run the demo job (embedded Spark)
#   make test   -- create .venv, install lancenb with dev extras, run the whole suite, then
#                  build the sdist and wheel and use the wheel in a fresh virtualenv
#   make test-oldest -- create .venv-oldest with only the runtime dependencies, each at the
#                  lower bound pyproject.toml declares (no pandas), and run the suite there
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip

.PHONY: demo test test-oldest test-kernels-nojit lint protos bench clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# the demo installs lancenb as a wheel, as users get it: building the wheel compiles every
# kernel once (setup.py), so neither the demo nor Spark's Python workers compile any. It
# replaces an editable install, so `make test` reinstalls its own afterwards (and the
# reverse: an editable install newer than the wheel forces it again), and is rebuilt when a
# source file changes.
DEMO_SOURCES := pyproject.toml setup.py _lancenb_build.py $(wildcard lancenb/*.py \
	lancenb/*/*.py lancenb/*/*/*.py kernels/*.py kernels/*/*.py)
DEMO_REINSTALL := $(shell [ $(VENV)/.installed-dev -nt $(VENV)/.installed-wheel ] && echo FORCE)

FORCE:

$(VENV)/.installed-wheel: $(DEMO_SOURCES) $(DEMO_REINSTALL) | $(VENV)/bin/python
	$(PIP) install --quiet '.[spark]'
	rm -f $(VENV)/.installed-dev
	touch $@

# torch (the dev extra's pin) from PyTorch's CPU-only index first: PyPI's Linux wheel
# would also download the CUDA libraries (gigabytes) that no test uses
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu

$(VENV)/.installed-dev: pyproject.toml | $(VENV)/bin/python
	$(PIP) install --quiet "$$(grep -o '"torch==[^"]*"' pyproject.toml | tr -d '"')" \
		--index-url $(TORCH_CPU_INDEX)
	$(PIP) install --quiet -e '.[dev,spark]'
	touch $@ $(VENV)/.installed

# run outside the source tree: Python (the driver and Spark's workers) puts the working
# directory first on sys.path, where ./lancenb would shadow the installed wheel
demo: $(VENV)/.installed-wheel
	cd "$${TMPDIR:-/tmp}" && "$(abspath $(VENV))/bin/lancenb" demo

test: $(VENV)/.installed-dev
	$(PY) -m ruff check lancenb kernels tests property_tests benchmarks scripts
	$(PY) -m pytest -q
	NUMBA_DISABLE_JIT=1 $(PY) -m pytest -q tests/kernels
	$(PY) scripts/smoke_wheel.py

# The oldest environment lancenb declares: scripts/oldest_env.py pins every runtime dependency
# at its lower bound (pip constraints; wheels only, as users get them) and adds the test
# tools the dev extra pins (pytest, hypothesis and the pylance, DuckDB and Polars oracles).
# pandas, pyspark, moto, s3fs and dask are not installed: their tests skip (pandas inputs,
# Spark, S3, Dask), and every other test runs without pandas. Its own Numba cache, so the
# two Numba versions do not overwrite each other's cache index.
OLDEST := .venv-oldest
OLDEST_PY := $(OLDEST)/bin/python

$(OLDEST)/.installed: pyproject.toml scripts/oldest_env.py
	rm -rf $(OLDEST)
	$(PYTHON) -m venv $(OLDEST)
	$(OLDEST_PY) -m pip install --quiet --upgrade pip
	$(OLDEST_PY) scripts/oldest_env.py constraints > $(OLDEST)/constraints.txt
	$(OLDEST_PY) scripts/oldest_env.py tools > $(OLDEST)/tools.txt
	$(OLDEST_PY) -m pip install --quiet --only-binary=:all: -c $(OLDEST)/constraints.txt \
		-r $(OLDEST)/tools.txt -e .
	$(OLDEST_PY) scripts/oldest_env.py check
	touch $@

# OLDEST_TESTS: what runs there (default: the whole suite; CI runs tests/, the property
# tests' long hypothesis runs being the same code paths the newest run already covers)
OLDEST_TESTS ?=
test-oldest: $(OLDEST)/.installed
	$(OLDEST_PY) scripts/oldest_env.py check
	NUMBA_CACHE_DIR="$${LANCENB_OLDEST_NUMBA_CACHE:-$(abspath $(OLDEST))/numba-cache}" \
		$(OLDEST_PY) -m pytest -q $(OLDEST_TESTS)

lint: $(VENV)/.installed-dev
	$(PY) -m ruff check lancenb kernels tests property_tests benchmarks scripts

protos: $(VENV)/.installed-dev
	$(PY) scripts/gen_protos.py

bench: $(VENV)/.installed-dev
	$(PY) benchmarks/bench_file.py

clean:
	rm -rf $(VENV) $(OLDEST) build *.egg-info
