"""Console report of a finished job (printed by ``rr`` after it): the robustness table and the counts that matter."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rr.jobfolder import ApproximateIndex, CutCell, JobSummary, MetricRow, Planted, RGBRates
from rr.metrics.registry import shown_in
from rr.metrics.rgb import RATE_NAMES
from rr.metrics.robustness import metric_notes

#: Robustness-table column -> header shown in the console: the system, then the metrics the robustness
#: section shows (their specs' labels).
_HEADERS = {
    **{c: c for c in ("generator", "strategy", "retriever")},
    **{s.name: s.label for s in shown_in("robustness")},
}


def _fmt(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, float) else "-"


def _text(value: Any) -> str:
    """A label cell: the value as text, nothing for ``None``."""
    return "" if value is None else escape(str(value))


def print_job_report(result: Any, console: Console | None = None) -> None:
    """Print NDR / RSR / ROR and accuracy per retriever and strategy, then the job's counts."""
    print_summary(result.summary, result.output_dir, console)


def print_summary(
    s: JobSummary, output_dir: Any, console: Console | None = None, already_done: bool = False
) -> None:
    """Print a job's tables and counts from its summary (``summary.json``'s content).

    Args:
        s: The job's summary.
        output_dir: The job folder (printed with how to load its score table).
        console: Where to print (default: a console on stdout).
        already_done: The summary was read back from a finished job that this command did not
            re-run: say so (0 model calls now) and label the counts as those of the original run.
    """
    console = console or Console(width=None if Console().is_terminal else 140)
    if s.metrics:
        t = Table(
            title=escape(f"Retrieval robustness (Cao et al. 2025) - job {s.job_id}, {s.examples} examples")
        )
        cols = list(_HEADERS)
        for c, h in _HEADERS.items():
            left = c in ("generator", "strategy", "retriever")
            t.add_column(h, justify="left" if left else "right", no_wrap=left)
        notes: dict[str, list[str]] = {}  # note -> the systems it applies to
        for row in s.metrics:
            noted = metric_notes(row)
            for note in noted.values():
                notes.setdefault(note, []).append(
                    " / ".join(str(v) for c in ("strategy", "retriever") if (v := row.value(c)))
                )
            t.add_row(
                *[
                    "—" if c in noted else f"{v:.3f}" if isinstance(v := row.value(c), float) else _text(v)
                    for c in cols
                ]
            )
        console.print(t)
        for note, where in notes.items():  # a metric that would look like a result but is not one
            console.print(escape(f"— {note} ({', '.join(dict.fromkeys(where))})"))
    elif s.accuracy_of_all_rows:  # a summary written before the two were named apart
        console.print(f"mean score of all {s.rows} rows {_fmt(s.accuracy)}")
    else:
        console.print(
            f"accuracy (k > 0) {_fmt(s.accuracy)}, closed-book accuracy (k = 0) "
            f"{_fmt(s.closed_book_accuracy)}; {s.rows} rows "
            "(robustness metrics need k=0 and two k > 0)"
        )
    if s.rgb_rates:
        print_rgb_rates(s.rgb_rates, console)
    if s.planted:
        print_planted(s.planted, s.metrics, console)
    if s.answer_recall:
        r = Table(title="Answer recall of the top-k documents (Cao et al. Fig. 3)")
        ks = sorted({int(k) for per in s.answer_recall.values() for k in per})
        r.add_column("retriever")
        for k in ks:
            r.add_column(f"k={k}", justify="right")
        for name, per in s.answer_recall.items():
            r.add_row(escape(str(name)), *[f"{per.get(str(k), float('nan')):.3f}" for k in ks])
        console.print(r)
    for line in approximate_index_lines(s.approximate_indexes or {}):
        console.print(escape(line))
    for line in cut_cell_lines(s.cells_cut_to_window):
        console.print(escape(line))
    counts = (
        f"requests {s.requests}, unique {s.unique_requests}, model calls {s.model_calls}, "
        f"cache hits {s.cache_hits}; answer-extraction fallbacks {s.answer_extraction_fallbacks} "
        "(outputs without an 'Answer:' marker: with scoring.text=extracted their first non-empty line is scored); "
        f"rows truncated to fit the window {s.rows_truncated_to_fit_window}; "
        f"rows over the window (not sent) {s.rows_over_window or 0}; wall {s.wall_s:.1f}s"
    )
    for line in judge_fallback_lines(s.counters):
        console.print(escape(line))
    if already_done:
        console.print(
            escape(
                f"job {s.job_id} was already done: nothing re-run, model calls 0 (force=true re-runs it). "
                f"Its first run: {counts}"
            )
        )
    else:
        console.print(escape(counts))
    # One line, never wrapped (a path with a space was cut at it), the path quoted so it pastes.
    console.print(
        escape(f"results: {output_dir}/scores.parquet  (rr.results.load({str(output_dir)!r}))"),
        soft_wrap=True,
    )


def cut_cell_lines(cells: list[CutCell]) -> list[str]:
    """One line per cell not filled at its k: some of its rows held fewer documents than given,
    the rest not fitting the model's window (``summary.json`` ``cells_cut_to_window``)."""
    lines = []
    for c in cells:
        where = ", ".join(
            f"{key} {value}"
            for key in ("strategy", "retriever", "order", "doc_perturbation", "query_perturbation")
            if (value := c.value(key)) not in (None, "none")
        )
        lines.append(
            f"cell not filled at k={c.k} ({where}): {c.rows_cut} of {c.rows} rows held fewer documents "
            f"(fewest {c.fewest}) because the rest did not fit the context window; raise "
            "generator.context_window or lower grid.k (strict_window=true refuses such a job)"
        )
    return lines


def print_rgb_rates(rates: list[RGBRates], console: Console) -> None:
    """RGB's rates per system and document perturbation (``summary.json`` ``rgb_rates``): the columns
    some row has, each named as RGB's tables name it (:data:`rr.metrics.rgb.RATE_NAMES`)."""
    shown = [c for c in RATE_NAMES if any(isinstance(r.value(c), float) for r in rates)]
    t = Table(title="RGB's rates (Chen et al. 2024; RGB's evalue.py / fact_evalue.py rules)")
    for c in ("strategy", "doc_perturbation"):
        t.add_column(c, no_wrap=True)
    t.add_column("n", justify="right")
    for c in shown:
        t.add_column(RATE_NAMES[c], justify="right")
    for r in rates:
        t.add_row(
            escape(str(r.value("strategy") or "")),
            escape(str(r.value("doc_perturbation") or "")),
            str(r.n_rows if r.n_rows is not None else ""),
            *[_fmt(r.value(c)) for c in shown],
        )
    console.print(t)


def judge_fallback_lines(counters: dict[str, int]) -> list[str]:
    """One console line per LLM judge whose unreadable verdicts were scored by string match
    (``judge:<name>:fallback`` in the job's counters)."""
    return [
        f"judge {name[len('judge:') : -len(':fallback')]}: {n} distinct verdicts unreadable after its "
        "retries, scored by string match instead (judge_fallback=true in scores.parquet)"
        for name, n in counters.items()
        if name.startswith("judge:") and name.endswith(":fallback") and n
    ]


def approximate_index_lines(indexes: dict[str, ApproximateIndex]) -> list[str]:
    """One console line per approximate index: recall vs exact search on the job's own queries
    (what the job got), then the stored passage-as-query figure (the index's own property)."""

    def fmt(recall: dict[str, float]) -> str:
        return ", ".join(f"{k} {v:.3f}" for k, v in recall.items() if k.startswith("recall@")) or "n/a"

    lines = []
    for name, info in indexes.items():
        head = f"approximate index {name} ({info.spec}, {info.search_params or 'default search'}): "
        jq = info.job_queries
        if jq:
            flag = f" - BELOW {jq.warn_below}" if jq.below_threshold else ""
            head += f"recall vs exact on {jq.queries} of the job's {jq.of} queries: {fmt(jq.recall)}{flag}; "
        else:
            head += "not measured on the job's queries (query_recall_sample=0); "
        lines.append(head + f"stored, passages as queries (optimistic for graph indexes): {fmt(info.recall)}")
    return lines


#: Metrics shown measured beside planted for a simulated reader's job: those the simulated reader plants
#: (all the robustness section shows but their geometric mean).
_PLANTED = {s.name: s.label for s in shown_in("robustness") if len(s.rests_on) < 2}


#: What "planted" means, printed under the tables that show it.
PLANTED_GLOSS = (
    "planted = the true value of the simulated reader's population, set by its parameters "
    "(docs/simulated.md); measured = this job's score table"
)


def print_planted(planted: Planted, measured: list[MetricRow], console: Console) -> None:
    """The simulated reader's planted (true) values beside the measured ones: the robustness metrics
    per system and retriever when the job has them, else accuracy per cell (e.g. RGB's noise ratios)."""
    keys = ("generator", "strategy", "retriever")
    if planted.metrics:
        t = Table(
            title=f"Measured (m) vs planted (p) values: simulated reader, {planted.reps} Monte-Carlo draws"
        )
        for c in keys:
            t.add_column(c, no_wrap=True)
        for h in _PLANTED.values():
            t.add_column(f"{h} m / p", justify="right")
        found = {tuple(str(r.value(c)) for c in keys): r for r in measured}
        for p in planted.metrics:
            m = found.get(tuple(str(p.value(c)) for c in keys))
            t.add_row(
                *[_text(p.value(c)) for c in keys],
                *[f"{_fmt(m.value(c) if m else None)} / {_fmt(p.value(c))}" for c in _PLANTED],
            )
        console.print(t)
        console.print(PLANTED_GLOSS)
        return
    t = Table(title=f"Accuracy measured vs planted per cell (simulated reader, {planted.reps} draws)")
    cols = ("strategy", "retriever", "doc_perturbation", "k", "order")
    for c in cols:
        t.add_column(c, no_wrap=True)
    for c in ("n", "accuracy", "planted", "refusals", "planted"):
        t.add_column(c, justify="right")
    for row in planted.cells:
        t.add_row(
            *[_text(row.value(c)) for c in cols],
            str(row.n),
            _fmt(row.accuracy),
            _fmt(row.planted_accuracy),
            _fmt(float(row.refusal_rate or 0.0)),
            _fmt(row.planted_refusal_rate),
        )
    console.print(t)
    console.print(PLANTED_GLOSS)
