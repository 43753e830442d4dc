"""Job ids and cache keys pinned across refactors (issue 16: "behaviour, job ids and cache keys stay
identical"). The expected digests were recorded on main *before* the refactor that moved the configs
into the package, made schemas follow inheritance and split ``run_job`` into steps; a change here means
every user's finished jobs would re-run and every cache entry would miss, so it must be deliberate.

Each case composes a config, then hashes what the caches key on: the job id (semantic config), the
generator's identity and decoding parameters (generation cache), each retriever's fingerprint (TREC run
cache), the dataset's fingerprint, and the perturbations' and strategies' names (score-table columns).
"""

from __future__ import annotations

from typing import Any

import pytest

from rr.config import instantiate, job_id
from rr.errors import UserError
from rr.hashing import content_hash

from .conftest import compose_config

CASES: dict[str, list[str]] = {
    "default": [],
    "cao2025": ["experiment=cao2025"],
    "sure2025_mini": ["experiment=sure2025_mini"],
    "sure2025": ["experiment=sure2025"],
    "rgb2024": ["experiment=rgb2024"],
    "rare2025": ["experiment=rare2025"],
    "query_level2025_mini": ["experiment=query_level2025_mini"],
    "mixed": [
        "generator=vllm",
        "retriever=[bm25,dense,oracle]",
        "strategy=[vanilla,ownknow,s2a]",
        "judge=two_stage",
        "perturbation/query=typo_25",
        "perturbation/doc=counterfactual",
        "dataset.n=3",
        "seed=7",
    ],
}


def signature(overrides: list[str]) -> dict[str, Any]:
    cfg = compose_config(overrides)
    generator = instantiate(cfg.generator)
    try:
        identity: Any = generator.identity()
    except UserError:  # a hub model (the paper configs): its revision needs the network
        identity = "hub model: identity not resolvable offline"
    return {
        "job_id": job_id(cfg),
        "generator": content_hash(
            {"identity": identity, "params": generator.default_params().key_fields()}, 12
        ),
        "retrievers": content_hash(
            {key: instantiate(node).fingerprint() for key, node in (cfg.retriever or {}).items()}, 12
        ),
        "dataset": content_hash(instantiate(cfg.dataset).fingerprint(), 12),
        "names": content_hash(
            {
                "query": instantiate(cfg.perturbation.query).name,
                "doc": instantiate(cfg.perturbation.doc).name,
                "strategies": [instantiate(node).name for node in cfg.strategy.values()],
                "judge": type(instantiate(cfg.judge)).__name__,
            },
            12,
        ),
    }


EXPECTED: dict[str, dict[str, str]] = {
    # issue 49: experiment=cao2025 is the paper's setting (the June-2024 dump, Solr 9's BM25 k1 1.2 / b 0.75),
    # so its job id and retrievers changed on purpose (a0e907a7f9db / 9ed3f9e31581 before).
    "cao2025": {
        "job_id": "38474068888f",
        "generator": "bb175160831c",
        "retrievers": "d19a1d140b17",
        "dataset": "37fbca83b0be",
        "names": "27f9acd2ab98",
    },
    "default": {
        "job_id": "2cf0aa69361f",
        "generator": "c69c915b7ed4",
        "retrievers": "240ed5b5d88d",
        "dataset": "5d649f06ea71",
        "names": "b1b5025b05e8",
    },
    "mixed": {
        "job_id": "5bce573e31bd",
        "generator": "3bbfca53a06e",
        "retrievers": "61a53389d70e",
        "dataset": "8a61c73f727b",
        "names": "b6617b14c089",
    },
    "query_level2025_mini": {
        "job_id": "214b2c0b7cae",  # was 805c388fb42c before scoring.text=whole (issue 42)
        "generator": "c69c915b7ed4",
        "retrievers": "61a53389d70e",
        "dataset": "5d649f06ea71",
        "names": "cdf5e608e232",
    },
    # issue 35: experiment=rare2025 scores with RARE's lexical stage (judge=rare: exact or inclusive match,
    # was judge=refusal_match), so its job id and judge name changed on purpose (8d59a104b8d9 ->
    # 27faa30d2c26).
    "rare2025": {
        "job_id": "2624d79020e5",  # was 27faa30d2c26 before RARE's 1024 new tokens (issue 49)
        "generator": "5dcd604d13b9",  # was 724d4c3a6dbe (its decoding: 1024 new tokens)
        "retrievers": "0ee792cc1f18",
        "dataset": "5d649f06ea71",
        "names": "430db485af13",
    },
    # issue 35: experiment=rgb2024 scores with RGB's own rules (judge=rgb, was judge=refusal_match), so
    # its job id and judge name changed on purpose (5196979b0314 -> cca7c73698c5): old rgb2024 jobs were
    # scored by rr's rules and must not be found as this job's results.
    # issue 49: strategy=rgb's Chinese instruction, RGB's documents as evalue.py takes them (pick: first)
    # and ChatGPT for the LLM checks.
    "rgb2024": {
        # bdb91af6cd33 before pick: first and the ChatGPT judge, cca7c73698c5 before the Chinese instruction
        "job_id": "3c233633582b",
        "generator": "30edd6e3a722",
        "retrievers": "0ee792cc1f18",
        "dataset": "5d649f06ea71",
        "names": "abe4f2bd5828",
    },
    "sure2025": {
        # 019c43b1d2ac before the 20 Dec 2018 dump (issue 49), 26260ed71313 before scoring.text=first_line (issue 42)
        "job_id": "c953a458fa49",
        "generator": "084a05ac8c7b",
        "retrievers": "37ed4f70500a",
        "dataset": "83b497d0ee2c",
        "names": "bbf8e9d0dda2",
    },
    "sure2025_mini": {
        "job_id": "ae3741ce10d9",  # was a440e42b302b before scoring.text=first_line (issue 42)
        "generator": "86f3d68691ee",
        "retrievers": "969c458c79a1",
        "dataset": "02cd1a92b380",
        "names": "bbf8e9d0dda2",
    },
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_job_ids_and_cache_keys_are_pinned(case: str) -> None:
    assert signature(CASES[case]) == EXPECTED[case]


def test_chat_template_kwargs_are_in_the_id_only_when_set() -> None:
    """Unset (null), the key keeps every job's id; set, the prompts change, and so does the id."""
    base = job_id(compose_config([]))
    assert job_id(compose_config(["generator.chat_template_kwargs=null"])) == base
    assert job_id(compose_config(["generator.chat_template_kwargs={enable_thinking: false}"])) != base
