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
        p.name for p in sweep_dir.iterdir() if p.is_dir() and not p.name.startswith(".")
    }
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


#: Parameters (billions) of the paper sweeps' models, from their model cards.
PARAMS_B = {
    "meta-llama/Llama-3.2-1B-Instruct": 1.24,
    "meta-llama/Llama-3.2-3B-Instruct": 3.21,
    "meta-llama/Llama-3.1-8B-Instruct": 8.03,
    "meta-llama/Llama-3.1-70B-Instruct": 70.6,
    "mistralai/Mistral-Nemo-Instruct-2407": 12.2,
    "mistralai/Mistral-Large-Instruct-2407": 123.0,
    "CohereForAI/c4ai-command-r-08-2024": 32.3,
    "CohereForAI/c4ai-command-r-plus-08-2024": 104.0,
    "mistralai/Mistral-7B-Instruct-v0.2": 7.24,
    "mistralai/Mistral-7B-Instruct-v0.3": 7.25,
    "Qwen/Qwen2.5-7B-Instruct": 7.62,
}
#: The GPU the shapes are sized for (H100 / A100 80 GB) and the part of it vLLM takes.
GPU_GB, UTILIZATION = 80, 0.9


@pytest.mark.parametrize(
    "sweep",
    [
        ["experiment=cao2025", "sweep=cao2025"],
        ["sweep=query_level2025"],
        ["experiment=sure2025", "sweep=sure2025"],
    ],
)
def test_paper_sweeps_request_the_gpus_their_models_need(sweep: list[str]) -> None:
    """Every job of a paper sweep, composed with hydra/launcher=slurm, asks SLURM for GPUs that hold
    its model's bf16 weights with room for a KV cache (at least 20% of the weights), as few as 8B and
    smaller need (1), and shards the model over all of them; the launcher scales CPUs and memory."""
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    from rr.commands.slurm import shaped_params
    from rr.resume import sweep_jobs

    base = compose([*sweep, "hydra/launcher=slurm"], return_hydra_config=True)
    jobs = sweep_jobs([*sweep, "hydra/launcher=slurm"], base.hydra.sweeper.params)
    shapes = {}
    for overrides in jobs:
        cfg = compose(overrides, return_hydra_config=True)
        model = cfg.generator.model
        gpus = cfg.resources.gpus or cfg.hydra.launcher.gpus_per_node
        weights_gb = 2 * PARAMS_B[model]
        assert gpus * GPU_GB * UTILIZATION >= 1.2 * weights_gb, (model, gpus)
        assert PARAMS_B[model] > 12.5 or gpus == 1, (model, gpus)
        assert cfg.generator.get("tensor_parallel_size", 1) == gpus, (model, gpus)
        params = shaped_params(dict(cfg.hydra.launcher), cfg.resources.gpus)
        assert params["gpus_per_node"] == gpus and params["cpus_per_task"] == 8 * gpus
        assert params["mem_gb"] == 64 * gpus
        shapes[model] = gpus
    if "sweep=cao2025" in sweep:  # the paper's 8 open models on 4 shapes
        assert len(shapes) == 8 and sorted(set(shapes.values())) == [1, 2, 4, 8]


def test_a_cpu_launcher_keeps_its_allocation_whatever_the_job_asks() -> None:
    from rr.commands.slurm import shaped_params

    cpu = {"gpus_per_node": 0, "cpus_per_task": 1, "mem_gb": 4}
    assert shaped_params(cpu, 4) == cpu
    gpu = {"gpus_per_node": 1, "cpus_per_task": 8, "mem_gb": 64}
    assert shaped_params(gpu, None) == gpu and shaped_params(gpu, 0) == {**gpu, "gpus_per_node": 0}


def test_detach_without_a_slurm_sweep_is_one_line(monkeypatch, capsys) -> None:
    code, _, err = rr_main(["--detach", "seed=0"], monkeypatch, capsys)
    assert code == 2 and err.strip() == (
        "rr: --detach submits a sweep to SLURM and returns: use it with `rr -m ... hydra/launcher=slurm` "
        "(or slurm_cpu); `rr status DIR` follows the jobs"
    )


@pytest.mark.parametrize("storage", ["/project/rr-cache", ""])
def test_the_slurm_setup_puts_every_cache_on_rr_storage_and_goes_offline(storage: str) -> None:
    """The sbatch script's setup lines (hydra.launcher.setup), run by bash as the job would: with
    RR_STORAGE exported by the submitting shell, the hub's, vLLM's, pyserini's, rr's and uv's caches
    lie below it and the hub is off; without it the job's environment is left as it was."""
    import subprocess

    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    setup = compose(["hydra/launcher=slurm"], return_hydra_config=True).hydra.launcher.setup
    variables = (
        "HF_HOME",
        "VLLM_CACHE_ROOT",
        "PYSERINI_CACHE",
        "RR_MODEL_CACHE",
        "UV_CACHE_DIR",
        "HF_HUB_OFFLINE",
    )
    script = "\n".join([*setup, *(f'echo "{v}=${{{v}:-unset}}"' for v in variables)])
    env = {"PATH": "/usr/bin:/bin", "RR_STORAGE": storage}
    out = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, check=True).stdout
    got = dict(line.split("=", 1) for line in out.split())
    if storage:
        assert got == {
            "HF_HOME": f"{storage}/huggingface",
            "VLLM_CACHE_ROOT": f"{storage}/vllm",
            "PYSERINI_CACHE": f"{storage}/pyserini",
            "RR_MODEL_CACHE": f"{storage}/rr-models",
            "UV_CACHE_DIR": f"{storage}/uv",
            "HF_HUB_OFFLINE": "1",
        }
    else:
        assert set(got.values()) == {"unset"}
