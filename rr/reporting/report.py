"""Building a report folder: load the jobs, run the sections, write the items and the index.

``rr report`` runs :func:`build_report`: :func:`rr.reporting.loading.load_jobs` reads the jobs,
:func:`rr.reporting.registry.run_sections` runs the registered sections, :mod:`rr.reporting.writers`
writes the tables, figures and ``README.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rr.reporting.coverage import Coverage, coverage
from rr.reporting.loading import ReportContext, load_jobs
from rr.reporting.registry import ReportTable, SectionOutcome, run_sections
from rr.reporting.writers import index_markdown, write_figure, write_table


@dataclass
class Report:
    """A built report: where it was written, what each section produced, and what it read
    (``scores`` and ``context``, for what is built from the same table afterwards, such as
    :func:`rr.reporting.site.build_site`), and the jobs below its folders it left out (``coverage``:
    not finished)."""

    out_dir: Path
    outcomes: list[SectionOutcome]
    files: list[Path]
    scores: pd.DataFrame | None = None
    context: ReportContext | None = None
    coverage: Coverage | None = None

    @property
    def failed(self) -> list[SectionOutcome]:
        return [o for o in self.outcomes if o.error]


def build_report(
    paths: str | Path | Sequence[str | Path],
    out_dir: str | Path,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    only: Sequence[str] | None = None,
    strict: bool = False,
) -> Report:
    """Load every job under ``paths``, run the sections and write the report folder.

    Args:
        paths: Job folders, sweep folders, ``scores.parquet`` files or glob patterns.
        out_dir: Report folder (created; files in it are overwritten).
        n_resamples: Bootstrap resamples of every interval.
        confidence: Interval level.
        seed: Seed of every resampling (same seed, same report).
        only: Section names to run (default: all that apply).
        strict: Raise on the first failing section instead of recording the failure.

    Returns:
        The :class:`Report`; ``README.md`` in ``out_dir`` indexes it.
    """
    scores, ctx = load_jobs(paths)
    ctx.n_resamples, ctx.confidence, ctx.seed = n_resamples, confidence, seed
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    outcomes = run_sections(scores, ctx, only=only, strict=strict)
    files: list[Path] = []
    names: set[str] = set()
    for o in outcomes:
        for item in o.items:
            key = f"{type(item).__name__}:{item.name}"
            if key in names:
                raise ValueError(f"two report items are named {item.name!r} (section {o.section.name})")
            names.add(key)
            if isinstance(item, ReportTable):
                files += write_table(item, out)
            else:
                files += write_figure(item, out)
                import matplotlib.pyplot as plt

                plt.close(item.figure)
    cov = coverage(paths, [job.path for job in ctx.jobs])
    readme = out / "README.md"
    readme.write_text(index_markdown(scores, ctx, outcomes, paths, cov))
    files.append(readme)
    return Report(out, outcomes, files, scores, ctx, cov)
