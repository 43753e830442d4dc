"""Speed on this machine (issue 30): batch timings, the throughput fitted from them, a step's predicted
wall time, its record in the cache, and the one line a long CPU step says before it starts."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from rr.generation.base import Completion
from rr.generation.cache import GenerationCache
from rr.generation.client import LLM, PROBE_TOKENS
from rr.generation.throughput import (
    BatchTiming,
    ContentionSampler,
    Throughput,
    ThroughputStore,
    TimesBatches,
    affine_fit,
    expected_contention,
    format_seconds,
    machine_dir,
    median_contention,
    step_seconds,
)
from rr.records import GenerationParams, Request

from .test_plan import _Tokenizer


def test_throughput_from_timings_and_a_step_batched_as_the_job_batches_it() -> None:
    timings = [
        BatchTiming(rows=2, padded_tokens=200, prefill_s=2.0, steps=9, decode_s=1.8, max_new_tokens=11),
        BatchTiming(rows=1, padded_tokens=100, prefill_s=1.0, steps=4, decode_s=0.4, max_new_tokens=11),
    ]
    tp = Throughput.from_timings(timings)
    assert tp is not None and tp.source == "measured" and tp.rows == 3
    assert tp.prefill_tps == pytest.approx(300 / 3.0)
    assert tp.step_s_per_row == pytest.approx(2.2 / (9 * 2 + 4 * 1))
    assert tp.steps_share == pytest.approx((9 + 4) / 20)
    assert Throughput.from_timings([]) is None
    # chunks of 3 sent in order, each sorted longest first, batches of 2: [30, 20], [10] | [40]
    flat = Throughput(prefill_tps=10.0, step_s_per_row=0.5, steps_share=0.5, rows=1)
    steps = 0.5 * 10  # half of max_new_tokens - 1
    expected = (2 * 30 / 10 + steps * 2 * 0.5) + (10 / 10 + steps * 0.5) + (40 / 10 + steps * 0.5)
    assert step_seconds([20, 30, 10, 40], flat, 2, 3, 11) == pytest.approx(expected)
    assert step_seconds([20], flat, 2, 3, 11, steps_share=1.0) == pytest.approx(2 + 10 * 0.5)
    assert (format_seconds(45), format_seconds(600), format_seconds(7200)) == ("45 s", "10 min", "2.0 h")


def test_store_records_per_backend_and_reads_back_as_recorded(tmp_path: Path) -> None:
    store = ThroughputStore(tmp_path)
    tp = Throughput(prefill_tps=100.0, step_s_per_row=0.1, steps_share=0.4, rows=8)
    assert store.get({"model": "a"}) is None
    store.put({"model": "a"}, tp, "test")
    back = store.get({"model": "a"})
    assert back is not None and back.source == "recorded" and back.prefill_tps == 100.0
    assert store.get({"model": "b"}) is None


class _SlowCPU(_Tokenizer):
    """A backend on the CPU that times its batches: 10 prompt tokens/s, 0.5 s per decode step and row."""

    name = "slow"
    context_window = 10_000
    batch_size = 2

    def __init__(self, cpu: bool = True) -> None:
        self.batch_timings: list[BatchTiming] = []
        self.calls: list[tuple[int, int]] = []
        self.cpu = cpu

    def runs_on_cpu(self) -> bool:
        return self.cpu

    def throughput_key(self) -> dict:
        return {"model": self.identity()}

    def load(self) -> Any:
        return None

    def generate(
        self, prompts: list[str], params: GenerationParams, progress: Any = None
    ) -> list[Completion]:
        self.calls.append((len(prompts), params.max_new_tokens))
        for b in range(0, len(prompts), self.batch_size):
            batch = prompts[b : b + self.batch_size]
            padded = len(batch) * max(len(p.split()) for p in batch)
            steps = params.max_new_tokens - 1
            self.batch_timings.append(
                BatchTiming(
                    len(batch), padded, padded / 10, steps, steps * 0.5 * len(batch), params.max_new_tokens
                )
            )
            if progress is not None:
                progress.update(len(batch))
        return [Completion(f"Answer: {p}", len(p.split()), params.max_new_tokens) for p in prompts]


def test_a_long_cpu_step_says_so_before_it_starts_and_names_rr_plan(tmp_path: Path, caplog) -> None:
    gen = _SlowCPU()
    assert isinstance(gen, TimesBatches)
    store = ThroughputStore(tmp_path)
    llm = LLM(
        gen,
        GenerationCache(tmp_path, gen.identity(), writer="t"),
        warn_after_s=5.0,
        throughput=store,
        plan_hint="rr plan dataset.n=5",
    )
    requests = [
        Request.user(" ".join(["w"] * (20 + i)), GenerationParams(max_new_tokens=10)) for i in range(5)
    ]
    with caplog.at_level(logging.WARNING, logger="rr.generation.client"):
        out = llm.generate(requests, step="answer")
    # nothing recorded yet: the median prompt alone, a few tokens, timed and dropped; then the step
    assert gen.calls == [(1, PROBE_TOKENS), (5, 10)]
    assert [g.text for g in out] == [f"Answer: {r.messages[-1][1]}" for r in requests]
    (line,) = [r.getMessage() for r in caplog.records]
    assert (
        line.startswith("answer: 5 prompts to generate on the CPU, expected ~")
        and "`rr plan dataset.n=5`" in line
    )
    assert "timed on 1 prompt" in line
    recorded = store.get(gen.throughput_key())  # the step's own batches, for later steps and jobs
    assert recorded is not None and recorded.rows == 5 and recorded.prefill_tps == pytest.approx(10.0)
    caplog.clear()
    more = [Request.user(" ".join(["v"] * (20 + i)), GenerationParams(max_new_tokens=10)) for i in range(5)]
    with caplog.at_level(logging.WARNING, logger="rr.generation.client"):
        llm.generate(more, step="again")
    assert gen.calls[2:] == [(5, 10)]  # recorded: no probe
    assert "recorded on this machine" in caplog.records[0].getMessage()


def test_no_line_on_gpu_for_a_single_batch_or_a_short_step(tmp_path: Path, caplog) -> None:
    requests = [Request.user(f"w{i} x", GenerationParams(max_new_tokens=2)) for i in range(5)]
    cases = ((_SlowCPU(cpu=False), 0.0, 5), (_SlowCPU(), 0.0, 2), (_SlowCPU(), 3600.0, 5))
    for i, (gen, warn, n) in enumerate(cases):
        llm = LLM(gen, GenerationCache(tmp_path / str(i), gen.identity(), writer="t"), warn_after_s=warn)
        with caplog.at_level(logging.WARNING, logger="rr.generation.client"):
            llm.generate(requests[:n], step="s")
        assert gen.calls[-1] == (n, 2)
    assert not caplog.records


def test_the_job_wires_the_threshold_and_the_record(tmp_path: Path) -> None:
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
    assert rt.llm.warn_after_s == 30.0 and rt.llm.throughput is not None
    # per machine (the user's cache; RR_THROUGHPUT_DIR in the tests), not per output folder
    assert (
        rt.llm.throughput.dir
        == machine_dir()
        == tmp_path / "throughput"
        != Path(cfg.paths.cache_dir) / "throughput"
    )
    assert rt.llm.plan_hint.startswith("rr plan")


def test_hf_times_its_own_batches_only() -> None:
    from rr.generation.hf import HFGenerator

    # data-parallel batches run in worker processes: neither timed nor checked before a step
    assert isinstance(HFGenerator(device="cpu"), TimesBatches) and HFGenerator(device="cpu").runs_on_cpu()
    assert not HFGenerator(device="cpu", data_parallel=2).runs_on_cpu()


def _affine_seconds(rows: int, longest: int, steps: int) -> tuple[float, float]:
    """The fake CPU's true cost of a batch (issue 36): prefill 0.5 s + 1 s per 100 padded tokens;
    a decode step 0.2 s + 0.05 s per row. Returns (prefill, decode) seconds."""
    return 0.5 + rows * longest / 100, steps * (0.2 + 0.05 * rows)


def test_fixed_and_per_token_costs_are_fitted_apart() -> None:
    # hand-worked: batches of 1 x 10, 1 x 100 and 4 x 100 tokens, 7 decode steps each
    timings = [
        BatchTiming(r, r * n, *_affine_seconds(r, n, 7)[:1], 7, _affine_seconds(r, n, 7)[1], 8)
        for r, n in ((1, 10), (1, 100), (4, 100))
    ]
    tp = Throughput.from_timings(timings)
    assert tp is not None
    assert (tp.prefill_s0, tp.prefill_tps) == (pytest.approx(0.5), pytest.approx(100.0))
    assert (tp.step_s0, tp.step_s_per_row) == (pytest.approx(0.2), pytest.approx(0.05))
    # a batch of 8 x 50 tokens, 23 steps: 0.5 + 4 + 23 * (0.2 + 0.4); a single prompt scaled by rows
    # (the model before issue 36) would say 8 * (0.5 + 0.5) + 23 * 8 * 0.25 = 54 s, not 18.3 s
    assert tp.batch_seconds(8, 50, 23) == pytest.approx(0.5 + 4.0 + 23 * 0.6)
    assert affine_fit([]) == (0.0, 0.0)
    assert affine_fit([(2, 4.0, 1.0)]) == (0.0, 2.0)  # one point: the line through the origin
    assert affine_fit([(1, 3.0, 1.0), (2, 2.0, 1.0)]) == (
        0.0,
        pytest.approx(5.0 / 3),
    )  # slope < 0: (3 + 2) / (1 + 2)


class _AffineCPU(_SlowCPU):
    """A CPU backend whose batches cost :func:`_affine_seconds` (no sleeping: it reports the timings),
    plus 10 s of one-off cost in its first call; every row runs to ``max_new_tokens``."""

    name = "affine"
    batch_size = 4

    def generate(
        self, prompts: list[str], params: GenerationParams, progress: Any = None
    ) -> list[Completion]:
        lengths = sorted((len(p.split()) for p in prompts), reverse=True)
        for b in range(0, len(lengths), self.batch_size):
            batch = lengths[b : b + self.batch_size]
            steps = params.max_new_tokens - 1
            prefill, decode = _affine_seconds(len(batch), batch[0], steps)
            cold = 10.0 if not self.calls else 0.0
            self.batch_timings.append(
                BatchTiming(
                    len(batch), len(batch) * batch[0], prefill + cold, steps, decode, params.max_new_tokens
                )
            )
            self.calls.append((len(batch), params.max_new_tokens))
        return [Completion("Answer: x", len(p.split()), params.max_new_tokens) for p in prompts]


def prompts(lengths: range) -> list[Request]:
    """One request per length: a prompt of ``n`` words (distinct per length), 11 new tokens."""
    return [
        Request.user(" ".join([f"q{n}"] + ["w"] * (n - 1)), GenerationParams(max_new_tokens=11))
        for n in lengths
    ]


def test_plan_predicts_each_step_from_its_own_tokens_warm_and_batched(tmp_path: Path) -> None:
    from rr.cost import PlanningLLM, StepTiming

    gen = _AffineCPU()
    store = ThroughputStore(tmp_path / "tp")
    timing = StepTiming(budget_s=1e9, store=store)
    llm = PlanningLLM(gen, GenerationCache(tmp_path, gen.identity(), writer="t"), timing=timing)

    # closed-book: short prompts (no documents), 10-14 tokens; batches of 4 longest first: [14..11], [10]
    llm.generate(prompts(range(10, 15)), step="closed_book")
    # with documents: 100-105 tokens: [105..102], [101, 100]
    llm.generate(prompts(range(100, 106)), step="vanilla:answer")
    closed, rag = llm.steps
    assert (closed.prompt_tokens, rag.prompt_tokens) == (60, 615)

    def truth(*batches: tuple[int, int]) -> float:
        return sum(sum(_affine_seconds(rows, longest, 10)) for rows, longest in batches)

    # hand-worked: (0.5 + 0.56 + 10 * 0.4) + (0.5 + 0.1 + 10 * 0.25) = 8.16 s
    assert truth((4, 14), (1, 10)) == pytest.approx(8.16)
    assert closed.seconds == pytest.approx(8.16)
    # (0.5 + 4.2 + 10 * 0.4) + (0.5 + 2.02 + 10 * 0.3) = 14.22 s
    assert rag.seconds == pytest.approx(truth((4, 105), (2, 101))) and rag.seconds == pytest.approx(14.22)
    assert "timed here" in closed.timed_on and "this step's own included" in rag.timed_on
    recorded = store.get(gen.throughput_key())
    assert recorded is not None and recorded.step_s0 == pytest.approx(0.2)


def test_a_prefix_caching_backend_is_predicted_per_call_on_its_unshared_tokens() -> None:
    from types import SimpleNamespace

    from rr.cost import shared_prefix_tokens
    from rr.generation.vllm import call_timing

    # sorted prompts: "D1 D2 Q" shares "D1 " (3 of 7 characters) with "D1 Q", "E2 Q" shares nothing
    prompts = ["D1 D2 Q", "D1 Q", "E2 Q"]
    assert shared_prefix_tokens(prompts, [70, 40, 40], block=1) == [0, int(40 * 3 / 4), 0]
    assert shared_prefix_tokens(prompts, [70, 40, 40], block=16) == [0, 16, 0]  # whole blocks: 30 -> 16
    tp = Throughput(
        prefill_tps=100.0, step_s_per_row=0.05, steps_share=1.0, rows=8, prefill_s0=0.5, step_s0=0.2
    )
    # chunks of 2: (70 + 40 - 16 computed tokens, 2 rows), (40, 1 row); 10 decode steps each
    expected = (0.5 + 94 / 100 + 10 * (0.2 + 2 * 0.05)) + (0.5 + 40 / 100 + 10 * (0.2 + 0.05))
    assert step_seconds([70, 40, 40], tp, 8, 2, 11, shared=[0, 16, 0]) == pytest.approx(expected)

    def out(prompt: int, cached: int, new: int, sched: float, first: float, last: float) -> Any:
        m = SimpleNamespace(scheduled_ts=sched, first_token_ts=first, last_token_ts=last)
        ids = SimpleNamespace(token_ids=list(range(new)))
        return SimpleNamespace(
            prompt_token_ids=[0] * prompt, num_cached_tokens=cached, outputs=[ids], metrics=m
        )

    # two requests scheduled at 10.0 and 10.1, first tokens at 11.0 and 11.5, last at 12.0 and 13.5
    t = call_timing([out(100, 0, 8, 10.0, 11.0, 12.0), out(120, 64, 6, 10.1, 11.5, 13.5)], 8)
    assert t == BatchTiming(rows=2, padded_tokens=156, prefill_s=1.5, steps=7, decode_s=2.0, max_new_tokens=8)
    assert call_timing([SimpleNamespace(metrics=None)], 8) is None


def test_a_decode_step_costs_more_over_longer_prompts() -> None:
    from rr.generation.throughput import decode_fit

    # hand-worked: a step costs 0.1 s + 0.02 s per row + 0.0001 s per padded prompt token
    def t(rows: int, padded: int) -> BatchTiming:
        return BatchTiming(rows, padded, 1.0, 5, 5 * (0.1 + 0.02 * rows + 0.0001 * padded), 6)

    timings = [t(1, 100), t(1, 500), t(8, 800), t(8, 4000)]
    assert decode_fit(timings) == pytest.approx((0.1, 0.02, 0.0001))
    tp = Throughput.from_timings(timings)
    assert tp is not None and tp.step_s_per_token == pytest.approx(0.0001)
    # 8 rows of 500 tokens, 23 steps: 23 * (0.1 + 0.16 + 0.4) of decode
    prefill = tp.prefill_s0 + 4000 / tp.prefill_tps
    assert tp.batch_seconds(8, 500, 23) == pytest.approx(prefill + 23 * 0.66)
    # two batches alike: the per-token term cannot be told apart, so rows alone (the ratio)
    assert decode_fit([t(2, 200), t(2, 200)])[2] == 0.0


def test_hf_prefix_reuse_is_predicted_per_batch_on_its_unshared_tokens() -> None:
    from types import SimpleNamespace

    from rr.generation.throughput import prefix_sharing

    tp = Throughput(
        prefill_tps=100.0, step_s_per_row=0.05, steps_share=1.0, rows=8, prefill_s0=0.5, step_s0=0.2
    )
    # prompts in the order sent, batches of 2 within chunks of 64: (100 + 120 - 80) and (130 - 100)
    # computed tokens; 10 decode steps each
    expected = (0.5 + 140 / 100 + 10 * (0.2 + 2 * 0.05)) + (0.5 + 30 / 100 + 10 * (0.2 + 0.05))
    got = step_seconds([100, 120, 130], tp, 2, 64, 11, shared=[0, 80, 100], batched_prefixes=True)
    assert got == pytest.approx(expected)
    # which backends reuse what: vLLM whole blocks of one call, hf (prefix_cache) per token in its
    # batches, any other backend nothing
    prompts, tokens = ["D1 D2 Q", "D1 Q", "E2 Q"], [70, 40, 40]
    vllm = SimpleNamespace(batches_whole_call=True)
    hf = SimpleNamespace(reuses_prefixes=True)
    assert prefix_sharing(vllm, prompts, tokens) == ([0, 16, 0], False)
    assert prefix_sharing(hf, prompts, tokens) == ([0, 30, 0], True)
    assert prefix_sharing(SimpleNamespace(), prompts, tokens) == (None, False)
    from rr.generation.hf import HFGenerator

    assert (
        HFGenerator(prefix_cache=True).reuses_prefixes and not HFGenerator(prefix_cache=False).reuses_prefixes
    )


def test_throughput_is_recorded_per_machine_not_per_output_folder(tmp_path: Path) -> None:
    """Issue 43: a new output folder on the same machine said 'nothing recorded for this backend here'."""
    from rr.cost import PlanningLLM, StepTiming
    from rr.generation.cache import GenerationCache as Cache

    gen = _AffineCPU()
    llm = PlanningLLM(
        gen, Cache(tmp_path / "a", gen.identity(), writer="t"), timing=StepTiming(1e9, ThroughputStore())
    )
    llm.generate(
        [Request.user(" ".join(["w"] * n), GenerationParams(max_new_tokens=5)) for n in range(10, 16)]
    )
    # a job in another output folder (its own paths.cache_dir) reads what the plan recorded
    assert ThroughputStore().get(gen.throughput_key()) is not None
    assert machine_dir() == tmp_path / "throughput"  # RR_THROUGHPUT_DIR (conftest): the user's cache


def test_the_timing_budget_is_respected(tmp_path: Path) -> None:
    """Issue 43: with --timing-budget 60 the demo's plan spent 3 min timing (every step was probed);
    once the budget is spent, later steps are predicted from the fit of the steps timed so far."""
    from rr.cost import CALIBRATION_TOKENS, PlanningLLM, StepTiming

    gen = _AffineCPU()
    timing = StepTiming(budget_s=0.0, store=ThroughputStore(tmp_path / "tp"))
    llm = PlanningLLM(gen, GenerationCache(tmp_path, gen.identity(), writer="t"), timing=timing)

    llm.generate(prompts(range(10, 15)), step="closed_book")
    calls = len(gen.calls)
    # the first step is timed (something must be): the warm-up, then its shortest prompt alone; the
    # next probes would overrun the budget (they ran whatever was left)
    assert gen.calls == [(1, 2), (2, 2), (1, CALIBRATION_TOKENS)]
    llm.generate(prompts(range(100, 106)), step="vanilla:answer")
    assert len(gen.calls) == calls  # nothing timed after the budget
    closed, rag = llm.steps
    assert rag.seconds is not None and rag.seconds > 0 and "budget spent" in rag.timed_on


def test_a_job_over_the_threshold_in_steps_under_it_says_so_once(tmp_path: Path, caplog) -> None:
    """Issue 43: a job over 10 minutes made of steps under 10 minutes never warned."""
    gen = _SlowCPU()
    store = ThroughputStore(tmp_path)
    # 10 prompt tokens/s, 0.5 s per decode step and row, as recorded by an earlier plan
    store.put(
        gen.throughput_key(),
        Throughput(prefill_tps=10.0, step_s_per_row=0.5, steps_share=1.0, rows=4),
        "plan",
    )
    llm = LLM(gen, GenerationCache(tmp_path, gen.identity(), writer="t"), warn_after_s=40.0, throughput=store)

    def step(word: str) -> list[Request]:  # 4 prompts of 20 tokens, 4 new tokens: ~4 x 2 + 4 x 3 x 0.5 = 14 s
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


def test_a_job_records_its_batches_pooled_with_the_plans_without_its_first(tmp_path: Path) -> None:
    """Issue 43: the in-job estimate came from the previous step's rate, its first (start-up) batch
    included; the record now pools every batch timed on this machine, fitted as rr plan fits."""
    gen = _AffineCPU()
    store = ThroughputStore(tmp_path)
    plan_pool = [
        BatchTiming(1, n, *_affine_seconds(1, n, 7)[:1], 7, _affine_seconds(1, n, 7)[1], 8) for n in (10, 100)
    ]
    fitted = Throughput.from_timings(plan_pool)
    assert fitted is not None
    store.put(gen.throughput_key(), fitted, "rr plan", plan_pool)
    llm = LLM(gen, GenerationCache(tmp_path, gen.identity(), writer="t"), warn_after_s=1e9, throughput=store)
    llm.generate(
        [
            Request.user(" ".join([f"q{n}"] + ["w"] * n), GenerationParams(max_new_tokens=8))
            for n in range(20, 32)
        ]
    )
    pooled = store.timings(gen.throughput_key())
    # 12 prompts in batches of 4: 3 batches, the first (10 s of one-off cost) left out
    assert pooled[:2] == plan_pool and len(pooled) == 2 + 2
    assert all(t.prefill_s < 10 for t in pooled)


def test_a_tight_budget_times_two_of_the_steps_own_prompts(tmp_path: Path) -> None:
    """Issue 43: when a whole batch of the step's own prompts would overrun the budget, 2 of them are
    timed with the step's own decoding (decode was taken to run to max_new_tokens: the demo's cold
    plan said 3x its wall time)."""
    from rr.cost import PlanningLLM, StepTiming

    gen = _AffineCPU()
    # hand-worked (_affine_seconds, the probes' 8 new tokens): the shortest prompt alone 3.25 s, the
    # batch of 102-105 7.5 s, the longest alone 3.32 s: 14.07 s of 21; then a whole own batch (11 new
    # tokens) would take 0.5 + 4.2 + 10 x 0.4 = 8.7 s > 6.93 s left, two of its prompts 5.58 s
    timing = StepTiming(budget_s=21.0, store=ThroughputStore(tmp_path / "tp"))
    llm = PlanningLLM(gen, GenerationCache(tmp_path, gen.identity(), writer="t"), timing=timing)
    llm.generate(prompts(range(100, 108)), step="vanilla:answer")
    (step,) = llm.steps
    assert "this step's own included" in step.timed_on
    assert gen.calls[-1] == (2, 11)


def _loaded(rows: int, n: int, steps: int, contention: float | None) -> BatchTiming:
    """A batch of :func:`_affine_seconds` run ``contention`` times slower (other processes on the cores)."""
    prefill, decode = _affine_seconds(rows, n, steps)
    c = contention or 1.0
    return BatchTiming(rows, rows * n, prefill * c, steps, decode * c, steps + 1, contention)


def test_a_rate_timed_under_load_is_the_machines_alone_and_predicted_at_the_load_expected() -> None:
    """Issue 43: a record fitted while other sessions loaded the machine (load 10-15 on 2 cores) made
    the demo on a quieter machine warn of ~9 min for a 1.5 min step. Each timing now carries its
    contention; the fit divides it out and a prediction multiplies the contention expected back in."""
    sizes = ((1, 10), (1, 100), (4, 100))
    at_six = [_loaded(r, n, 7, 6.0) for r, n in sizes]  # load 12 on 2 cores: 6x slower
    tp = Throughput.from_timings(at_six)
    assert tp is not None and tp.alone
    # the machine alone: the same figures as timings taken on an idle machine
    assert (tp.prefill_s0, tp.prefill_tps) == (pytest.approx(0.5), pytest.approx(100.0))
    assert (tp.step_s0, tp.step_s_per_row) == (pytest.approx(0.2), pytest.approx(0.05))
    idle = 0.5 + 4.0 + 23 * 0.6  # a batch of 8 x 50 tokens, 23 steps, hand-worked as above
    assert tp.batch_seconds(8, 50, 23) == pytest.approx(idle)
    assert tp.at(None).batch_seconds(8, 50, 23) == pytest.approx(idle)
    assert tp.at(2.5).batch_seconds(8, 50, 23) == pytest.approx(2.5 * idle)
    assert tp.at(0.4).contention == 1.0  # never faster than alone
    # timings from several loads pool into one machine
    mixed = Throughput.from_timings(
        [_loaded(r, n, 7, c) for (r, n), c in zip(sizes, (1.0, 3.0, 7.5), strict=True)]
    )
    assert mixed is not None and mixed.batch_seconds(8, 50, 23) == pytest.approx(idle)
    # timings that do not know their load (an old record, a GPU) are taken as measured: not scaled
    unknown = Throughput.from_timings([_loaded(r, n, 7, None) for r, n in sizes])
    assert unknown is not None and not unknown.alone
    assert unknown.at(4.0).batch_seconds(8, 50, 23) == pytest.approx(idle)
    assert median_contention([_loaded(1, 10, 7, c) for c in (None, 3.0, 1.0, 2.0)]) == 2.0
    assert expected_contention([_loaded(1, 10, 7, 3.0)], threads=2) == 3.0


class _LoadedCPU(_AffineCPU):
    """:class:`_AffineCPU` on a machine whose other processes make it ``contention`` times slower,
    which its timings say (as the ``hf`` backend's do)."""

    contention = 1.0

    def generate(
        self, prompts: list[str], params: GenerationParams, progress: Any = None
    ) -> list[Completion]:
        before = len(self.batch_timings)
        out = super().generate(prompts, params, progress)
        c = self.contention
        self.batch_timings[before:] = [
            BatchTiming(
                t.rows, t.padded_tokens, t.prefill_s * c, t.steps, t.decode_s * c, t.max_new_tokens, c
            )
            for t in self.batch_timings[before:]
        ]
        return out


def test_a_record_fitted_under_load_warns_an_idle_job_at_the_idle_time(tmp_path: Path, caplog) -> None:
    """The CI run's case: rr plan timed the backend at contention 6; the job runs on an idle machine
    (its first step's batches say contention 1): the next step is predicted at 1, not at 6."""
    from rr.cost import PlanningLLM, StepTiming

    gen = _LoadedCPU()
    gen.contention = 6.0
    store = ThroughputStore(tmp_path / "tp")
    llm = PlanningLLM(
        gen, GenerationCache(tmp_path, gen.identity(), writer="t"), timing=StepTiming(1e9, store)
    )
    llm.generate(prompts(range(100, 106)), step="vanilla:answer")
    (planned,) = llm.steps
    truth = sum(sum(_affine_seconds(rows, n, 10)) for rows, n in ((4, 105), (2, 101)))  # 14.22 s alone
    assert planned.seconds == pytest.approx(6 * truth)  # the plan: at the load it timed
    assert store.get(gen.throughput_key()).alone

    job = _LoadedCPU()
    job.contention = 1.0
    llm = LLM(
        job,
        GenerationCache(tmp_path / "job", job.identity(), writer="t"),
        warn_after_s=20.0,
        throughput=store,
    )
    llm.generate(prompts(range(10, 15)), step="closed_book")  # idle now: its batches say so
    with caplog.at_level(logging.WARNING, logger="rr.generation.client"):
        llm.generate(prompts(range(100, 106)), step="vanilla:answer")
    # alone the step takes 14.22 s < 20 s: no step warning (at the recorded load it would say ~85 s);
    # the job-level line (the closed-book step's 10 s start-up included) names the step's ~14 s
    lines = [r.getMessage() for r in caplog.records]
    assert not [m for m in lines if m.startswith("vanilla:answer: 6 prompts")], lines
    assert [m for m in lines if "this step's ~14 s" in m], lines
    caplog.clear()
    job.contention = 3.0  # the machine gets busy: the next step's 3 batches say so
    llm.warn_after_s = 1e9
    llm.generate(prompts(range(300, 312)), step="busy")
    llm.warn_after_s = 20.0
    with caplog.at_level(logging.WARNING, logger="rr.generation.client"):
        llm.generate(prompts(range(200, 206)), step="loaded")
    (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("loaded: 6 prompts")]
    assert "3.0x the time alone" in line  # the latest batches (contention 3) set the expectation


def test_the_contention_sampler_sees_busy_processes() -> None:
    """Real processes: CPU-bound loops, one more than the cores, raise the runnable threads the sampler
    reads (Linux's /proc/loadavg) and so the contention a job would meet now."""
    import subprocess
    import sys
    import time

    from rr.generation.throughput import contention_now, contention_of, runnable_threads, usable_cores

    if runnable_threads() is None:
        pytest.skip("no /proc/loadavg on this system: contention is taken as 1")
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2 * usable_cores())]
    try:
        time.sleep(0.5)
        loaded = contention_now(threads=1)
        sampler = ContentionSampler(threads=1, every_s=0.0)
        for _ in range(10):
            sampler.sample()
            time.sleep(0.01)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    # 2 x cores busy loops + 1 thread of ours, per core: at least 2 (other tests may add more)
    assert loaded >= 2.0
    assert (sampler.contention() or 0) >= 2.0
    assert ContentionSampler(threads=1).contention() is None
    # the even-share rule, hand-worked: alone 1; as many threads as cores beside twice as many others: 3
    cores = usable_cores()
    assert contention_of(0, 1) == 1.0 and contention_of(0, cores) == 1.0
    assert contention_of(2 * cores, cores) == pytest.approx(3.0)


def test_the_first_calls_one_off_cost_counts_with_the_model_load_and_is_recorded(tmp_path: Path) -> None:
    """A job pays its model's first call's one-off costs in its first batch (the demo's closed-book
    step: 2.3 s predicted, 6.6 s measured, idle); `rr plan` timed that call and left it out. It now
    counts with the model's load, and a warm plan (`--no-timing`) finds it recorded on this machine."""
    from rr.cost import PlanningLLM, StepTiming

    gen = _AffineCPU()  # 10 s of one-off cost in its first call
    store = ThroughputStore(tmp_path / "tp")
    timing = StepTiming(budget_s=1e9, store=store)
    llm = PlanningLLM(gen, GenerationCache(tmp_path, gen.identity(), writer="t"), timing=timing)
    llm.generate(prompts(range(10, 15)), step="closed_book")
    (load,) = timing.load_s.values()
    # the warm-up's first call: 1 prompt of 10 tokens, 1 decode step: 0.5 + 0.1 + 0.25 s besides the 10 s
    assert load == pytest.approx(10.0, abs=0.05)
    assert store.start_s(gen.throughput_key()) == pytest.approx(load)

    warm = StepTiming(budget_s=None, store=store)  # rr plan --no-timing: nothing loaded, nothing timed
    llm = PlanningLLM(_AffineCPU(), GenerationCache(tmp_path / "w", gen.identity(), writer="t"), timing=warm)
    llm.generate(prompts(range(10, 15)), step="closed_book")
    assert list(warm.load_s.values()) == [pytest.approx(load)]
    # a job's record keeps it (its own put passes none)
    store.put(gen.throughput_key(), Throughput.from_timings(gen.batch_timings), "job step")
    assert store.start_s(gen.throughput_key()) == pytest.approx(load)
