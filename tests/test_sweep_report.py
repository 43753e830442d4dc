"""What ``rr -m`` reports whatever the launcher: one table of its jobs (done / skipped / resumed /
failed) and exit status 2 with one line per failed job; the pieces SLURM jobs rely on
(sbatch rejections named by setting, threads that follow the allocation, progress=false)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rr.commands.slurm import SlurmJobDied, rejection_message
from rr.job_env import THREAD_VARS, limit_threads, progress_enabled, set_progress

from .test_cli_errors import rr_main

#: Two closed-book jobs on 2 questions; the second has an invalid max_new_tokens and fails
#: when its generator is built, before it answers anything. The simulated reader on the synthetic
#: task: the sweep's table and exit status are checked, not a model's answers.
CLOSED_BOOK = [
    "generator=simulated",
    "dataset=synthetic",
    "strategy=closed_book",
    "grid.k=[0]",
    "dataset.n=2",
    "progress=false",
]
SWEEP = ["-m", *CLOSED_BOOK, "generator.max_new_tokens=4,-5"]


def test_basic_launcher_sweep_prints_its_table_and_fails_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # in-process (rr.commands.cli.main): the basic launcher runs its jobs in rr's own process either way
    args = [*SWEEP, f"paths.output_root={tmp_path / 'out'}"]
    code, out, err = rr_main(args, monkeypatch, capsys)
    assert code == 2, err[-3000:]
    assert "1 done, 0 skipped, 0 resumed, 1 failed" in out
    sweep_dir = tmp_path / "out" / "multirun" / "cao2025_mini"
    assert f"rr -m: 2 jobs in {sweep_dir}" in out.replace("\n", "")
    head, last = err.strip().splitlines()[-2:]  # a line per failed job, with its re-run command
    assert head == "rr: 1 of 2 jobs failed:", head
    assert (
        "max_new_tokens" in last and "-5" in last and "will not help (it failed on its configuration)" in last
    ), last
    assert "Traceback" not in err

    code, out, _ = rr_main(args, monkeypatch, capsys)  # the done job is skipped, the bad one fails again
    assert code == 2
    assert "0 done, 1 skipped, 0 resumed, 1 failed" in out


@pytest.mark.parametrize(
    ("sbatch_error", "setting"),
    [
        (
            "sbatch: error: Invalid generic resource (gres) specification\n",
            "hydra.launcher.gpus_per_node (or gres)",
        ),
        (
            "sbatch: error: Batch job submission failed: More processors requested than permitted",
            "cpus_per_task",
        ),
        ("sbatch: error: Memory required by task is not available", "hydra.launcher.mem_gb"),
        (
            "sbatch: error: Batch job submission failed: Invalid partition name specified",
            "hydra.launcher.partition",
        ),
        (
            "sbatch: error: Batch job submission failed: Requested time limit is invalid (missing or exceeds some limit)",
            "hydra.launcher.timeout_min",
        ),
        ("sbatch: error: something new", "the hydra.launcher.* settings"),
    ],
)
def test_rejection_names_sbatch_reason_and_setting(sbatch_error: str, setting: str) -> None:
    line = rejection_message(sbatch_error)
    reason = sbatch_error.strip().splitlines()[-1].removeprefix("sbatch: error: ")
    assert line.startswith(f"sbatch rejected the sweep's jobs: {reason}; change ") and setting in line
    assert "\n" not in line


def test_dead_job_error_survives_pickling() -> None:
    import pickle

    died = pickle.loads(pickle.dumps(SlurmJobDied("7_1", "CANCELLED", "/x/7_1_0_log.err")))
    assert (died.job_id, died.state, died.log) == ("7_1", "CANCELLED", "/x/7_1_0_log.err")
    assert str(died) == "SLURM job 7_1 ended CANCELLED without a result; its log: /x/7_1_0_log.err"


def test_threads_follow_the_allocation_unless_set() -> None:
    import torch

    before = torch.get_num_threads()
    try:
        assert limit_threads({}) == {}  # outside SLURM: nothing
        env = {"SLURM_CPUS_PER_TASK": "1", "MKL_NUM_THREADS": "4"}
        assert limit_threads(env) == {v: "1" for v in THREAD_VARS if v != "MKL_NUM_THREADS"}
        assert env["MKL_NUM_THREADS"] == "4" and torch.get_num_threads() == 1
        torch.set_num_threads(2)
        user = {"SLURM_CPUS_PER_TASK": "1", "OMP_NUM_THREADS": "2"}  # the user's choice wins
        assert "OMP_NUM_THREADS" not in limit_threads(user) and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_bars_back_on_after_a_progress_false_job_warn_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A notebook's second job (progress on) after a progress=false one: huggingface_hub, which read
    HF_HUB_DISABLE_PROGRESS_BARS at its import, would warn once per job that the variable wins."""
    import importlib
    import warnings

    from transformers.utils import logging as hf_logging

    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS", raising=False)
    try:
        set_progress(False)
        hub_tqdm = importlib.import_module("huggingface_hub.utils.tqdm")  # the module, not its tqdm class
        monkeypatch.setattr(hub_tqdm, "HF_HUB_DISABLE_PROGRESS_BARS", True)  # as read at its import
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            set_progress(True)
        assert progress_enabled() and hf_logging.is_progress_bar_enabled()
    finally:
        set_progress(True)


def test_progress_false_silences_library_bars(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd) -> None:
    from transformers.utils import logging as hf_logging

    from rr.data.corpus import WikiOfflineCorpus
    from rr.retrieval.bm25 import BM25Retriever

    monkeypatch.setenv("TQDM_DISABLE", "0")
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "0")
    corpus = WikiOfflineCorpus(max_passages=20).load()
    set_progress(True)  # an earlier in-process job of this test session may have run with progress=false
    try:
        BM25Retriever().index(corpus)
        assert "Split strings" in capfd.readouterr().err  # bm25s draws its bars by default
        set_progress(False)
        assert not progress_enabled() and not hf_logging.is_progress_bar_enabled()
        BM25Retriever().index(corpus)
        assert "%|" not in capfd.readouterr().err
    finally:
        set_progress(True)
        hf_logging.enable_progress_bar()
        from huggingface_hub.utils import enable_progress_bars

        enable_progress_bars()
