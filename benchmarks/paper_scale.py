"""rr's own costs at the papers' scale (issue 22): the generation cache beside 10^5-10^7 entries,
the score-table tools over 10^5-10^7 rows, BM25 indexing up to 10^6 passages, and the Cao grid
end to end on the simulated reader.

Every measurement runs in a fresh child process, which reports its wall time and its peak
resident memory above what it held before the measured call (``ru_maxrss``; for a CLI command,
the command's own peak). Each stage prints one table and its growth exponents
(``log(t_100% / t_10%) / log(10)``: 1 is linear) and everything lands in ``--out`` (JSON).

Stages:

* ``cache``: a model's cache of N entries in ``--shards`` shards (written directly, lines as
  the cache writes them). Per N: the former reader (every shard read into one dict, then a
  job's lookups: what a job paid at start before shard indexes), the first open that builds
  the shard indexes (once per shard; a writer normally indexes its own shard when its job
  ends), and a job's start beside the indexed cache: open + one bulk lookup of a Cao job's
  ``--job-keys`` keys, half of them cached.
* ``results``: a 24-job sweep (3 datasets x 8 models, the paper's; ``--models``) whose jobs hold the Cao grid
  (closed-book + 2 retrievers x 6 k x 3 orders x 3 strategies per question), written with the
  real score-table writer (``tests/synthetic.py``'s job folders, each with a ``config.yaml`` whose
  job id is the table's). Per size: ``rr.results.load``,
  ``robustness_ci`` (the robustness table with bootstrap intervals, ``--resamples``),
  ``rr report`` and ``rr status``.
* ``bm25``: rr's BM25 retriever indexing (and searching) a corpus of N made-up passages.
* ``e2e``: see ``--help`` of the stage (needs ``generator=simulated``).

    python benchmarks/paper_scale.py --quick                 # seconds: tiny sizes, every stage
    python benchmarks/paper_scale.py --stages cache --cache-sizes 100000 1000000 10000000
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _startup import REPO

IDENT = {"model_id": "bench/model", "revision": "r1"}
#: What ``--quick`` prints (tests/test_benchmarks.py checks each regex matches a line): every
#: stage's table title and the growth exponents.
QUICK_FIGURES = [
    r"^## cache: job start beside N entries$",
    r"^exponent start_s: ",
    r"^## score tables over a \d+-job sweep$",
    r"^exponent status_s: ",
    r"^## BM25 over made-up passages$",
    r"^## Cao grid on the simulated reader \(BM25 over \d+ passages",
    r"^exponent own_cpu_ms_per_request_generate_judge: ",
    r'^\{"jobs": \d+, .*"status_s": [\d.]+',
]
#: rr's command line: this interpreter's ``python -m rr`` (a console script can be stale or absent)
RR = [sys.executable, "-m", "rr"]
MIB = 1024 * 1024


# ----------------------------------------------------------------------------- measuring


def _maxrss_bytes(who: int = resource.RUSAGE_SELF) -> int:
    return resource.getrusage(who).ru_maxrss * 1024  # Linux: KiB


def child(task: str, args: dict) -> None:
    """Run one measured task in this (fresh) process; print its result as one JSON line."""
    fn = TASKS[task]
    # what a job has imported anyway is not the task's cost (a command's figures are its own
    # process's: nothing to import for it here)
    import importlib

    for name in () if task in COMMANDS else PRELOAD:
        importlib.import_module(name)

    rss0 = _maxrss_bytes()
    t0 = time.perf_counter()
    extra = fn(args) or {}
    wall = time.perf_counter() - t0
    extra.setdefault("wall_s", round(wall, 3))
    extra.setdefault("peak_extra_mib", round((_maxrss_bytes() - rss0) / MIB, 1))
    print("RESULT " + json.dumps(extra), flush=True)


def measure(task: str, **args: object) -> dict:
    """Run ``task`` in a child process and return what it measured."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, __file__, "--child", task, json.dumps(args)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"{task} failed ({out.returncode}):\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}")


def run_cli(cmd: list[str], env_extra: dict | None = None) -> dict:
    """Wall time and peak RSS of a command (run from a fresh measuring process)."""
    t0 = time.perf_counter()
    out = subprocess.run(
        cmd, capture_output=True, text=True, env={**os.environ, **(env_extra or {})}, check=False
    )
    wall = time.perf_counter() - t0
    if out.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed ({out.returncode}): {out.stderr[-3000:]}")
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "wall_s": round(wall, 3),
        "cpu_s": round(ru.ru_utime + ru.ru_stime, 2),
        "peak_mib": round(ru.ru_maxrss * 1024 / MIB, 1),
    }


def exponent(sizes: list[int], values: list[float | None]) -> float | None:
    """Growth exponent between the size nearest 10% of the largest and the largest (1 = linear)."""
    if len(sizes) < 2:
        return None
    lo = min(range(len(sizes) - 1), key=lambda i: abs(math.log(sizes[i] / (0.1 * sizes[-1]))))
    a, b = values[lo], values[-1]
    if a is None or b is None or min(a, b) <= 0:
        return None
    return round(math.log(b / a) / math.log(sizes[-1] / sizes[lo]), 2)


def machine() -> dict:
    return {
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}",
        "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "load_avg": [round(x, 2) for x in os.getloadavg()],
    }


def table(title: str, rows: list[dict], cols: list[str]) -> None:
    print(f"\n## {title}")
    print(" | ".join(cols))
    for r in rows:
        print(" | ".join(str(r.get(c, "")) for c in cols))


# ----------------------------------------------------------------------------- cache


def cache_key(i: int) -> str:
    return hashlib.sha256(str(i).encode()).hexdigest()


def write_cache(root: Path, n: int, shards: int) -> Path:
    """A cache of ``n`` entries of :data:`IDENT` in ``shards`` shards, as the writer lays them out."""
    from rr.generation.cache import GenerationCache

    d = GenerationCache(root, IDENT, writer="probe").dir
    per = math.ceil(n / shards)
    for s in range(shards):
        lines = [
            f'{{"key": "{cache_key(i)}", "text": "Answer: value {i % 9973} of entity {i}", '
            f'"prompt_tokens": {800 + i % 700}, "completion_tokens": 9}}\n'
            for i in range(s * per, min(n, (s + 1) * per))
        ]
        (d / f"job{s:05d}-{1000 + s}.jsonl").write_text("".join(lines))
    return d


def _job_keys(args: dict) -> list[str]:
    """A job's keys: half cached (spread over the cache), half new."""
    n, m = args["n"], args["job_keys"]
    step = max(1, n // (m // 2))
    return [cache_key(i) for i in range(0, n, step)][: m // 2] + [cache_key(n + i) for i in range(m - m // 2)]


def task_cache_former(args: dict) -> dict:
    """The former reader: every shard into one dict at job start, then the job's lookups."""
    from rr.generation.cache import parse_entry

    keys = _job_keys(args)
    t0 = time.perf_counter()
    entries = {}
    for path in sorted(Path(args["dir"]).glob("*.jsonl")):
        for raw in path.read_bytes().split(b"\n"):
            if raw.strip():
                e = parse_entry(raw)
                if e is not None:
                    entries[e[0]] = e[1]
    hits = sum(entries.get(k) is not None for k in keys)
    return {"wall_s": round(time.perf_counter() - t0, 3), "hits": hits}


def task_cache_open(args: dict) -> dict:
    """Open the cache (building missing shard indexes), then look a job's keys up in bulk."""
    from rr.generation.cache import GenerationCache

    keys = _job_keys(args)
    t0 = time.perf_counter()
    cache = GenerationCache(args["root"], IDENT, writer="bench-job")
    t_open = time.perf_counter() - t0
    cache.prefetch(keys)
    hits = sum(cache.get(k) is not None for k in keys)
    return {
        "wall_s": round(time.perf_counter() - t0, 3),
        "open_s": round(t_open, 3),
        "hits": hits,
        "indexes_built": cache.indexes_built,
    }


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def stage_cache(sizes: list[int], shards: int, job_keys: int, work: Path) -> list[dict]:
    rows = []
    for n in sizes:
        root = work / f"cache-{n}"
        t0 = time.perf_counter()
        d = write_cache(root, n, shards)
        row: dict = {"entries": n, "shards": shards, "write_s": round(time.perf_counter() - t0, 1)}
        row["jsonl_mib"] = round(du(d) / MIB, 1)
        a = {"n": n, "job_keys": job_keys, "dir": str(d), "root": str(root)}
        former = measure("cache_former", **a)
        first = measure("cache_open", **a)  # builds every shard index (once)
        warm = measure("cache_open", **a)  # a job's start beside the indexed cache
        assert former["hits"] == first["hits"] == warm["hits"] == job_keys // 2, (former, first, warm)
        row |= {
            "former_s": former["wall_s"],
            "former_mib": former["peak_extra_mib"],
            "index_build_s": first["wall_s"],
            "index_build_mib": first["peak_extra_mib"],
            "start_s": warm["wall_s"],
            "start_open_s": warm["open_s"],
            "start_mib": warm["peak_extra_mib"],
            "indexes_built_warm": warm["indexes_built"],
            "index_mib": round(du(d / "index") / MIB, 1),
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
        subprocess.run(["rm", "-rf", str(root)], check=True)
    cols = ["entries", "jsonl_mib", "index_mib", "former_s", "former_mib", "index_build_s", "index_build_mib"]
    table("cache: job start beside N entries", rows, [*cols, "start_s", "start_open_s", "start_mib"])
    ns = [r["entries"] for r in rows]
    for c in ("former_s", "former_mib", "index_build_s", "start_s", "start_mib"):
        print(f"exponent {c}: {exponent(ns, [r[c] for r in rows])}")
    return rows


# ----------------------------------------------------------------------------- score tables

DATASETS = ("nq", "triviaqa", "hotpotqa")
MODELS = tuple(f"org/model-{i}" for i in range(8))
STRATEGIES = ("vanilla", "ownknow", "s2a")
KS = (5, 10, 25, 50, 75, 100)
ORDERS = ("original", "reversed", "shuffled")
RETRIEVERS = ("bm25", "bge")


def job_config(dataset: str, model: str, n_examples: int, seed: int) -> dict:
    """The ``config.yaml`` of one synthetic job: what sets it apart from the sweep's other jobs.

    ``rr status`` finds a job by its ``config.yaml`` and checks that ``summary.json`` carries the id
    of that config, so the job id of the score table is this config's.
    """
    return {
        "name": "paper_scale",
        "seed": seed,
        "dataset": {"name": dataset, "n": n_examples},
        "generator": {"model": model},
    }


def cao_job_rows(dataset: str, model: str, n_examples: int, seed: int):
    """One job of the Cao grid as a score table (vectorized; the columns of a real job's table)."""
    import numpy as np
    import pandas as pd
    from omegaconf import OmegaConf

    from rr.config import job_id

    jid = job_id(OmegaConf.create(job_config(dataset, model, n_examples, seed)))
    rng = np.random.default_rng(int(jid, 16) % 2**32)
    cells = [("none", 0, "none", s) for s in STRATEGIES]
    cells += [(r, k, o, s) for s in STRATEGIES for r in RETRIEVERS for k in KS for o in ORDERS]
    n_cells = len(cells)
    ex = np.repeat(np.arange(n_examples), n_cells)
    r, k, o, s = (np.tile(np.array([c[j] for c in cells], dtype=object), n_examples) for j in range(4))
    k = k.astype(np.int64)
    ability = rng.uniform(-0.25, 0.25, n_examples)[ex]
    p = np.clip(0.35 + ability + 0.25 * np.log1p(k) / np.log1p(100), 0, 1)
    score = (rng.random(len(ex)) < p).astype(float)
    pred = np.where(score > 0, "yes", "no")
    return pd.DataFrame(
        {
            "example_id": pd.Series(np.char.add("q", ex.astype(str))),
            "dataset": dataset,
            "generator": model,
            "strategy": s,
            "retriever": r,
            "k": k,
            "order": o,
            "query_perturbation": "none",
            "doc_perturbation": "none",
            "n_docs_used": k,
            "prediction": pred,
            "raw_output": np.char.add("Answer: ", pred.astype(str)),
            "score": score,
            "judge": "match",
            "refused": False,
            "job_id": jid,
            "seed": seed,
            "marker_found": True,
        }
    )


def write_sweep(root: Path, rows_target: int, models: int = len(MODELS)) -> int:
    """A sweep of ``len(DATASETS)`` x ``models`` Cao-grid jobs of about ``rows_target`` rows in all;
    returns its rows."""
    sys.path.insert(0, str(REPO))
    from rr.jobfolder import CONFIG_FILE
    from tests.synthetic import write_job

    per_job = rows_target / (len(DATASETS) * models)
    n_examples = max(2, round(per_job / (len(STRATEGIES) * (1 + len(RETRIEVERS) * len(KS) * len(ORDERS)))))
    total = 0
    for d in DATASETS:
        for m in MODELS[:models]:
            df = cao_job_rows(d, m, n_examples, 0)
            folder = write_job(root, df)
            (folder / CONFIG_FILE).write_text(json.dumps(job_config(d, m, n_examples, 0)))  # JSON is YAML
            total += len(df)
    return total


def task_load(args: dict) -> dict:
    import rr.results

    df = rr.results.load(args["root"])
    return {"rows": len(df)}


def task_robustness(args: dict) -> dict:
    import rr.results
    from rr.analysis.intervals import robustness_ci

    df = rr.results.load(args["root"])
    t0 = time.perf_counter()
    tab = robustness_ci(df, n_resamples=args["resamples"])
    return {"rows": len(df), "systems": len(tab), "table_s": round(time.perf_counter() - t0, 3)}


def task_cli(args: dict) -> dict:
    return run_cli(args["cmd"])


def stage_results(
    sizes: list[int], resamples: int, work: Path, report_sizes: list[int] | None, models: int = len(MODELS)
) -> list[dict]:
    rows = []
    for n in sizes:
        root = work / f"sweep-{n}"
        t0 = time.perf_counter()
        total = write_sweep(root, n, models)
        row: dict = {
            "rows": total,
            "jobs": len(DATASETS) * models,
            "write_s": round(time.perf_counter() - t0, 1),
        }
        row["parquet_mib"] = round(du(root) / MIB, 1)
        ld = measure("load", root=str(root))
        rb = measure("robustness", root=str(root), resamples=resamples)
        if report_sizes is None or n in report_sizes:
            rep = measure("cli", cmd=[*RR, "report", str(root), "--resamples", str(resamples)])
        else:
            rep = {"wall_s": None, "cpu_s": None, "peak_mib": None}
        st = measure("cli", cmd=[*RR, "status", str(root)])
        row |= {
            "load_s": ld["wall_s"],
            "load_mib": ld["peak_extra_mib"],
            "robustness_ci_s": rb["table_s"],
            "robustness_mib": rb["peak_extra_mib"],
            "report_s": rep["wall_s"],
            "report_cpu_s": rep["cpu_s"],
            "report_mib": rep["peak_mib"],
            "status_s": st["wall_s"],
            "status_mib": st["peak_mib"],
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
        subprocess.run(["rm", "-rf", str(root)], check=True)
    cols = ["rows", "parquet_mib", "load_s", "load_mib", "robustness_ci_s", "robustness_mib"]
    table(
        f"score tables over a {len(DATASETS) * models}-job sweep",
        rows,
        [*cols, "report_s", "report_mib", "status_s", "status_mib"],
    )
    ns = [r["rows"] for r in rows]
    for c in ("load_s", "robustness_ci_s", "report_s", "report_cpu_s", "report_mib", "status_s"):
        print(f"exponent {c}: {exponent(ns, [r[c] for r in rows])}")
    return rows


# ----------------------------------------------------------------------------- BM25


def task_bm25(args: dict) -> dict:
    import numpy as np

    from rr.data.base import Corpus
    from rr.records import Passage
    from rr.retrieval.bm25 import BM25Retriever

    n = args["n"]
    rng = np.random.default_rng(0)
    vocab = np.array([f"w{i}" for i in range(50_000)])
    ranks = np.arange(1, len(vocab) + 1)
    zipf = (1 / ranks) / (1 / ranks).sum()
    words = vocab[rng.choice(len(vocab), size=(n, 60), p=zipf)]
    t_gen = time.perf_counter()
    corpus = Corpus(
        (Passage(id=f"p{i}", title=f"Entity {i}", text=" ".join(row)) for i, row in enumerate(words)),
        name=f"bench-{n}",
    )
    t0 = time.perf_counter()
    bm25 = BM25Retriever()
    bm25.index(corpus)
    t_index = time.perf_counter() - t0
    queries = [" ".join(words[i, :8]) for i in range(0, n, max(1, n // 500))][:500]
    t1 = time.perf_counter()
    bm25.search(queries, 100)
    t_search = time.perf_counter() - t1
    return {
        "corpus_s": round(t0 - t_gen, 2),
        "index_s": round(t_index, 2),
        "search_500x100_s": round(t_search, 2),
    }


def stage_bm25(sizes: list[int]) -> list[dict]:
    rows = []
    for n in sizes:
        r = {"passages": n} | measure("bm25", n=n)
        rows.append(r)
        print(json.dumps(r), flush=True)
    table(
        "BM25 over made-up passages",
        rows,
        ["passages", "corpus_s", "index_s", "search_500x100_s", "peak_extra_mib"],
    )
    ns = [r["passages"] for r in rows]
    for c in ("index_s", "search_500x100_s", "peak_extra_mib"):
        print(f"exponent {c}: {exponent(ns, [r[c] for r in rows])}")
    return rows


# ----------------------------------------------------------------------------- end to end


def _timed(cls: type, name: str, clock: dict) -> None:
    """Wrap ``cls.name`` so that the seconds spent in it add up in ``clock[name]``."""
    inner = getattr(cls, name)

    def wrapper(self, *a, **kw):  # type: ignore[no-untyped-def]
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return inner(self, *a, **kw)
        finally:
            clock[name] = clock.get(name, 0.0) + time.perf_counter() - t0
            clock[name + "_cpu"] = clock.get(name + "_cpu", 0.0) + time.process_time() - c0

    setattr(cls, name, wrapper)


#: Monte-Carlo draws per prompt for the simulator's planted values (its default 400 costs ~7 ms a
#: request: the simulator's work, timed apart and not rr's, but it would dominate the wall time).
PLANTED_REPS = 4
#: Question entities in the e2e corpus: NQ-open's test set size, the largest job.
ENTITIES = 3610


def e2e_overrides(n: int, passages: int, strategies: str, extra: list[str] | None = None) -> list[str]:
    return [
        "experiment=cao2025",
        "generator=simulated",
        "dataset=synthetic",
        "corpus=synthetic",
        "retriever=[bm25]",
        f"strategy=[{strategies}]",
        "judge=match",
        f"dataset.n={n}",
        f"corpus.max_passages={passages}",
        # the same corpus (one BM25 index) for every question count, as large as the corpus allows
        f"corpus.entities={max(n, min(ENTITIES, passages // 4))}",
        f"generator.planted_reps={PLANTED_REPS}",
        "progress=false",
        *(extra or []),
    ]


def task_job(args: dict) -> dict:
    """One job in process; the reader's time (generate, count_tokens) and the planted values (the
    job's ``planted`` stage: the simulator's Monte Carlo and its metrics, not rr's) are timed apart."""
    import logging

    from omegaconf import open_dict

    from rr.config import compose, register_configs
    from rr.generation.simulated import SimulatedGenerator
    from rr.pipeline import Stopwatch, run_job

    logging.disable(logging.INFO)
    register_configs()
    cfg = compose(args["overrides"])
    with open_dict(cfg):
        cfg.paths.output_root = args["out"]
        cfg.paths.cache_dir = args["cache"]
    clock: dict[str, float] = {}
    for name in ("generate", "count_tokens"):
        _timed(SimulatedGenerator, name, clock)
    stage_cpu: dict[str, float] = {}
    stage_wall: dict[str, float] = {}
    inner_stage = Stopwatch.stage

    @contextlib.contextmanager
    def stage(self, name):  # type: ignore[no-untyped-def]
        t0, c0 = time.perf_counter(), time.process_time()
        with inner_stage(self, name):
            yield
        stage_cpu[name] = stage_cpu.get(name, 0.0) + time.process_time() - c0
        stage_wall[name] = stage_wall.get(name, 0.0) + time.perf_counter() - t0

    Stopwatch.stage = stage  # type: ignore[method-assign]
    prof = None
    if args.get("profile"):
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
    t0, c0 = time.perf_counter(), time.process_time()
    result = run_job(cfg, Path(args["out"]) / "job")
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if prof is not None:
        prof.disable()
        prof.dump_stats(args["profile"])
    summary = result.summary
    clock["planted"], clock["planted_cpu"] = stage_wall.get("planted", 0.0), stage_cpu.get("planted", 0.0)
    reader = clock.get("generate", 0.0) + clock.get("count_tokens", 0.0)
    own = wall - reader - clock.get("planted", 0.0)
    retrieve = summary.timings_s.get("retrieve", 0.0)
    n_req = summary.requests
    own_cpu = cpu - sum(clock.get(f"{k}_cpu", 0.0) for k in ("generate", "count_tokens", "planted"))
    return {
        "wall_s": round(wall, 2),
        "requests": summary.requests,
        "rows": len(result.scores),
        "reader_s": round(reader, 2),
        "planted_s": round(clock.get("planted", 0.0), 2),
        "retrieve_s": retrieve,
        "own_ms_per_request": round(1000 * own / summary.requests, 3),
        "own_ms_per_request_no_retrieval": round(1000 * (own - retrieve) / summary.requests, 3),
        "own_cpu_ms_per_request": round(1000 * own_cpu / n_req, 3),
        # the per-request path (render, fit the window, key, dedup, cache, judge, score rows): the
        # generate and judge stages' CPU less the reader's; fixed per job: data, retrieval, write
        "own_cpu_ms_per_request_generate_judge": round(
            1000
            * (
                sum(v for k, v in stage_cpu.items() if k.startswith(("generate:", "judge:")))
                - clock.get("generate_cpu", 0.0)
                - clock.get("count_tokens_cpu", 0.0)
            )
            / n_req,
            3,
        ),
        "cpu_s": round(cpu, 1),
        "stage_cpu_s": {k: round(v, 2) for k, v in stage_cpu.items()},
        "reader_cpu_s": round(clock.get("generate_cpu", 0.0) + clock.get("count_tokens_cpu", 0.0), 2),
        "planted_cpu_s": round(clock.get("planted_cpu", 0.0), 2),
        "rows_per_s": round(len(result.scores) / wall, 1),
        "timings_s": summary.timings_s,
    }


def stage_e2e(sizes: list[int], passages: int, strategies: str, work: Path, profile: bool) -> list[dict]:
    """The Cao grid on the simulated reader, one job per size, all beside one cache folder."""
    rows = []
    cache = work / "e2e-cache"
    # a first small job builds the corpus's BM25 index (cached; every later job reads it)
    args = {
        "overrides": e2e_overrides(5, passages, strategies),
        "out": str(work / "e2e-index"),
        "cache": str(cache),
    }
    first = measure("job", **args)
    index = {"passages": passages, "index_job_wall_s": first["wall_s"], "retrieve_s": first["retrieve_s"]}
    index |= {"load_data_s": first["timings_s"]["load_data"], "peak_extra_mib": first["peak_extra_mib"]}
    print(json.dumps({"bm25_index": index}), flush=True)
    for n in sizes:
        out = work / f"e2e-{n}"
        args = {"overrides": e2e_overrides(n, passages, strategies), "out": str(out), "cache": str(cache)}
        if profile:
            args["profile"] = str(work.parent / f"paper_scale_e2e_{n}.prof")
        r = {"questions": n, "passages": passages} | measure("job", **args)
        r["cache_mib"] = round(du(cache / "generations") / MIB, 1)
        rows.append(r)
        print(json.dumps(r), flush=True)
    cols = ["questions", "requests", "wall_s", "peak_extra_mib", "reader_s", "planted_s", "retrieve_s"]
    table(
        f"Cao grid on the simulated reader (BM25 over {passages} passages; {strategies} + closed-book)",
        rows,
        [
            *cols,
            "own_ms_per_request",
            "own_ms_per_request_no_retrieval",
            "own_cpu_ms_per_request",
            "rows_per_s",
            "cache_mib",
        ],
    )
    ns = [r["requests"] for r in rows]
    for c in (
        "wall_s",
        "cpu_s",
        "peak_extra_mib",
        "own_cpu_ms_per_request",
        "own_cpu_ms_per_request_generate_judge",
    ):
        print(f"exponent {c}: {exponent(ns, [r[c] for r in rows])}")
    return [{"bm25_index": index}, *rows]


def task_sweep(args: dict) -> dict:
    """``rr -m`` over ``jobs`` reader seeds (one model each) sharing one cache folder."""
    over = e2e_overrides(args["n"], args["passages"], args["strategies"])
    cmd = [
        *RR,
        "-m",
        *over,
        f"generator.reader_seed=range(0,{args['jobs']})",
        f"paths.output_root={args['out']}",
        f"paths.cache_dir={args['cache']}",
    ]
    return run_cli(cmd)


def stage_sweep(jobs: int, n: int, passages: int, strategies: str, work: Path, report: bool) -> dict:
    out, cache = work / "sweep", work / "sweep-cache"
    r: dict = {"jobs": jobs, "questions": n, "passages": passages}
    r |= measure(
        "sweep", jobs=jobs, n=n, passages=passages, strategies=strategies, out=str(out), cache=str(cache)
    )
    from rr.jobfolder import SUMMARY_FILE, read_summary

    summaries = [s for p in out.rglob(SUMMARY_FILE) if (s := read_summary(p.parent)) is not None]
    walls = sorted(s.wall_s or 0.0 for s in summaries)
    r |= {
        "jobs_done": len(summaries),
        "requests": sum(s.requests or 0 for s in summaries),
        "job_wall_s_median": walls[len(walls) // 2],
        "job_wall_s_min_max": [min(walls), max(walls)] if walls else None,
        "rows": sum(s.rows or 0 for s in summaries),
        "cache_mib": round(du(cache / "generations") / MIB, 1),
        "cache_models": len(list((cache / "generations").iterdir())),
    }
    print(json.dumps(r), flush=True)
    st = measure("cli", cmd=[*RR, "status", str(out)])
    rep = measure("cli", cmd=[*RR, "report", str(out), "--resamples", "200"]) if report else {}
    r |= {
        "status_s": st["wall_s"],
        "status_cpu_s": st["cpu_s"],
        "status_mib": st["peak_mib"],
        "report_s": rep.get("wall_s"),
        "report_mib": rep.get("peak_mib"),
    }
    print(json.dumps(r), flush=True)
    return r


#: Imported by a measuring child before its task (a job has them anyway: not the task's cost).
PRELOAD = ("numpy", "pandas", "pyarrow", "rr.generation.cache", "rr.results", "rr.reporting.robustness")
#: Tasks that time a command in its own process (:func:`run_cli`): their child imports nothing first.
COMMANDS = ("cli", "sweep")
TASKS = {
    "cache_former": task_cache_former,
    "cache_open": task_cache_open,
    "load": task_load,
    "robustness": task_robustness,
    "cli": task_cli,
    "bm25": task_bm25,
    "job": task_job,
    "sweep": task_sweep,
}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        sys.path.insert(0, str(REPO))
        child(sys.argv[2], json.loads(sys.argv[3]))
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes, every stage (seconds)")
    p.add_argument("--stages", nargs="*", default=["cache", "results", "bm25", "e2e", "sweep"])
    p.add_argument("--cache-sizes", type=int, nargs="*", default=[100_000, 1_000_000, 10_000_000])
    p.add_argument("--shards", type=int, default=1000, help="cache shards (default 1000)")
    p.add_argument("--job-keys", type=int, default=55_000, help="keys a job looks up (a Cao job: ~55,000)")
    p.add_argument("--rows", type=int, nargs="*", default=[100_000, 1_000_000], help="score-table sizes")
    p.add_argument("--resamples", type=int, default=1000)
    p.add_argument(
        "--models", type=int, default=len(MODELS), help="models of the score-table sweep (x 3 datasets)"
    )
    p.add_argument(
        "--report-sizes", type=int, nargs="*", default=None, help="run rr report at these (default all)"
    )
    p.add_argument("--bm25-sizes", type=int, nargs="*", default=[100_000, 1_000_000])
    p.add_argument("--questions", type=int, nargs="*", default=[50, 500, 3610], help="e2e job sizes")
    p.add_argument("--passages", type=int, default=1_000_000, help="e2e corpus size (BM25)")
    p.add_argument("--strategies", default="vanilla,ownknow,rgb", help="e2e strategies (+ closed-book)")
    p.add_argument("--profile", action="store_true", help="cProfile each e2e job (next to --work)")
    p.add_argument("--sweep-jobs", type=int, default=100)
    p.add_argument("--sweep-questions", type=int, default=5)
    p.add_argument("--sweep-passages", type=int, default=20_000)
    p.add_argument("--sweep-report", action="store_true", help="also time rr report over the sweep")
    p.add_argument("--work", type=Path, default=None, help="scratch folder (default: a temporary one)")
    p.add_argument("--out", type=Path, default=None, help="write every measurement here (JSON)")
    a = p.parse_args()
    if a.quick:  # every stage's code path at tiny sizes (tests/test_benchmarks.py runs it)
        # one size per stage (growth exponents need two: they print None), each in its own child
        a.cache_sizes, a.shards, a.job_keys = [5_000], 20, 1_000
        a.rows, a.resamples, a.models, a.bm25_sizes = [1_000], 20, 2, [2_000]
        a.report_sizes = []  # rr report alone takes ~50 s at any size (plots); the full run times it
        a.questions, a.passages = [5], 2_000
        a.sweep_jobs, a.sweep_questions, a.sweep_passages = 2, 2, 1_000
    info = machine()
    print(json.dumps(info))
    results: dict = {"machine": info, "args": {k: str(v) for k, v in vars(a).items()}}
    with tempfile.TemporaryDirectory(dir=a.work) as tmp:
        work = Path(tmp)
        if "cache" in a.stages:
            results["cache"] = stage_cache(a.cache_sizes, a.shards, a.job_keys, work)
        if "results" in a.stages:
            results["results"] = stage_results(a.rows, a.resamples, work, a.report_sizes, a.models)
        if "bm25" in a.stages:
            results["bm25"] = stage_bm25(a.bm25_sizes)
        if "e2e" in a.stages:
            results["e2e"] = stage_e2e(a.questions, a.passages, a.strategies, work, a.profile)
        if "sweep" in a.stages:
            results["sweep"] = stage_sweep(
                a.sweep_jobs, a.sweep_questions, a.sweep_passages, a.strategies, work, a.sweep_report
            )
    results["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps({"load_avg_end": results["load_avg_end"]}))
    if a.out:
        a.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
