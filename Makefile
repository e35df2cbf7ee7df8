# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check

QUERY  ?= how do vaccines train the immune system

.PHONY: demo test lint format bench clean install install-dev

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# Stamp files re-run the install when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(VENV)/bin/python
	$(PIP) install -q -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(VENV)/bin/python
	$(PIP) install -q -e ".[dev]"
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

demo: $(VENV)/.installed
	$(VENV)/bin/rerankit rank --query "$(QUERY)" --input examples/sample.jsonl --format table

test: $(VENV)/.installed-dev
	$(PY) -m pytest -q

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks

format: $(VENV)/.installed-dev
	$(VENV)/bin/ruff format src tests benchmarks
	$(VENV)/bin/ruff check --fix src tests benchmarks

bench: $(VENV)/.installed-dev
	$(PY) benchmarks/lexical.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis build dist src/*.egg-info
