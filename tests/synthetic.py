"""A synthetic multi-job sweep written with the real score-table writer (for report tests).

Scores are seeded Bernoulli draws whose rate depends on the model, k and perturbation, so
every report section has something to show; each job folder gets ``scores.parquet`` (via
:func:`rr.results.write_scores`), ``summary.json`` and ``retrieval.csv`` like a real job.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from rr.hashing import content_hash
from rr.results import write_scores

KS = (5, 10, 25)
ORDERS = ("original", "reversed", "shuffled")
RETRIEVERS = ("bm25", "dense")


def job_rows(
    generator: str,
    strategy: str,
    n_examples: int,
    *,
    base: float,
    gain: float,
    doc_perturbation: str = "none",
    query_perturbation: str = "none",
    seed: int = 0,
) -> pd.DataFrame:
    """Rows of one job: k = 0 plus retriever x k x order for ``n_examples`` examples."""
    jid = content_hash([generator, strategy, doc_perturbation, query_perturbation, n_examples, seed], 12)
    rng = np.random.default_rng(int(jid, 16) % 2**32)
    ability = rng.uniform(-0.25, 0.25, n_examples)  # per-example difficulty, shared across cells
    rows = []
    cells = [("none", 0, "none")] + [(r, k, o) for r in RETRIEVERS for k in KS for o in ORDERS]
    for i in range(n_examples):
        drawn: dict[tuple[str, int], float] = {}
        for r, k, o in cells:
            p = float(np.clip(base + ability[i] + (gain * np.log1p(k) / np.log1p(max(KS)) if k else 0), 0, 1))
            if (r, k) not in drawn:  # one outcome per (retriever, k); orders flip it 15% of the time
                drawn[r, k] = float(rng.random() < p)
            s = drawn[r, k] if rng.random() > 0.15 else float(rng.random() < p)
            rows.append(
                {
                    "example_id": f"q{i:03d}",
                    "dataset": "synth",
                    "generator": generator,
                    "strategy": strategy,
                    "retriever": r,
                    "k": k,
                    "order": o,
                    "query_perturbation": query_perturbation,
                    "doc_perturbation": doc_perturbation,
                    "n_docs_used": k,
                    "prediction": "yes" if s else "no",
                    "raw_output": f"Answer: {'yes' if s else 'no'}",
                    "score": s,
                    "judge": "match",
                    "refused": False,
                    "job_id": jid,
                    "seed": seed,
                    "marker_found": True,
                }
            )
    return pd.DataFrame(rows)


def write_job(root: Path, df: pd.DataFrame) -> Path:
    """Write one job folder (``scores.parquet``, ``summary.json``, ``retrieval.csv``)."""
    jid = str(df["job_id"].iloc[0])
    out = root / jid
    out.mkdir(parents=True, exist_ok=True)
    write_scores(df, out)
    recall = [
        {
            "retriever": r,
            "query_perturbation": "none",
            "k": k,
            "answer_recall": round(0.3 + 0.1 * j + 0.05 * (r == "dense"), 4),
        }
        for r in RETRIEVERS
        for j, k in enumerate(KS)
    ]
    pd.DataFrame(recall).to_csv(out / "retrieval.csv", index=False)
    summary = {
        "job_id": jid,
        "name": "synthetic",
        "examples": int(df["example_id"].nunique()),
        "rows": len(df),
        "requests": len(df),
        "unique_requests": len(df) // 2,
        "model_calls": len(df) // 2,
        "cache_hits": 0,
        "accuracy": float(df.loc[df["k"] > 0, "score"].mean()),  # k > 0 cells, as a job's summary.json
        "closed_book_accuracy": float(df.loc[df["k"] == 0, "score"].mean()),
        "counters": {},
        "metrics": [],
        "timings_s": {"retrieve": 1.5, "generate:vanilla": 12.25},
        "wall_s": 14.0,
    }
    (out / "summary.json").write_text(json.dumps(summary))
    return out


def write_synthetic_sweep(root: Path, n_examples: int = 12, noise: bool = True) -> Path:
    """Write a sweep of 4 systems (2 models x 2 strategies) and, with ``noise``, 3 noise-ratio jobs."""
    root.mkdir(parents=True, exist_ok=True)
    specs = [
        ("org/model-small", "vanilla", 0.35, 0.2),
        ("org/model-small", "ownknow", 0.4, 0.1),
        ("org/model-large", "vanilla", 0.55, 0.25),
        ("org/model-large", "ownknow", 0.6, 0.15),
    ]
    for gen, strat, base, gain in specs:
        write_job(root, job_rows(gen, strat, n_examples, base=base, gain=gain))
    if noise:
        for ratio in (0.2, 0.6):
            write_job(
                root,
                job_rows(
                    "org/model-large",
                    "vanilla",
                    n_examples,
                    base=0.55,
                    gain=0.25 - 0.3 * ratio,
                    doc_perturbation=f"noise_ratio@{ratio}",
                ),
            )
    return root
