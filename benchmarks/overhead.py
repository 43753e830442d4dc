"""Harness overhead: the same prompts through rr's HF backend (via the cached, deduplicating
client, with an empty cache) vs. a bare ``model.generate`` loop over the same model.

Workload: the demo's vanilla RAG prompts (mini data, BM25 top-k over the bundled corpus sample,
chat template applied), greedy decoding. Both sides use the same batch size and see the prompts
in the same order (rr sorts by length; the bare loop is given that order too, so the ratio is
the harness's own cost: rendering, hashing, dedup, cache writes, bookkeeping). Each side runs
``--repeats`` times, alternating, and the best time of each is compared.

    python benchmarks/overhead.py [--examples 16] [--k 5] [--batch-size 8] [--max-new-tokens 32]
    python benchmarks/overhead.py --quick    # seconds: 2 questions, k = 1, 4 new tokens, one repeat
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time

import torch

#: What ``--quick`` prints (tests/test_benchmarks.py checks each regex matches a line).
QUICK_FIGURES = [
    r"^\d+ prompts, \d+ prompt tokens on average",
    r"^bare model\.generate loop: [\d.]+s   rr HF backend \(render\+hash\+dedup\+cache\): [\d.]+s$",
    r"^ratio rr / bare = [\d.]+   \(outputs identical: (True|False)\)$",
]


def build_requests(n_examples: int, k: int, max_new_tokens: int, passages: int = 3000):
    from rr.context import RankedDoc
    from rr.data.corpus import WikiOfflineCorpus
    from rr.data.mini import MiniDataset
    from rr.prompts import render
    from rr.records import GenerationParams, Request
    from rr.retrieval.bm25 import BM25Retriever
    from rr.strategies.base import format_doc

    examples = MiniDataset(n=n_examples, seed=0, answerable_only=False).load()
    corpus = WikiOfflineCorpus(max_passages=passages).load()
    bm25 = BM25Retriever()
    bm25.index(corpus)
    runs = bm25.search([e.question for e in examples], k)
    params = GenerationParams(max_new_tokens=max_new_tokens)
    requests = []
    for ex, hits in zip(examples, runs, strict=True):
        for kk in range(1, k + 1):  # every k like the demo grid: many distinct prompts
            docs = [RankedDoc(corpus[h.passage_id], h.rank) for h in hits[:kk]]
            text = render(
                "rag_qa.j2", sources=[format_doc(d, "{title}\n{text}") for d in docs], question=ex.question
            )
            requests.append(Request.user(text, params))
    return requests, params


def bare_loop(model, tok, prompts: list[str], batch_size: int, max_new_tokens: int) -> list[str]:
    out = []
    for s in range(0, len(prompts), batch_size):
        batch = tok(prompts[s : s + batch_size], return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.inference_mode():
            ids = model.generate(
                **batch, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=tok.pad_token_id
            )
        out += tok.batch_decode(ids[:, batch["input_ids"].shape[1] :], skip_special_tokens=True)
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one repeat (seconds)")
    ap.add_argument("--examples", type=int, default=16)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--passages", type=int, default=3000, help="BM25 corpus sample (the demo's)")
    args = ap.parse_args(argv)
    if args.quick:
        args.examples, args.k, args.batch_size, args.max_new_tokens = 2, 1, 2, 4
        args.repeats, args.passages = 1, 200

    from rr.generation.cache import GenerationCache
    from rr.generation.client import LLM
    from rr.generation.hf import HFGenerator

    requests, params = build_requests(args.examples, args.k, args.max_new_tokens, args.passages)
    gen = HFGenerator(batch_size=args.batch_size)
    model, tok = gen.load(), gen.tokenizer
    prompts = [gen.render(r) for r in requests]
    lengths = gen.count_tokens(prompts)
    ordered = [prompts[i] for i in sorted(range(len(prompts)), key=lambda i: -lengths[i])]
    print(
        f"{len(prompts)} prompts, {sum(lengths) / len(lengths):.0f} prompt tokens on average, batch {args.batch_size}, "
        f"{args.max_new_tokens} new tokens, torch {torch.__version__}, {torch.get_num_threads()} threads, "
        f"{platform.processor() or platform.machine()}"
    )
    bare_loop(model, tok, ordered[:2], 2, 4)  # warm-up

    bare_times, rr_times = [], []
    for _ in range(args.repeats):
        t = time.perf_counter()
        bare = bare_loop(model, tok, ordered, args.batch_size, args.max_new_tokens)
        bare_times.append(time.perf_counter() - t)
        with tempfile.TemporaryDirectory() as tmp:
            llm = LLM(
                gen, GenerationCache(tmp, gen.identity(), "bench"), flush_every=10_000, show_progress=False
            )
            t = time.perf_counter()
            ours = llm.generate(requests)
            rr_times.append(time.perf_counter() - t)
    same = sorted(bare) == sorted(g.text for g in ours)
    b, r = min(bare_times), min(rr_times)
    print(f"bare model.generate loop: {b:.2f}s   rr HF backend (render+hash+dedup+cache): {r:.2f}s")
    print(f"ratio rr / bare = {r / b:.3f}   (outputs identical: {same})")


if __name__ == "__main__":
    main()
