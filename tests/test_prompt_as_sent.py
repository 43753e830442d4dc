"""The score table's ``prompt``: each row's final-step prompt exactly as the model received it.

A simulated-reader job records the prompts its generator is handed; every row's ``prompt`` must
be one of them (the final step's: for OwnKnow, the answer step that holds the closed-book draft),
and a re-run served from the generation cache must store the same prompts. The prompts live in the
job's ``prompts.parquet`` (keyed like the score rows), not in ``scores.parquet``: ``rr.results.load``
never reads them.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from rr.generation.simulated import SimulatedGenerator
from rr.jobfolder import PROMPTS_FILE, SCORES_FILE, archive_run
from rr.pipeline import run_job
from rr.results import PROMPT_KEYS, load, load_prompts, write_scores
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
    table = load(tmp_path / "job")
    prompts = load_prompts(tmp_path / "job")
    assert len(table) == 4 * 2 * (1 + 2 * 2)  # examples x strategies x (closed book + k x orders)
    # the score table holds no prompt text; prompts.parquet holds one prompt per score row, keyed
    assert "prompt" not in table.columns
    assert "prompt" not in pd.read_parquet(tmp_path / "job" / SCORES_FILE).columns
    assert list(prompts.columns) == [*PROMPT_KEYS, "prompt"]
    assert not prompts.duplicated(list(PROMPT_KEYS)).any()
    rows = table.merge(prompts, on=list(PROMPT_KEYS), how="left", validate="one_to_one")
    assert rows["prompt"].notna().all()
    sent = set(received)
    assert set(prompts["prompt"]) == sent  # the prompts sent, no more and no fewer
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
    assert received == []
    assert load_prompts(tmp_path / "again")["prompt"].tolist() == prompts["prompt"].tolist()


def test_prompts_file_beside_the_scores_and_kept_with_a_forced_runs_history(tmp_path: Path) -> None:
    """write_scores splits ``prompt`` off; a table without one leaves no stale prompts file; a table
    written before prompts.parquet (the column inside scores.parquet) loads without it and still
    gives its prompts; archive_run keeps the prompts with the scores."""
    df = pd.DataFrame(
        {
            "example_id": ["a", "a"],
            "dataset": "d",
            "generator": "g",
            "strategy": "vanilla",
            "retriever": ["none", "bm25"],
            "k": [0, 1],
            "order": ["none", "original"],
            "query_perturbation": "none",
            "doc_perturbation": "none",
            "n_docs_used": [0, 1],
            "prediction": "x",
            "raw_output": "x",
            "score": [0.0, 1.0],
            "judge": "match",
            "refused": False,
            "job_id": "j1",
            "prompt": ["Q?", "Doc.\nQ?"],
        }
    )
    job = tmp_path / "job"
    job.mkdir()
    write_scores(df, job)
    assert "prompt" not in pd.read_parquet(job / SCORES_FILE).columns
    side = pd.read_parquet(job / PROMPTS_FILE)
    assert side["prompt"].tolist() == ["Q?", "Doc.\nQ?"] and side["k"].tolist() == [0, 1]
    (job / "summary.json").write_text("{}")
    assert archive_run(job) == 1
    assert (job / "history" / f"1.{PROMPTS_FILE}").is_file() and not (job / PROMPTS_FILE).exists()
    write_scores(df, job)
    write_scores(df.drop(columns="prompt"), job)
    assert not (job / PROMPTS_FILE).exists() and load_prompts(job).empty
    old = tmp_path / "old"
    old.mkdir()
    df.to_parquet(old / SCORES_FILE, index=False)  # as write_scores wrote it before prompts.parquet
    assert "prompt" not in load(old).columns
    assert load_prompts(old)["prompt"].tolist() == ["Q?", "Doc.\nQ?"]
