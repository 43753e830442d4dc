"""Console report of a finished job (printed by ``rr`` after it): the robustness table and the counts that matter."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

#: Robustness-table column -> header shown in the console.
_HEADERS = {
    "generator": "generator",
    "strategy": "strategy",
    "retriever": "retriever",
    "ndr": "NDR",
    "rsr": "RSR",
    "ror": "ROR",
    "robustness": "robustness",
    "accuracy": "accuracy",
    "closed_book_accuracy": "acc. k=0",
}


def print_job_report(result: Any, console: Console | None = None) -> None:
    """Print NDR / RSR / ROR and accuracy per retriever and strategy, then the job's counts."""
    console = console or Console(width=None if Console().is_terminal else 140)
    s = result.summary
    if s["metrics"]:
        t = Table(
            title=escape(
                f"Retrieval robustness (Cao et al. 2025) - job {s['job_id']}, {s['examples']} examples"
            )
        )
        cols = list(_HEADERS)
        for c, h in _HEADERS.items():
            left = c in ("generator", "strategy", "retriever")
            t.add_column(h, justify="left" if left else "right", no_wrap=left)
        for row in s["metrics"]:
            t.add_row(
                *[
                    f"{row[c]:.3f}" if isinstance(row.get(c), float) else escape(str(row.get(c, "")))
                    for c in cols
                ]
            )
        console.print(t)
    else:
        console.print(
            f"accuracy {s['accuracy']:.3f} over {s['rows']} rows (robustness metrics need k=0 and two k > 0)"
        )
    if s.get("planted"):
        print_planted(s["planted"], s["metrics"], console)
    recall = s.get("answer_recall") or {}
    if recall:
        r = Table(title="Answer recall of the top-k documents (Cao et al. Fig. 3)")
        ks = sorted({int(k) for per in recall.values() for k in per})
        r.add_column("retriever")
        for k in ks:
            r.add_column(f"k={k}", justify="right")
        for name, per in recall.items():
            r.add_row(escape(str(name)), *[f"{per.get(str(k), float('nan')):.3f}" for k in ks])
        console.print(r)
    console.print(
        f"requests {s['requests']}, unique {s['unique_requests']}, model calls {s['model_calls']}, "
        f"cache hits {s['cache_hits']}; answer-extraction fallbacks {s['answer_extraction_fallbacks']}; "
        f"rows truncated to fit the window {s['rows_truncated_to_fit_window']}; "
        f"rows over the window (not sent) {s.get('rows_over_window', 0)}; wall {s['wall_s']:.1f}s"
    )
    console.print(
        escape(f"results: {result.output_dir}/scores.parquet  (rr.results.load('{result.output_dir}'))")
    )


#: Metrics shown measured beside planted for a simulated reader's job.
_PLANTED = {
    "ndr": "NDR",
    "rsr": "RSR",
    "ror": "ROR",
    "accuracy": "accuracy",
    "closed_book_accuracy": "acc. k=0",
}


def _fmt(v: Any) -> str:
    return f"{v:.3f}" if isinstance(v, float) else "-"


def print_planted(planted: dict, measured: list[dict], console: Console) -> None:
    """The simulated reader's planted (true) values beside the measured ones: the robustness metrics
    per system and retriever when the job has them, else accuracy per cell (e.g. RGB's noise ratios)."""
    keys = ("generator", "strategy", "retriever")
    if planted["metrics"]:
        t = Table(
            title=f"Measured (m) vs planted (p) values: simulated reader, {planted['reps']} Monte-Carlo draws"
        )
        for c in keys:
            t.add_column(c, no_wrap=True)
        for h in _PLANTED.values():
            t.add_column(f"{h} m / p", justify="right")
        found = {tuple(str(r.get(c)) for c in keys): r for r in measured}
        for p in planted["metrics"]:
            m = found.get(tuple(str(p.get(c)) for c in keys), {})
            t.add_row(
                *[escape(str(p.get(c, ""))) for c in keys],
                *[f"{_fmt(m.get(c))} / {_fmt(p.get(c))}" for c in _PLANTED],
            )
        console.print(t)
        return
    t = Table(title=f"Accuracy measured vs planted per cell (simulated reader, {planted['reps']} draws)")
    cols = ("strategy", "retriever", "doc_perturbation", "k", "order")
    for c in cols:
        t.add_column(c, no_wrap=True)
    for c in ("n", "accuracy", "planted", "refusals", "planted"):
        t.add_column(c, justify="right")
    for row in planted["cells"]:
        t.add_row(
            *[escape(str(row.get(c, ""))) for c in cols],
            str(row.get("n")),
            _fmt(row.get("accuracy")),
            _fmt(row.get("planted_accuracy")),
            _fmt(float(row.get("refusal_rate") or 0.0)),
            _fmt(row.get("planted_refusal_rate")),
        )
    console.print(t)
