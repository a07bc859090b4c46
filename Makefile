# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo

.PHONY: demo test lint typecheck unit citus bench bench-peers eval clean

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

# The peers Engram is measured against live in a virtual environment of their own: they are not
# Engram's dependencies (bench/peers.py says what each runs). PEERS_DIR keeps the built stores.
PEERS := .venv-peers
PEERS_DIR ?= /tmp/engram-peers
$(PEERS)/.installed: pyproject.toml
	test -x $(PEERS)/bin/python || $(PYTHON) -m venv $(PEERS)
	$(PEERS)/bin/python -m pip install --quiet --upgrade pip
	$(PEERS)/bin/python -m pip install --quiet -e . lancedb==0.40.0 chromadb==1.5.9 mem0ai==2.2.1
	touch $(PEERS)/.installed

bench-peers: $(PEERS)/.installed
	$(PEERS)/bin/python bench/peers.py --db-dir $(PEERS_DIR)

eval: $(STAMP)
	$(PY) bench/quality.py

clean:
	rm -rf $(VENV) $(PEERS) engram-demo.db engram-demo-domain.db .mypy_cache .ruff_cache .pytest_cache
