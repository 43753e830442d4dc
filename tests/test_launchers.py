"""Real 2-job multiruns through joblib and submitit's local executor; the SLURM option composes;
``rr status`` re-expands a sweep and finds its missing and partial jobs.

``rr`` itself runs in-process (:func:`tests.test_cli_errors.rr_main`): the launchers' own processes
(joblib's workers, submitit's jobs) are what is tested, not the command's.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rr.config import compose
from rr.results import load
from rr.resume import expected_jobs, status

from .test_cli_errors import rr_main

#: Two closed-book jobs (seed 0 and 1) on 2 questions: no corpus, no retrieval. The simulated
#: reader on the synthetic task: launchers and status are plumbing, no model's answers matter
#: (a real model's jobs through the launchers: tests/test_end_to_end.py, tests/test_vllm_cpu.py).
SWEEP = [
    "-m",
    "generator=simulated",
    "dataset=synthetic",
    "strategy=closed_book",
    "grid.k=[0]",
    "dataset.n=2",
    "generator.max_new_tokens=4",
    "progress=false",
    "seed=0,1",
]


def _run_sweep(tmp_path: Path, launcher: list[str], monkeypatch, capsys) -> Path:
    code, out, err = rr_main(
        [*SWEEP, *launcher, f"paths.output_root={tmp_path / 'out'}"], monkeypatch, capsys
    )
    assert code == 0, err[-3000:]
    assert "2 done, 0 skipped, 0 resumed, 0 failed" in out  # the sweep table (rr.commands.status)
    # issue 30: each job named by the overrides that set it apart (not by hash only)
    rows = [ln for ln in out.splitlines() if "│" in ln and ("seed=0" in ln or "seed=1" in ln)]
    assert len(rows) == 2 and not any("dataset.n=2" in ln for ln in rows)
    sweep_dir = tmp_path / "out" / "multirun" / "cao2025_mini"
    jobs = sorted(p.parent for p in sweep_dir.glob("*/scores.parquet"))
    assert len(jobs) == 2
    df = load(sweep_dir)
    assert sorted(df["seed"].unique()) == [0, 1] and len(df) == 4
    assert set(df["strategy"]) == {"closed_book"} and set(df["k"]) == {0}
    return sweep_dir


def test_joblib_multirun_and_status(tmp_path: Path, monkeypatch, capsys) -> None:
    sweep_dir = _run_sweep(tmp_path, ["hydra/launcher=parallel"], monkeypatch, capsys)
    expected = expected_jobs(sweep_dir)
    assert len(expected) == 2
    seeds = {jid: next(o for o in overrides if o.startswith("seed=")) for jid, overrides in expected}
    assert sorted(seeds.values()) == ["seed=0", "seed=1"]
    assert all("strategy=closed_book" in overrides for _, overrides in expected)
    assert {jid for jid, _ in expected} == {
        p.name for p in sweep_dir.iterdir() if not p.name.startswith(".")
    } - {"multirun.yaml"}
    assert sorted(s.state for s in status(sweep_dir)) == ["done", "done"]
    # Lose one job entirely and cut the other short: status tells them apart.
    gone, cut = sorted(seeds, key=lambda jid: seeds[jid])
    shutil.rmtree(sweep_dir / gone)
    (sweep_dir / cut / "summary.json").unlink()
    states = {s.job_id: s for s in status(sweep_dir)}
    assert states[gone].state == "missing" and "seed=0" in states[gone].detail.split()
    assert states[cut].state == "partial"
    # issue 30: rr status names each job by what differs between the sweep's jobs
    assert (states[gone].overrides, states[cut].overrides) == ("seed=0", "seed=1")
    code, out, _ = rr_main(["status", str(sweep_dir)], monkeypatch, capsys)
    assert code == 0 and "0 done, 1 partial, 1 missing" in out


def test_submitit_local_multirun(tmp_path: Path, monkeypatch, capsys) -> None:
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    sweep_dir = _run_sweep(tmp_path, ["hydra/launcher=submitit_local"], monkeypatch, capsys)
    assert any((sweep_dir / ".submitit").rglob("*_log.out"))


def test_slurm_launcher_composes_with_requeue_settings() -> None:
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    cfg = compose(["hydra/launcher=slurm", "hydra.launcher.partition=gpu"], return_hydra_config=True)
    launcher = cfg.hydra.launcher
    assert launcher._target_.endswith("SlurmLauncher")
    assert launcher.partition == "gpu" and launcher.gpus_per_node == 1
    assert launcher.max_num_timeout == 3 and launcher.array_parallelism == 16
    assert launcher.timeout_min == 240 and launcher.mem_gb == 64 and launcher.cpus_per_task == 8
    assert launcher._target_ == "hydra_plugins.rr_launchers.RRSlurmLauncher"
    cpu = compose(["hydra/launcher=slurm_cpu"], return_hydra_config=True).hydra.launcher
    assert cpu._target_ == launcher._target_ and cpu.gpus_per_node == 0
    assert (cpu.cpus_per_task, cpu.mem_gb, cpu.timeout_min, cpu.max_num_timeout) == (1, 4, 60, 3)


def test_help_lists_the_launcher_profiles(monkeypatch, capsys) -> None:
    code, out, _ = rr_main(["--help"], monkeypatch, capsys)
    assert code == 0
    line = next(line for line in out.splitlines() if line.startswith("hydra/launcher (rr -m): "))
    assert {"basic", "parallel", "slurm", "slurm_cpu", "submitit_local"} <= set(
        line.split(": ")[1].split(", ")
    )
