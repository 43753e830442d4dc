"""Report sections: the :func:`section` decorator, its registry and running the sections.

A report's content is a list of *sections*: functions registered with :func:`section` that take
``(scores, context)`` and yield :class:`ReportTable` and :class:`ReportFigure` items. A section
declares the columns it needs (``requires``) and, optionally, a predicate saying whether it applies
to this table (``applies``); sections that do not apply are listed in the index as skipped, with the
reason. Adding a section is one decorated function in any module of :mod:`rr.reporting` (see
docs/reporting.md): :func:`sections` imports them all.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import pandas as pd
from matplotlib.figure import Figure

from rr.registry import Registry, import_builtins, origin_of
from rr.reporting.loading import ReportContext

log = logging.getLogger(__name__)


class SectionSkipped(Exception):  # noqa: N818 (a signal, not an error)
    """Raised by a section that finds nothing to show; the message is the reason, shown in the index."""


@dataclass(frozen=True)
class ReportTable:
    """A table of a report.

    Attributes:
        name: File stem (unique in the report), e.g. ``"robustness"``.
        title: One-line title for the index.
        df: The numbers. A value column ``x`` with ``x_ci_low`` and ``x_ci_high`` beside it is
            shown as ``x [low, high]`` in Markdown and LaTeX; the CSV keeps all three.
        caption: What the table shows and how it was computed.
        digits: Decimals shown in Markdown and LaTeX.
    """

    name: str
    title: str
    df: pd.DataFrame
    caption: str = ""
    digits: int = 3


@dataclass(frozen=True)
class ReportFigure:
    """A figure of a report (a matplotlib ``Figure``; saved as PNG and PDF)."""

    name: str
    title: str
    figure: Figure
    caption: str = ""


Item = ReportTable | ReportFigure


SectionFn = Callable[[pd.DataFrame, ReportContext], Iterable[Item]]


@dataclass(frozen=True)
class Section:
    """A registered report section (see :func:`section`)."""

    name: str
    title: str
    fn: SectionFn
    requires: tuple[str, ...] = ()
    applies: Callable[[pd.DataFrame], bool] | None = None
    when: str = ""
    order: int = 100

    def skip_reason(self, df: pd.DataFrame) -> str | None:
        """Why this section does not apply to ``df`` (None if it does)."""
        missing = [c for c in self.requires if c not in df.columns]
        if missing:
            return f"the score table lacks column(s) {missing}"
        if self.applies is not None and not self.applies(df):
            return f"not applicable: needs {self.when or 'a different table'}"
        return None


def _section_key(s: Section) -> str:
    return f"{s.fn.__module__}.{s.fn.__qualname__}"


#: name -> Section, in registration order.
SECTIONS: Registry[Section] = Registry("report section", Section, key=_section_key)


def section(
    name: str,
    *,
    title: str,
    requires: Sequence[str] = (),
    applies: Callable[[pd.DataFrame], bool] | None = None,
    when: str = "",
    order: int = 100,
) -> Callable[[SectionFn], SectionFn]:
    """Register a report section.

    Args:
        name: Unique section name (shown in the index).
        title: Heading in the index.
        requires: Score-table columns the section needs; it is skipped (with the reason) if
            any is missing.
        applies: Predicate on the score table; the section runs only where it is true.
        when: Human description of ``applies`` for the skip reason ("a doc_perturbation like
            noise_ratio@0.4").
        order: Sort key of sections in the report (ties: registration order).

    Returns:
        A decorator registering ``fn(scores, context) -> iterable of ReportTable |
        ReportFigure`` and returning it unchanged. ``fn`` may raise :class:`SectionSkipped`.
    """

    def wrap(fn: SectionFn) -> SectionFn:
        SECTIONS.register(
            name, Section(name, title, fn, tuple(requires), applies, when, order), origin=origin_of(fn)
        )
        return fn

    return wrap


def sections() -> list[Section]:
    """Every registered section (importing every module of :mod:`rr.reporting` first), in report order."""
    import_builtins("rr.reporting")
    return sorted(SECTIONS.values(), key=lambda s: s.order)


def system_label(row: pd.Series | dict, columns: Sequence[str]) -> str:
    """A short label of a system from its values in ``columns`` (model names after the last ``/``)."""
    parts = []
    for c in columns:
        v = str(row[c])
        parts.append(v.rsplit("/", 1)[-1] if c == "generator" else v)
    return " / ".join(parts)


@dataclass
class SectionOutcome:
    """What happened to one section: its items, or why it was skipped or failed."""

    section: Section
    items: list[Item] = field(default_factory=list)
    skipped: str | None = None
    error: str | None = None


def check_section_names(names: Sequence[str]) -> None:
    """Raise a one-line :class:`~rr.errors.ConfigError` naming the unknown names and the valid ones."""
    import difflib

    from rr.errors import ConfigError

    known = [s.name for s in sections()]
    unknown = [n for n in names if n not in known]
    if not unknown:
        return
    close = {n: difflib.get_close_matches(n, known, n=1) for n in unknown}
    hints = "; ".join(f"did you mean {m[0]!r} for {n!r}" for n, m in close.items() if m)
    raise ConfigError(
        "--only",
        f"unknown report section(s) {', '.join(map(repr, unknown))}"
        + (f" ({hints})" if hints else "")
        + f"; sections: {', '.join(known)} (`rr report --list-sections` says what each holds)",
    )


def run_sections(
    scores: pd.DataFrame, ctx: ReportContext, only: Sequence[str] | None = None, strict: bool = False
) -> list[SectionOutcome]:
    """Run every applicable section (or those named in ``only``) on the score table.

    Args:
        scores: The score table.
        ctx: Context from :func:`load_jobs` (or a bare :class:`ReportContext`).
        only: Section names to run (default: all).
        strict: Re-raise a section's unexpected exception instead of recording it.
    """
    if only is not None:
        check_section_names(only)
    outcomes = []
    for sec in sections():
        if only is not None and sec.name not in only:
            continue
        outcome = SectionOutcome(sec)
        outcome.skipped = sec.skip_reason(scores)
        if outcome.skipped is None:
            try:
                outcome.items = list(sec.fn(scores, ctx))
            except SectionSkipped as why:
                outcome.skipped = str(why)
            except Exception as err:
                if strict:
                    raise
                log.error("report section %s failed:\n%s", sec.name, traceback.format_exc())
                outcome.error = f"{type(err).__name__}: {err}"
        outcomes.append(outcome)
    return outcomes
