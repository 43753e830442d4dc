"""The default demo end to end on a few examples, its re-run, and the CLI with Hydra's launcher.

Budget: one real job of the packaged SmolLM2 (2 questions, BM25 + dense over a 20-passage sample
that keeps their gold pages, 12 new tokens); the CLI runs in-process (:func:`rr.commands.cli.main`), its
multirun with the simulated reader.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import open_dict

from rr.config import instantiate
from rr.environment import environment
from rr.jobfolder import EnvironmentRecord
from rr.pipeline import run_job
from rr.records import MetaKey
from rr.results import REQUIRED, load

from .conftest import TINY, compose_config
from .test_docs import rr_main

#: :data:`TINY` at 2 questions over a 20-passage corpus sample: dense encoding of the corpus and
#: generation (prompt tokens) are the job's time, and the contract needs neither at scale. The 12
#: new tokens stay: fewer cut SmolLM2's sentence answers, every score 0 and the metrics trivial.
E2E = [*TINY, "dataset.n=2", "corpus.max_passages=20", "corpus.keep_fanoutqa_evidence=false"]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("e2e")
    cfg = compose_config(E2E, tmp)
    # keep the 2 questions' gold pages in the sample (not all 312 FanOutQA evidence pages)
    gold = sorted({t for ex in instantiate(cfg.dataset).load() for t in ex.meta[MetaKey.GOLD_TITLES]})
    with open_dict(cfg):
        cfg.corpus.keep_titles = gold
    first = run_job(cfg, tmp / "job")
    return cfg, tmp, first


def test_score_table_contract(tiny_run) -> None:
    _, _, res = tiny_run
    df = res.scores
    assert all(c in df.columns for c in REQUIRED)
    # 2 examples x (1 closed-book cell + 2 retrievers x 2 k x 3 orders) = 2 x 13 rows
    assert len(df) == 2 * 13
    closed = df[df["k"] == 0]
    assert set(closed["retriever"]) == {"none"} and set(closed["order"]) == {"none"}
    assert set(df.loc[df["k"] > 0, "retriever"]) == {"bm25", "dense"}
    assert set(df["order"]) == {"none", "original", "reversed", "shuffled"}
    assert df["score"].between(0, 1).all()
    assert (df.loc[df["k"] > 0, "n_docs_used"] == df.loc[df["k"] > 0, "k"]).all()
    # the k=1 prompt's documents are the first of the k=2 original-order prompt's
    rag = df[(df["retriever"] == "bm25") & (df["order"] == "original")].set_index(["example_id", "k"])[
        "doc_ids"
    ]
    for ex in df["example_id"].unique():
        assert list(rag[(ex, 1)]) == list(rag[(ex, 2)])[:1]
    rev = df[(df["retriever"] == "bm25") & (df["order"] == "reversed") & (df["k"] == 2)].set_index(
        "example_id"
    )
    for ex in df["example_id"].unique():
        assert list(rev.loc[ex, "doc_ids"]) == list(rag[(ex, 2)])[::-1]


def test_outputs_written(tiny_run) -> None:
    _, _, res = tiny_run
    out = res.output_dir
    summary = json.loads((out / "summary.json").read_text())
    for key in (
        "requests",
        "unique_requests",
        "model_calls",
        "cache_hits",
        "timings_s",
        "metrics",
        "answer_recall",
    ):
        assert key in summary
    assert (
        summary["requests"] == 26 and summary["model_calls"] <= summary["unique_requests"] < 26
    )  # k=1 orders dedup
    assert {m["retriever"] for m in summary["metrics"]} == {"bm25", "dense", "mean(bm25,dense)"}
    per = {m["retriever"]: m for m in summary["metrics"]}
    for metric in ("ndr", "rsr", "ror", "accuracy"):  # the paper's number: the mean over retrievers
        assert per["mean(bm25,dense)"][metric] == pytest.approx(
            (per["bm25"][metric] + per["dense"][metric]) / 2
        )
    assert (out / "config.yaml").exists() and (out / "retrieval.csv").exists()
    assert res.summary.environment == EnvironmentRecord.from_dict(
        environment()
    )  # the lock's hash and whether it is what is installed
    # the prompts as sent live in prompts.parquet, which rr.results.load never reads
    pd.testing.assert_frame_equal(load(out), res.scores.drop(columns=["prompt"], errors="ignore"))


def test_rerun_makes_zero_model_calls_and_identical_table(tiny_run) -> None:
    cfg, tmp, first = tiny_run
    second = run_job(cfg, tmp / "job-rerun")
    assert second.summary.model_calls == 0
    assert second.summary.retrieval_runs_computed == 0 and second.summary.retrieval_runs_cached == 2
    pd.testing.assert_frame_equal(first.scores, second.scores)


def test_cli_multirun_with_basic_launcher(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    args = [
        "-m",
        "strategy=vanilla,closed_book",
        "generator=simulated",  # Hydra's basic launcher is checked; the demo's real model: tiny_run
        "dataset=synthetic",
        "corpus=synthetic",
        "retriever=bm25",
        "progress=false",
        f"paths.output_root={tmp_path / 'out'}",
        *TINY,
    ]
    code, _, err = rr_main(args, capsys)  # in-process: Hydra's basic launcher runs jobs in-process too
    assert code == 0, err[-3000:]
    jobs = sorted((tmp_path / "out" / "multirun" / "cao2025_mini").glob("*/scores.parquet"))
    assert len(jobs) == 2
    df = load(tmp_path / "out" / "multirun")
    assert set(df["strategy"]) == {"vanilla", "closed_book"}
    assert set(df.loc[df["strategy"] == "closed_book", "k"]) == {0}


def test_cli_help_lists_groups(capsys) -> None:
    code, out, _ = rr_main(["--help"], capsys)
    assert code == 0
    for text in ("rr: measure how robustly", "retriever:", "generator:", "strategy:"):
        assert text in out
    groups = out.split("== Config groups ==")[1].split("== Config ==")[0]
    assert "perturbation/doc: backtranslate, counterfactual," in groups
    assert "retriever: bge_base, bge_large, bm25, contriever, dense, oracle," in groups
    assert "_schema" not in groups  # the schema nodes beside every option are not options


def test_cli_typo_is_a_clear_error(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    code, _, err = rr_main(["generator.batchsize=4"], capsys)
    assert code != 0
    assert "batchsize" in err
