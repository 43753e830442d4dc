"""``rr plan``: the planner's counts equal what the real job then does, and it calls no model."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from rr.cost import PLACEHOLDER, PlanningLLM, cost_job, total
from rr.generation.base import Completion
from rr.generation.cache import GenerationCache
from rr.pipeline import run_job
from rr.records import GenerationParams, Request

from .conftest import compose_config
from .test_docs import rr_main

SMALL = [
    "dataset.n=2",
    "retriever=bm25",
    "grid.k=[1,2]",
    "grid.orders=[original,reversed]",
    "corpus.max_passages=300",
    "generator.max_new_tokens=4",
]


def test_plan_matches_the_real_job_then_sees_its_cache(tmp_path: Path) -> None:
    # the real model's cost is its prompt tokens: 1 question, and batches of 2 of the length-sorted
    # prompts (the short closed-book one is not padded to the RAG prompts' length)
    cfg = compose_config([*SMALL, "dataset.n=1", "generator.batch_size=2"], tmp_path)
    before = cost_job(cfg, exact_tokens=True)
    estimated = total(cost_job(cfg).steps)  # the default: window fitting's estimates where it made them
    assert not list((tmp_path / "cache").glob("generations/*/*.jsonl"))  # nothing generated or cached
    t = total(before.steps)
    real = run_job(cfg, Path(cfg.paths.output_root) / "job").summary
    assert [s.step for s in before.steps] == [s.step for s in real.generation_steps]
    assert t.requests == real.requests == 1 * (1 + 2 * 2)
    assert t.unique == real.unique_requests and t.to_generate == real.model_calls and t.cached == 0
    assert t.prompt_tokens == real.prompt_tokens_generated_for  # the real tokenizer, exactly
    assert t.new_tokens == 4 * t.to_generate  # max_new_tokens: the upper bound
    assert real.completion_tokens <= t.new_tokens
    assert before.rows == real.rows and not t.estimate
    # estimates for every RAG prompt (all far below the window), exact for the closed-book one;
    # for rag_qa.j2 and SmolLM2 the estimate equals the exact count
    assert (t.estimated_prompts, estimated.estimated_prompts) == (0, t.to_generate - 1)
    assert estimated.prompt_tokens == t.prompt_tokens

    # issue 51: the plan's power table takes the rates this job measured, and says so
    from rr.commands.plan import measured_rates

    rate, which = measured_rates([before], [([], cfg)], ["accuracy"])[1]["accuracy"]
    assert rate == real.accuracy and which == f"measured by job {real.job_id} (1 example)"

    after = total(cost_job(cfg, mean_new_tokens=2.5).steps)
    assert after.cached == after.unique and after.to_generate == 0 and after.prompt_tokens == 0
    assert after.new_tokens == 0


class _Tokenizer:
    """A stand-in backend: whitespace tokens, prompts are the user message."""

    name = "fake"
    context_window = 1000

    def identity(self) -> dict:
        return {"model_id": "fake", "revision": "1"}

    def default_params(self) -> GenerationParams:
        return GenerationParams(max_new_tokens=10)

    def render(self, request: Request) -> str:
        return request.messages[-1][1]

    def count_tokens(self, prompts: list[str]) -> list[int]:
        return [len(p.split()) for p in prompts]

    def generate(
        self, prompts: list[str], params: GenerationParams, progress: Any = None
    ) -> list[Completion]:
        raise AssertionError("the planner must not generate")


def test_planning_llm_counts_dedup_cache_and_flags_steps_fed_by_placeholders(tmp_path: Path) -> None:
    gen = _Tokenizer()
    cache = GenerationCache(tmp_path, gen.identity(), writer="t")
    params = GenerationParams(max_new_tokens=10)
    llm = PlanningLLM(gen, cache, mean_new_tokens=None)
    cache.put_many([(llm.key("a b c", Request.user("a b c", params)), Completion("cached answer", 3, 2))])
    step1 = [Request.user(t, params) for t in ("a b c", "d e", "d e", "f")]
    out = llm.generate(step1, step="one")
    assert [g.text for g in out] == ["cached answer", PLACEHOLDER, PLACEHOLDER, PLACEHOLDER]
    assert [g.cached for g in out] == [True, False, False, False]
    # step 2 feeds step 1's outputs back: its counts are estimates
    llm.generate([Request.user(f"Check: {g.text}", params) for g in out[:2]], step="two")
    one, two = llm.steps
    assert (one.requests, one.unique, one.cached, one.to_generate) == (4, 3, 1, 2)
    assert one.prompt_tokens == 2 + 1 and one.new_tokens == 20 and not one.estimate
    assert (two.requests, two.unique, two.to_generate) == (2, 2, 2) and two.estimate
    assert two.prompt_tokens == 3 + len(PLACEHOLDER.split()) + 1
    assert one.gpu_hours(prompt_tps=3.0, generated_tps=20.0) == (1 + 1) / 3600
    assert not list(tmp_path.glob("generations/*/*.jsonl"))[1:]  # only the shard written above
    llm.generate(step1, step="again")  # planned requests count as cached, as they will be
    assert (llm.steps[2].cached, llm.steps[2].to_generate) == (3, 0)


def test_planning_llm_reports_window_fitting_estimates_unless_exact(tmp_path: Path) -> None:
    gen = _Tokenizer()
    cache = GenerationCache(tmp_path, gen.identity(), writer="t")
    requests = [Request.user(t, GenerationParams(max_new_tokens=10)) for t in ("a b c", "d e", "f")]
    for exact_tokens, tokens, estimated in ((False, 7 + 2 + 1, 1), (True, 3 + 2 + 1, 0)):
        llm = PlanningLLM(gen, cache, exact_tokens=exact_tokens)
        llm.note_prompt_tokens(requests[0], 7, exact=False)  # estimated by window fitting
        llm.note_prompt_tokens(requests[1], 2, exact=True)
        llm.generate(requests)
        (step,) = llm.steps
        assert (step.prompt_tokens, step.estimated_prompts) == (tokens, estimated)


def test_plan_cli_writes_json(tmp_path: Path, capsys) -> None:
    out = tmp_path / "plan.json"
    code, stdout, err = rr_main(
        ["plan", "--json", str(out), "--mean-new-tokens", "3", *SMALL, f"paths.output_root={tmp_path}"],
        capsys,
    )
    assert code == 0, err[-3000:]
    assert "GPU-hours" in stdout and "vanilla:answer" in stdout
    assert "estimated from per-document counts by window fitting" in stdout
    plan = json.loads(out.read_text())
    assert plan["total"]["requests"] == 10 and plan["total"]["new_tokens"] == 3 * plan["total"]["to_generate"]
    assert plan["gpu_hours"] > 0 and plan["prompt_token_counts"] == "estimate where fitting made one"
    # power at the planned 2 examples from the default assumed rate 0.5: 1.96 * sqrt(0.25 / 2)
    power = {r["metric"]: r for r in plan["power"]}
    assert set(power) == {"accuracy", "ndr", "rsr", "ror"}
    assert power["accuracy"]["n_planned"] == 2 and abs(power["accuracy"]["halfwidth"] - 0.69296) < 1e-4
    assert power["ndr"]["n_needed"] == 2401  # (1.96 / 0.02)^2 * 0.25 = 2400.9
    assert "power at 2 examples" in stdout and "2,401" in stdout
    assert power["ndr"]["rate_from"] == "assumed (0.5: the worst case)" and "rate from" in stdout
    # issue 30: the examples needed are more than the dataset holds (mini: 78 answerable questions)
    assert power["ndr"]["dataset_examples"] == 78
    assert "2,401 examples needed for ±0.02, more than the 78 that dataset mini holds" in stdout
    # issue 51: CPU time on this machine as a range, from one probe of a few prompts of the model
    (job,) = plan["jobs"]
    assert all(0 < s["cpu_seconds"][0] <= s["cpu_seconds"][1] for s in job["steps"])
    assert plan["cpu_seconds"][0] == [sum(s["cpu_seconds"][i] for s in job["steps"]) for i in (0, 1)]
    (basis,) = {s["cpu_basis"] for s in job["steps"]}  # one probe, of the first step, for both steps
    assert basis.startswith(f"measured on 2 prompts of {job['steps'][0]['step']} (")
    assert re.search(
        r"generation on this machine's CPU ~[\d.]+( s| min)?–[\d.]+ (s|min) \(measured on", stdout
    )
    assert re.search(r", at (load [\d.]+|an unknown load) on \d+ cores", stdout)
    assert not list((tmp_path / "cache").glob("generations/*/*.jsonl"))  # probing caches nothing


def test_plan_keeps_the_jobs_progress_bars_and_plans_other_models(tmp_path: Path, monkeypatch) -> None:
    # issue 30: `rr plan` encoded a corpus for minutes with no bar (the plan forced progress off);
    # and a judge on another model than the one under test was served by a real LLM, not planned
    import rr.job_env

    shown: list[bool] = []
    real = rr.job_env.set_progress
    monkeypatch.setattr(rr.job_env, "set_progress", lambda on: (shown.append(on), real(on)))
    cfg = compose_config([*SMALL, "dataset.n=1", "judge=llm", "judge.generator.dtype=bfloat16"], tmp_path)
    cfg.progress = True
    cost = cost_job(cfg)
    real(False)
    assert shown and shown[0] is True
    judged = [s for s in cost.steps if s.step.startswith("judge")]
    assert judged and judged[0].to_generate > 0  # planned, on the placeholder answers
    assert not list((tmp_path / "cache").glob("generations/*/*.jsonl"))  # no model called


def test_plan_multirun_expands_named_sweeps_like_hydra() -> None:
    from rr.cost import compose_jobs

    jobs = compose_jobs(["sweep=cao2025_mini", "dataset.n=3"], multirun=True)
    assert sorted(tuple(sorted(j)) for j, _ in jobs) == sorted(
        tuple(sorted(["sweep=cao2025_mini", "dataset.n=3", f"strategy={s}", f"seed={seed}"]))
        for s in ("vanilla", "closed_book")
        for seed in (0, 1)
    )
    assert {(list(c.strategy)[0], c.seed, c.dataset.n) for _, c in jobs} == {
        (s, seed, 3) for s in ("vanilla", "closed_book") for seed in (0, 1)
    }

    swept = compose_jobs(["seed=0,1", "dataset.n=3"], multirun=True)
    assert sorted(c.seed for _, c in swept) == [0, 1]


def test_summary_groups_by_the_perturbations_that_vary() -> None:
    import pandas as pd

    from rr.summary import summary_groups

    scores = pd.DataFrame(
        {"query_perturbation": ["none", "typo@0.25#0"], "doc_perturbation": ["none", "none"]}
    )
    assert summary_groups(scores) == ["generator", "strategy", "query_perturbation"]
    assert summary_groups(scores.iloc[:1]) == ["generator", "strategy"]


def test_a_job_with_query_variants_and_a_k_grid_summarises(tmp_path: Path) -> None:
    # originals + 2 typo variants per question, k in {1, 2} and closed-book: the summary's
    # robustness table must group by query_perturbation (it used to fail on "duplicate rows")
    cfg = compose_config([*SMALL, "perturbation/query=typo_25", "perturbation.query.n=2"], tmp_path)
    plan = cost_job(cfg)
    assert plan.rows == 2 * 3 * (2 * 2 + 1)


def test_plan_retrieval_reports_embeddings_done_and_to_do(tmp_path: Path) -> None:
    """Dense cost rows from the real store: 312 passages in blocks of 100, one shard of 4 encoded."""
    from rr.cost import plan_retrieval
    from rr.retrieval.dense import DenseRetriever

    overrides = ["retriever=[bm25,dense]", "corpus.max_passages=300", "retriever.dense.block_size=100"]
    cfg = compose_config(overrides, tmp_path)
    bm25, dense = plan_retrieval(cfg, encode_pps=10.0)
    assert (bm25.retriever, bm25.passages, bm25.dim, bm25.encode_gpu_hours) == ("bm25", 312, None, None)
    assert (dense.passages, dense.dim, dense.encoded, dense.to_encode) == (312, 384, 0, 312)
    assert dense.embedding_bytes == 312 * 384 * 4 and dense.storage == "blocks" and dense.index == "flat"
    assert dense.index_bytes == 100 * 384 * 4  # exact search holds one block at a time
    assert abs(dense.encode_gpu_hours - 312 / 10 / 3600) < 1e-12
    # encode the last of four shards (block 3: passages 300-311); the plan sees them as done
    from rr.config import instantiate

    retriever = instantiate(cfg.retriever.dense)
    retriever.encode_corpus(instantiate(cfg.corpus).load(), cfg.paths.cache_dir, 3, 4, progress=False)
    (again,) = plan_retrieval(compose_config(["retriever=[dense]", *overrides[1:]], tmp_path))
    assert (again.encoded, again.to_encode) == (12, 300)
    # an approximate index: its own memory estimate (IVF-PQ: 16-byte codes + 8-byte ids + centroids)
    ivf = DenseRetriever(index="IVF4,PQ16", block_size=100)
    plan = ivf.storage_plan(instantiate(cfg.corpus).load(), None)
    assert plan["index_bytes"] == 312 * (16 + 8) + 4 * 384 * 4 and plan["to_encode"] == 312


def test_plan_cli_retrieval_only(tmp_path: Path, capsys) -> None:
    out = tmp_path / "plan.json"
    code, stdout, err = rr_main(
        [
            "plan",
            "--retrieval-only",
            "--json",
            str(out),
            "--encode-pps",
            "100",
            "retriever=[dense]",
            f"paths.output_root={tmp_path}",
        ],
        capsys,
    )
    assert code == 0, err[-3000:]
    assert "corpus and index" in stdout and "GPU-hours" not in stdout  # no generation planned
    (row,) = json.loads(out.read_text())["retrieval"]
    assert row["retriever"] == "dense" and row["storage"] == "memory" and row["to_encode"] == row["passages"]


def test_plan_jobs_retrieval_one_row_per_distinct_corpus_and_retriever(tmp_path: Path) -> None:
    from rr.cost import plan_jobs_retrieval

    base = ["retriever=[bm25,dense]", "corpus.max_passages=300"]
    jobs = [
        (o, compose_config(base + o, tmp_path))
        for o in (["dataset.n=2"], ["dataset.n=3"], ["corpus.max_passages=400"])
    ]
    rows = plan_jobs_retrieval(jobs, 1000.0)
    # the first two jobs share corpus and retrievers; the third samples another corpus
    assert [(r.retriever, r.passages) for r in rows] == [
        ("bm25", 312),
        ("dense", 312),
        ("bm25", 400),
        ("dense", 400),
    ]


def test_the_retrieval_a_plan_computes_is_cached_for_the_job(tmp_path: Path) -> None:
    """The plan runs the real retrieval (the demo's dense encoding) and caches it where the job reads it."""
    cfg = compose_config([*SMALL, "dataset.n=1"], tmp_path)
    cost_job(cfg)
    real = run_job(cfg, tmp_path / "job").summary
    assert real.retrieval_runs_computed == 0  # the job did read what the plan computed


def test_a_models_size_comes_from_its_config_else_its_name(tmp_path: Path) -> None:
    from rr.cost import model_parameters, parameters_from_config

    # Llama-3.1-8B's published config: 8.03 B parameters (untied embeddings, 8 kv heads)
    llama = {
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "tie_word_embeddings": False,
    }
    assert abs(parameters_from_config(llama) / 8.03e9 - 1) < 0.005
    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(llama))
    assert model_parameters(str(folder)) == (parameters_from_config(llama), "its config.json")
    assert model_parameters("meta-llama/Llama-3.3-70B-Instruct") == (70_000_000_000, "the size in its name")
    assert model_parameters("mistralai/Mixtral-8x7B-Instruct-v0.1")[0] == 56_000_000_000
    assert model_parameters("packaged:smollm2-135m-instruct")[0] == 135_000_000
    assert model_parameters("org/no-size-here") is None


def test_plan_refuses_a_job_whose_weights_cannot_fit_its_gpus(tmp_path: Path, capsys) -> None:
    # issue 50: a 70B model in bf16 (140 GB) on the slurm launcher's one 80 GB GPU
    big = ["-m", "hydra/launcher=slurm", "generator.model=meta-llama/Llama-3.3-70B-Instruct", "seed=0,1"]
    code, _, err = rr_main(["plan", *big, *SMALL, f"paths.output_root={tmp_path}"], capsys)
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("[")]
    assert code == 2 and len(lines) == 1, err[-3000:]
    assert "its weights need ~140 GB" in lines[0] and "1 GPU(s) x 80 GB it requests" in lines[0]
    assert "resources.gpus=2" in lines[0]
    assert (
        "generator.model=meta-llama/Llama-3.3-70B-Instruct: 70 B parameters (the size in its name)"
        in lines[0]
    )
    # every model the job holds counts: an 8B model under test beside a 70B LLM judge
    judged = [
        "-m",
        "hydra/launcher=slurm",
        "seed=0,1",
        "generator.model=meta-llama/Llama-3.1-8B-Instruct",
    ]
    code, _, err = rr_main(
        ["plan", *judged, "judge=llm", "judge.generator.model=meta-llama/Llama-3.3-70B-Instruct", *SMALL],
        capsys,
    )
    assert code == 2 and "its weights need ~156 GB" in err
    assert "judge.generator.model=meta-llama/Llama-3.3-70B-Instruct" in err
    # two GPUs hold it (the job's resources.gpus, or the launcher's): the plan goes on (and stops at
    # the model not being in this machine's cache)
    for two in ("resources.gpus=2", "hydra.launcher.gpus_per_node=2"):
        code, _, err = rr_main(["plan", *big, two, *SMALL, f"paths.output_root={tmp_path}"], capsys)
        assert code == 2 and "its weights need" not in err and "not in the local cache" in err
    # fp32 doubles the bytes: 280 GB on 2 x 80 GB is refused again
    code, _, err = rr_main(["plan", *big, "resources.gpus=2", "generator.dtype=float32", *SMALL], capsys)
    assert code == 2 and "its weights need ~280 GB" in err
    # a launcher that requests no GPU refuses nothing (slurm_cpu: 0)
    code, _, err = rr_main(["plan", "-m", "hydra/launcher=slurm_cpu", *big[2:], *SMALL], capsys)
    assert "its weights need" not in err


def test_plan_prints_gpu_hours_per_resource_shape(tmp_path: Path, capsys) -> None:
    out = tmp_path / "plan.json"
    sweep = ["-m", "hydra/launcher=slurm", "resources.gpus=2", "seed=0,1"]
    code, stdout, err = rr_main(
        ["plan", "--no-probe", "--json", str(out), *sweep, *SMALL, f"paths.output_root={tmp_path}"], capsys
    )
    assert code == 0, err[-3000:]
    plan = json.loads(out.read_text())
    assert [j["gpus"] for j in plan["jobs"]] == [2, 2]
    shape = re.search(r"GPU-hours per resource shape: 2×GPU: ([\d.e+-]+) GPU-h \(2 jobs\)", stdout)
    assert shape and float(shape.group(1)) == pytest.approx(plan["gpu_hours"], rel=1e-2)
    assert all(s["cpu_seconds"] is None for j in plan["jobs"] for s in j["steps"])  # --no-probe
