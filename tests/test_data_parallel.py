"""Data-parallel HF generation with Lightning Fabric: two real gloo processes on CPU.

The GPU path (NCCL, one replica per GPU) is the same code with ``accelerator="cuda"``;
``test_data_parallel_on_gpus`` runs it where two or more CUDA devices exist.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pandas as pd
import pytest
import torch

from rr.generation.hf import HFGenerator
from rr.generation.parallel import _run_shard, _Work, shard_batches
from rr.records import GenerationParams, Request
from tests.test_resume import SMALL

QUESTIONS = [
    "What is the capital of France?",
    "Who wrote Hamlet? Answer in one sentence.",
    "What is 2 + 2?",
    "Name a primary colour.",
    "What is water made of?",
]


def test_shard_batches_deals_length_sorted_batches_round_robin() -> None:
    # lengths -> longest first: 1 (9), 3 (7), 0 (5), 4 (3), 2 (1); batches [1,3] [0,4] [2]
    assert shard_batches([5, 9, 1, 7, 3], batch_size=2, world_size=2) == [[[1, 3], [2]], [[0, 4]]]
    assert shard_batches([5, 9, 1, 7, 3], batch_size=2, world_size=3) == [[[1, 3]], [[0, 4]], [[2]]]
    # ties keep prompt order (stable sort); more ranks than batches leaves ranks idle
    assert shard_batches([2, 2, 2], batch_size=1, world_size=4) == [[[0]], [[1]], [[2]], []]
    assert shard_batches([], batch_size=4, world_size=2) == [[], []]
    with pytest.raises(ValueError, match="batch_size and world_size"):
        shard_batches([1], batch_size=0, world_size=2)


def test_hf_rejects_a_non_positive_data_parallel() -> None:
    with pytest.raises(ValueError, match="data_parallel: must be a positive integer"):
        HFGenerator(data_parallel=0)


class _Failing:
    def generate_local(self, prompts: list[str], params: GenerationParams) -> list:
        raise MemoryError("CUDA out of memory (pretend)")


def test_a_failing_rank_reports_its_traceback_instead_of_completions() -> None:
    status, payload = _run_shard(_Failing(), _Work(["p"], [[0]], GenerationParams()))
    assert status == "error"
    assert "MemoryError: CUDA out of memory (pretend)" in payload
    assert _run_shard(_Failing(), None) == ("ok", [])


def test_a_rank_that_fails_to_start_is_reported_at_once() -> None:
    from rr.generation.parallel import FabricPool

    # the worker builds HFGenerator(**generator_kwargs): an unknown argument fails it at start
    pool = FabricPool(HFGenerator(), {"not_an_argument": 1}, world_size=2, accelerator="cpu", timeout_s=120)
    t0 = time.perf_counter()
    with pytest.raises(RuntimeError, match=r"(?s)rank 1 failed to start:.*not_an_argument"):
        pool.start()
    assert time.perf_counter() - t0 < 60  # not the rendezvous timeout
    assert not pool.started and not pool._processes
    assert not torch.distributed.is_initialized()


@pytest.mark.slow
def test_two_cpu_ranks_give_the_single_process_completions() -> None:
    params = GenerationParams(max_new_tokens=4)  # 5 prompts in batches of 2: padding matters, length not
    single = HFGenerator(batch_size=2)
    prompts = [single.render(Request.user(q, params)) for q in QUESTIONS]
    expected = single.generate(prompts, params)

    host_threads = torch.get_num_threads()
    dp = HFGenerator(batch_size=2, data_parallel=2, dp_timeout_s=120)
    try:
        assert dp.generate(prompts, params) == expected
        assert torch.get_num_threads() == max(1, (os.cpu_count() or 1) // 2)  # rank 0's share of the cores
        pool = dp._pool
        # 3 batches (2, 2, 1 prompts) dealt round-robin: rank 0 gets 2 + 1, rank 1 gets 2
        assert pool.prompts_per_rank == [3, 2]
        pids = [p.pid for p in pool._processes]
        # the workers persist across calls (each rank loads the model once)
        assert dp.generate(prompts[:2], params) == expected[:2]
        assert [p.pid for p in pool._processes] == pids
        assert pool.prompts_per_rank == [5, 2]
        processes = list(pool._processes)
    finally:
        dp.close()
    assert all(not p.is_alive() for p in processes)
    assert not torch.distributed.is_initialized()
    assert torch.get_num_threads() == host_threads  # the host process gets its threads back


@pytest.mark.slow
def test_a_killed_rank_fails_the_call_at_once_naming_it() -> None:
    params = GenerationParams(max_new_tokens=2)
    dp = HFGenerator(batch_size=1, data_parallel=2, dp_timeout_s=60)
    prompts = [dp.render(Request.user(q, params)) for q in QUESTIONS[:2]]
    try:
        dp.generate(prompts, params)
        worker = dp._pool._processes[0]
        os.kill(worker.pid, signal.SIGKILL)
        worker.join(timeout=10)
        t0 = time.perf_counter()
        with pytest.raises(
            RuntimeError, match=r"dead ranks: rank 1 \(exit code -9\).*re-running the job resumes"
        ):
            dp.generate(prompts, params)
        assert time.perf_counter() - t0 < 30  # not the 60 s collective timeout
    finally:
        dp.close()
    assert not torch.distributed.is_initialized()


@pytest.mark.slow
def test_a_data_parallel_job_writes_the_single_process_score_table(tmp_path: Path) -> None:
    """Both jobs in this process (rank 0 of the data-parallel one too; rank 1 is spawned), each
    with its own cache: 4 distinct prompts (2 closed-book, 2 with k=1; reversing one passage
    changes nothing), so with batches of 2 each rank generates one batch."""
    from rr.pipeline import run_job

    from .conftest import compose_config

    tables, summaries = {}, {}
    for dp in (1, 2):
        cfg = compose_config([*SMALL, f"generator.data_parallel={dp}"], tmp_path / f"dp{dp}")
        job = tmp_path / f"dp{dp}" / "job"
        run_job(cfg, job)
        tables[dp] = pd.read_parquet(job / "scores.parquet")
        summaries[dp] = json.loads((job / "summary.json").read_text())
    assert not torch.distributed.is_initialized()  # the job closed its pool
    # data_parallel is a throughput setting: same job id, same table, same model calls
    assert summaries[1]["job_id"] == summaries[2]["job_id"]
    pd.testing.assert_frame_equal(tables[1], tables[2])
    assert summaries[2]["model_calls"] == summaries[1]["model_calls"] > 0


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs >= 2 CUDA GPUs")
def test_data_parallel_on_gpus() -> None:
    params = GenerationParams(max_new_tokens=8)
    single = HFGenerator(batch_size=2, device="cuda:0")
    prompts = [single.render(Request.user(q, params)) for q in QUESTIONS]
    expected = [c.text for c in single.generate(prompts, params)]
    dp = HFGenerator(batch_size=2, data_parallel=2)
    try:
        assert [c.text for c in dp.generate(prompts, params)] == expected
        assert all(n > 0 for n in dp._pool.prompts_per_rank)
    finally:
        dp.close()
