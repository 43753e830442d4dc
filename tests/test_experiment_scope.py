"""No silent subset (issue 30, CONVENTIONS 13): what an experiment sets for its own data (the demo's
``dataset.n: 12`` and 1,000-passage corpus sample, a paper's file paths) applies to that dataset and
corpus only (``conf/experiment_data``); a dataset or corpus chosen on the command line keeps its own
defaults. Every job says in its first lines how many examples it runs of how many, and which setting
decided it; ``summary.json`` records both numbers.

One case per dataset type (jsonl, mini, an HF loader on a local file, rgb, synthetic) composes
as ``rr`` does, with Hydra's job config set (:func:`hydra_job`), loads the dataset and reads the
job's data lines (:func:`rr.pipeline.data_scope`); one ``rr`` job runs a 20-question file end to
end on the simulated reader.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from omegaconf import DictConfig

from rr.config import hydra_context, instantiate, job_id
from rr.data.base import Corpus
from rr.data.synthetic import SyntheticDataset
from rr.pipeline import data_scope

from .conftest import compose_config
from .test_cli_errors import rr_main

N = 20


@contextmanager
def hydra_job(overrides: list[str]) -> Iterator[DictConfig]:
    """The config ``rr OVERRIDES`` composes, with Hydra's job config set as in a running job."""
    from hydra import compose
    from hydra.core.hydra_config import HydraConfig

    with hydra_context():
        cfg = compose("config", overrides=overrides, return_hydra_config=True)
        HydraConfig.instance().set_config(cfg)
        try:
            yield cfg
        finally:
            HydraConfig.instance().cfg = None  # type: ignore[assignment]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def jsonl_questions(tmp_path: Path) -> list[str]:
    """20 questions of the synthetic task as a JSONL dataset (the simulated reader can answer them)."""
    rows = [
        {"id": ex.id, "question": ex.question, "answers": list(ex.answers)}
        for ex in SyntheticDataset(n=N, seed=0).load()
    ]
    return ["dataset=jsonl", f"dataset.path={_write(tmp_path / 'q20.jsonl', rows)}"]


def nq_file(tmp_path: Path) -> list[str]:
    rows = [{"question": f"question number {i}", "answer": [f"answer {i}"]} for i in range(N)]
    path = _write(tmp_path / "nq_open-validation.jsonl", rows)
    return ["dataset=nq_open", f"dataset.data_files={path}", f"dataset.cache_dir={tmp_path / 'hf'}"]


def rgb_file(tmp_path: Path) -> list[str]:
    rows = [
        {
            "id": i,
            "query": f"Who won prize {i}?",
            "answer": [f"Person {i}"],
            "positive": [f"Person {i} won prize {i}."],
            "negative": [f"Prize {i} is awarded yearly."],
        }
        for i in range(N)
    ]
    return ["dataset=rgb_en", f"dataset.path={_write(tmp_path / 'en.json', rows)}"]


@pytest.mark.parametrize(
    ("make", "extra", "first_line"),
    [
        # the user's own data, under the default experiment (cao2025_mini) and under another
        (jsonl_questions, [], f"examples: {N} of {N} (all)"),
        (nq_file, [], f"examples: {N} of {N} (all)"),
        (rgb_file, [], f"examples: {N} of {N} (all)"),
        (rgb_file, ["experiment=rgb2024"], f"examples: {N} of {N} (all)"),
        (jsonl_questions, ["dataset.n=5"], f"examples: 5 of {N} (dataset.n=5 on the command line;"),
        # the bundled and the generated demo data keep the experiment's size, and say so
        (lambda _: [], [], "examples: 12 of 78 (dataset.n=12 from experiment=cao2025_mini;"),
        (
            lambda _: ["dataset=mini"],
            ["experiment=sure2025_mini"],
            "examples: 8 of 78 (dataset.n=8 from experiment=sure2025_mini;",
        ),
        (lambda _: ["~experiment"], [], "examples: 50 of 78 (dataset.n=50 the default of dataset=mini;"),
        (lambda _: ["dataset=synthetic"], [], "examples: 12 (dataset.n=12 from experiment=cao2025_mini)"),
    ],
    ids=[
        "jsonl",
        "hf-nq_open",
        "rgb",
        "rgb-rgb2024",
        "jsonl-n5",
        "mini",
        "mini-sure2025_mini",
        "mini-no-experiment",
        "synthetic",
    ],
)
def test_first_line_says_how_many_examples_of_how_many_and_why(
    make, extra, first_line, tmp_path: Path
) -> None:
    with hydra_job([*make(tmp_path), *extra]) as cfg:
        dataset = instantiate(cfg.dataset)
        examples = dataset.load()
        scope = data_scope(cfg, dataset, examples, Corpus([], name="none"))
    assert scope.lines[0].startswith(first_line), scope.lines
    assert scope.examples == len(examples)


@pytest.mark.parametrize(
    "overrides",
    [
        ["corpus=jsonl", "corpus.path=c.jsonl"],
        ["dataset=jsonl", "dataset.path=q.jsonl"],  # gold pages of the demo's questions mean nothing to yours
        ["experiment=rgb2024", "corpus=rgb", "corpus.path=en.json", "dataset=rgb_en", "dataset.path=en.json"],
        ["experiment=sure2025_mini", "corpus=jsonl", "corpus.path=c.jsonl"],
    ],
)
def test_a_corpus_you_choose_is_not_sampled_by_the_experiment(overrides: list[str]) -> None:
    assert compose_config(overrides).corpus.max_passages is None


def test_experiments_keep_their_sizes_and_ids_for_their_own_data() -> None:
    """The moved sizes compose exactly as before (tests/test_identity_pins.py pins the ids); an
    experiment of your own that extends one keeps its data sizes too."""
    for overrides, n, passages in [
        ([], 12, 1000),
        (["experiment=sure2025_mini"], 8, 600),
        (["experiment=sure2025"], 1000, None),
        (["sweep=rgb2024"], 12, 1000),
        (["generator=simulated", "dataset=synthetic", "corpus=synthetic"], 12, 1000),
    ]:
        cfg = compose_config(overrides)
        assert (cfg.dataset.n, cfg.corpus.max_passages) == (n, passages), overrides
    assert job_id(compose_config([])) == "2cf0aa69361f"  # make demo's job


def test_cfg_job_names_the_applied_experiment(monkeypatch, capsys) -> None:
    code, out, err = rr_main(["--cfg", "job"], monkeypatch, capsys)
    assert code == 0, err
    assert "experiment: cao2025_mini" in out.splitlines()
    code, out, _ = rr_main(["--cfg", "job", "experiment=rgb2024"], monkeypatch, capsys)
    assert "experiment: rgb2024" in out.splitlines()


def test_a_20_question_file_runs_20_examples(tmp_path: Path, monkeypatch, capsys) -> None:
    args = [
        *jsonl_questions(tmp_path),
        "generator=simulated",
        "corpus=synthetic",
        f"corpus.entities={N}",
        "retriever=[bm25]",
        "grid.k=[1]",
        "grid.orders=[original]",
        "progress=false",
        f"paths.output_root={tmp_path / 'out'}",
    ]
    code, out, err = rr_main(args, monkeypatch, capsys)
    assert code == 0, err
    first = [line.split(" - ", 1)[-1] for line in out.splitlines()[:6]]
    assert f"examples: {N} of {N} (all)" in first
    # what the default experiment still sets for this job (grid.k and grid.orders were given)
    assert "experiment=cao2025_mini sets generator.max_new_tokens=24, generator.batch_size=16 " in " ".join(
        first
    )
    (job,) = (tmp_path / "out" / "runs" / "cao2025_mini").iterdir()
    summary = json.loads((job / "summary.json").read_text())
    assert (summary["examples"], summary["examples_available"]) == (N, N)
    assert summary["data_scope"][0] == f"examples: {N} of {N} (all)"


def test_console_says_what_cells_fallbacks_and_planted_mean(tmp_path: Path, monkeypatch, capsys) -> None:
    """Words a new user meets on the console get a gloss where they first appear (issue 30)."""
    args = ["generator=simulated", "dataset=synthetic", "corpus=synthetic", "dataset.n=3", "retriever=[bm25]"]
    code, out, err = rr_main([*args, "progress=false", f"paths.output_root={tmp_path}"], monkeypatch, capsys)
    assert code == 0, err
    said = " ".join(out.split())  # rich wraps long lines
    assert (
        "(cells x query variants; a cell = one retriever, k and document order, or k = 0 without documents)"
        in said
    )
    assert (
        "answer-extraction fallbacks 0 (outputs without an 'Answer:' marker: with scoring.text=extracted "
        "their first non-empty line is scored)" in said
    )
    assert "planted = the true value of the simulated reader's population" in said
