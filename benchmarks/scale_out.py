"""Scale-out measurements: request order, dedup/caching on the Cao grid, openai-backend concurrency.

    python benchmarks/scale_out.py prefix  [--examples 6]      # prefix-sorted vs unsorted order
    python benchmarks/scale_out.py plan    [--n 25 50 100]      # rr plan on the paper grid, mini data
    python benchmarks/scale_out.py openai  [--prompts 8]        # concurrency 1/2/4/8 vs transformers serve
    python benchmarks/scale_out.py --quick [prefix|plan|openai]   # all three (or one) at toy sizes

``prefix``: the demo's vanilla prompts for k = 1..K in the three orders (mini data, BM25),
in the client's order (sorted by prompt text) and in a seeded random order. Reported: the
share of prompt tokens that repeat the previous prompt's prefix in whole 16-token blocks (what
vLLM's automatic prefix cache can reuse from the neighbouring request; a lower bound for a
large cache) and, on CPU with the HF backend, the wall time of generating them in chunks of
``flush_every`` (the HF backend has no prefix cache: this shows the order costs it nothing).
vLLM on a GPU is not run here.

``plan``: ``rr plan`` on Cao et al.'s grid (k in {5,...,100}, three orders, closed-book
baseline; ``judge=match``) over the bundled mini data and corpus for growing n, and a 3-seed
sweep: requests, unique requests (dedup ratio), requests served by earlier jobs of the sweep
(cache hit rate), and the planner's wall and CPU time per n (linearity), with its default
token estimates and (for n up to ``--exact-up-to``) with ``--exact-tokens``, whose requests
and totals the estimate's are compared with.

``openai``: the same prompts through the openai backend against ``transformers serve`` on the
packaged SmolLM2 (CPU) at several concurrency limits.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import tempfile
import time
from pathlib import Path

from _startup import start

REPO = start(["HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"])

#: What ``--quick`` prints (tests/test_benchmarks.py checks each regex matches a line).
QUICK_FIGURES = [
    r"^reusable prefix share \(16-token blocks, neighbour\): sorted [\d.]+, unsorted [\d.]+$",
    r"^HF CPU generation, chunks of \d+, \d+ new tokens: sorted [\d.]+s, unsorted [\d.]+s",
    r"^n=1 estimate: \d+ requests, \d+ unique",
    r"^  exact: same requests as the estimate: (True|False); prompt tokens relative error",
    r"^estimate CPU time ratio n=2 / n=1: [\d.]+",
    r"^3-seed sweep at n=1: \d+ requests, \d+ unique within jobs, \d+ served by earlier jobs",
    r"^concurrency 1: [\d.]+s for \d+ requests",
    r"^speed-up vs concurrency 1: 2: [\d.]+x$",
]
#: ``--quick``: each measurement's arguments at toy sizes (the plan's cache in a temporary folder).
QUICK_ARGV = {
    "prefix": [
        "--examples",
        "1",
        "--k",
        "2",
        "--max-new-tokens",
        "2",
        "--flush-every",
        "4",
        "--passages",
        "300",
    ],
    "plan": ["--n", "1", "2", "--retrievers", "bm25", "--exact-up-to", "1", "--passages", "300"],
    "openai": ["--prompts", "2", "--concurrency", "1", "2", "--max-new-tokens", "2"],
}


def machine() -> str:
    import torch

    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, load {os.getloadavg()[0]:.1f}"


def reusable_prefix_share(token_ids: list[list[int]], block: int = 16) -> float:
    """Share of all tokens lying in whole ``block``-token blocks shared with the previous prompt."""
    reused = total = 0
    prev: list[int] = []
    for ids in token_ids:
        common = 0
        for a, b in zip(prev, ids, strict=False):
            if a != b:
                break
            common += 1
        reused += (common // block) * block
        total += len(ids)
        prev = ids
    return reused / total if total else 0.0


def bench_prefix(
    n_examples: int, k: int, max_new_tokens: int, flush_every: int, passages: int = 1000
) -> None:
    from rr.context import RankedDoc, order_indices
    from rr.data.corpus import WikiOfflineCorpus
    from rr.data.mini import MiniDataset
    from rr.generation.hf import HFGenerator
    from rr.prompts import render
    from rr.records import GenerationParams, Request
    from rr.retrieval.bm25 import BM25Retriever
    from rr.strategies.base import format_doc

    examples = MiniDataset(n=n_examples, seed=0, answerable_only=False).load()
    corpus = WikiOfflineCorpus(max_passages=passages).load()
    bm25 = BM25Retriever()
    bm25.index(corpus)
    runs = bm25.search([e.question for e in examples], k)
    gen = HFGenerator(batch_size=8)
    params = GenerationParams(max_new_tokens=max_new_tokens)
    prompts = set()
    for ex, hits in zip(examples, runs, strict=True):
        for kk in range(1, k + 1):
            docs = [RankedDoc(corpus[h.passage_id], h.rank) for h in hits[:kk]]
            for order in ("original", "reversed", "shuffled"):
                ordered = [docs[i] for i in order_indices(len(docs), order, 0, ex.id, kk)]
                text = render(
                    "rag_qa.j2",
                    sources=[format_doc(d, "{title}\n{text}") for d in ordered],
                    question=ex.question,
                )
                prompts.add(gen.render(Request.user(text, params)))
    sorted_prompts = sorted(prompts)
    shuffled = sorted(prompts)
    random.Random(0).shuffle(shuffled)
    tok = gen.tokenizer
    share = {}
    for name, ps in (("sorted", sorted_prompts), ("unsorted", shuffled)):
        share[name] = reusable_prefix_share(tok(ps, add_special_tokens=False)["input_ids"])
    print(f"{len(prompts)} distinct prompts ({n_examples} questions, k=1..{k}, 3 orders)")
    print(
        f"reusable prefix share (16-token blocks, neighbour): sorted {share['sorted']:.3f}, unsorted {share['unsorted']:.3f}"
    )
    gen.load()
    times = {}
    for name, ps in (("sorted", sorted_prompts), ("unsorted", shuffled)):
        t0 = time.perf_counter()
        for i in range(0, len(ps), flush_every):
            gen.generate(ps[i : i + flush_every], params)
        times[name] = time.perf_counter() - t0
    print(
        f"HF CPU generation, chunks of {flush_every}, {max_new_tokens} new tokens: sorted {times['sorted']:.1f}s, "
        f"unsorted {times['unsorted']:.1f}s, ratio sorted/unsorted {times['sorted'] / times['unsorted']:.2f}"
    )


def bench_plan(
    ns: list[int], cache_dir: str, retrievers: str, judge: str, exact_up_to: int, passages: int | None = None
) -> None:
    from rr.cost import compose_jobs, cost_job, total

    base = [
        "experiment=cao2025",
        "dataset=mini",
        "dataset.answerable_only=false",  # all 497 questions: the timings in benchmarks/README.md
        "corpus=wiki_offline",
        f"retriever=[{retrievers}]",
        f"paths.cache_dir={cache_dir}",
        f"judge={judge}",  # the paper's 70B judge has no tokenizer offline
        *([f"corpus.max_passages={passages}"] if passages else []),  # a sample keeping the gold pages
    ]
    # warm the retrieval caches (BM25 index, dense embeddings of the corpus) once
    ((_, cfg),) = compose_jobs([*base, "dataset.n=2"], False)
    t0 = time.perf_counter()
    cost_job(cfg)
    print(
        f"retrieval warm-up (indexes of the 10,033-passage corpus; [{retrievers}]): {time.perf_counter() - t0:.1f}s"
    )
    rows = []
    for n in ns:
        ((_, cfg),) = compose_jobs([*base, f"dataset.n={n}"], False)
        for exact in (False, True) if n <= exact_up_to else (False,):
            planned: set[str] = set()
            p = cost_job(cfg, planned=planned, exact_tokens=exact)
            t = total(p.steps)
            if not exact:
                rows.append((n, t, p.cpu_seconds))
                estimate = (t, planned)
            else:  # the estimate's fitting and token counts against the exact ones
                same = planned == estimate[1]
                err = (estimate[0].prompt_tokens - t.prompt_tokens) / t.prompt_tokens
                print(
                    f"  exact: same requests as the estimate: {same}; prompt tokens relative error {err:+.2e}"
                )
            print(
                f"n={n} {'exact' if exact else 'estimate'}: {t.requests} requests, {t.unique} unique "
                f"({t.unique / t.requests:.3f}), {t.prompt_tokens:,} prompt tokens "
                f"({t.estimated_prompts} of {t.to_generate} prompts estimated), planned in {p.seconds:.1f}s wall, "
                f"{p.cpu_seconds:.1f}s CPU ({p.cpu_seconds / n:.3f} CPU s/question)"
            )
    n0, _, s0 = rows[0]
    for n, _, s in rows[1:]:
        print(f"estimate CPU time ratio n={n} / n={n0}: {s / s0:.2f} (linear: {n / n0:.2f})")
    n = ns[0]
    planned: set[str] = set()
    jobs = compose_jobs([*base, f"dataset.n={n}", "seed=0,1,2"], True)
    sweep = [total(cost_job(cfg, planned=planned).steps) for _, cfg in jobs]
    req = sum(t.requests for t in sweep)
    print(
        f"3-seed sweep at n={n}: {req} requests, {sum(t.unique for t in sweep)} unique within jobs, "
        f"{sum(t.cached for t in sweep)} served by earlier jobs' cache entries "
        f"(hit rate {sum(t.cached for t in sweep) / req:.3f}), {sum(t.to_generate for t in sweep)} to generate "
        f"({sum(t.to_generate for t in sweep) / req:.3f} of requests)"
    )


def bench_openai(
    n_prompts: int, concurrencies: list[int], max_new_tokens: int, server_args: list[str]
) -> None:
    from rr.generation.openai import OpenAIGenerator
    from rr.records import GenerationParams, Request
    from tests.openai_servers import packaged_model_path, transformers_serve

    questions = [
        f"In one word, what is the capital of country number {i} in an alphabetical list?"
        for i in range(n_prompts)
    ]
    path = packaged_model_path()
    with (
        tempfile.TemporaryDirectory() as tmp,
        transformers_serve(path, Path(tmp) / "serve.log", extra_args=server_args) as url,
    ):
        gen = OpenAIGenerator(model=path, base_url=url, api_key_env=None, timeout_s=600)
        prompts = [gen.render(Request.user(q)) for q in questions]
        gen.generate(prompts[:1], GenerationParams(max_new_tokens=2))  # warm-up
        times = {}
        for c in concurrencies:
            gen.concurrency = c
            t0 = time.perf_counter()
            gen.generate(prompts, GenerationParams(max_new_tokens=max_new_tokens))
            times[c] = time.perf_counter() - t0
            print(
                f"concurrency {c}: {times[c]:.1f}s for {n_prompts} requests ({n_prompts / times[c]:.2f} req/s)"
            )
        c0 = concurrencies[0]
        print(
            "speed-up vs concurrency "
            + str(c0)
            + ": "
            + ", ".join(f"{c}: {times[c0] / times[c]:.2f}x" for c in concurrencies[1:])
        )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the measurement (default: all three) at toy sizes")
    sub = ap.add_subparsers(dest="what")
    subs = {}
    subs["prefix"] = p = sub.add_parser("prefix")
    p.add_argument("--examples", type=int, default=4)
    p.add_argument("--k", type=int, default=4)
    p.add_argument("--max-new-tokens", type=int, default=8)
    p.add_argument("--flush-every", type=int, default=16)
    p.add_argument("--passages", type=int, default=1000, help="BM25 corpus sample")
    subs["plan"] = p = sub.add_parser("plan")
    p.add_argument("--n", type=int, nargs="+", default=[25, 50, 100])
    p.add_argument(
        "--cache-dir", default=None, help="default: outputs/bench-cache (--quick: a temporary one)"
    )
    p.add_argument("--passages", type=int, default=None, help="corpus sample (default: the whole corpus)")
    p.add_argument("--retrievers", default="bm25,dense", help="comma-separated retriever options")
    p.add_argument(
        "--judge", default="match", help="judge option (the paper's 70B judge needs its tokenizer)"
    )
    p.add_argument(
        "--exact-up-to", type=int, default=100, help="also plan with --exact-tokens for n up to this"
    )
    subs["openai"] = p = sub.add_parser("openai")
    p.add_argument("--prompts", type=int, default=8)
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 2, 4, 8])
    p.add_argument("--max-new-tokens", type=int, default=8)
    p.add_argument(
        "--server-args",
        nargs="*",
        default=[],
        help="e.g. --continuous-batching (no leading --: give 'continuous-batching')",
    )
    a = ap.parse_args(argv)
    if a.what is None and not a.quick:
        ap.error("choose a measurement: prefix, plan or openai (or --quick: all three at toy sizes)")
    print(f"machine: {machine()}")
    for what in [a.what] if a.what else list(subs):
        args = subs[what].parse_args(QUICK_ARGV[what]) if a.quick else a
        with tempfile.TemporaryDirectory(prefix="rr-scale-out-") as tmp:
            if what == "prefix":
                bench_prefix(args.examples, args.k, args.max_new_tokens, args.flush_every, args.passages)
            elif what == "plan":
                cache = args.cache_dir or (tmp if a.quick else str(REPO / "outputs" / "bench-cache"))
                bench_plan(args.n, cache, args.retrievers, args.judge, args.exact_up_to, args.passages)
            else:
                bench_openai(
                    args.prompts, args.concurrency, args.max_new_tokens, [f"--{x}" for x in args.server_args]
                )


if __name__ == "__main__":
    main()
