"""Shared fixtures: compose rr configs with Hydra and shrink them to the bundled mini data.

Every test gets its own output and cache folders under ``tmp_path``; the converted packaged
model is shared across tests (and with the demo) through ``RR_MODEL_CACHE`` / ``~/.cache/rr``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from rr.job_env import THREAD_VARS

# Under pytest-xdist (make test) each worker's processes, and the jobs they start, get an equal
# share of the cores: torch's default of one thread per core in every worker oversubscribes them,
# which made real-model and encoding tests 3-30x slower on 2 cores. Set before torch is imported; a variable the
# user set wins; the SLURM tests' jobs drop them and follow their allocation.
if workers := int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0")):
    for _var in THREAD_VARS:
        os.environ.setdefault(_var, str(max(1, (os.cpu_count() or 1) // workers)))
# OpenMP threads that wait for work spin by default: with the cores shared (a serial run's jobs and
# engines beside the test process, a loaded VM) two spinning torch threads made 2 x 32 tokens of
# SmolLM take 114-145 s instead of 5-7 s. Passive waiting changes no result, only the waste.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
from omegaconf import DictConfig, open_dict

from rr.config import PACKAGE_CONFIG_DIR, compose, register_configs

REPO = Path(__file__).resolve().parent.parent
CONF_DIR = PACKAGE_CONFIG_DIR

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# What models are is recorded per user too (rr.model_identity: file digests, API models' reported ids):
# the tests' records go to a folder of their own, so none reads the user's or leaves its own there.
os.environ["RR_IDENTITY_CACHE"] = os.path.join(
    tempfile.mkdtemp(prefix="rr-test-identity-"), "model_identity.json"
)
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

register_configs()

# Property-based (fuzz) tests: "ci" (the default) keeps every fuzz test of the default run
# together under a minute on 2 cores; "slow" (make test-slow) tries 50x as many inputs.
# HYPOTHESIS_PROFILE picks one. No deadline: timing on a shared 2-core machine is noise.
settings.register_profile("ci", max_examples=100, deadline=None, print_blob=True)
settings.register_profile(
    "slow", max_examples=5000, deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def compose_config(overrides: list[str] | None = None, tmp_path: Path | None = None) -> DictConfig:
    """Compose ``conf/config.yaml`` with ``overrides``; outputs and caches go under ``tmp_path``."""
    cfg = compose(overrides or [])
    if tmp_path is not None:
        with open_dict(cfg):
            cfg.paths.output_root = str(tmp_path / "outputs")
            cfg.paths.cache_dir = str(tmp_path / "cache")
            cfg.progress = False
    return cfg


#: A tiny but complete demo: 4 questions, 2 retrievers, k in {1, 2}, 3 orders, short outputs.
TINY = [
    "dataset.n=4",
    "corpus.max_passages=600",
    "grid.k=[1,2]",
    "generator.max_new_tokens=12",
    "generator.batch_size=16",
]


@pytest.fixture
def tiny_cfg(tmp_path: Path) -> DictConfig:
    return compose_config(TINY, tmp_path)


#: Seconds each slow module took in one `make test` run (2026-11-26, 2 workers on the 2-core VM,
#: 13 min 08 s in all), for the order below only: a stale or missing entry costs balance, never a result.
MODULE_SECONDS = {
    "test_vllm_cpu": 407,
    "test_slurm": 278,
    "test_benchmarks": 130,  # every benchmarks/*.py at its quick size: 128 s serially at load ~1.3 (issue 32)
    "test_docs": 150,
    "test_textattack": 59,
    "test_data_parallel": 52,
    "test_config": 49,
    "test_end_to_end": 45,
    "test_dense_store": 39,
    "test_paper_minis": 36,
    "test_site": 35,  # measured alone (one core, loaded VM): the simulated sweep, its report and chromium
    "test_wiki_dump": 33,
    "test_cao2025_demo": 22,
    "test_resume": 22,
    "test_openai_server": 20,
    "test_cli_errors": 19,
    "test_report": 18,
    "test_plan": 18,
    "test_launchers": 18,
    "test_simulated": 17,
    "test_sure_end_to_end": 16,
    "test_plugins": 15,
    # these three measured alone (-p no:xdist, loaded VM), 2026-11-27
    "test_experiment_scope": 25,
    "test_interrupts": 15,
    "test_failed_commands": 12,
    "test_faults": 14,
    "test_over_window": 13,
    "test_rgb_end_to_end": 13,
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The slowest modules first (``make test`` runs ``-n auto --dist loadscope --no-loadscope-reorder``:
    one module is one unit of work, so its module-scoped fixtures (a SLURM cluster, a vLLM engine,
    a finished job) are built once, on one worker, and no worker is left with a long module while
    the other idles at the end). Each module's tests keep their written order (the sort is stable).

    Not ``--dist loadgroup`` with an ``xdist_group`` per module: pytest-xdist 3.8 groups by
    rewriting ``item._nodeid``, which pytest 9 no longer reads, so every test became its own unit and
    a module's tests ran on both workers (the vLLM engine and module fixtures built twice)."""
    items.sort(key=lambda item: -MODULE_SECONDS.get(item.module.__name__.rsplit(".", 1)[-1], 0))


#: Fixtures that start real infrastructure -> the marker of every test that uses them, wherever it
#: is (``make check`` leaves those markers out): the other tests of their modules stay in the fast
#: tier (the site's data files without a browser, TextAttack's pinned outputs without its env).
FIXTURE_MARKERS = {"chromium": pytest.mark.browser, "textattack_env": pytest.mark.textattack}


def pytest_itemcollected(item: pytest.Item) -> None:
    for fixture in set(getattr(item, "fixturenames", ())) & FIXTURE_MARKERS.keys():
        item.add_marker(FIXTURE_MARKERS[fixture])
