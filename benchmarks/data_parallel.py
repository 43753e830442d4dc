"""Data-parallel HF generation (Lightning Fabric) vs one process, same prompts, one run.

    python benchmarks/data_parallel.py [--ranks 2] [--prompts 16] [--max-new-tokens 16] [--device cpu]
    python benchmarks/data_parallel.py --quick     # seconds: 2 ranks, 2 prompts, 2 new tokens

Generates the same prompts (closed-book prompts for mini-data questions: only the model's
speed matters here) with
``data_parallel=1`` and ``data_parallel=N``, checks the completions are identical, and prints
the wall times, the pool start-up (spawning ranks, loading one model each, joining the process
group) and the ratio. On CPU the ranks split the cores (each gets cores // N threads), so the
ratio shows the cost of the process group rather than a speed-up; on a node with N GPUs each
rank has its own device.
"""

from __future__ import annotations

import argparse
import time

from _startup import start

REPO = start(["HF_HUB_OFFLINE"])

#: What ``--quick`` prints (tests/test_benchmarks.py checks each regex matches a line).
QUICK_FIGURES = [
    r"^identical completions: (True|False)$",
    r"^data_parallel=1: [\d.]+s with \d+ torch threads, [\d.]+s with 1 thread$",
    r"^data_parallel=\d+: [\d.]+s \(\+ [\d.]+s pool start, once per job\); prompts per rank \[",
    r"^ratio data_parallel=\d+ / 1: [\d.]+ \(\d+ threads\), [\d.]+ \(1 thread\)$",
]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="2 ranks, 2 prompts, 2 new tokens (seconds)")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--prompts", type=int, default=16)
    ap.add_argument("--max-new-tokens", type=int, default=16)
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args(argv)
    if a.quick:
        a.ranks, a.prompts, a.max_new_tokens, a.batch_size = 2, 2, 2, 1

    from benchmarks.scale_out import machine
    from rr.data.mini import MiniDataset
    from rr.generation.hf import HFGenerator
    from rr.records import GenerationParams, Request

    print(f"machine: {machine()}")
    params = GenerationParams(max_new_tokens=a.max_new_tokens)
    questions = [ex.question for ex in MiniDataset(n=a.prompts, answerable_only=False).load()]
    single = HFGenerator(batch_size=a.batch_size, device=a.device)
    prompts = [single.render(Request.user(f"Answer briefly. {q}", params)) for q in questions]
    single.generate(prompts[:1], params)  # load and warm up, as the pool start does for the ranks
    t0 = time.perf_counter()
    expected = single.generate(prompts, params)
    t_single = time.perf_counter() - t0
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    single.generate(prompts, params)
    t_single1 = time.perf_counter() - t0
    torch.set_num_threads(threads)

    dp = HFGenerator(
        batch_size=a.batch_size, device=None if a.device == "cuda" else a.device, data_parallel=a.ranks
    )
    try:
        t0 = time.perf_counter()
        dp.generate(prompts[:1], params)  # starts the pool (spawn, load, join)
        t_start = time.perf_counter() - t0
        before = list(dp._pool.prompts_per_rank)
        t0 = time.perf_counter()
        got = dp.generate(prompts, params)
        t_dp = time.perf_counter() - t0
        per_rank = [n - b for n, b in zip(dp._pool.prompts_per_rank, before, strict=True)]
    finally:
        dp.close()
    print(f"{len(prompts)} prompts, batch {a.batch_size}, {a.max_new_tokens} new tokens, device {a.device}")
    print(f"identical completions: {got == expected}")
    print(f"data_parallel=1: {t_single:.1f}s with {threads} torch threads, {t_single1:.1f}s with 1 thread")
    print(
        f"data_parallel={a.ranks}: {t_dp:.1f}s (+ {t_start:.1f}s pool start, once per job); prompts per rank {per_rank}"
    )
    print(
        f"ratio data_parallel={a.ranks} / 1: {t_dp / t_single:.2f} ({threads} threads), "
        f"{t_dp / t_single1:.2f} (1 thread)"
    )


if __name__ == "__main__":
    main()
