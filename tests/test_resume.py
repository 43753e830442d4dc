"""Preemption safety: a job SIGKILLed mid-generation and re-run ends with the same score table;
a finished job is skipped; ``rr status`` tells done from partial; the cache survives torn lines."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from rr.generation.base import Completion
from rr.generation.cache import GenerationCache
from rr.resume import finished, folder_state, status

REPO = Path(__file__).resolve().parent.parent

#: 2 questions, BM25 only, k = 1 in two orders (the same prompt: deduplicated) plus the
#: closed-book cell: 4 distinct prompts in two steps, written to the cache 2 at a time.
SMALL = [
    "dataset.n=2",
    "retriever=bm25",
    "grid.k=[1]",
    "grid.orders=[original,reversed]",
    "corpus.max_passages=300",
    "generator.max_new_tokens=4",
    "generator.batch_size=2",
    "flush_every=2",
    "progress=false",
]

#: :data:`SMALL` on the simulated reader and the synthetic task, slowed to 0.5 s per prompt so that a
#: kill lands mid-generation: what is checked is the pipeline's and the cache's, not a model's answers.
SIMULATED = [
    "generator=simulated",
    "dataset=synthetic",
    "corpus=synthetic",
    "generator.latency_s=0.5",
    *SMALL,
]


def rr_env() -> dict[str, str]:
    """Environment for ``python -m rr`` subprocesses that import *this* checkout's ``rr``."""
    path = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PYTHONPATH": path}


def rr_cli(args: list[str], cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rr", *args],
        cwd=cwd,
        env=rr_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def wait_for_a_cached_completion(proc: subprocess.Popen, output_root: Path, timeout: float = 300) -> None:
    """Return once the job ``proc`` (outputs under ``output_root``) has a completion in its generation
    cache on disk, or has ended, or after ``timeout`` seconds: a signal sent then lands mid-generation."""
    shards = output_root / "cache" / "generations"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if any(p.stat().st_size for p in shards.glob("*/*.jsonl")):
            return
        time.sleep(0.05)


def _job_dir(root: Path) -> Path:
    (d,) = (root / "runs" / "cao2025_mini").iterdir()
    return d


def test_sigkill_mid_generation_then_rerun_gives_identical_table(tmp_path: Path) -> None:
    full = rr_cli([*SIMULATED, f"paths.output_root={tmp_path / 'full'}"], tmp_path)
    assert full.returncode == 0, full.stderr[-3000:]
    full_dir = _job_dir(tmp_path / "full")
    full_summary = json.loads((full_dir / "summary.json").read_text())
    assert full_summary["model_calls"] == 4

    out = tmp_path / "killed"
    proc = subprocess.Popen(
        [sys.executable, "-m", "rr", *SIMULATED, f"paths.output_root={out}"],
        cwd=tmp_path,
        env=rr_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    shards = out / "cache" / "generations"
    try:
        wait_for_a_cached_completion(proc, out)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the job finished before it could be killed"
    job = _job_dir(out)
    assert not (job / "summary.json").exists()
    assert folder_state(job).state == "partial"
    lines = sum(len(p.read_text().splitlines()) for p in shards.glob("*/*.jsonl"))
    assert 1 <= lines < 4

    again = rr_cli([*SIMULATED, f"paths.output_root={out}"], tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    resumed = json.loads((job / "summary.json").read_text())
    assert resumed["model_calls"] < full_summary["model_calls"]
    assert resumed["model_calls"] + resumed["cache_hits"] == full_summary["model_calls"]
    pd.testing.assert_frame_equal(
        pd.read_parquet(job / "scores.parquet"), pd.read_parquet(full_dir / "scores.parquet")
    )
    assert [s.state for s in status(out)] == ["done"]

    # A third run finds the job done and says where its results are; force=true re-runs it.
    mtime = (job / "summary.json").stat().st_mtime_ns
    skip = rr_cli([*SIMULATED, f"paths.output_root={out}"], tmp_path)
    assert skip.returncode == 0 and "already done" in skip.stdout and str(job) in skip.stdout
    said = " ".join(skip.stdout.split())  # rich wraps long lines
    assert "was already done: nothing re-run, model calls 0 (force=true re-runs it)" in said
    assert "Answer recall of the top-k documents" in said  # the job's tables again, from summary.json
    assert (job / "summary.json").stat().st_mtime_ns == mtime
    forced = rr_cli([*SIMULATED, f"paths.output_root={out}", "force=true"], tmp_path)
    assert forced.returncode == 0, forced.stderr[-3000:]
    assert json.loads((job / "summary.json").read_text())["model_calls"] == 0
    status_out = rr_cli(["status", str(out)], tmp_path)
    assert status_out.returncode == 0 and "1 done, 0 partial, 0 missing" in status_out.stdout


def _fake_job(folder: Path, jid: str, summary_text: str | None, scores: bool) -> None:
    folder.mkdir(parents=True)
    if summary_text is not None:
        (folder / "summary.json").write_text(summary_text)
    if scores:
        pd.DataFrame({"x": [1]}).to_parquet(folder / "scores.parquet")


@pytest.mark.parametrize(
    ("summary_text", "scores", "done"),
    [
        ('{"job_id": "abc", "accuracy": 0.5}', True, True),
        ('{"job_id": "abc", "accuracy": 0.5}', False, False),  # no score table
        ('{"job_id": "other"}', True, False),  # another job's summary
        ('{"job_id": "ab', True, False),  # torn summary
        (None, True, False),  # killed between the table and the summary
    ],
)
def test_finished_needs_matching_summary_and_scores(
    tmp_path: Path, summary_text: str | None, scores: bool, done: bool
) -> None:
    _fake_job(tmp_path / "j", "abc", summary_text, scores)
    assert (finished(tmp_path / "j", "abc") is not None) is done


def test_cache_skips_torn_line_and_a_recycled_writer_starts_a_fresh_line(tmp_path: Path) -> None:
    ident = {"model_id": "m", "revision": "r"}
    cache = GenerationCache(tmp_path, ident, writer="job")
    cache.put_many([("k1", Completion("one", 3, 1))])
    # A killed writer left half a line at the end of its shard.
    with open(cache.shard, "a", encoding="utf-8") as f:
        f.write('{"key": "k2", "text": "tw')
    # A new process that happens to get the same pid (same shard name) appends to it.
    again = GenerationCache(tmp_path, ident, writer="job")
    assert again.shard == cache.shard and again.torn_lines == 1 and len(again) == 1
    again.put_many([("k3", Completion("three", 3, 1))])
    reread = GenerationCache(tmp_path, ident, writer="job")
    assert reread.get("k1") == Completion("one", 3, 1)
    assert reread.get("k3") == Completion("three", 3, 1)  # not swallowed by the torn line
    assert reread.get("k2") is None and reread.torn_lines == 1


def test_status_prints_bracketed_overrides_verbatim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression: a missing job's overrides ``grid.k=[1,2]`` were read as rich markup and lost."""
    import rr.commands.status
    from rr.commands.status import status_main
    from rr.resume import JobState, StatusReport

    states = [
        JobState("abc123", "missing", None, "retriever=[bm25] grid.k=[1,2] name=[bold]x"),
        # a long folder (as under pytest-xdist's popen-gw0/...) must not be folded across lines
        JobState("def456", "done", tmp_path / ("deep" * 30) / "[red]job", "accuracy 0.5"),
    ]
    monkeypatch.setattr(
        rr.commands.status, "status_report", lambda root, config_dir=None: StatusReport(states)
    )
    assert status_main([str(tmp_path / "[dim]sweep")]) == 0
    out = capsys.readouterr().out
    folder = str(tmp_path / ("deep" * 30) / "[red]job")
    for text in ("retriever=[bm25]", "grid.k=[1,2]", "name=[bold]x", folder, "[dim]sweep"):
        assert text in out, (text, out)
