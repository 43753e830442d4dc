"""Reports from score tables: sections of tables and figures, written as CSV/Markdown/LaTeX and PNG/PDF.

``rr report <job | sweep | glob> [--out DIR]`` runs :func:`build_report`; notebooks call the
same functions (:func:`load_jobs`, :func:`robustness_ci`, :func:`run_sections`, ...). See
docs/reporting.md, and :mod:`rr.reporting.core` for how to add a section.
"""

from __future__ import annotations

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
