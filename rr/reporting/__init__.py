"""Reports from score tables: sections of tables and figures, written as CSV/Markdown/LaTeX and PNG/PDF.

``rr report <job | sweep | glob> [--out DIR]`` runs :func:`build_report`; notebooks call the
same functions (:func:`load_jobs`, :func:`robustness_ci`, :func:`run_sections`, ...). See
docs/reporting.md, and :mod:`rr.reporting.core` for how to add a section. The console report
that ``rr`` prints after a job is :func:`rr.reporting.job.print_job_report`.

The names below are :mod:`rr.reporting.core`'s, imported on first use: ``rr`` imports
:mod:`rr.reporting.job` after every job, and that should not cost matplotlib's import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rr.reporting.core import (
        SECTION_MODULES,
        SECTIONS,
        Report,
        ReportContext,
        ReportFigure,
        ReportTable,
        Section,
        SectionSkipped,
        build_report,
        load_jobs,
        run_sections,
        section,
        sections,
        system_by,
    )

__all__ = [
    "SECTIONS",
    "SECTION_MODULES",
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


def __getattr__(name: str) -> Any:
    if name in __all__:
        from rr.reporting import core

        return getattr(core, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
