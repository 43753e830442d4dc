"""A behaviour snapshot for refactors that must change nothing (issue 37: "behaviour is unchanged, proven").

Runs a small fixed set of jobs on the simulated reader (synthetic task, in process, as the tests do)
into ``--out``, runs ``rr report`` on them, and writes ``--out/manifest.json``:

- ``jobs``: folder name -> job id, a hash of the score table's contents (read with pandas, columns
  and rows sorted, so parquet metadata and row order do not matter) and a hash of ``summary.json``
  without what differs from run to run (timings, wall time, package versions, the format version);
- ``tables``: sha256 of every ``report/tables/*.csv``;
- ``site``: sha256 of every data file of the result browser (``report/site/data/**``), the output
  folder's path written as ``<out>`` and the overview's job wall times left out.

``--compare BASELINE.json`` then prints every difference and exits 1 if there is one:

    python tools/behaviour_snapshot.py --out /tmp/base-snap            # on the commit before a refactor
    python tools/behaviour_snapshot.py --out /tmp/me-snap --compare /tmp/base-snap/manifest.json

About 1-2 minutes on 2 cores (the result browser is built too, so its code runs; ``--no-site`` skips it).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rr.jobfolder import JobSummary

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

SIM = ["generator=simulated", "dataset=synthetic", "corpus=synthetic"]

#: folder name -> (overrides, multirun). Each multirun point gets ``<name>-<i>``.
JOBS: dict[str, tuple[list[str], bool]] = {
    # the demo's design (experiment=cao2025_mini) on the simulated reader, BM25 only (no encoder)
    "cao2025_mini": (
        [
            "experiment=cao2025_mini",
            *SIM,
            "retriever=[bm25,oracle]",
            "strategy=[vanilla,ownknow,closed_book]",
            "dataset.n=10",
            "corpus.max_passages=200",
        ],
        False,
    ),
    # RGB's noise-ratio sweep, two points
    "rgb2024": (
        [
            "sweep=rgb2024",
            *SIM,
            "perturbation.doc.ratio=0.0,1.0",
            "dataset.n=3",
            "corpus.max_passages=300",
            "grid.k=[0,5]",
            "generator.max_new_tokens=8",
        ],
        True,
    ),
    # RARE's document types that need no translator model
    "rare2025": (
        [
            "experiment=rare2025",
            *SIM,
            "strategy.vanilla.template=rag_qa.j2",
            "perturbation/doc=none,ground_truth,delete_answer",
            "dataset.n=3",
            "corpus.max_passages=300",
            "generator.max_new_tokens=8",
        ],
        True,
    ),
}

#: summary.json keys that differ from run to run (or that a format change may add).
VOLATILE = ("timings_s", "wall_s", "versions", "summary_version")


def _hash(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def table_hash(path: Path) -> str:
    """The score table's contents, independent of parquet metadata, column order and row order."""
    import pandas as pd

    df = pd.read_parquet(path)
    df = df[sorted(df.columns)]
    text = df.astype(str).sort_values(list(df.columns)).to_csv(index=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _steady(node: Any) -> Any:
    """``node`` without the seconds a step took (``generation_steps[*].seconds``, ``other_models``)."""
    if isinstance(node, dict):
        return {k: _steady(v) for k, v in node.items() if k not in ("seconds", "steps_seconds")}
    if isinstance(node, list):
        return [_steady(v) for v in node]
    return node


def summary_hash(summary: JobSummary) -> str:
    """The hash of a job's summary as written (:meth:`rr.jobfolder.JobSummary.to_dict`) less :data:`VOLATILE`."""
    return _hash(_steady({k: v for k, v in summary.to_dict().items() if k not in VOLATILE}))


def run_jobs(out: Path) -> None:
    from omegaconf import open_dict

    from rr.cost import compose_jobs
    from rr.pipeline import run_job

    for name, (overrides, multirun) in JOBS.items():
        jobs = compose_jobs(overrides, multirun=multirun)
        for i, (_, cfg) in enumerate(jobs):
            with open_dict(cfg):
                cfg.paths.output_root = str(out / "outputs")
                cfg.paths.cache_dir = str(out / "cache")
                cfg.progress = False
            folder = out / "jobs" / (f"{name}-{i}" if multirun else name)
            t0 = time.perf_counter()
            run_job(cfg, folder)
            print(f"job {folder.name}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)


def manifest(out: Path) -> dict[str, Any]:
    from rr.jobfolder import SCORES_FILE, read_summary

    jobs = {}
    for folder in sorted(p for p in (out / "jobs").iterdir() if p.is_dir()):
        summary = read_summary(folder)
        assert summary is not None, f"{folder}: no readable summary"
        jobs[folder.name] = {
            "job_id": summary.job_id,
            "scores": table_hash(folder / SCORES_FILE),
            "summary": summary_hash(summary),
        }
    tables = {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((out / "report" / "tables").glob("*.csv"))
    }
    site = {
        str(p.relative_to(out / "report" / "site")): site_hash(p, out)
        for p in sorted((out / "report" / "site" / "data").rglob("*.js"))
    }
    return {"jobs": jobs, "tables": tables, "site": site}


def site_hash(path: Path, out: Path) -> str:
    """A site data file's contents without what differs from run to run: the output folder's path
    (as ``<out>``) and, in the overview, each job's wall time."""
    text = path.read_text(encoding="utf-8").replace(json.dumps(str(out))[1:-1], "<out>")
    if path.name == "overview.js":
        head, _, rest = text.partition(",null,")  # RR.load("overview",null,{...});
        payload = json.loads(rest.rstrip().removesuffix(");"))
        for job in payload.get("jobs", []):
            job.pop("wall_s", None)
        text = head + _hash(payload)
    return hashlib.sha256(text.encode()).hexdigest()


def compare(now: dict[str, Any], base: dict[str, Any]) -> list[str]:
    diffs = []
    for part in ("jobs", "tables", "site"):
        if part not in base:  # a baseline made before the tool recorded it
            continue
        for key in sorted(set(now[part]) | set(base[part])):
            a, b = base[part].get(key), now[part].get(key)
            if a != b:
                diffs.append(f"{part}/{key}: baseline {a} now {b}")
    return diffs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="output folder (created; must be empty)")
    parser.add_argument("--compare", type=Path, help="a baseline manifest.json to compare with")
    parser.add_argument("--no-site", action="store_true", help="rr report --no-site")
    args = parser.parse_args()
    out: Path = args.out.resolve()
    if out.exists() and any(out.iterdir()):
        parser.error(f"{out} is not empty")
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    run_jobs(out)
    report = [sys.executable, "-m", "rr", "report", str(out / "jobs"), "--out", str(out / "report")]
    report += ["--resamples", "200", *(["--no-site"] if args.no_site else [])]
    subprocess.run(report, check=True, stdout=subprocess.DEVNULL)
    result = manifest(out)
    (out / "manifest.json").write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    print(
        f"{out / 'manifest.json'}: {len(result['jobs'])} jobs, {len(result['tables'])} tables, "
        f"{len(result['site'])} site data files, "
        f"{time.perf_counter() - t0:.0f} s",
        file=sys.stderr,
    )
    if args.compare:
        diffs = compare(result, json.loads(args.compare.read_text()))
        for d in diffs:
            print("DIFF", d)
        print("identical to the baseline" if not diffs else f"{len(diffs)} differences")
        return 1 if diffs else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
