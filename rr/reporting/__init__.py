"""Reports from score tables: sections of tables and figures, written as CSV/Markdown/LaTeX and PNG/PDF.

``rr report <job | sweep | glob> [--out DIR]`` runs :func:`build_report`; notebooks call the
same functions (:func:`load_jobs`, :func:`robustness_ci`, :func:`run_sections`, ...). See
docs/reporting.md, and :mod:`rr.reporting.registry` for how to add a section. The console report
that ``rr`` prints after a job is :func:`rr.reporting.job.print_job_report`.

The rooms: :mod:`rr.reporting.registry` (the ``section`` decorator, its registry, running the
sections), :mod:`rr.reporting.loading` (reading jobs), :mod:`rr.reporting.writers` (CSV / Markdown /
LaTeX / README.md), :mod:`rr.reporting.report` (:func:`build_report`). The names below are theirs,
imported on first use (:data:`_HOMES`): ``rr`` imports :mod:`rr.reporting.job` after every job, and
that should not cost matplotlib's import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rr.analysis.intervals import system_by
    from rr.reporting.loading import ReportContext, load_jobs
    from rr.reporting.registry import (
        SECTIONS,
        ReportFigure,
        ReportTable,
        Section,
        SectionSkipped,
        run_sections,
        section,
        sections,
    )
    from rr.reporting.report import Report, build_report

__all__ = [
    "SECTIONS",
    "Report",
    "ReportContext",
    "ReportFigure",
    "ReportTable",
    "Section",
    "SectionSkipped",
    "build_report",
    "load_jobs",
    "run_sections",
    "section",
    "sections",
    "system_by",
]


#: Each name of ``__all__`` -> the module that holds it.
_HOMES = {
    **dict.fromkeys(["ReportContext", "load_jobs"], "rr.reporting.loading"),
    **dict.fromkeys(["Report", "build_report"], "rr.reporting.report"),
    **dict.fromkeys(
        ["SECTIONS", "ReportFigure", "ReportTable", "Section", "SectionSkipped"],
        "rr.reporting.registry",
    ),
    **dict.fromkeys(["run_sections", "section", "sections"], "rr.reporting.registry"),
    "system_by": "rr.analysis.intervals",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        import importlib

        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
