"""Examples whose ids two datasets reuse (issue 43, part 3): the report keeps them apart as
``<id>~<fingerprint>``, and what a job stored per example under the id its dataset gave (its
``prompts.parquet``) follows them to the site; datasets of different names that number their
examples alike are not split at all (an example is its dataset and its content)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from rr.data.synthetic import SyntheticDataset
from rr.results import follow_split_ids, identify_examples

from .test_example_identity import _job, _write_questions
from .test_site import site_data, site_payload

pytestmark = pytest.mark.timeout(300)


def _two_files(tmp_path: Path) -> tuple[Path, Path, dict[str, tuple[str, str]]]:
    """Files a and b both numbering q0..q3, for different questions (world 0..3 and 4..7); and
    question -> (its file, its id)."""
    a = _write_questions(tmp_path / "a.jsonl", {f"q{i}": i for i in range(4)})
    b = _write_questions(tmp_path / "b.jsonl", {f"q{i}": 4 + i for i in range(4)})
    world = SyntheticDataset(n=12)
    return a, b, {world.example(i).question: ("ab"[i // 4], f"q{i % 4}") for i in range(8)}


def _site_rows(site: Path) -> list[tuple[str, str, str, str]]:
    """``(dataset, example id, question, prompt)`` of every row of the site's example shards."""
    out = []
    for f in sorted((site / "data" / "ex").glob("e-*.js")):
        shard = site_payload(f)
        prompts = site_payload(site / "data" / "pr" / f.name.replace("e-", "pr-"))["pr"]
        for item in shard["examples"]:
            for sysd in item["sys"]:
                for r in range(*sysd["r"]):
                    out.append((item["ds"], item["id"], sysd.get("q", item["q"]), prompts[r]))
    return out


def _report(runs: Path, out: Path) -> Path:
    from rr.commands.report import main as report_main

    report_main([str(runs), "--out", str(out), "--resamples", "50"])
    return out


def test_the_prompts_of_split_ids_reach_the_site(tmp_path: Path) -> None:
    a, b, questions = _two_files(tmp_path)
    _job(tmp_path, tmp_path / "runs" / "a", a)
    _job(tmp_path, tmp_path / "runs" / "b", b)
    assert all((tmp_path / "runs" / j / "prompts.parquet").is_file() for j in "ab")
    report = _report(tmp_path / "runs", tmp_path / "report")
    assert "8 distinct examples" in (report / "README.md").read_text()
    rows = _site_rows(report / "site")
    ids = {i for _, i, _, _ in rows}
    assert len(ids) == 8 and all("~" in i for i in ids)  # q0..q3 twice, kept apart
    # before: every prompt '' ("Not recorded (the job was run before rr stored prompts)")
    assert rows and all(prompt for *_, prompt in rows)
    for _, example_id, question, prompt in rows:
        assert question in prompt and example_id.split("~")[0] == questions[question][1]


def test_datasets_of_different_names_numbered_alike_are_not_split(tmp_path: Path) -> None:
    a, b, questions = _two_files(tmp_path)
    _job(tmp_path, tmp_path / "runs" / "a", a, "dataset.name=file_a")
    _job(tmp_path, tmp_path / "runs" / "b", b, "dataset.name=file_b")
    report = _report(tmp_path / "runs", tmp_path / "report")
    readme = (report / "README.md").read_text()
    assert "8 distinct examples" in readme and "hold different questions" not in readme  # before: split
    site = report / "site"
    assert site_data(site, "index")["n_examples"] == 8
    rows = _site_rows(site)
    assert {(ds, i) for ds, i, _, _ in rows} == {
        (ds, f"q{i}") for ds in ("file_a", "file_b") for i in range(4)
    }
    assert rows and all(prompt for *_, prompt in rows)
    for ds, example_id, question, prompt in rows:
        assert question in prompt and (ds, example_id) == (
            f"file_{questions[question][0]}",
            questions[question][1],
        )


def test_an_id_reused_within_one_dataset_is_still_split() -> None:
    rows: list[dict[str, Any]] = [
        {"dataset": ds, "example_id": "q0", "example_key": key, "job_id": job}
        for ds, key, job in (("d", "k1" * 8, "j1"), ("d", "k2" * 8, "j2"), ("e", "k3" * 8, "j3"))
    ]
    df, notes = identify_examples(pd.DataFrame(rows))
    assert df["example_id"].tolist() == ["q0~k1k1k1k1", "q0~k2k2k2k2", "q0"]
    assert len(notes) == 1 and "q0" in notes[0]


def test_a_per_example_file_follows_the_split_ids() -> None:
    scores = pd.DataFrame(
        {
            "job_id": ["j1", "j1", "j2"],
            "example_id": ["q0~aaaaaaaa", "q1", "q0~bbbbbbbb"],
            "example_key": ["a" * 16, "c" * 16, "b" * 16],
        }
    )
    per_example = pd.DataFrame({"job_id": ["j2", "j1", "j1", "j3"], "example_id": ["q0", "q0", "q1", "q0"]})
    got = follow_split_ids(per_example, scores)
    assert got["example_id"].tolist() == ["q0~bbbbbbbb", "q0~aaaaaaaa", "q1", "q0"]
    assert per_example["example_id"].tolist() == ["q0", "q0", "q1", "q0"]  # not changed in place


def test_a_split_ids_runs_follow_it_to_the_query_level_correlations(tmp_path: Path) -> None:
    """Two jobs of one dataset name reuse q0..q2 for other questions: their ids are split, and each
    job's per-query retrieval metrics (its runs/*.trec, under q0..q2) still join its rows (before:
    none did, so the correlations had no sample)."""
    import math

    from rr.reporting import build_report

    from .test_report_papers import write_query_level_job

    for name in ("a", "b"):
        job = write_query_level_job(tmp_path / "jobs" / name)
        scores = pd.read_parquet(job / "scores.parquet")
        keys = {e: f"{name}{e}".ljust(16, "0") for e in scores["example_id"]}
        scores.assign(job_id=f"ql_{name}", example_key=scores["example_id"].map(keys)).to_parquet(
            job / "scores.parquet"
        )
    out = tmp_path / "report"
    report = build_report(tmp_path / "jobs", out, n_resamples=50, only=["query_level_correlations"])
    assert report.scores is not None and report.scores["example_id"].str.contains("~").all()
    corr = pd.read_csv(out / "tables" / "query_level_correlations.csv").set_index("pair")
    assert (corr["n"] == 12).all()  # both jobs' 6 perturbed samples
    # each job's values are test_report_papers' one job's: the same r
    assert corr["r"].to_dict() == pytest.approx(
        {"RET": 5 / math.sqrt(34), "CB": -1 / math.sqrt(85), "OR": -7 / math.sqrt(85)}
    )
