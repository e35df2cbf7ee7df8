# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check

QUERY  ?= how do vaccines train the immune system

SERVE_VENV ?= .venv-serve
CLIENTS_VENV ?= .venv-clients
PEERS_VENV ?= .venv-peers
.PHONY: demo test test-envs test-core test-slow lint format bench bench-cross-encoder quality clean install install-dev browser redis nginx docs release-check install-all

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# PyTorch: a plain `torch` requirement can pull a multi-GB CUDA build (PyPI's Linux wheels
# are CUDA builds). Without an NVIDIA GPU the pinned CPU build is installed first: from
# PyTorch's CPU index when it answers (TORCH_INDEX, probed for 3 s; set it to another index,
# or to nothing to use only the package index pip is configured with, as on a mirror that
# holds the CPU build).
TORCH_VERSION   ?= 2.13.0
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu
TORCH_INDEX     ?= $(shell $(PYTHON) -c "import urllib.request as u; u.urlopen('$(TORCH_CPU_INDEX)/torch/', timeout=3)" >/dev/null 2>&1 && echo $(TORCH_CPU_INDEX))
HAS_GPU := $(shell command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && echo yes)

$(VENV)/.torch: | $(VENV)/bin/python
ifeq ($(HAS_GPU),yes)
	@echo "NVIDIA GPU found: torch comes from the package index with its CUDA build"
else
	$(PIP) install -q $(if $(TORCH_INDEX),"torch==$(TORCH_VERSION)+cpu" --extra-index-url $(TORCH_INDEX),"torch==$(TORCH_VERSION)")
endif
	touch $@

# Stamp files re-run the install when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml $(VENV)/.torch | $(VENV)/bin/python
	$(PIP) install -q -e ".[torch,onnx]"
	touch $@

$(VENV)/.installed-dev: pyproject.toml $(VENV)/.torch | $(VENV)/bin/python
	$(PIP) install -q -e ".[torch,dev]"
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

# Every feature in .venv (all extras: the service, evaluation, ONNX, LLM clients, Ray, ...):
# `make demo` installs only what the default pipeline needs, so it stays quick.
install-all: $(VENV)/.torch | $(VENV)/bin/python
	$(PIP) install -q -e ".[torch,all]"

# The default pipeline (hybrid: the bundled MiniLM, BM25 and term proximity, read from the
# texts) on the shipped sample, as a table. It runs the model on ONNX Runtime: the export is
# made here, once, into rerankit's cache (later runs say it is there already), so the rank
# call starts as every later one will.
demo: $(VENV)/.installed
	$(VENV)/bin/rerankit export all-MiniLM-L6-v2
	$(VENV)/bin/rerankit rank --query "$(QUERY)" --input examples/sample.jsonl --format table

# The three virtual environments the tests use, built side by side (pip spends most of its
# time unpacking; on two cores this saves about a minute of a fresh `make test`).
test-envs:
	$(MAKE) -j3 $(VENV)/.installed-dev $(SERVE_VENV)/.installed $(CLIENTS_VENV)/.installed

# The suite runs on TEST_WORKERS processes (pytest-xdist): its tests spend much of their
# time waiting on servers and subprocesses, so two workers on two cores take about two thirds of
# one worker's time. TEST_WORKERS=0 runs it in one process. TEST_THREADS: torch's threads per
# process (OMP_NUM_THREADS): the workers and the processes the tests start already keep the
# cores busy, and more threads than cores only take turns (one thread each: a model-heavy part
# of the suite took 7 to 12 % less CPU and time on two cores).
TEST_WORKERS ?= 2
TEST_THREADS ?= 1
test: test-envs browser redis nginx
	OMP_NUM_THREADS=$(TEST_THREADS) \
	RERANKIT_TORCH_FREE_PYTHON=$(abspath $(SERVE_VENV))/bin/python \
	RERANKIT_CLIENTS_PYTHON=$(abspath $(CLIENTS_VENV))/bin/python $(PY) -m pytest -q -n $(TEST_WORKERS)

# A clean install of the torch-free service (rerankit[onnx,server] built as a wheel, no
# torch), for tests/server/test_serve_cli.py: it serves a model exported in the main venv
# from an empty cache directory and answers as the torch service does.
$(SERVE_VENV)/.installed: pyproject.toml $(shell find src -type f -not -path '*/__pycache__/*')
	rm -rf $(SERVE_VENV)
	$(PYTHON) -m venv $(SERVE_VENV)
	$(SERVE_VENV)/bin/python -m pip --disable-pip-version-check install -q ".[onnx,server]"
	touch $@

# Third-party rerank clients in a venv of their own (langchain-cohere and LlamaIndex pin
# cohere below 6; the dev venv has the newest), for tests/server/test_clients.py.
CLIENT_PACKAGES := "cohere>=5.15" langchain-cohere litellm llama-index-postprocessor-cohere-rerank
$(CLIENTS_VENV)/.installed: Makefile
	rm -rf $(CLIENTS_VENV)
	$(PYTHON) -m venv $(CLIENTS_VENV)
	$(CLIENTS_VENV)/bin/python -m pip --disable-pip-version-check install -q $(CLIENT_PACKAGES)
	touch $@

# Other reranking libraries and servers, each in a venv of its own (their pins differ from
# ours: Infinity 0.0.78 needs transformers 4 and sentence-transformers 3), for
# benchmarks/speed/cross_encoder.py and benchmarks/speed/ce_service.py. Benchmarks only, never tests.
PEER_PACKAGES := fastembed==0.9.1 FlashRank==0.2.10
$(PEERS_VENV)/.installed: Makefile
	rm -rf $(PEERS_VENV)
	$(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip --disable-pip-version-check install -q $(PEER_PACKAGES)
	touch $@
INFINITY_VENV ?= .venv-infinity
$(INFINITY_VENV)/.installed: Makefile
	rm -rf $(INFINITY_VENV)
	$(PYTHON) -m venv $(INFINITY_VENV)
	$(INFINITY_VENV)/bin/python -m pip --disable-pip-version-check install -q \
		"torch==$(TORCH_VERSION)" $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX))
	$(INFINITY_VENV)/bin/python -m pip --disable-pip-version-check install -q \
		"infinity-emb[server,torch]==0.0.78"
	touch $@

# The playground's browser tests drive Debian's chromium through chromedriver (Playwright's
# own browser download needs the internet). Installed here when missing and possible (root
# with apt-get); otherwise those tests skip and say why.
BROWSER_PACKAGES := chromium chromium-driver
browser:
	@if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then \
		echo "browser: $$(chromedriver --version 2>/dev/null | head -1)"; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		echo "browser: installing Debian's $(BROWSER_PACKAGES)"; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
			$(BROWSER_PACKAGES) >/dev/null 2>&1 \
		|| { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -q --no-install-recommends $(BROWSER_PACKAGES) >/dev/null; } \
		|| echo "browser: could not install chromium; the browser tests will skip"; \
	else \
		echo "browser: no chromium, and no apt-get as root to install it; browser tests skip"; \
	fi

# The shared-cache tests start a real Redis server of their own (tests/cache/conftest.py):
# Debian's redis-server (Valkey is not packaged in Debian 12), installed here when missing and
# possible (root with apt-get); otherwise those tests skip and say why. The tests start and
# stop their own server on a free loopback port; a service the package may have started on
# port 6379 is never used or touched.
REDIS_PACKAGES := redis-server
redis:
	@if command -v redis-server >/dev/null 2>&1 || command -v valkey-server >/dev/null 2>&1; then \
		echo "redis: $$(redis-server --version 2>/dev/null || valkey-server --version)"; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		echo "redis: installing Debian's $(REDIS_PACKAGES)"; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
			$(REDIS_PACKAGES) >/dev/null 2>&1 \
		|| { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -q --no-install-recommends $(REDIS_PACKAGES) >/dev/null; } \
		|| echo "redis: could not install redis-server; the Redis cache tests will skip"; \
	else \
		echo "redis: no redis-server, and no apt-get as root to install it; Redis tests skip"; \
	fi

# The scale-out test puts Debian's nginx in front of two replicas (tests/server/test_replicas.py,
# the configuration docs/scale-out.md shows): installed here when missing and possible; the
# test runs its own nginx in the foreground on a free loopback port, or skips and says why.
nginx:
	@if [ -x /usr/sbin/nginx ]; then \
		echo "nginx: $$(/usr/sbin/nginx -v 2>&1)"; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		echo "nginx: installing Debian's nginx"; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends nginx \
			>/dev/null 2>&1 \
		|| echo "nginx: could not install nginx; the load-balancer test will skip"; \
	else \
		echo "nginx: no nginx, and no apt-get as root to install it; its test skips"; \
	fi

# The whole suite in a venv of its own without torch or any other extra: what needs an
# extra skips and says which (nothing may fail or error for want of one).
CORE_VENV ?= .venv-core
$(CORE_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(CORE_VENV)
	$(CORE_VENV)/bin/python -m pip --disable-pip-version-check install -q -e ".[test]"
	touch $@

test-slow: test-envs browser redis nginx
	OMP_NUM_THREADS=$(TEST_THREADS) \
	RERANKIT_TORCH_FREE_PYTHON=$(abspath $(SERVE_VENV))/bin/python \
	RERANKIT_CLIENTS_PYTHON=$(abspath $(CLIENTS_VENV))/bin/python $(PY) -m pytest -q -m slow

test-core: $(CORE_VENV)/.installed
	$(CORE_VENV)/bin/python -m pytest -q tests

# The documentation site (MkDocs Material; the API reference from the docstrings, the CLI
# reference from the parsers) into site/; --strict fails on any broken link or anchor.
docs: $(VENV)/.installed-dev
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# The distributions as the package index would get them: sdist and wheel built from a clean
# tree, their metadata checked by twine (long description renders, classifiers valid).
release-check: $(VENV)/.installed-dev
	rm -rf dist
	$(PY) -m build --outdir dist . >/dev/null
	$(VENV)/bin/twine check --strict dist/*

# Lint and format need ruff alone, not torch or the dev install: $(VENV)'s ruff when it has
# one, else a ruff on the PATH, else just ruff installed into $(LINT_VENV). `make lint
# RUFF=/path/to/ruff` names another. Both cover the same paths.
LINT_VENV  ?= .venv-lint
LINT_PATHS := src tests benchmarks docs/hooks.py
RUFF       ?= $(or $(wildcard $(VENV)/bin/ruff),$(shell command -v ruff 2>/dev/null),$(LINT_VENV)/bin/ruff)

$(LINT_VENV)/bin/ruff:
	rm -rf $(LINT_VENV)
	$(PYTHON) -m venv $(LINT_VENV)
	$(LINT_VENV)/bin/python -m pip --disable-pip-version-check install -q "ruff>=0.5"

lint: | $(filter $(LINT_VENV)/bin/ruff,$(RUFF))
	$(RUFF) check $(LINT_PATHS)
	$(RUFF) format --check $(LINT_PATHS)

format: | $(filter $(LINT_VENV)/bin/ruff,$(RUFF))
	$(RUFF) format $(LINT_PATHS)
	$(RUFF) check --fix $(LINT_PATHS)

bench: $(VENV)/.installed-dev $(PEERS_VENV)/.installed
	$(PY) -m benchmarks.speed.lexical
	$(PY) -m benchmarks.speed.embedding
	$(PY) -m benchmarks.speed.llm
	$(PY) -m benchmarks.speed.server
	$(PY) -m benchmarks.speed.start --peer-python $(PEERS_VENV)/bin/python

# Cross-encoders and the Qwen3 recipe beside sentence-transformers, fastembed, FlashRank and
# Infinity on models of the real shapes (about 40 min on 2 cores).
bench-cross-encoder: $(VENV)/.installed-dev $(PEERS_VENV)/.installed $(INFINITY_VENV)/.installed
	$(PY) -m benchmarks.speed.cross_encoder --peer-python $(PEERS_VENV)/bin/python --causal-lm
	$(PY) -m benchmarks.speed.ce_service --infinity $(INFINITY_VENV)/bin/infinity_emb

# The quality tables of docs/measured.md: the texts-only rerankers on the development pool (SciFact train,
# NFCorpus dev and the four classic collections: a row per collection and the mean), the test
# splits (~8 min), then learning to rank, also over an embedding fine-tuned on SciFact's
# training split into .cache/ft-scifact (~20 min the first time).
SHARED ?= ../shared
POOL   := --data $(SHARED)/data/beir/scifact@train --data $(SHARED)/data/beir/nfcorpus@dev \
	--data $(SHARED)/data/classic
quality: $(VENV)/.installed-dev
	RERANKIT_EMBEDDING_CACHE=.cache/embeddings.sqlite $(VENV)/bin/rerankit eval $(POOL) \
		--rerankers bm25,embedding,hybrid,hybrid-relative --texts-only --no-progress \
		--baseline hybrid-relative
	$(PY) -m benchmarks.quality.rerankers
	$(PY) -m benchmarks.quality.learn --finetuned .cache/ft-scifact

clean:
	rm -rf $(VENV) $(CORE_VENV) $(SERVE_VENV) $(CLIENTS_VENV) $(PEERS_VENV) $(INFINITY_VENV) $(LINT_VENV) site .pytest_cache .ruff_cache .hypothesis build dist src/*.egg-info \
		tests/artifacts
