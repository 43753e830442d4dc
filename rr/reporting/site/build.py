"""The site's build: :func:`build_site`, the entry point, runs the stages in order and times them.

Each stage takes what it needs and returns a record; none changes another's:

    index_scores(table)                        -> ScoreIndex    (index.py)
    number_documents(index, jobs, loader)      -> Documents     (documents.py; with the Passages numbered)
    compute_flips(index)                       -> Flips         (flips.py)
    compute_pairs(index, report)               -> Pairs         (pairs.py)
    overview_data(report, ctx, index, ...)     -> overview.js   (pages.py)
    write_examples(index, flips, documents, …) -> example shards (rows.py: ex/, pr/)
    documents.passages.write(data, clock)      -> PassageFiles  (passages.py: p/)
    write_rows(index, flips, data, titles)     -> row chunks    (rows.py: rows-NNN.js; titles:
                                                  documents.document_titles of the passages')
    index_data(index, flips, pairs, …)         -> index.js      (rows.py)
"""

from __future__ import annotations

import gc
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from rr.reporting.loading import ReportContext
from rr.reporting.report import Report
from rr.reporting.site.clock import Clock
from rr.reporting.site.documents import document_titles, number_documents
from rr.reporting.site.encoding import write_data_file
from rr.reporting.site.flips import compute_flips
from rr.reporting.site.format import Index, Overview, PairExamples
from rr.reporting.site.index import index_scores
from rr.reporting.site.pages import copy_assets, copy_report_files, overview_data
from rr.reporting.site.pairs import compute_pairs
from rr.reporting.site.rows import index_data, write_examples, write_rows


@dataclass
class SiteInfo:
    """What :func:`build_site` wrote: the folder, its size and counts, and what it could not do."""

    out_dir: Path
    bytes: int = 0
    files: int = 0
    examples: int = 0
    list_rows: int = 0
    passages: int = 0
    passages_unreadable: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    stage_seconds: dict[str, float] = field(default_factory=dict)


def build_site(
    report: Report,
    out_dir: str | Path | None = None,
    *,
    scores: pd.DataFrame | None = None,
    context: ReportContext | None = None,
    corpus_loader: Callable[[Path], Any] | None = None,
) -> SiteInfo:
    """Write the result browser of a built report.

    Args:
        report: The report (:func:`rr.reporting.report.build_report`'s result; its ``scores`` and
            ``context`` are what the site shows).
        out_dir: Site folder (default ``<report folder>/site``); its ``data/`` is replaced.
        scores: The score table, when ``report`` does not carry it.
        context: The jobs read, when ``report`` does not carry them.
        corpus_loader: ``job folder -> Corpus`` (``id in corpus``, ``corpus[id]``); default:
            the corpus the job's ``config.yaml`` names, read for the passages shown only
            (``texts_of`` where the corpus has it, else loaded); raising means the texts are not
            readable.

    Returns:
        A :class:`SiteInfo`; ``index.html`` in ``out_dir`` is the overview.
    """
    # millions of small objects (passages, cells) and no cycles among them: the cyclic collector
    # would rescan the score table's objects again and again (a third of the time at 4e5 rows)
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _build_site(report, out_dir, scores, context, corpus_loader)
    finally:
        if gc_was_enabled:
            gc.enable()


def _build_site(
    report: Report,
    out_dir: str | Path | None,
    scores: pd.DataFrame | None,
    context: ReportContext | None,
    corpus_loader: Callable[[Path], Any] | None,
) -> SiteInfo:
    t0 = time.perf_counter()
    df = report.scores if scores is None else scores
    ctx = report.context if context is None else context
    if df is None or ctx is None:
        raise ValueError("build_site needs the report's score table and context (build_report sets both)")
    out = Path(out_dir) if out_dir is not None else report.out_dir / "site"
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("data", "figures", "tables"):
        shutil.rmtree(out / stale, ignore_errors=True)
    (out / "data" / "ex").mkdir(parents=True)
    (out / "data" / "p").mkdir(parents=True)
    info = SiteInfo(out)
    copy_assets(out)
    copy_report_files(report, out)

    clock = Clock(info.stage_seconds)
    idx = index_scores(df.reset_index(drop=True))
    clock("index")
    documents = number_documents(idx, ctx.jobs, corpus_loader)
    clock("documents")
    # the passages' texts are read (pyarrow's JSON reader, off the GIL) while the rest is built
    documents.passages.read_texts_in_background()
    flips = compute_flips(idx)
    clock("flips")
    pairs = compute_pairs(idx, report if scores is None else None)
    clock("mcnemar")
    notes = [*idx.notes, *flips.notes, *pairs.notes]
    data = out / "data"
    write_data_file(
        data / "overview.js", Overview.kind, None, overview_data(report, ctx, idx, flips, pairs, notes)
    )
    clock("overview")
    ex_shards = write_examples(idx, flips, documents, ctx.jobs, data / "ex")
    clock("examples")
    passages = documents.passages.write(data, clock)
    row_chunks = write_rows(idx, flips, data, document_titles(documents.ranked, passages.titles))
    clock("rows")
    index = index_data(idx, flips, pairs, notes, row_chunks, ex_shards, passages)
    write_data_file(data / "index.js", Index.kind, None, index)
    write_data_file(
        data / "pairs.js",
        PairExamples.kind,
        None,
        [{f: p[f] for f in PairExamples.fields().values()} for p in pairs.compared],
    )
    clock("passages")
    info.notes += [*notes, *passages.notes]
    info.examples, info.list_rows = len(idx.examples), idx.n_list_rows
    info.passages, info.passages_unreadable = passages.count, passages.unreadable
    files = [f for f in out.rglob("*") if f.is_file()]
    info.files, info.bytes = len(files), sum(f.stat().st_size for f in files)
    info.seconds = time.perf_counter() - t0
    return info
