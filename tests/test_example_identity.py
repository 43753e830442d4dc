"""An example is its question, not its id (issue 36, part 1): every score row carries a fingerprint of
its example's original question and gold answers (``example_key``), and reporting pools, pairs and
counts examples only under the same identity."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from rr.data.synthetic import SyntheticDataset
from rr.pipeline import run_job
from rr.reporting import build_report, load_jobs
from rr.reporting.comparisons import not_comparable_pairs, paired_comparisons
from rr.results import example_key, identify_examples

from .conftest import compose_config

#: The simulated reader on the user's own JSONL files, its passages from the synthetic world.
SIM = [
    "generator=simulated",
    "dataset=jsonl",
    "corpus=synthetic",
    "corpus.entities=12",
    "retriever=[bm25]",
    "grid.k=[1,2]",
    "grid.orders=[original,reversed]",
]


def _write_questions(path: Path, ids_to_world: dict[str, int]) -> Path:
    """A JSONL file of the synthetic world's questions: id -> which world question it holds."""
    world = SyntheticDataset(n=12)
    rows = []
    for qid, i in ids_to_world.items():
        ex = world.example(i)
        rows.append({"id": qid, "question": ex.question, "answers": ex.answers})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _job(tmp_path: Path, folder: Path, questions: Path, *extra: str):
    cfg = compose_config([*SIM, f"dataset.path={questions}", *extra], tmp_path)
    return run_job(cfg, folder)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    # q0..q5 of file a are world questions 0..5; in file b, q0..q3 are the same questions and
    # q4, q5 are other questions (10, 11) under the same ids
    a = _write_questions(tmp_path / "a.jsonl", {f"q{i}": i for i in range(6)})
    b = _write_questions(tmp_path / "b.jsonl", {**{f"q{i}": i for i in range(4)}, "q4": 10, "q5": 11})
    return a, b


def test_every_row_carries_its_examples_fingerprint(tmp_path: Path, files: tuple[Path, Path]) -> None:
    a, _ = files
    result = _job(tmp_path, tmp_path / "runs" / "a", a)
    world = SyntheticDataset(n=12)
    keys = result.scores.groupby("example_id")["example_key"].unique()
    for i in range(6):
        ex = world.example(i)
        assert list(keys[f"q{i}"]) == [example_key(ex.question, ex.answers)]
    assert len(set(result.scores["example_key"])) == 6
    assert result.summary.example_set.examples == 6
    assert result.summary.example_set.fingerprint
    assert example_key("Q?", ["a"]) != example_key("Q?", ["b"]) != example_key("Q!", ["a"])


def test_overlapping_ids_of_two_files_are_not_one_example(tmp_path: Path, files: tuple[Path, Path]) -> None:
    a, b = files
    runs = tmp_path / "runs"
    _job(tmp_path, runs / "a", a)
    _job(tmp_path, runs / "b", b)
    report = build_report(runs, tmp_path / "report", n_resamples=50)
    scores = report.scores
    assert scores is not None
    # 6 + 2 examples: q4 and q5 of file b are not q4 and q5 of file a
    assert scores["example_id"].nunique() == 8  # before: 6
    readme = (tmp_path / "report" / "README.md").read_text()
    assert "8 distinct examples" in readme
    assert "q4, q5" in readme and "hold different questions" in readme  # which jobs hold which sets
    # the two jobs are one system (same dataset name, generator, strategy): never paired
    assert paired_comparisons(scores).empty  # before: compared "on the same examples"
    (row,) = not_comparable_pairs(scores).to_dict("records")
    assert row["differs_in"] == "job_id" and row["metric"] == "all"
    assert "2 shared ids hold different questions or answers (q4, q5)" in row["reason"]


def test_the_same_id_with_the_same_question_still_pairs(tmp_path: Path, files: tuple[Path, Path]) -> None:
    a, _ = files
    runs = tmp_path / "runs"
    _job(tmp_path, runs / "vanilla", a)
    _job(tmp_path, runs / "ownknow", a, "strategy=[ownknow]")
    scores, _ = load_jobs(runs)
    assert scores["example_id"].nunique() == 6
    tested = paired_comparisons(scores, n_resamples=99)
    assert set(tested["metric"]) >= {"accuracy"} and set(tested["n_examples"]) == {6}
    assert not_comparable_pairs(scores).query("metric == 'all'").empty


def test_a_perturbed_query_keeps_its_originals_identity(tmp_path: Path, files: tuple[Path, Path]) -> None:
    a, b = files
    world = SyntheticDataset(n=12)
    # q4's variant reads file b's q4 question: it is still file a's q4, never file b's
    variants = tmp_path / "variants.jsonl"
    variants.write_text(
        json.dumps({"id": "q4", "variant": "swap#1", "question": world.example(10).question}) + "\n"
    )
    runs = tmp_path / "runs"
    over = [
        f"perturbation.query.path={variants}",
        "perturbation/query=file",
        "perturbation.query.on_missing=skip",
    ]
    perturbed = _job(tmp_path, runs / "a", a, *over).scores
    _job(tmp_path, runs / "b", b)
    q4 = perturbed[perturbed["example_id"] == "q4"]
    assert set(q4["query_perturbation"]) == {"none", "swap#1"}
    assert q4["question"].nunique() == 2 and q4["example_key"].nunique() == 1
    ex = world.example(4)
    assert q4["example_key"].iloc[0] == example_key(ex.question, ex.answers)
    scores, _ = load_jobs(runs)
    mine = scores[scores["job_id"] == perturbed["job_id"].iloc[0]]
    # the variant stays with its original under one (disambiguated) id
    assert mine.loc[mine["query_perturbation"] == "swap#1", "example_id"].nunique() == 1
    (vid,) = mine.loc[mine["query_perturbation"] == "swap#1", "example_id"].unique()
    assert set(mine.loc[mine["example_id"] == vid, "query_perturbation"]) == {"none", "swap#1"}
    theirs = scores[scores["job_id"] != perturbed["job_id"].iloc[0]]
    assert vid not in set(theirs["example_id"])


def test_an_old_table_without_the_column_derives_it_and_says_so() -> None:
    def rows(job: str, questions: dict[str, str]) -> pd.DataFrame:
        out = []
        for qid, q in questions.items():
            out.append((qid, "none", q, ["x"], job))
            out.append((qid, "typo#1", q.upper(), ["x"], job))  # a variant: other text, same example
        return pd.DataFrame(
            out, columns=["example_id", "query_perturbation", "question", "answers", "job_id"]
        )

    old = pd.concat([rows("j1", {"q1": "one?", "q2": "two?"}), rows("j2", {"q1": "one?", "q2": "other?"})])
    df, notes = identify_examples(old.reset_index(drop=True))
    assert df.groupby(["job_id", "example_id"])["example_key"].nunique().max() == 1  # variants kept
    assert df["example_id"].nunique() == 3  # q1, and q2 twice
    assert df.loc[df["job_id"] == "j1", "example_id"].str.startswith("q2").sum() == 2
    assert any("derived" in n for n in notes) and any("q2" in n for n in notes)
    bare, notes = identify_examples(old.drop(columns=["question", "answers"]).reset_index(drop=True))
    assert bare["example_id"].nunique() == 2 and any("by id alone" in n for n in notes)
