"""The job folder's one owner (issue 37): its file names spelled in one module, ``summary.json``
written and read through one typed, versioned definition, old folders (no version) still read."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from rr.environment import describe
from rr.jobfolder import (
    MIGRATIONS,
    SUMMARY_FILE,
    SUMMARY_VERSION,
    EnvironmentRecord,
    ExampleSet,
    GenerationStep,
    JobSummary,
    MetricRow,
    Planted,
    PrefixCacheStats,
    read_summary,
    write_summary,
)
from rr.pipeline import run_job
from rr.resume import finished, folder_state

from .conftest import compose_config

REPO = Path(__file__).resolve().parents[1]
ROOT = REPO / "rr"

#: Summaries as each older version wrote them (and the current one), one file per version.
STORED = Path(__file__).resolve().parent / "summaries"


def stored(version: int) -> dict:
    return json.loads((STORED / f"v{version}.json").read_text())


def read_stored(version: int, tmp_path: Path) -> JobSummary:
    (tmp_path / SUMMARY_FILE).write_text((STORED / f"v{version}.json").read_text())
    s = read_summary(tmp_path)
    assert s is not None
    return s


def test_every_version_step_has_a_migration_and_a_stored_summary() -> None:
    assert sorted(MIGRATIONS) == list(range(SUMMARY_VERSION))
    assert sorted(int(p.stem[1:]) for p in STORED.glob("v*.json")) == list(range(SUMMARY_VERSION + 1))


def test_migration_0_to_1_a_summary_without_a_version(tmp_path: Path) -> None:
    """Version 0 (written before ``summary_version``, and before ``closed_book_accuracy``)."""
    old = stored(0)
    assert MIGRATIONS[0](old) == {"summary_version": 1, **old}
    s = read_stored(0, tmp_path)
    (tmp_path / "scores.parquet").write_bytes(b"")
    assert s.summary_version == SUMMARY_VERSION
    assert (s.job_id, s.rows, s.accuracy, s.model_calls) == ("0123456789ab", 4, 0.25, 3)
    # absent, not null: its accuracy is the mean of all rows
    assert s.closed_book_accuracy is None and s.accuracy_of_all_rows
    assert s.extra == {"a_plugin_key": {"x": 1}}
    assert s.to_dict() == {"summary_version": SUMMARY_VERSION, **old}
    assert finished(tmp_path, "0123456789ab") is not None and finished(tmp_path, "other") is None


def test_migration_1_to_2_a_summary_without_an_environment(tmp_path: Path) -> None:
    old = stored(1)
    assert MIGRATIONS[1](old) == {**old, "summary_version": 2}
    s = read_stored(1, tmp_path)
    assert s.environment is None and describe(s.environment) == "?"  # no record: an older job
    assert not s.accuracy_of_all_rows and s.closed_book_accuracy == 0.5
    assert s.generation_steps == [GenerationStep("closed_book", 2, 2, 0, 2, 0, 0.004)]
    assert s.metrics[0].system == {"generator": "simulated", "strategy": "vanilla"}
    assert "environment" not in s.to_dict()


def test_migration_2_to_3_a_summary_without_a_public_model(tmp_path: Path) -> None:
    old = stored(2)
    assert MIGRATIONS[2](old) == {**old, "summary_version": 3}
    s = read_stored(2, tmp_path)
    assert s.public_model is None and s.model_id == "rr-simulated-reader"  # readers fall back to it
    assert "public_model" not in s.to_dict()


def test_the_current_version_reads_into_typed_records(tmp_path: Path) -> None:
    s = read_stored(SUMMARY_VERSION, tmp_path)
    assert s.model_id == "rr-simulated-reader" and s.public_model == "rr-simulated-reader"
    assert s.environment == EnvironmentRecord(
        "218b13699483", True, [], 0, lock_files=["locks/rr.txt", "locks/rr-data.txt"]
    )
    assert s.prefix_cache == {"vllm": PrefixCacheStats(queries=120, hits=80)}
    assert [st.step for st in s.generation_steps] == ["closed_book", "vanilla:answer"]
    assert [(m.retriever, m.rsr) for m in s.metrics] == [
        ("bm25", 1.0),
        ("dense", 0.5),
        ("mean(bm25,dense)", 0.75),
    ]
    assert s.metrics[2] == MetricRow.from_dict(stored(SUMMARY_VERSION)["metrics"][2])
    assert s.to_dict() == stored(SUMMARY_VERSION)  # the JSON as written (key order aside)


#: Every nested part of a summary as a job writes it (a simulated reader's planted values, an
#: approximate index with and without its recall on the job's queries, a judge beside the model).
NESTED = {
    "model": {"model_id": "HuggingFaceTB/SmolLM2-135M-Instruct", "revision": "abc", "dtype": "float32"},
    "example_set": {"examples": 4, "fingerprint": "0123456789ab"},
    "cells_short_of_k": [
        {
            "retriever": "oracle",
            "k": 3,
            "query_perturbation": "typo",
            "queries": 4,
            "queries_short": 4,
            "fewest": 1,
        }
    ],
    "cells_cut_to_window": [
        {
            "strategy": "vanilla",
            "retriever": "bm25",
            "k": 2,
            "order": "original",
            "rows": 4,
            "rows_cut": 1,
            "fewest": 1,
        }
    ],
    "other_models": [
        {
            "model": {"model_id": "judge", "revision": "r", "reported_model": "judge-2024"},
            "requests": 3,
            "unique_requests": 2,
            "cache_hits": 1,
            "model_calls": 1,
            "prompt_tokens": 90,
            "completion_tokens": 4,
            "seconds": 0.5,
            "over_window": 0,
        }
    ],
    "approximate_indexes": {
        "dense": {
            "spec": "HNSW16",
            "train_size": 100,
            "seed": 0,
            "n": 120,
            "search_params": None,
            "recall": {"recall@10": 0.9},
            "recall_caveat": "passages as queries",
            "job_queries": {
                "queries": 2,
                "of": 2,
                "seed": 0,
                "recall@1": 0.5,
                "warn_below": 0.9,
                "below_threshold": True,
            },
        },
        "dense2": {
            "spec": "IVF4,Flat",
            "train_size": 8,
            "seed": 1,
            "n": 9,
            "search_params": "nprobe=2",
            "recall": {},
            "recall_caveat": "c",
        },
    },
    "planted": {
        "method": "monte_carlo",
        "reps": 2,
        "params": {"knowledge": 0.3},
        "metrics": [
            {
                "generator": "g",
                "strategy": "vanilla",
                "retriever": "bm25",
                "ndr": 0.9,
                "rsr": 1.0,
                "ror": 0.8,
                "robustness": 0.9,
                "accuracy": 0.5,
                "closed_book_accuracy": 0.3,
                "n_examples": 4,
                "n_orders": 2,
            }
        ],
        "cells": [
            {
                "generator": "g",
                "strategy": "vanilla",
                "retriever": "bm25",
                "doc_perturbation": "none",
                "k": 1,
                "order": "original",
                "planted_accuracy": 0.5,
                "planted_refusal_rate": 0.0,
                "accuracy": 0.25,
                "refusal_rate": None,
                "n": 4,
            }
        ],
    },
    "rgb_rates": [
        {
            "generator": "g",
            "strategy": "rgb",
            "doc_perturbation": "counterfactual",
            "noise_ratio": None,
            "n_rows": 3,
            "n_skipped": 0,
            "accuracy": 0.5,
            "mean_score": 0.5,
            "closed_book_accuracy": 1.0,
            "rejection_all_rate": None,
            "rejection_rate": None,
            "error_detection_rate": 0.25,
            "error_correction_rate": None,
            "error_correction_rate_evalue": 1.0,
        }
    ],
}


def test_every_nested_part_reads_as_its_record_and_writes_back_as_read() -> None:
    s = JobSummary.from_dict({**stored(SUMMARY_VERSION), **NESTED})
    assert s.model_id == "HuggingFaceTB/SmolLM2-135M-Instruct" and s.model.extra == {"dtype": "float32"}
    assert s.example_set == ExampleSet(4, "0123456789ab")
    assert s.cells_short_of_k[0].query_perturbation == "typo" and s.cells_short_of_k[0].fewest == 1
    (cut,) = s.cells_cut_to_window
    assert (cut.value("strategy"), cut.k, cut.rows_cut, cut.value("doc_perturbation")) == (
        "vanilla",
        2,
        1,
        None,
    )
    (judge,) = s.other_models
    assert judge.model.model_id == "judge" and judge.model_calls == 1 and judge.seconds == 0.5
    dense = s.approximate_indexes["dense"]
    assert dense.spec == "HNSW16" and dense.recall == {"recall@10": 0.9}
    assert dense.job_queries.recall == {"recall@1": 0.5} and dense.job_queries.below_threshold
    assert s.approximate_indexes["dense2"].job_queries is None
    (row,) = s.planted.metrics
    assert (row.value("strategy"), row.ror, row.value("nope")) == ("vanilla", 0.8, None)
    (cell,) = s.planted.cells
    assert (cell.value("generator"), cell.k, cell.planted_accuracy, cell.refusal_rate) == ("g", 1, 0.5, None)
    (rates,) = s.rgb_rates
    assert (rates.value("doc_perturbation"), rates.error_detection_rate, rates.rejection_rate_llm) == (
        "counterfactual",
        0.25,
        None,
    )
    assert s.to_dict() == {**stored(SUMMARY_VERSION), **NESTED}


def test_a_torn_or_missing_summary_reads_as_none(tmp_path: Path) -> None:
    assert read_summary(tmp_path) is None
    (tmp_path / SUMMARY_FILE).write_text('{"job_id": "01')
    assert read_summary(tmp_path) is None
    (tmp_path / SUMMARY_FILE).write_text("[1, 2]")
    assert read_summary(tmp_path) is None


def test_the_version_is_written_first_and_the_summary_round_trips(tmp_path: Path) -> None:
    s = JobSummary(job_id="abc", rows=3).with_fields(planted=Planted(method="monte_carlo", reps=2))
    write_summary(tmp_path, s)
    data = json.loads((tmp_path / SUMMARY_FILE).read_text())
    assert next(iter(data)) == "summary_version" and data["summary_version"] == SUMMARY_VERSION == 3
    assert "approximate_indexes" not in data and data["planted"] == {
        "method": "monte_carlo",
        "reps": 2,
        "params": {},
        "metrics": [],
        "cells": [],
    }
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
    returned = {k: v for k, v in result.summary.to_dict().items() if k != "timings_s"}
    assert returned == {k: v for k, v in data.items() if k != "timings_s"} and data["rows"] > 0
    assert folder_state(tmp_path / "job").state == "done"


#: Each folder format's owner, and the file names spelled there alone.
OWNERS = {
    "rr/jobfolder.py": ("config.yaml", "summary.json", "scores.parquet", "prompts.parquet"),
    "rr/sweepfolder.py": ("multirun.yaml", "failed.json", "interrupted.json", "running.json"),
}
#: Where a name may not be spelled: rr, and the scripts beside it that read its folders.
SCANNED = ("rr", "tools", "benchmarks")


def spelled_outside_owner(files: list[Path]) -> list[str]:
    """``path:line: text`` of each line of ``files`` that spells a folder format's name as a string
    outside that format's owner."""
    found = []
    for path in files:
        rel = path.relative_to(REPO).as_posix()
        names = [n for owner, names in OWNERS.items() if rel != owner for n in names]
        pattern = re.compile("|".join(rf"[\"']{re.escape(name)}[\"']" for name in names))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                found.append(f"{rel}:{n}: {line.strip()}")
    return found


def test_the_folder_names_are_spelled_in_their_owner_alone() -> None:
    files = sorted(p for folder in SCANNED for p in (REPO / folder).rglob("*.py"))
    assert any(p.parts[-2] == "benchmarks" for p in files) and any(p.parts[-2] == "tools" for p in files)
    found = spelled_outside_owner(files)
    assert not found, "spell these with rr.jobfolder's / rr.sweepfolder's constants:\n" + "\n".join(found)


def test_the_owner_scan_finds_a_name_spelled_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "x.py").write_text('a = "multirun.yaml"\nb = SUMMARY_FILE\n')
    (tmp_path / "rr").mkdir()
    (tmp_path / "rr" / "sweepfolder.py").write_text('MULTIRUN_FILE = "multirun.yaml"\n')
    files = [tmp_path / "tools" / "x.py", tmp_path / "rr" / "sweepfolder.py"]
    assert spelled_outside_owner(files) == ['tools/x.py:1: a = "multirun.yaml"']


#: A summary read by its JSON keys: ``summary["rows"]``, ``summary.get(...)``, ``summary.items()``,
#: ``"x" in summary`` (any name holding ``summary``; ``job.summary`` too).
KEY_READ = re.compile(
    r"""\b\w*summary\w*\s*(\[\s*["']|\.get\(|\.items\(\)|\.keys\(\))|["']\w+["']\s+(not\s+)?in\s+[\w.]*summary\b"""
)


def test_summaries_are_read_by_attribute_outside_their_owner() -> None:
    """rr, its tools and its benchmarks read a job's summary through :class:`JobSummary`'s attributes
    (its JSON keys are spelled in rr/jobfolder.py alone)."""
    found = []
    for folder in ("rr", "tools", "benchmarks"):
        for path in sorted((REPO / folder).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            if rel == "rr/jobfolder.py":
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if KEY_READ.search(line):
                    found.append(f"{rel}:{n}: {line.strip()}")
    assert not found, "read these summaries by attribute (rr.jobfolder.JobSummary):\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("line", "read"),
    [
        ('x = summary["rows"]', True),
        ("x = job.summary.get('environment')", True),
        ('if "closed_book_accuracy" not in summary:', True),
        ("for k, v in s.summary.items():", True),
        ("x = summary.rows", False),
        ("run.summary.update(flat)", False),
        ("x = summary.to_dict().items()", False),
    ],
)
def test_the_key_read_pattern(line: str, read: bool) -> None:
    assert bool(KEY_READ.search(line)) == read
