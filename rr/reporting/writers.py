"""Writing a report's items and its index: CSV / Markdown / LaTeX tables, PNG / PDF figures, README.md.

Files written under the report folder::

    README.md              index: jobs read, every table and figure, skipped sections
    tables/<name>.csv      raw numbers (point estimates and CI bounds in separate columns)
    tables/<name>.md       Markdown, "value [low, high]" cells
    tables/<name>.tex      LaTeX (booktabs), same cells
    figures/<name>.png     150 dpi
    figures/<name>.pdf     vector
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from rr.analysis.intervals import CI_HIGH, CI_LOW
from rr.environment import describe
from rr.reporting.coverage import Coverage
from rr.reporting.job import cut_cell_lines
from rr.reporting.loading import ReportContext, environments_note
from rr.reporting.registry import ReportFigure, ReportTable, SectionOutcome
from rr.results import distinct_examples, example_set


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


def index_markdown(
    scores: pd.DataFrame,
    ctx: ReportContext,
    outcomes: list[SectionOutcome],
    paths: Any,
    cov: Coverage | None = None,
) -> str:
    """The report folder's ``README.md``: the jobs read, the jobs left out (``cov``), the notes, and
    each section's tables and figures (or why it was skipped or failed)."""
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
        shown = f"{held.examples} ({held.fingerprint})" if held else ""
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
            perturbed = "" if c.query_perturbation == "none" else f" ({c.query_perturbation})"
            lines.append(
                f"- job {job.job_id}: {c.retriever}, k={c.k}{perturbed}: {c.queries_short} of "
                f"{c.queries} queries (fewest {c.fewest})"
            )
        lines.append("")
    cut = [(job, line) for job in ctx.jobs for line in cut_cell_lines(job.summary.cells_cut_to_window)]
    if cut:
        lines += [f"- job {job.job_id}: {line}" for job, line in cut] + [""]
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
