"""``rr score``: predictions made elsewhere become a job folder that rr reads as any job's (issue 52).

Each case runs the real command in-process (:func:`tests.test_cli_errors.rr_main`) on a small file
written here; the README's FlashRAG- and BERGEN-shaped files are run by tests/test_docs.py.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from rr.jobfolder import CORPUS_FILE, read_summary
from rr.results import example_key, identify_examples, load
from rr.resume import folder_state
from tests.test_cli_errors import rr_main
from tests.test_site import chromium, goto, page  # noqa: F401 (the browser fixtures)

Q1 = {"id": "q1", "question": "Where is the Eiffel Tower?", "answers": ["Paris"]}
Q2 = {"id": "q2", "question": "What is the growth rate?", "answers": ["6.4%"]}
CELL = {"strategy": "vanilla", "model": "my-llm"}


def records() -> list[dict]:
    """Two questions, closed book and k = 1, 2: outputs (through scoring.text) and predictions."""
    lyon = {"id": "d1", "title": "Lyon", "text": "Lyon is a city in France."}
    eiffel = {"id": "d2", "title": "Eiffel Tower", "text": "The Eiffel Tower stands in Paris."}
    return [
        {**Q1, **CELL, "retriever": "", "k": 0, "order": "", "output": "Answer: Lyon."},
        {**Q1, **CELL, "retriever": "bm25", "k": 1, "order": "original", "output": "Answer: Lyon",
         "documents": [lyon]},
        {**Q1, **CELL, "retriever": "bm25", "k": 2, "order": "original", "output": "I think.\nAnswer: Paris",
         "documents": [lyon, eiffel]},
        {**Q2, **CELL, "retriever": None, "k": 0, "order": None, "prediction": "64%"},
        {**Q2, **CELL, "retriever": "bm25", "k": 1, "order": "original", "prediction": "64%"},
        {**Q2, **CELL, "retriever": "bm25", "k": 2, "order": "original", "prediction": "6.4%"},
    ]  # fmt: skip


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def score(args: list[str], tmp_path: Path, monkeypatch, capsys) -> tuple[int, str, str]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    return rr_main(["score", *args, "progress=false"], monkeypatch, capsys)


def test_a_jsonl_file_becomes_a_job_folder_rr_reads_as_any_jobs(tmp_path, monkeypatch, capsys) -> None:
    src = write_jsonl(tmp_path / "preds.jsonl", records())
    before = hashlib.sha256(src.read_bytes()).hexdigest()
    code, out, err = score([str(src), "--out", "job"], tmp_path, monkeypatch, capsys)
    assert code == 0, err
    job = tmp_path / "job"
    df = load(job)
    assert hashlib.sha256(src.read_bytes()).hexdigest() == before  # the input is not touched
    assert len(df) == 6 and set(df["generator"]) == {"my-llm"} and set(df["dataset"]) == {"preds"}
    # closed book: retriever and order none; the content key rr records, so no note on reading it
    cb = df[df["k"] == 0]
    assert set(cb["retriever"]) == set(cb["order"]) == {"none"}
    assert identify_examples(df)[1] == []
    for r in df.itertuples():
        assert r.example_key == example_key(r.question, list(r.answers))
    # outputs scored through scoring.text=extracted (the text after "Answer:"), predictions as given
    by = df.set_index(["example_id", "k"])
    assert by.loc[("q1", 0), "prediction"] == "Lyon" and by.loc[("q1", 0), "score"] == 0
    assert by.loc[("q1", 2), "prediction"] == "Paris" and by.loc[("q1", 2), "score"] == 1
    assert by.loc[("q2", 0), "prediction"] == "64%" and by.loc[("q2", 0), "raw_output"] == "64%"
    assert list(by.loc[("q1", 2), "doc_ids"]) == ["d1", "d2"] and by.loc[("q1", 2), "answer_in_docs"]
    assert pd.isna(by.loc[("q2", 1), "answer_in_docs"])  # no documents recorded: not known
    # the summary is rr's, the folder is done for rr status, and the documents are its corpus
    summary = read_summary(job)
    assert summary.rows == 6 and summary.examples == 2 and summary.model_calls == 0
    assert summary.public_model == "my-llm" and summary.closed_book_accuracy == pytest.approx(0.5)
    assert summary.answer_recall == {"bm25": {"1": 0.0, "2": 1.0}}
    assert folder_state(job).state == "done"
    assert {json.loads(line)["id"] for line in (job / CORPUS_FILE).read_text().splitlines()} == {"d1", "d2"}
    assert "rr report job" in out
    # the same command again: the folder holds this job, so nothing is judged or written
    mtime = (job / "scores.parquet").stat().st_mtime_ns
    code, out, err = score([str(src), "--out", "job"], tmp_path, monkeypatch, capsys)
    assert code == 0 and "already scored" in out and (job / "scores.parquet").stat().st_mtime_ns == mtime


def test_the_judge_override_scores_with_a_papers_own_scorer(tmp_path, monkeypatch, capsys) -> None:
    """RGB's scorer only lowercases: '64%' is not the answer '6.4%' (rr's match strips the '.')."""
    src = write_jsonl(tmp_path / "preds.jsonl", records())
    assert score([str(src), "--out", "match"], tmp_path, monkeypatch, capsys)[0] == 0
    assert score([str(src), "--out", "rgb", "judge=rgb"], tmp_path, monkeypatch, capsys)[0] == 0
    match, rgb = (load(tmp_path / d).set_index(["example_id", "k"]) for d in ("match", "rgb"))
    assert match.loc[("q2", 0), "score"] == 1 and rgb.loc[("q2", 0), "score"] == 0
    assert (
        set(rgb["judge"]) == {"rgb"}
        and read_summary(tmp_path / "rgb").job_id != read_summary(tmp_path / "match").job_id
    )
    # scoring.text=whole scores the whole output (the first line too: no answer after it)
    assert score([str(src), "--out", "whole", "scoring.text=whole"], tmp_path, monkeypatch, capsys)[0] == 0
    whole = load(tmp_path / "whole").set_index(["example_id", "k"])
    assert whole.loc[("q1", 2), "prediction"] == "I think.\nAnswer: Paris"


def test_csv_with_mapped_columns_and_one_value_set_for_all(tmp_path, monkeypatch, capsys) -> None:
    src = tmp_path / "runs.csv"
    src.write_text(
        "qid,query,gold,ret,k,order,answer\n"
        "a,Where is the Eiffel Tower?,Paris|City of Light,,0,,Lyon\n"
        "a,Where is the Eiffel Tower?,Paris|City of Light,bm25,3,original,Paris\n"
    )
    args = [str(src), "--out", "csv", "--map", "id=qid", "--map", "question=query", "--map", "answers=gold"]
    args += [
        "--map",
        "retriever=ret",
        "--map",
        "prediction=answer",
        "--set",
        "model=m",
        "--set",
        "strategy=vanilla",
    ]
    code, _, err = score(args, tmp_path, monkeypatch, capsys)
    assert code == 0, err
    df = load(tmp_path / "csv").sort_values("k")
    assert list(df["answers"].iloc[0]) == ["Paris", "City of Light"] and list(df["score"]) == [0.0, 1.0]
    assert list(df["retriever"]) == ["none", "bm25"] and list(df["n_docs_used"]) == [0, 3]


def test_bad_records_get_one_line_each_and_nothing_is_written(tmp_path, monkeypatch, capsys) -> None:
    rows = records()
    rows[1] = {k: v for k, v in rows[1].items() if k != "model"}
    rows[2] = {**rows[2], "k": "two"}
    rows[4] = {**rows[4], "retriever": ""}
    rows.append(dict(rows[5]))  # the same question and cell twice
    rows.append({**rows[1], "answers": ["Rome"], "k": 3, "model": "m"})  # q1 with other answers
    src = write_jsonl(tmp_path / "preds.jsonl", rows)
    with src.open("a") as f:
        f.write("{not json\n")
    code, out, err = score([str(src), "--out", "job"], tmp_path, monkeypatch, capsys)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and not (tmp_path / "job").exists(), err
    expected = {2: "no 'model'", 3: "k must be a whole number", 5: "retriever is empty in a k=1 cell",
                7: "the same question and cell as", 8: "another answers at", 9: "invalid JSON"}  # fmt: skip
    assert len(lines) == len(expected) + 1 and lines[-1].startswith("rr: 6 record(s)")
    for line, (n, what) in zip(lines, sorted(expected.items()), strict=False):
        assert line.startswith(f"{src}:{n}: ") and what in line, line


def test_an_existing_folder_is_never_written_into(tmp_path, monkeypatch, capsys) -> None:
    src = write_jsonl(tmp_path / "preds.jsonl", records())
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    code, _, err = score([str(src), "--out", "mine"], tmp_path, monkeypatch, capsys)
    assert code == 2 and "already holds other files" in err and len(err.strip().splitlines()) == 1
    assert [p.name for p in (tmp_path / "mine").iterdir()] == ["notes.txt"]


def test_two_models_are_two_jobs_and_the_report_reads_them(tmp_path, monkeypatch, capsys) -> None:
    rows = records() + [{**r, "model": "other"} for r in records()]
    src = write_jsonl(tmp_path / "preds.jsonl", rows)
    code, out, err = score([str(src), "--out", "two"], tmp_path, monkeypatch, capsys)
    assert code == 0, err
    folders = sorted(p.parent.name for p in (tmp_path / "two").glob("*/summary.json"))
    assert folders == ["preds__my-llm", "preds__other"]
    df = load(tmp_path / "two")
    assert df.groupby("job_id")["generator"].nunique().eq(1).all() and df["job_id"].nunique() == 2
    code, out, err = rr_main(["report", "two", "--out", "report", "--no-site"], monkeypatch, capsys)
    assert code == 0 and "FAILED" not in out + err, out + err


def test_the_site_says_a_k1_cell_names_no_documents_rather_than_calling_it_closed_book(
    tmp_path,
    monkeypatch,
    capsys,
    page,  # noqa: F811
) -> None:
    """A k = 1 record without documents was labelled "Documents in prompt order (0) / No documents
    (closed-book)" on the example page (issue 52); a closed-book cell still says closed-book."""
    src = write_jsonl(tmp_path / "preds.jsonl", records())
    assert score([str(src), "--out", "job"], tmp_path, monkeypatch, capsys)[0] == 0
    code, out, err = rr_main(["report", "job", "--out", "report"], monkeypatch, capsys)
    assert code == 0, err
    goto(page, tmp_path / "report" / "site", "examples.html")
    page.click("#rows tr[data-ex='q2'] a")
    page.wait_for_selector("body[data-ready='1'] #panel-a h3")
    page.locator("button.cell[aria-label^='bm25, k = 1, original:']").first.click()
    page.wait_for_selector("#panel-a h3:has-text('k = 1, original')")
    panel = page.inner_text("#panel-a")
    assert "Documents in prompt order (not recorded)" in panel and "closed-book" not in panel
    assert "Window fitting" not in panel
    assert "name no documents" in page.inner_text("#panel-a p.no-docs")
    page.locator("button.cell[aria-label^='closed-book']").first.click()
    page.wait_for_selector("#panel-a h3:has-text('closed-book')")
    assert page.inner_text("#panel-a p.no-docs") == "No documents (closed-book)."
