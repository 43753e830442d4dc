"""llama.cpp backend vs. HF backend: tokens/s on the same demo prompts, same machine.

Workload: the demo prompts of ``overhead.py`` (mini data, BM25 top-1..k over the bundled corpus
sample, ``rag_qa.j2``, SmolLM2 chat template; 4 questions x k = 1..4 = 16 prompts by default),
greedy, in the order the client sends them (sorted by prompt text). Both backends run the
packaged SmolLM2-135M-Instruct Q4_1: ``hf`` dequantized to float32 (``batch_size`` 8, the
demo's, and 1), ``llamacpp`` on the quantized weights, one prompt at a time, with and without
its prefix cache.

Each configuration runs in its own Python process, as a job with that backend would: the
``llamacpp`` ones build the generator first, which sets ``OMP_WAIT_POLICY=PASSIVE`` before any
OpenMP runtime loads; the ``hf`` ones keep libgomp's default policy (``--passive-hf`` adds an
``hf`` row under the passive policy, to show what that setting costs torch). ``--spin`` adds a
``llamacpp`` row with torch imported first, so llama.cpp shares torch's default-policy OpenMP
runtime (slow and erratic on shared cores; see ``rr.generation.llamacpp.prefer_passive_openmp``).

Each process loads its backend, warms it up on one prompt and reports the best of ``--repeats``
runs. Reported: wall time, generated tokens, tokens/s (prompt + generated tokens per second:
every prompt token is processed once, every generated token decoded once), generated tokens/s,
both as a multiple of ``hf`` at batch 8, and how many greedy outputs equal ``hf``'s.

    python benchmarks/llamacpp.py [--examples 4] [--k 4] [--max-new-tokens 32] [--repeats 2]
    python benchmarks/llamacpp.py --quick     # seconds: 1 question, k = 1..2, 4 new tokens, one repeat

Needs the ``llamacpp`` extra (``pip install 'rr[llamacpp]'``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from typing import Any

from _startup import REPO

#: What ``--quick`` prints (tests/test_benchmarks.py checks each regex matches a line).
QUICK_FIGURES = [
    r"^\d+ prompts, \d+ prompt tokens on average",
    r"^\| hf batch 8 \| \S+ \| [\d.]+ \| \d+ \| \d+ \| [\d.]+ \| [\d.]+ / [\d.]+ \| \d+/\d+ \|",
    r"^\| llamacpp, prefix cache \| \S+ \| [\d.]+ \| \d+ \| \d+ \| [\d.]+ \| [\d.]+ / [\d.]+ \| \d+/\d+ \|",
    r"^\| llamacpp, no prefix cache \| ",
]
#: Modules the benchmark needs (tests/test_benchmarks.py skips its quick run without them).
QUICK_NEEDS = ["llama_cpp"]
CONFIGS = {
    "hf batch 8": ("hf", {"batch_size": 8}),
    "hf batch 1": ("hf", {"batch_size": 1}),
    "hf batch 8, OMP passive": ("hf", {"batch_size": 8}),
    "llamacpp, prefix cache": ("llamacpp", {}),
    "llamacpp, no prefix cache": ("llamacpp", {"prefix_cache": False}),
    "llamacpp, torch's OpenMP first": ("llamacpp", {}),
}


def measure(label: str, examples: int, k: int, max_new_tokens: int, repeats: int) -> dict[str, Any]:
    """Run one configuration in this process; returns its timings and outputs."""
    backend, kwargs = CONFIGS[label]
    policy = os.environ.get("OMP_WAIT_POLICY", "default")  # what the process's libgomp reads at load
    if label.endswith("OpenMP first"):
        import torch

        torch.ones(8, 8) @ torch.ones(8, 8)  # torch's libgomp is now the process's OpenMP runtime
    gen: Any
    if backend == "llamacpp":
        from rr.generation.llamacpp import LlamaCppGenerator

        gen = LlamaCppGenerator(**kwargs)  # sets OMP_WAIT_POLICY=PASSIVE (unless set)
        if not label.endswith("OpenMP first"):  # else too late: torch's libgomp is loaded
            policy = os.environ["OMP_WAIT_POLICY"]
    else:
        from rr.generation.hf import HFGenerator

        gen = HFGenerator(**kwargs)
    from overhead import build_requests  # benchmarks/ is on sys.path: this script's folder

    requests, params = build_requests(examples, k, max_new_tokens)
    prompts = sorted({gen.render(r) for r in requests})  # the client's order
    n_prompt = sum(gen.count_tokens(prompts))
    gen.generate(prompts[:1], params)  # load + warm up
    best, out = float("inf"), []
    for _ in range(repeats):
        t = time.perf_counter()
        out = gen.generate(prompts, params)
        best = min(best, time.perf_counter() - t)
    import torch

    return {
        "label": label,
        "seconds": best,
        "prompts": len(prompts),
        "prompt_tokens": n_prompt,
        "new_tokens": sum(c.completion_tokens for c in out),
        "texts": [c.text for c in out],
        "omp_wait_policy": policy,
        "torch_threads": torch.get_num_threads(),
        "llama_threads": gen.threads() if backend == "llamacpp" else None,
        "load": os.getloadavg()[0],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1 question, k = 1..2, 4 new tokens, one repeat")
    ap.add_argument("--examples", type=int, default=4)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--passive-hf", action="store_true", help="add hf batch 8 under OMP_WAIT_POLICY=PASSIVE")
    ap.add_argument("--spin", action="store_true", help="add llamacpp sharing torch's default OpenMP")
    ap.add_argument("--only", help=argparse.SUPPRESS)  # one configuration, in this process
    args = ap.parse_args()
    if args.quick:
        args.examples, args.k, args.max_new_tokens, args.repeats = 1, 2, 4, 1
    sizes = [args.examples, args.k, args.max_new_tokens, args.repeats]
    if args.only:
        print(json.dumps(measure(args.only, *sizes)))
        return

    labels = ["hf batch 8", "hf batch 1", "llamacpp, prefix cache", "llamacpp, no prefix cache"]
    labels += ["hf batch 8, OMP passive"] * args.passive_hf + ["llamacpp, torch's OpenMP first"] * args.spin
    rows = []
    for label in labels:
        env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
        env.update(HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", PYTHONPATH=str(REPO))
        if label.endswith("OMP passive"):
            env["OMP_WAIT_POLICY"] = "PASSIVE"
        cmd = [
            sys.executable,
            __file__,
            "--only",
            label,
            *(
                f"--{n}={v}"
                for n, v in zip(("examples", "k", "max-new-tokens", "repeats"), sizes, strict=True)
            ),
        ]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            sys.exit(f"{label} failed:\n{proc.stderr[-3000:]}")
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        r = rows[-1]
        print(f"  {label}: {r['seconds']:.1f}s (load {r['load']:.1f})", file=sys.stderr, flush=True)

    first = rows[0]
    print(
        f"{first['prompts']} prompts, {first['prompt_tokens'] / first['prompts']:.0f} prompt tokens on average, "
        f"{args.max_new_tokens} new tokens max, greedy; {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, torch {first['torch_threads']} threads, "
        f"llama.cpp {rows[2]['llama_threads']} threads"
    )
    print(
        "| backend | OpenMP wait policy | s | generated tokens | tokens/s | generated tokens/s "
        "| x hf batch 8 (tokens/s, generated) | same output as hf batch 8 | load |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    base = first
    for r in rows:
        tps = (r["prompt_tokens"] + r["new_tokens"]) / r["seconds"]
        gps = r["new_tokens"] / r["seconds"]
        base_tps = (base["prompt_tokens"] + base["new_tokens"]) / base["seconds"]
        base_gps = base["new_tokens"] / base["seconds"]
        same = sum(a == b for a, b in zip(r["texts"], base["texts"], strict=True))
        print(
            f"| {r['label']} | {r['omp_wait_policy']} | {r['seconds']:.1f} | {r['new_tokens']} | {tps:.0f} | {gps:.1f} | "
            f"{tps / base_tps:.2f} / {gps / base_gps:.2f} | {same}/{r['prompts']} | {r['load']:.1f} |"
        )


if __name__ == "__main__":
    main()
