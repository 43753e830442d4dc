"""The demo's generation against its arithmetic limit (issue 38).

    python benchmarks/demo_limit.py --cache outputs/cache     # after `make demo`: the demo's own prompts
    python benchmarks/demo_limit.py --quick                    # 1 question, k = 1: the same figures

The distinct prompts the default job (``rr``: cao2025_mini, SmolLM2-135M, ``generator=hf``) sends,
recorded by running the job with a :class:`~rr.cost.PlanningLLM` (nothing generated; with
``--cache`` pointing at the demo's cache folder, later steps get the demo's real outputs and the
retrieval runs are read from it, so the prompts are exactly the demo's). Counted with the model's
tokenizer: the prompt tokens, and the **unique** prompt tokens: the nodes of the token trie of all
prompts (a token is unique when no earlier prompt shares the whole prefix up to and including it;
what a perfect prefix cache would still have to compute). Then the model's **cost per prompt
token** on these cores: a prefill (one forward pass, no generation) over the longest prompts in
one batch of ``--batch`` rows (no padding waste: rows of equal length are cut to the shortest),
timed wall and process CPU. The arithmetic limit of the generate stage's prefill is unique tokens
x cost per token; a generate stage's seconds divided by it is the ratio reported in
benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import time
from typing import Any

from _startup import start

REPO = start()

from rr.generation.hf_prefix import distinct_prefix_tokens  # noqa: E402  (after start(): this checkout)

#: What ``--quick`` prints (tests/test_benchmarks.py checks each regex matches a line).
QUICK_FIGURES = [
    r"^\d+ distinct prompts: \d+ prompt tokens, \d+ unique \(token trie\), share [\d.]+$",
    r"^prefill: [\d.]+ prompt tokens/s wall, [\d.]+ per CPU-second \(batch \d+ x \d+ tokens, \d+ threads, load [\d.]+\)$",
    r"^arithmetic limit of the prefill: [\d.]+ s wall \(all tokens [\d.]+ s\), [\d.]+ CPU-s$",
]


#: Nodes of the token trie of the prompts' ids: the tokens a perfect prefix cache computes (the HF
#: backend's prefix reuse computes exactly these: rr.generation.hf_prefix).
trie_nodes = distinct_prefix_tokens


def prefill_rate(
    model: Any, token_ids: list[list[int]], batch: int, repeats: int
) -> tuple[float, float, int]:
    """(tokens/s wall, tokens per process CPU-second, tokens per pass) of one forward pass over the
    ``batch`` longest prompts cut to the shortest of them (no padding), best of ``repeats``."""
    import torch

    rows = sorted(token_ids, key=len, reverse=True)[:batch]
    width = min(len(r) for r in rows)
    ids = torch.tensor([r[:width] for r in rows])
    with torch.inference_mode():
        model(input_ids=ids[:, :8])  # warm-up: weights paged in, kernels picked
        best_wall, best_cpu = float("inf"), float("inf")
        for _ in range(repeats):
            c0, t0 = time.process_time(), time.perf_counter()
            model(input_ids=ids, use_cache=False)
            best_wall = min(best_wall, time.perf_counter() - t0)
            best_cpu = min(best_cpu, time.process_time() - c0)
    n = ids.numel()
    return n / best_wall, n / best_cpu, n


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default=None, help="the demo's cache folder (outputs/cache after make demo)")
    ap.add_argument("--batch", type=int, default=8, help="rows of the timed prefill (the hf batch size)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="1 question, k = 1, 20 passages, 1 repeat")
    args = ap.parse_args(argv)
    overrides = []
    if args.quick:
        overrides = [
            "dataset.n=1",
            "grid.k=[1]",
            "corpus.max_passages=20",
            "corpus.keep_fanoutqa_evidence=false",
        ]
        overrides += ["retriever=bm25"]
        args.repeats, args.batch = 1, 2
    import torch

    from rr.config import compose, instantiate

    gen = instantiate(compose([*overrides, "progress=false"]).generator)
    from vllm_prefix import recorded_prompts

    prompts = recorded_prompts(overrides, args.cache)
    ids = gen.tokenizer(prompts, add_special_tokens=False)["input_ids"]
    total, unique = sum(map(len, ids)), trie_nodes(ids)
    print(
        f"{platform.node()}: {os.cpu_count()} cores, torch {torch.__version__}, {torch.get_num_threads()} threads"
    )
    print(
        f"{len(prompts)} distinct prompts: {total} prompt tokens, {unique} unique (token trie), share {unique / total:.3f}"
    )
    wall_rate, cpu_rate, n = prefill_rate(gen.load(), ids, args.batch, args.repeats)
    load = os.getloadavg()[0]
    print(
        f"prefill: {wall_rate:.1f} prompt tokens/s wall, {cpu_rate:.1f} per CPU-second "
        f"(batch {args.batch} x {n // args.batch} tokens, {torch.get_num_threads()} threads, load {load:.1f})"
    )
    print(
        f"arithmetic limit of the prefill: {unique / wall_rate:.1f} s wall (all tokens {total / wall_rate:.1f} s), "
        f"{unique / cpu_rate:.1f} CPU-s"
    )
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
