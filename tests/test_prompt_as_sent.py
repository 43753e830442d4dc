"""The score table's ``prompt``: each row's final-step prompt exactly as the model received it.

A simulated-reader job records the prompts its generator is handed; every row's ``prompt`` must
be one of them (the final step's: for OwnKnow, the answer step that holds the closed-book draft),
and a re-run served from the generation cache must store the same prompts.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from rr.generation.simulated import SimulatedGenerator
from rr.pipeline import run_job
from tests.conftest import compose_config

SIM = [
    "generator=simulated",
    "dataset=synthetic",
    "corpus=synthetic",
    "retriever=[bm25]",
    "strategy=[vanilla,ownknow]",
    "dataset.n=4",
    "corpus.max_passages=200",
    "grid.k=[1,3]",
    "grid.orders=[original,reversed]",
]


def test_every_rows_prompt_is_the_one_the_generator_received(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    received: list[str] = []
    generate = SimulatedGenerator.generate

    def spy(self: SimulatedGenerator, prompts: list[str], *args: object, **kwargs: object) -> object:
        received.extend(prompts)
        return generate(self, prompts, *args, **kwargs)

    monkeypatch.setattr(SimulatedGenerator, "generate", spy)
    cfg = compose_config(SIM, tmp_path)
    run_job(cfg, tmp_path / "job")
    rows = pd.read_parquet(tmp_path / "job" / "scores.parquet")
    assert len(rows) == 4 * 2 * (1 + 2 * 2)  # examples x strategies x (closed book + k x orders)
    sent = set(received)
    assert rows["prompt"].map(lambda p: p in sent).all()
    # the final step's prompt: the documents in prompt order, the question; OwnKnow's holds its draft
    for _, r in rows[rows["k"] > 0].iterrows():
        assert r["question"] in r["prompt"]
        assert r["prompt"].count("\n") > 3
    own = rows[(rows["strategy"] == "ownknow") & (rows["k"] > 0)]
    assert all(d in p for d, p in zip(own["ownknow_draft"], own["prompt"], strict=True))
    reversed_, original = (
        rows[(rows["k"] == 3) & (rows["order"] == o) & (rows["strategy"] == "vanilla")].set_index(
            "example_id"
        )
        for o in ("reversed", "original")
    )
    assert (reversed_["prompt"] != original["prompt"]).all()
    # a re-run from the cache sends nothing and stores the same prompts
    received.clear()
    run_job(cfg, tmp_path / "again")
    again = pd.read_parquet(tmp_path / "again" / "scores.parquet")
    assert received == []
    assert again["prompt"].tolist() == rows["prompt"].tolist()
