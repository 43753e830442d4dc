"""CPU time from one short probe: the range a step's time falls in, the job's warning, rr plan's line."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pytest

from rr.generation.base import Completion
from rr.generation.cache import GenerationCache
from rr.generation.client import LLM
from rr.generation.throughput import (
    PROBE_TOKENS,
    BatchTiming,
    TimesBatches,
    format_range,
    probe,
    shared_prefix_tokens,
)
from rr.records import GenerationParams, Request

from .test_plan import _Tokenizer

#: The fake CPU's true costs: prefill seconds per padded token, decode seconds per step of one row.
PREFILL_S, STEP_S = 0.1, 0.5


class _SlowCPU(_Tokenizer):
    """A backend on the CPU that times its batches: 10 prompt tokens/s, 0.5 s per decode step and row;
    every answer runs to ``max_new_tokens``, or ends after ``answer_tokens``."""

    name = "slow"
    context_window = 10_000
    batch_size = 2

    def __init__(self, cpu: bool = True, answer_tokens: int | None = None) -> None:
        self.batch_timings: list[BatchTiming] = []
        self.calls: list[tuple[int, int]] = []
        self.cpu = cpu
        self.answer_tokens = answer_tokens
        self.prefix_counts = {"prompt_tokens": 0, "computed": 0}

    def runs_on_cpu(self) -> bool:
        return self.cpu

    def load(self) -> Any:
        return None

    def generate(
        self, prompts: list[str], params: GenerationParams, progress: Any = None
    ) -> list[Completion]:
        self.calls.append((len(prompts), params.max_new_tokens))
        self.prefix_counts["prompt_tokens"] += sum(len(p.split()) for p in prompts)
        new = min(params.max_new_tokens, self.answer_tokens or params.max_new_tokens)
        for b in range(0, len(prompts), self.batch_size):
            batch = prompts[b : b + self.batch_size]
            padded = len(batch) * max(len(p.split()) for p in batch)
            steps = new - 1
            self.batch_timings.append(
                BatchTiming(
                    len(batch),
                    padded,
                    padded * PREFILL_S,
                    steps,
                    steps * STEP_S * len(batch),
                    params.max_new_tokens,
                )
            )
            if progress is not None:
                progress.update(len(batch))
        return [Completion(f"Answer: {p}", len(p.split()), new) for p in prompts]


def _prompts(word: str, n: int, base: int = 20) -> list[str]:
    return [" ".join([f"{word}{i}"] * (base + i)) for i in range(n)]


def test_the_range_of_a_step_holds_what_it_then_takes() -> None:
    gen = _SlowCPU(answer_tokens=6)
    assert isinstance(gen, TimesBatches)
    params = GenerationParams(max_new_tokens=40)
    found = probe(gen, "answer", _prompts("p", 2), params)
    # warm-up (1 prompt, 2 tokens), then one batch for at most PROBE_TOKENS; both dropped, and the
    # prefix-reuse counts the job's summary reports are left as they were
    assert gen.calls == [(1, 2), (2, PROBE_TOKENS)] and not gen.batch_timings
    assert gen.prefix_counts == {"prompt_tokens": 0, "computed": 0}
    assert found is not None and (found.prompts, found.rows, found.steps) == (2, 2, 5)  # answers ended
    assert found.prefill_s / found.prompt_tokens == PREFILL_S and found.decode_s == 2 * STEP_S
    # the step: 5 prompts (2 full batches and 1 of one row); its true time inside the range
    step = _prompts("s", 5)
    gen.generate(step, params)
    true = sum(t.prefill_s + t.decode_s for t in gen.batch_timings)
    lengths = [len(p.split()) for p in step]
    low, high = found.step_range(lengths, params.max_new_tokens, gen.batch_size)
    assert low <= true <= high
    # full batches whose answers run to max_new_tokens: the high end is the truth
    gen = _SlowCPU()
    gen.generate(step[:4], params)
    full = found.step_range(lengths[:4], params.max_new_tokens, gen.batch_size)
    assert full[1] == pytest.approx(sum(t.prefill_s + t.decode_s for t in gen.batch_timings))
    # a backend that reuses prefixes computes fewer tokens: only the low end counts them
    reused = found.step_range(lengths, params.max_new_tokens, gen.batch_size, [0, 10, 10, 10, 10])
    assert reused == (pytest.approx(low - 40 * PREFILL_S), high)
    # each prompt's tokens shared with the one before it, in whole blocks
    assert shared_prefix_tokens(["a b c d", "a b c e", "x y z w"], [4, 4, 4], block=1) == [0, 3, 0]


def test_a_long_cpu_step_says_so_with_what_it_is_based_on(tmp_path: Path, caplog) -> None:
    gen = _SlowCPU()
    llm = LLM(
        gen,
        GenerationCache(tmp_path, gen.identity(), writer="t"),
        warn_after_s=5.0,
        plan_hint="rr plan dataset.n=5",
    )
    requests = [Request.user(p, GenerationParams(max_new_tokens=10)) for p in _prompts("w", 5)]
    with caplog.at_level(logging.WARNING, logger="rr.generation.client"):
        out = llm.generate(requests, step="answer")
    # warm-up, a probe of one batch of the step's median prompts for a few tokens (dropped); then the step
    assert gen.calls == [(1, 2), (2, min(10, PROBE_TOKENS)), (5, 10)]
    assert [g.text for g in out] == [f"Answer: {r.messages[-1][1]}" for r in requests]
    (line,) = [r.getMessage() for r in caplog.records]
    assert (
        line.startswith("answer: 5 prompts to generate on the CPU, expected ~")
        and "`rr plan dataset.n=5`" in line
    )
    assert re.search(
        r"measured on 2 prompts of answer \(.+\), at (load [\d.]+|an unknown load) on \d+ cores", line
    )
    caplog.clear()
    more = [Request.user(p, GenerationParams(max_new_tokens=10)) for p in _prompts("v", 5)]
    with caplog.at_level(logging.WARNING, logger="rr.generation.client"):
        llm.generate(more, step="again")
    assert gen.calls[3:] == [(5, 10)]  # probed once per backend
    assert "measured on 2 prompts of answer" in caplog.records[0].getMessage()


def test_no_line_on_gpu_for_a_single_batch_or_a_short_step(tmp_path: Path, caplog) -> None:
    requests = [Request.user(f"w{i} x", GenerationParams(max_new_tokens=2)) for i in range(5)]
    cases = ((_SlowCPU(cpu=False), 0.0, 5), (_SlowCPU(), 0.0, 2), (_SlowCPU(), 3600.0, 5))
    for i, (gen, warn, n) in enumerate(cases):
        llm = LLM(gen, GenerationCache(tmp_path / str(i), gen.identity(), writer="t"), warn_after_s=warn)
        with caplog.at_level(logging.WARNING, logger="rr.generation.client"):
            llm.generate(requests[:n], step="s")
        assert gen.calls[-1] == (n, 2)
    assert not caplog.records


def test_a_job_over_the_threshold_in_steps_under_it_says_so_once(tmp_path: Path, caplog) -> None:
    """Issue 43: a job over 10 minutes made of steps under 10 minutes never warned."""
    gen = _SlowCPU()
    llm = LLM(gen, GenerationCache(tmp_path, gen.identity(), writer="t"), warn_after_s=40.0)

    def step(word: str) -> list[Request]:  # 4 prompts of 20 tokens, 4 new tokens: 4 x 2 + 2 x 3 x 1 = 14 s
        return [
            Request.user(" ".join([f"{word}{i}"] * 20), GenerationParams(max_new_tokens=4)) for i in range(4)
        ]

    with caplog.at_level(logging.WARNING, logger="rr.generation.client"):
        for word in ("a", "b", "c", "d", "e"):
            llm.generate(step(word), step=word)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1, lines
    assert (
        lines[0].startswith("c: the job is expected to take ~")
        and "over the 40 s a step may take" in lines[0]
    )


def test_the_job_wires_the_threshold(tmp_path: Path) -> None:
    from omegaconf import open_dict

    from rr.config import job_settings
    from rr.pipeline import build_components, make_runtime, plan_job

    from .conftest import compose_config

    cfg = compose_config(["dataset.n=1", "retriever=bm25"], tmp_path)
    assert cfg.cpu_warn_minutes == 10
    with open_dict(cfg):
        cfg.cpu_warn_minutes = 0.5
    plan = plan_job(cfg, job_settings(cfg), tmp_path / "job")
    rt = make_runtime(plan, build_components(cfg, plan), None)
    assert rt.llm.warn_after_s == 30.0 and rt.llm.plan_hint.startswith("rr plan")


def test_hf_times_its_own_batches_only() -> None:
    from rr.generation.hf import HFGenerator

    # data-parallel batches run in worker processes: neither timed nor checked before a step
    assert isinstance(HFGenerator(device="cpu"), TimesBatches) and HFGenerator(device="cpu").runs_on_cpu()
    assert not HFGenerator(device="cpu", data_parallel=2).runs_on_cpu()


def test_a_range_reads_in_one_unit() -> None:
    assert format_range(8 * 60, 15 * 60) == "~8–15 min"
    assert format_range(40, 120) == "~40 s–2 min"
    assert format_range(12 * 60, 12.2 * 60) == "~12 min"
