"""A job's runs, told apart: ``force=true`` keeps the earlier run's record, a job started beside a
running one does not say it resumes, and the sweep table and ``rr status`` give one wall time
(issue 36, part 6). Closed-book jobs of the simulated reader on the synthetic task (seconds each)."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
from pathlib import Path

import pytest

from .test_cli_errors import rr_main
from .test_sweep_report import CLOSED_BOOK

#: One closed-book job on 2 questions: no retrieval, no model.
JOB = CLOSED_BOOK


def _folder(out: Path) -> Path:
    (job,) = (out / "runs" / "cao2025_mini").iterdir()
    return job


def _status_detail(folder: Path, monkeypatch, capsys) -> str:
    code, out, err = rr_main(["status", str(folder)], monkeypatch, capsys)
    assert code == 0, err
    return " ".join(out.split())


def test_force_keeps_the_earlier_runs_record(tmp_path: Path, monkeypatch, capsys) -> None:
    args = [*JOB, f"paths.output_root={tmp_path / 'out'}"]
    code, _, err = rr_main(args, monkeypatch, capsys)
    assert code == 0, err
    job = _folder(tmp_path / "out")
    first = json.loads((job / "summary.json").read_text())
    first_scores = (job / "scores.parquet").read_bytes()
    code, _, err = rr_main([*args, "force=true"], monkeypatch, capsys)
    assert code == 0, err
    latest = json.loads((job / "summary.json").read_text())
    assert latest["job_id"] == first["job_id"]
    # the first run's record is kept, numbered, where no reader takes it for a job of its own
    assert json.loads((job / "history" / "1.summary.json").read_text()) == first
    assert (job / "history" / "1.scores.parquet").read_bytes() == first_scores
    shown = _status_detail(job, monkeypatch, capsys)
    assert f"wall {latest['wall_s']:.1f} s" in shown
    assert (
        f"1 earlier run (history/): #1 wall {first['wall_s']:.1f} s, {first['model_calls']} model calls"
        in shown
    )
    from rr.results import load

    assert len(load(str(tmp_path / "out"))) == latest["rows"]  # the earlier table is not read as a second job
    code, _, err = rr_main([*args, "force=true"], monkeypatch, capsys)  # a third run: a second entry
    assert code == 0, err
    assert json.loads((job / "history" / "2.summary.json").read_text()) == latest
    assert "2 earlier runs (history/): #1 wall" in _status_detail(job, monkeypatch, capsys)


def _started_not_finished(tmp_path: Path, monkeypatch, capsys) -> tuple[list[str], Path]:
    """A job folder as a run that started and has not finished leaves it (no summary, no table)."""
    args = [*JOB, f"paths.output_root={tmp_path / 'out'}"]
    code, _, err = rr_main(args, monkeypatch, capsys)
    assert code == 0, err
    job = _folder(tmp_path / "out")
    for name in ("summary.json", "scores.parquet"):
        (job / name).unlink()
    return args, job


def test_a_job_started_beside_a_running_one_does_not_say_it_resumes(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    args, job = _started_not_finished(tmp_path, monkeypatch, capsys)
    other = subprocess.Popen(["sleep", "60"])  # the other run of the job, still going
    try:
        record = {
            "job_id": job.name,
            "pid": other.pid,
            "host": socket.gethostname(),
            "at": "2026-11-28 10:00:00",
        }
        (job / "running.json").write_text(json.dumps(record))
        assert "running now (pid" in _status_detail(job, monkeypatch, capsys)
        code, out, err = rr_main(args, monkeypatch, capsys)
    finally:
        other.kill()
        other.wait()
    assert code == 0, err
    assert "resuming" not in out
    assert f"job {job} is running now in another process (pid {other.pid} since 2026-11-28 10:00:00)" in out
    # this run's own record is gone when it ends, the other's stays until the other ends
    assert json.loads((job / "running.json").read_text())["pid"] == other.pid


@pytest.mark.parametrize("where", ["here", "another machine"])
def test_a_job_whose_run_was_killed_resumes_and_says_why(
    where: str, tmp_path: Path, monkeypatch, capsys
) -> None:
    """The record names a process that is gone (its run was killed: SIGKILL, out of memory), or one on
    another machine, which cannot be checked from here: both resume, each saying what is known."""
    args, job = _started_not_finished(tmp_path, monkeypatch, capsys)
    gone = subprocess.Popen(["true"])
    gone.wait()
    host = socket.gethostname() if where == "here" else "node-b"
    record = {"job_id": job.name, "pid": gone.pid, "host": host, "at": "2026-11-28 10:00:00"}
    (job / "running.json").write_text(json.dumps(record))
    since = f"pid {gone.pid} since 2026-11-28 10:00:00"
    if where == "here":
        assert f"its run ({since}) stopped without finishing (killed)" in _status_detail(
            job, monkeypatch, capsys
        )
        said = f"resuming job {job} (its run, {since}, stopped without finishing)"
    else:
        assert f"started on node-b ({since}): running there, or killed" in _status_detail(
            job, monkeypatch, capsys
        )
        said = f"resuming job {job} (its run on node-b, {since}, has not finished: killed, or still running there)"
    code, out, err = rr_main(args, monkeypatch, capsys)
    assert code == 0, err
    assert said in " ".join(out.split())
    assert not (job / "running.json").exists()


def test_the_sweep_table_and_status_give_one_wall_time(tmp_path: Path, monkeypatch, capsys) -> None:
    """The wall time of a job is its summary's (``run_job``'s clock): the sweep table shows that number,
    not its own clock around the job (which also counts printing the job's report, slowed here)."""
    import rr.reporting.job

    shown = rr.reporting.job.print_job_report

    def slow_report(*a, **k):
        time.sleep(0.5)
        shown(*a, **k)

    monkeypatch.setattr(rr.reporting.job, "print_job_report", slow_report)
    code, out, err = rr_main(
        ["-m", *JOB, "seed=0,1", f"paths.output_root={tmp_path / 'out'}"], monkeypatch, capsys
    )
    assert code == 0, err
    sweep = tmp_path / "out" / "multirun" / "cao2025_mini"
    table = dict(re.findall(r"│ ([0-9a-f]{12}) │[^│]*│ done\s*│ ([\d.]+)\s*│", out))  # job id -> wall s
    assert len(table) == 2, out
    for jid, wall in table.items():
        assert wall == f"{json.loads((sweep / jid / 'summary.json').read_text())['wall_s']:.1f}"
    status = _status_detail(sweep, monkeypatch, capsys)
    for wall in table.values():
        assert f"wall {wall} s" in status


def test_a_jobs_wall_time_is_its_summarys_number_unrounded() -> None:
    # 0.1503 s shows as 0.2 in rr status; rounded to 0.15 first, the sweep table showed 0.1 (the
    # full suite saw exactly that: '0.1' == '0.2').
    from rr.commands.status import job_record
    from rr.jobfolder import JobSummary

    rec = job_record("done", "abc", "/x", JobSummary(wall_s=0.1503), wall_s=9.0)
    assert rec.wall_s == 0.1503 and f"{rec.wall_s:.1f}" == "0.2"
    assert job_record("failed", "abc", "/x", None, wall_s=1.23456).wall_s == 1.23
