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

# the demo installs lancenb as a wheel, as users get it: building the wheel compiles every
# kernel once (setup.py), so neither the demo nor Spark's Python workers compile any. It
# replaces an editable install, so `make test` reinstalls its own afterwards (and the
# reverse: an editable install newer than the wheel forces it again), and is rebuilt when a
# source file changes.
DEMO_SOURCES := pyproject.toml setup.py _lancenb_build.py $(wildcard lancenb/*.py \
	lancenb/*/*.py lancenb/*/*/*.py kernels/*.py)
DEMO_REINSTALL := $(shell [ $(VENV)/.installed-dev -nt $(VENV)/.installed-wheel ] && echo FORCE)

FORCE:

$(VENV)/.installed-wheel: $(DEMO_SOURCES) $(DEMO_REINSTALL) | $(VENV)/bin/python
	$(PIP) install --quiet '.[spark]'
	rm -f $(VENV)/.installed-dev
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(VENV)/bin/python
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

lint: $(VENV)/.installed-dev
	$(PY) -m ruff check lancenb kernels tests property_tests benchmarks scripts

protos: $(VENV)/.installed-dev
	$(PY) scripts/gen_protos.py

bench: $(VENV)/.installed-dev
	$(PY) benchmarks/bench_file.py

clean:
	rm -rf $(VENV) build *.egg-info
