"""Sweeps keep every record (issue 52): two sweeps of one name share ``multirun/<name>/`` and the
second overwrote ``multirun.yaml``, so a job the first sweep left got the second sweep's command as
its "finish it" hint; ``rr -m`` joined every failure on one line with no re-run command; ``rr status``
exited 0 with failed jobs. Real ``rr -m`` runs on the simulated reader (the sweep's bookkeeping is
what is checked, not a model's answers)."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

from rr.resume import finish_command, status_report
from rr.sweepfolder import COMMAND, SWEEP_RECORD

from .test_resume import rr_cli

SIM = ["generator=simulated", "dataset=synthetic", "strategy=[closed_book]", "grid.k=[0]", "dataset.n=2"]


def test_two_sweeps_of_one_name_keep_both_records_and_each_jobs_command(tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = rr_cli(["-m", *SIM, "seed=0,1", f"paths.output_root={out}"], tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    second = rr_cli(["-m", *SIM, "seed=2", f"paths.output_root={out}"], tmp_path)
    assert second.returncode == 0, second.stderr[-2000:]
    sweep = out / "multirun" / "cao2025_mini"
    assert len(list(sweep.glob(SWEEP_RECORD.format("*")))) == 2  # multirun.yaml is the second's alone
    folders = {
        json.loads((f / COMMAND).read_text())["argv"][-2]: f
        for f in sweep.iterdir()
        if (f / COMMAND).exists()
    }
    assert sorted(folders) == ["seed=0", "seed=1", "seed=2"]
    shutil.rmtree(folders["seed=1"])  # the first sweep's job, gone: missing, as that sweep asked for it
    (missing,) = [s for s in status_report(out).states if s.state == "missing"]
    assert "seed=1" in missing.detail
    assert "seed=0,1" in finish_command(missing) and "seed=2" not in finish_command(missing)
    # a job's own record names it alone, through its sweep's -m, into its own folder
    (done0,) = [s for s in status_report(out).states if s.path == folders["seed=0"]]
    assert finish_command(done0).startswith("rr -m ") and "seed=0" in shlex.split(finish_command(done0))


def test_failed_jobs_one_line_each_with_their_rerun_command_and_status_fails(tmp_path: Path) -> None:
    out = tmp_path / "out"
    paths = f"dataset.path={tmp_path / 'a.jsonl'},{tmp_path / 'b.jsonl'}"  # neither exists: both fail
    args = ["-m", "generator=simulated", "dataset=jsonl", paths, "strategy=[closed_book]", "grid.k=[0]"]
    done = rr_cli([*args, f"paths.output_root={out}"], tmp_path)
    assert done.returncode == 2
    # a missing file is the job's configuration: re-running as it is cannot help, and the line says so
    lines = [
        line for line in done.stderr.splitlines() if "will not help (it failed on its configuration)" in line
    ]
    assert (
        len(lines) == 2
        and any("a.jsonl" in line for line in lines)
        and any("b.jsonl" in line for line in lines)
    )
    assert "rr: 2 of 2 jobs failed:" in done.stderr
    status = rr_cli(["status", str(out)], tmp_path)
    assert status.returncode == 1
    reruns = [line.split("then: ", 1)[1] for line in status.stderr.splitlines() if "then: rr -m " in line]
    assert len(reruns) == 2
    assert rr_cli(["status", str(out), "--ok-if-failed"], tmp_path).returncode == 0
    # the printed command re-runs that one job, in its own folder
    (rerun_a,) = [r for r in reruns if "a.jsonl" in r]
    again = rr_cli(shlex.split(rerun_a)[1:], tmp_path)
    assert again.returncode == 2 and "1 of 1 jobs failed" in again.stderr
    assert len([f for f in (out / "multirun" / "cao2025_mini").iterdir() if (f / COMMAND).exists()]) == 2


def test_a_job_that_crashed_gets_a_plain_rerun_command(tmp_path: Path, monkeypatch, capsys) -> None:
    """Not a configuration error (the model crashed): re-running may help, and the hint says re-run."""
    from rr.generation.simulated import SimulatedGenerator

    from .test_cli_errors import rr_main

    def crash(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        raise RuntimeError("CUDA out of memory")

    monkeypatch.setattr(SimulatedGenerator, "generate", crash)
    code, _, err = rr_main(["-m", *SIM, "seed=0", f"paths.output_root={tmp_path}"], monkeypatch, capsys)
    assert code == 2 and "CUDA out of memory; re-run: rr -m " in err and "will not help" not in err
    code, _, err = rr_main(["status", str(tmp_path)], monkeypatch, capsys)
    assert code == 1 and "; re-run: rr -m " in err
