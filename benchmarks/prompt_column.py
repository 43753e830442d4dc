"""The score table with and without the prompt text (issue 36 part 4): its size, and what
``rr.results.load`` costs (seconds, peak RSS of a fresh process), at two sizes 10x apart.

One simulated Cao-grid job (``experiment=cao2025 generator=simulated dataset=synthetic
corpus=synthetic retriever=[bm25] strategy=[vanilla,ownknow,rgb] judge=match``) is run at ``--n`` questions; its table is then
tiled ``x10`` and ``x100`` (example ids made distinct) and written with the ``prompt`` column and
without it (what ``scores.parquet`` holds once the prompts live in ``prompts.parquet``)::

    python benchmarks/prompt_column.py --n 20 --work /tmp/prompt-column
    python benchmarks/prompt_column.py --quick      # 2 questions, x1 and x2: the same figures
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
from _startup import start

REPO = start()

#: What ``--quick`` prints (tests/test_benchmarks.py checks each regex matches a line).
QUICK_FIGURES = [
    r"^job: \d+ questions, \d+ rows, [\d.]+ s; prompt chars: mean \d+, max \d+$",
    r'^\{"scale": \d+, "table": "with prompt", "mib": [\d.]+, "rows": \d+, "load_s": [\d.]+, "peak_rss_mib": [\d.]+\}$',
    r'^\{"scale": \d+, "table": "without prompt", "mib": [\d.]+, "rows": \d+, "load_s": [\d.]+, "peak_rss_mib": [\d.]+\}$',
    r'^\{"scale": \d+, "prompts.parquet \(zstd\) mib": [\d.]+\}$',
]

#: ``rr.results.load`` of one job as main had it (``pd.read_parquet`` of ``scores.parquet``), in a
#: fresh process: seconds, and the peak RSS it adds to the process after its imports.
LOAD = """
import resource, sys, time
import pandas as pd, pyarrow.parquet
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
df = pd.read_parquet(sys.argv[1])
t1 = time.perf_counter()
print(len(df), t1 - t0, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024)
"""


def measure_load(path: Path) -> dict:
    """Read ``path`` as ``rr.results.load`` did in a fresh process: seconds and added peak RSS (MiB)."""
    out = subprocess.run([sys.executable, "-c", LOAD, str(path)], capture_output=True, text=True, check=True)
    rows, seconds, rss = out.stdout.split()
    return {"rows": int(rows), "load_s": round(float(seconds), 3), "peak_rss_mib": round(float(rss), 1)}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=20, help="questions of the simulated job")
    p.add_argument("--passages", type=int, default=20000, help="synthetic corpus size")
    p.add_argument(
        "--work", type=Path, default=None, help="default /tmp/prompt-column (--quick: a new temp folder)"
    )
    p.add_argument("--quick", action="store_true", help="2 questions, 200 passages, tiled x1 and x2")
    a = p.parse_args(argv)
    scales = (1, 2) if a.quick else (10, 100)
    if a.quick:
        a.n, a.passages = 2, 200
    if a.work is None:
        a.work = Path(tempfile.mkdtemp(prefix="prompt-column-")) if a.quick else Path("/tmp/prompt-column")
    from rr.config import compose, register_configs
    from rr.jobfolder import SCORES_FILE, SUMMARY_FILE
    from rr.pipeline import run_job

    register_configs()
    job = a.work / "job"
    overrides = [
        "experiment=cao2025",
        "generator=simulated",
        "dataset=synthetic",
        "corpus=synthetic",
        "retriever=[bm25]",
        "strategy=[vanilla,ownknow,rgb]",  # S2A is not simulated; RGB stands in for it
        "judge=match",
        f"dataset.n={a.n}",
        f"corpus.max_passages={a.passages}",
        f"paths.cache_dir={a.work / 'cache'}",
        "progress=false",
    ]
    t0 = time.perf_counter()
    if not (job / SUMMARY_FILE).exists():
        run_job(compose(overrides), job)
    job_s = time.perf_counter() - t0
    from rr.results import load, load_prompts

    base = load(job)
    prompts = load_prompts(job)
    key = [c for c in prompts.columns if c != "prompt"]
    full = base.merge(prompts, on=key, how="left", validate="one_to_one")
    print(
        f"job: {a.n} questions, {len(base)} rows, {job_s:.1f} s; "
        f"prompt chars: mean {full['prompt'].str.len().mean():.0f}, max {full['prompt'].str.len().max()}"
    )
    results = []
    for scale in scales:
        tiled = pd.concat(
            [full.assign(example_id=full["example_id"].astype(str) + f"-{i}") for i in range(scale)],
            ignore_index=True,
        )
        for label, df in (("with prompt", tiled), ("without prompt", tiled.drop(columns="prompt"))):
            folder = a.work / f"x{scale}-{label.replace(' ', '-')}"
            folder.mkdir(parents=True, exist_ok=True)
            df.to_parquet(folder / SCORES_FILE, index=False)  # as write_scores did on main
            r = {
                "scale": scale,
                "table": label,
                "mib": round((folder / SCORES_FILE).stat().st_size / 2**20, 2),
            }
            r |= measure_load(folder / SCORES_FILE)
            results.append(r)
            print(json.dumps(r), flush=True)
        side = a.work / f"x{scale}-prompts.parquet"
        tiled[[*key, "prompt"]].to_parquet(side, index=False, compression="zstd")
        print(
            json.dumps({"scale": scale, "prompts.parquet (zstd) mib": round(side.stat().st_size / 2**20, 2)})
        )


if __name__ == "__main__":
    main()
