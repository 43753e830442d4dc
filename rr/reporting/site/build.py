"""The site's build: :func:`build_site`, the entry point, runs the stages in order and times them."""

from __future__ import annotations

import gc
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from rr.reporting.core import Report, ReportContext
from rr.reporting.site.clock import _Clock
from rr.reporting.site.documents import number_documents
from rr.reporting.site.encoding import _write
from rr.reporting.site.flips import compute_flips
from rr.reporting.site.format import Index, Overview, PairExamples
from rr.reporting.site.index import _Model
from rr.reporting.site.pages import _copy_assets, _copy_report_files, _overview
from rr.reporting.site.pairs import compute_pairs
from rr.reporting.site.passages import _Passages
from rr.reporting.site.rows import index, write_examples, write_rows


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
        report: The report (:func:`rr.reporting.core.build_report`'s result; its ``scores`` and
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
    _copy_assets(out)
    _copy_report_files(report, out)

    clock = _Clock(info.stage_seconds)
    model = _Model(df.reset_index(drop=True), ctx, clock)
    passages = _Passages(ctx, corpus_loader)
    documents = number_documents(model, passages)
    clock("documents")
    # the passages' texts are read (pyarrow's JSON reader, off the GIL) while the rest is built
    passages.read_texts_in_background()
    compute_flips(model)
    clock("flips")
    compute_pairs(model, report if scores is None else None)
    clock("mcnemar")
    info.notes += model.notes
    _write(out / "data" / "overview.js", Overview.kind, None, _overview(report, ctx, model))
    clock("overview")
    write_rows(model, out / "data")
    clock("rows")
    write_examples(model, out / "data" / "ex", documents)
    clock("examples")
    passages.write(out / "data", clock)
    _write(out / "data" / "index.js", Index.kind, None, index(model, passages))
    _write(
        out / "data" / "pairs.js",
        PairExamples.kind,
        None,
        [{f: p[f] for f in PairExamples.fields().values()} for p in model.pairs],
    )
    clock("passages")
    info.notes += passages.notes
    info.examples, info.list_rows = len(model.examples), model.n_list_rows
    info.passages, info.passages_unreadable = len(passages.ids), passages.unreadable
    files = [f for f in out.rglob("*") if f.is_file()]
    info.files, info.bytes = len(files), sum(f.stat().st_size for f in files)
    info.seconds = time.perf_counter() - t0
    return info
