"""A report says what it left out (issue 36, part 2): ``rr report`` on a folder in which a job was
interrupted, failed or never started names each such job, with its state and the command that
finishes it, on the console and in ``report/README.md``; ``--strict`` exits non-zero."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

from rr.sweepfolder import FAILED, INTERRUPTED, mark_stopped

from .test_resume import rr_cli
from .test_unfilled_k import SIMULATED

SIM = [*SIMULATED, "grid.k=[1,2]", "grid.orders=[original,reversed]", "progress=false"]


def test_a_report_names_every_job_it_left_out(tmp_path: Path) -> None:
    sweep = ["-m", *SIM, "seed=0,1,2,3", f"paths.output_root={tmp_path / 'out'}"]
    ran = rr_cli(sweep, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr[-2000:]
    root = tmp_path / "out" / "multirun" / "cao2025_mini"
    jobs = sorted(p for p in root.iterdir() if (p / "summary.json").exists())
    assert len(jobs) == 4
    ids = [json.loads((j / "summary.json").read_text())["job_id"] for j in jobs]
    # one job interrupted, one failed, one never started (its folder is gone)
    for done in ("summary.json", "scores.parquet"):  # killed mid-generation: both are written at the end
        (jobs[1] / done).unlink()
    mark_stopped(jobs[1], ids[1], INTERRUPTED, "SIGINT")
    (jobs[2] / "summary.json").unlink()
    (jobs[2] / "scores.parquet").unlink()
    mark_stopped(jobs[2], ids[2], FAILED, "RuntimeError: out of memory")
    shutil.rmtree(jobs[3])

    report = rr_cli(["report", str(root), "--no-site", "--resamples", "50"], cwd=tmp_path)
    assert report.returncode == 0, report.stderr[-2000:]  # before: said nothing of the other three
    out = report.stdout
    finish = "rr -m " + " ".join(shlex.quote(o) for o in sweep[1:])
    assert "3 of 4 jobs below" in out and "not in this report" in out
    seeds = [json.loads((j / "command.json").read_text())["argv"] for j in jobs[1:3]]
    for jid, state, own in (
        (ids[1], "partial", seeds[0]),
        (ids[2], "failed", seeds[1]),
        (ids[3], "missing", None),
    ):
        line = next(line for line in out.splitlines() if jid in line)
        # a job's folder: the command it recorded (that job alone); a missing one: its sweep's
        expected = finish if own is None else " ".join(shlex.quote(a) if i else a for i, a in enumerate(own))
        assert state in line and f"finish it: {expected}" in line, line
        assert own is None or "seed=0,1,2,3" not in line
    readme = (root / "report" / "README.md").read_text()
    assert "Read 1 job(s)" in readme and "3 of 4 jobs below" in readme
    for jid in ids[1:]:
        assert jid in readme
    assert "interrupted" in readme and "out of memory" in readme and finish in readme

    strict = rr_cli(["report", str(root), "--no-site", "--resamples", "50", "--strict"], cwd=tmp_path)
    assert strict.returncode != 0 and "3 of 4 jobs below" in strict.stdout + strict.stderr
    # said first, before the report is written (it was said only after the report and the site)
    assert strict.stdout.startswith("rr report --strict: 3 of 4 jobs below"), strict.stdout[:300]
    assert "then rr exits with status 1" in strict.stdout.splitlines()[0]
    # every job done: --strict passes
    done = rr_cli(["report", str(jobs[0]), "--no-site", "--resamples", "50", "--strict"], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_an_unfinished_run_beside_a_finished_one_is_named(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert rr_cli([*SIM, f"paths.output_root={out}"], cwd=tmp_path).returncode == 0
    second = [*SIM, "seed=5", f"paths.output_root={out}"]
    assert rr_cli(second, cwd=tmp_path).returncode == 0
    runs = out / "runs" / "cao2025_mini"
    cut = next(p for p in runs.iterdir() if "seed=5" in (p / ".hydra" / "overrides.yaml").read_text())
    for done in ("summary.json", "scores.parquet"):  # killed before its results
        (cut / done).unlink()
    report = rr_cli(["report", str(runs), "--no-site", "--resamples", "50"], cwd=tmp_path)
    assert report.returncode == 0, report.stderr[-2000:]
    line = next(line for line in report.stdout.splitlines() if cut.name in line)
    assert "partial" in line and "rr " + " ".join(shlex.quote(o) for o in second) in line
