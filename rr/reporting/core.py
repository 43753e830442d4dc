"""The report machinery: load jobs, run registered sections, write tables, figures and an index.

A report is built from the one score table (:func:`rr.results.load`) plus each job's
``summary.json`` and ``retrieval.csv``. Its content is a list of *sections*: functions
registered with :func:`section` that take ``(scores, context)`` and yield
:class:`ReportTable` and :class:`ReportFigure` items. A section declares the columns it needs
(``requires``) and, optionally, a predicate saying whether it applies to this table
(``applies``); sections that do not apply are listed in the index as skipped, with the
reason. Adding a section is one decorated function in any module listed in
:data:`SECTION_MODULES` (see docs/reporting.md).

Files written under the report folder::

    README.md              index: jobs read, every table and figure, skipped sections
    tables/<name>.csv      raw numbers (point estimates and CI bounds in separate columns)
    tables/<name>.md       Markdown, "value [low, high]" cells
    tables/<name>.tex      LaTeX (booktabs), same cells
    figures/<name>.png     150 dpi
    figures/<name>.pdf     vector
"""

from __future__ import annotations

import importlib
import logging
import math
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from rr.analysis.intervals import (  # noqa: F401 (the names sections import from here)
    CI_HIGH,
    CI_LOW,
    SETTING_COLUMNS,
    SYSTEM_COLUMNS,
    system_by,
)
from rr.environment import describe
from rr.environment import environments_note as environment_note
from rr.jobfolder import RETRIEVAL_FILE, JobSummary, is_started, read_config, read_summary
from rr.registry import Registry, origin_of
from rr.reporting.coverage import Coverage, coverage
from rr.results import (  # noqa: F401 (varying: sections import it from here)
    distinct_examples,
    example_set,
    find_score_files,
    identify_examples,
    load,
    varying,
)

log = logging.getLogger(__name__)

#: Modules whose import registers report sections (append yours; imported by :func:`sections`).
SECTION_MODULES: list[str] = [
    "rr.reporting.robustness",
    "rr.reporting.perturbations",
    "rr.reporting.comparisons",
    "rr.reporting.query_level",
    "rr.reporting.rgb_rare",
    "rr.reporting.oracles_sure",
    "rr.reporting.paper_beside",
]


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


@dataclass
class JobInfo:
    """One job read into a report: its folder, ``summary.json`` (an empty :class:`~rr.jobfolder.JobSummary`,
    every field absent, when the folder holds none) and ``retrieval.csv``."""

    job_id: str
    path: Path
    rows: int
    summary: JobSummary
    retrieval: pd.DataFrame | None
    _config: Any = field(default=None, init=False, repr=False, compare=False)

    def config(self) -> Any:
        """The job's resolved config (``DictConfig``), parsed once per report; ``None`` when its
        folder holds none. Raises what :func:`rr.jobfolder.read_config` raises on a torn file."""
        if self._config is None:
            self._config = read_config(self.path) if is_started(self.path) else False
        return self._config or None


@dataclass
class ReportContext:
    """What sections get besides the score table.

    Attributes:
        jobs: The jobs read, in load order.
        retrieval: Every job's ``retrieval.csv`` stacked, with ``job_id`` and ``dataset``
            columns (answer recall per retriever, query perturbation and k; empty if none).
        n_resamples: Bootstrap resamples for intervals.
        confidence: Interval level.
        seed: Seed of every resampling.
        memo: Cache shared by sections (see :meth:`shared`).
        notes: What reading the jobs did that a reader must know (examples split by identity,
            identities derived for old tables), shown in the report's index.
    """

    jobs: list[JobInfo] = field(default_factory=list)
    retrieval: pd.DataFrame = field(default_factory=pd.DataFrame)
    n_resamples: int = 1000
    confidence: float = 0.95
    seed: int = 0
    memo: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def shared(self, key: str, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per report under ``key`` (e.g. the robustness table several sections plot)."""
        if key not in self.memo:
            self.memo[key] = compute()
        return self.memo[key]


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
    """Every registered section (importing :data:`SECTION_MODULES` first), in report order."""
    for module in SECTION_MODULES:
        importlib.import_module(module)
    return sorted(SECTIONS.values(), key=lambda s: s.order)


# ----------------------------------------------------------------------------- loading


def load_jobs(paths: str | Path | Sequence[str | Path]) -> tuple[pd.DataFrame, ReportContext]:
    """Read every job under ``paths``: the score table and a :class:`ReportContext`.

    Each job's ``scores.parquet`` is read; a job id met twice (the same job copied to two folders)
    is read once and the duplicate is logged. A job without a ``job_id`` column gets its folder
    name. The pooled table then gets its examples' identities (:func:`rr.results.identify_examples`:
    an id that names different questions in different jobs is split); what that did is in
    ``context.notes``.

    Returns:
        (the concatenated score table, the context with ``jobs`` and ``retrieval`` filled).
    """
    frames: list[pd.DataFrame] = []
    ctx = ReportContext()
    seen: dict[str, Path] = {}
    recall: list[pd.DataFrame] = []
    for f in find_score_files(paths):
        df = pd.read_parquet(f)
        job_dir = f.parent
        jid = str(df["job_id"].iloc[0]) if "job_id" in df.columns and len(df) else job_dir.name
        if "job_id" not in df.columns:
            df = df.assign(job_id=jid)
        if jid in seen:
            log.warning("job %s appears twice (%s and %s); reading it once", jid, seen[jid], job_dir)
            continue
        seen[jid] = job_dir
        summary = read_summary(job_dir) or JobSummary.from_dict({})
        retrieval = None
        if (job_dir / RETRIEVAL_FILE).exists():
            retrieval = pd.read_csv(job_dir / RETRIEVAL_FILE)
            if "query_perturbation" not in retrieval.columns:
                retrieval["query_perturbation"] = "none"
            datasets = sorted(df["dataset"].astype(str).unique())
            retrieval = retrieval.assign(job_id=jid, dataset=",".join(datasets))
            recall.append(retrieval)
        ctx.jobs.append(JobInfo(jid, job_dir, len(df), summary, retrieval))
        frames.append(df)
    scores, ctx.notes = identify_examples(pd.concat(frames, ignore_index=True))
    if recall:
        ctx.retrieval = pd.concat(recall, ignore_index=True)
    return scores, ctx


# ----------------------------------------------------------------------------- grouping


def system_label(row: pd.Series | dict, columns: Sequence[str]) -> str:
    """A short label of a system from its values in ``columns`` (model names after the last ``/``)."""
    parts = []
    for c in columns:
        v = str(row[c])
        parts.append(v.rsplit("/", 1)[-1] if c == "generator" else v)
    return " / ".join(parts)


# ----------------------------------------------------------------------------- writing


def _fmt(v: Any, digits: int) -> str:
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:.{digits}f}"
    return str(v)


def display_frame(table: ReportTable) -> pd.DataFrame:
    """The table as strings, each ``x`` with ``x_ci_low``/``x_ci_high`` folded into ``x [low, high]``."""
    df = table.df
    out: dict[str, list[str]] = {}
    for c in df.columns:
        c = str(c)
        if c.endswith((CI_LOW, CI_HIGH)) and c.rsplit("_ci_", 1)[0] in df.columns:
            continue
        vals = [_fmt(v, table.digits) for v in df[c]]
        lo, hi = f"{c}{CI_LOW}", f"{c}{CI_HIGH}"
        if lo in df.columns and hi in df.columns:
            vals = [
                v if not (v and b1 and b2) else f"{v} [{b1}, {b2}]"
                for v, b1, b2 in zip(
                    vals,
                    (_fmt(x, table.digits) for x in df[lo]),
                    (_fmt(x, table.digits) for x in df[hi]),
                    strict=True,
                )
            ]
        out[c] = vals
    return pd.DataFrame(out)


def to_markdown(df: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table of a frame of strings (``|`` escaped)."""
    cols = [str(c) for c in df.columns]

    def cell(v: Any) -> str:
        return str(v).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cell(c) for c in cols) + " |", "|" + "|".join(" --- " for _ in cols) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def latex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters (``& % $ # _ { } ~ ^ \\``) escaped by pandas,
    exactly as :func:`to_latex` escapes cells: ``\\&``, ``\\textasciitilde``, ``\\textbackslash``, ...

    For text pandas writes unescaped, such as a caption (Styler only escapes cells and headers).
    """
    cell = pd.DataFrame([[text]]).style.hide(axis="index").hide(axis="columns")
    return cell.format(escape="latex").to_string(delimiter="").removesuffix("\n")


def to_latex(table: ReportTable) -> str:
    """A booktabs LaTeX ``table`` environment of the displayed table (via pandas' Styler).

    Cells, column names and the caption are escaped by pandas (``escape="latex"``), so any
    text (``&``, ``%``, ``_``, ``~``, ``^``, ``\\``, ...) prints as itself and keeps the columns.
    """
    shown = display_frame(table)
    styler = shown.style.hide(axis="index").format(escape="latex").format_index(escape="latex", axis=1)
    return styler.to_latex(
        hrules=True,  # \toprule, \midrule, \bottomrule (booktabs)
        column_format="l" * shown.shape[1],
        caption=latex_escape(table.caption or table.title),
        label=f"tab:{table.name}",
        position="t",
    )


def write_table(table: ReportTable, out_dir: Path) -> list[Path]:
    """Write ``tables/<name>.{csv,md,tex}``; return the paths."""
    d = out_dir / "tables"
    d.mkdir(parents=True, exist_ok=True)
    csv, md, tex = (d / f"{table.name}.{ext}" for ext in ("csv", "md", "tex"))
    table.df.to_csv(csv, index=False)
    md.write_text(to_markdown(display_frame(table)))
    tex.write_text(to_latex(table))
    return [csv, md, tex]


def write_figure(fig: ReportFigure, out_dir: Path) -> list[Path]:
    """Write ``figures/<name>.{png,pdf}``; return the paths."""
    d = out_dir / "figures"
    d.mkdir(parents=True, exist_ok=True)
    png, pdf = d / f"{fig.name}.png", d / f"{fig.name}.pdf"
    fig.figure.savefig(png, dpi=150)
    fig.figure.savefig(pdf)
    return [png, pdf]


@dataclass
class SectionOutcome:
    """What happened to one section: its items, or why it was skipped or failed."""

    section: Section
    items: list[Item] = field(default_factory=list)
    skipped: str | None = None
    error: str | None = None


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
    readme.write_text(_index(scores, ctx, outcomes, paths, cov))
    files.append(readme)
    return Report(out, outcomes, files, scores, ctx, cov)


def environments_note(ctx: ReportContext) -> str | None:
    """:func:`rr.environment.environments_note` over the report's jobs (``None``: one environment)."""
    return environment_note({job.job_id: job.summary.environment for job in ctx.jobs})


def _left_out(cov: Coverage) -> list[str]:
    """The README's list of the jobs below the report's folders that it does not hold."""
    if not (cov.left_out or cov.unreadable):
        return []
    lines = []
    if cov.left_out:
        lines += [
            f"**{cov.headline()}.** Their numbers are missing from every table below; "
            "finish them and run `rr report` again:",
            "",
            "| state | job | folder | what happened | finish it with |",
            "| --- | --- | --- | --- | --- |",
        ]
        for item in cov.left_out:
            st = item.state
            where = f"`{st.path}`" if st.path else (f"none (sweep `{st.sweep}`)" if st.sweep else "-")
            cells = [
                st.state,
                st.job_id,
                where,
                st.detail or st.overrides,
                f"`{item.command}`" if item.command else "",
            ]
            lines.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
        lines.append("")
    lines += [f"- {line}" for line in cov.unreadable] + ([""] if cov.unreadable else [])
    return lines


def _index(
    scores: pd.DataFrame,
    ctx: ReportContext,
    outcomes: list[SectionOutcome],
    paths: Any,
    cov: Coverage | None = None,
) -> str:
    lines = [
        "# rr report",
        "",
        f"Read {len(ctx.jobs)} job(s), {len(scores)} score rows, "
        f"{distinct_examples(scores)} distinct examples from `{paths}`. "
        f"Intervals: {ctx.confidence:.0%} example-level (cluster) bootstrap, "
        f"{ctx.n_resamples} resamples, seed {ctx.seed}.",
        "",
        "| job | rows | dataset | examples (set) | generator | strategy | environment | folder |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for job in ctx.jobs:
        mine = scores[scores["job_id"].astype(str) == job.job_id]
        vals = {
            c: ",".join(sorted(mine[c].astype(str).unique())) for c in ("dataset", "generator", "strategy")
        }
        held = example_set(mine["example_key"]) if "example_key" in mine.columns else None
        shown = f"{held['examples']} ({held['fingerprint']})" if held else ""
        lines.append(
            f"| {job.job_id} | {job.rows} | {vals['dataset']} | {shown} | {vals['generator']} "
            f"| {vals['strategy']} | {describe(job.summary.environment)} | `{job.path}` |"
        )
    lines += [
        "",
        "Environment: the first 12 hex digits of the sha256 of the lock files the job's packages were "
        "installed from (`*`: the installed set differed from that lock; `?`: no record).",
        "",
    ]
    if note := environments_note(ctx):
        lines += [f"**Note:** {note}.", ""]
    if "example_key" in scores.columns and len(ctx.jobs) > 1:
        lines += [
            "Examples are the same only when their id, question and gold answers are: jobs with the same "
            "example set (its fingerprint in brackets) ran the same examples; paired comparisons need it.",
            "",
        ]
    lines += _left_out(cov) if cov is not None else []
    lines += [f"- {note}" for note in ctx.notes] + ([""] if ctx.notes else [])
    short = [(job, cell) for job in ctx.jobs for cell in job.summary.cells_short_of_k]
    if short:
        lines += [
            "Cells that hold fewer documents than their k (the retriever returned fewer for some queries; "
            "their rows' n_docs_given says how many):",
            "",
        ]
        for job, c in short:
            perturbed = (
                "" if c.get("query_perturbation", "none") == "none" else f" ({c['query_perturbation']})"
            )
            lines.append(
                f"- job {job.job_id}: {c['retriever']}, k={c['k']}{perturbed}: {c['queries_short']} of "
                f"{c['queries']} queries (fewest {c['fewest']})"
            )
        lines.append("")
    for o in outcomes:
        lines += [f"## {o.section.title}", ""]
        if o.skipped:
            lines += [f"*Skipped ({o.section.name}):* {o.skipped}", ""]
            continue
        if o.error:
            lines += [f"**Failed ({o.section.name}):** `{o.error}`", ""]
            continue
        for item in o.items:
            if isinstance(item, ReportTable):
                lines += [
                    f"### {item.title}",
                    "",
                    item.caption,
                    "",
                    f"[csv](tables/{item.name}.csv) · [markdown](tables/{item.name}.md) · "
                    f"[LaTeX](tables/{item.name}.tex)",
                    "",
                ]
                shown = display_frame(item)
                if len(shown) <= 40:
                    lines += [to_markdown(shown)]
                else:
                    lines += [f"({len(shown)} rows; see the CSV)", ""]
            else:
                lines += [
                    f"### {item.title}",
                    "",
                    item.caption,
                    "",
                    f"![{item.name}](figures/{item.name}.png)",
                    "",
                    f"[png](figures/{item.name}.png) · [pdf](figures/{item.name}.pdf)",
                    "",
                ]
    return "\n".join(lines).rstrip() + "\n"
