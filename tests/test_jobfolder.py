"""The job folder's one owner (issue 37): its file names spelled in one module, ``summary.json``
written and read through one typed, versioned definition, old folders (no version) still read."""

from __future__ import annotations

import json
import re
from pathlib import Path

from rr.jobfolder import SUMMARY_FILE, SUMMARY_VERSION, JobSummary, read_summary, write_summary
from rr.pipeline import run_job
from rr.resume import finished, folder_state

from .conftest import compose_config

ROOT = Path(__file__).resolve().parents[1] / "rr"

#: A summary as jobs wrote it before ``summary_version`` (and before ``closed_book_accuracy``).
OLD = {
    "job_id": "0123456789ab",
    "name": "old",
    "examples": 2,
    "rows": 4,
    "accuracy": 0.25,
    "model_calls": 3,
    "metrics": [],
    "wall_s": 1.5,
    "a_plugin_key": {"x": 1},
}


def test_an_old_summary_without_a_version_still_reads(tmp_path: Path) -> None:
    (tmp_path / SUMMARY_FILE).write_text(json.dumps(OLD))
    (tmp_path / "scores.parquet").write_bytes(b"")
    s = read_summary(tmp_path)
    assert s is not None
    assert s.summary_version == 0
    assert (s.job_id, s.rows, s.accuracy, s.model_calls) == ("0123456789ab", 4, 0.25, 3)
    assert s.closed_book_accuracy is None and "closed_book_accuracy" not in s  # absent, not null
    assert s.extra == {"a_plugin_key": {"x": 1}}
    assert s.to_dict() == {"summary_version": 0, **OLD}
    assert finished(tmp_path, "0123456789ab") is not None and finished(tmp_path, "other") is None


def test_a_torn_or_missing_summary_reads_as_none(tmp_path: Path) -> None:
    assert read_summary(tmp_path) is None
    (tmp_path / SUMMARY_FILE).write_text('{"job_id": "01')
    assert read_summary(tmp_path) is None
    (tmp_path / SUMMARY_FILE).write_text("[1, 2]")
    assert read_summary(tmp_path) is None


def test_the_version_is_written_first_and_the_summary_round_trips(tmp_path: Path) -> None:
    s = JobSummary(job_id="abc", rows=3).with_fields(planted={"reps": 2})
    write_summary(tmp_path, s)
    data = json.loads((tmp_path / SUMMARY_FILE).read_text())
    assert next(iter(data)) == "summary_version" and data["summary_version"] == SUMMARY_VERSION == 3
    assert "approximate_indexes" not in data and data["planted"] == {"reps": 2}
    back = read_summary(tmp_path)
    assert back is not None and back.to_dict() == data


def test_a_job_writes_a_versioned_summary_that_reads_back_byte_for_byte(tmp_path: Path) -> None:
    cfg = compose_config(
        ["generator=simulated", "dataset=synthetic", "corpus=synthetic", "retriever=[bm25]", "dataset.n=2"],
        tmp_path,
    )
    cfg.grid.k = [1, 2]
    result = run_job(cfg, tmp_path / "job")
    text = (tmp_path / "job" / SUMMARY_FILE).read_text()
    data = json.loads(text)
    assert list(data)[:2] == ["summary_version", "job_id"] and data["summary_version"] == SUMMARY_VERSION
    back = read_summary(tmp_path / "job")
    assert back is not None and json.dumps(back.to_dict(), indent=1, default=str) == text
    # the returned summary is the written one (its stage timings go on: the write stage ends after)
    returned = {k: v for k, v in result.summary.items() if k != "timings_s"}
    assert returned == {k: v for k, v in data.items() if k != "timings_s"} and data["rows"] > 0
    assert folder_state(tmp_path / "job").state == "done"


#: The job folder's names, each spelled only in rr/jobfolder.py.
NAMES = ("config.yaml", "summary.json", "scores.parquet", "prompts.parquet")


def test_the_job_folder_names_are_spelled_in_one_module() -> None:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "jobfolder.py":
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search("|".join(rf"[\"']{re.escape(name)}[\"']" for name in NAMES), line):
                found.append(f"rr/{rel}:{n}: {line.strip()}")
    assert not found, "spell these with rr.jobfolder's constants:\n" + "\n".join(found)
