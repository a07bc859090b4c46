# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo

.PHONY: demo test lint typecheck unit citus bench eval clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

# The demo needs only the package itself, not the test tools and browser driver.
$(DEMO_STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(PY) -m engram.demo --db engram-demo.db

lint: $(STAMP)
	$(PY) -m ruff check engram tests bench examples

typecheck: $(STAMP)
	$(PY) -m mypy

# The Citus tests (marker citus) build Citus once per machine from ../shared/vendor: see scripts/citus.sh.
unit: $(STAMP)
	bash scripts/install-browser.sh
	bash scripts/citus.sh deps
	bash scripts/citus.sh build
	$(PY) -m pytest

citus: $(STAMP)
	bash scripts/citus.sh deps
	bash scripts/citus.sh build
	$(PY) -m pytest -m citus

test: lint typecheck unit

bench: $(STAMP)
	$(PY) bench/ingest.py
	$(PY) bench/retrieve_latency.py

eval: $(STAMP)
	$(PY) bench/quality.py

clean:
	rm -rf $(VENV) engram-demo.db engram-demo-domain.db .mypy_cache .ruff_cache .pytest_cache
