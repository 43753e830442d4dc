"""The pages: the HTML files and assets copied, the report's figures and tables copied, and the
overview's data (jobs and their config differences, sweep states, tables, pairs)."""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from rr.environment import describe
from rr.jobfolder import CONFIG_FILE
from rr.reporting.loading import JobInfo, ReportContext, environments_note
from rr.reporting.registry import ReportTable
from rr.reporting.report import Report
from rr.reporting.site.encoding import json_number
from rr.reporting.site.flips import Flips, flip_counts
from rr.reporting.site.format import (
    FORMAT_VERSION,
    Figure,
    LeftOutJob,
    Overview,
    OverviewJob,
    OverviewPair,
    PairApart,
    Section,
    Sweep,
    SweepJob,
    Table,
)
from rr.reporting.site.index import ScoreIndex
from rr.reporting.site.pairs import Pairs
from rr.reporting.site.papers import link_paper_values
from rr.sweepfolder import is_sweep

log = logging.getLogger(__name__)

#: Rows of a report table shown on the overview (the CSV in ``tables/`` has all of them).
TABLE_ROWS = 500
ASSETS = ("rr.css", "rr.js", "overview.js", "examples.js", "example.js")
#: file -> (page script, title); the pages are ``assets/page.html`` filled in.
PAGES = {
    "index.html": ("overview", "overview"),
    "examples.html": ("examples", "examples"),
    "example.html": ("example", "example"),
}
#: The navigation bar's links: (file, label).
NAV = (("index.html", "Overview"), ("examples.html", "Examples"))


def copy_assets(out: Path) -> None:
    assets = resources.files("rr.reporting.site") / "assets"
    (out / "assets").mkdir(exist_ok=True)
    for name in ASSETS:
        (out / "assets" / name).write_bytes((assets / name).read_bytes())
    template = (assets / "page.html").read_text(encoding="utf-8")
    for name, (script, title) in PAGES.items():
        current = ' aria-current="page"'
        nav = "".join(f'<a href="{h}"{current if h == name else ""}>{label}</a>' for h, label in NAV)
        html = template.replace("$TITLE", title).replace("$PAGE", script).replace("$NAV", nav)
        (out / name).write_text(html, encoding="utf-8")


def copy_report_files(report: Report, out: Path) -> None:
    for sub, ext in (("figures", ".png"), ("tables", ".csv")):
        files = [f for f in report.files if f.suffix == ext and f.parent.name == sub and f.exists()]
        if files:
            (out / sub).mkdir(exist_ok=True)
        for f in files:
            shutil.copyfile(f, out / sub / f.name)


def _png_size(path: Path) -> tuple[int | None, int | None]:
    """A PNG's width and height in pixels from its header (``None``s: not a readable PNG); the
    overview's ``<img>`` reserves that space before the image loads."""
    try:
        with path.open("rb") as f:
            head = f.read(24)
    except OSError:
        return None, None
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None, None
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def overview_data(
    report: Report, ctx: ReportContext, idx: ScoreIndex, flips: Flips, pairs: Pairs, notes: Sequence[str]
) -> dict[str, Any]:
    """``overview.js``'s payload (:class:`~rr.reporting.site.format.Overview`)."""
    jobs = []
    configs = {}
    for job in ctx.jobs:
        configs[job.job_id] = _flat_config(job)
        s = job.summary
        jobs.append(
            {
                OverviewJob.job_id: job.job_id,
                OverviewJob.rows: job.rows,
                OverviewJob.folder: str(job.path),
                OverviewJob.model_calls: s.model_calls,
                OverviewJob.cache_hits: s.cache_hits,
                OverviewJob.wall_s: json_number(s.wall_s),
                OverviewJob.environment: describe(s.environment),
                OverviewJob.accuracy: json_number(s.accuracy),
                OverviewJob.closed_book_accuracy: json_number(s.closed_book_accuracy),
            }
        )
    keys = sorted({k for c in configs.values() for k in c})
    differ = [
        k
        for k in keys
        if not k.startswith(("paths.", "hydra.", "progress", "logger."))
        and len({json.dumps(c.get(k), default=str) for c in configs.values()}) > 1
    ]
    for j in jobs:
        j[OverviewJob.config] = {k: configs[j[OverviewJob.job_id]].get(k) for k in differ}
    sections = []
    for o in report.outcomes:
        sec: dict[str, Any] = {Section.name: o.section.name, Section.title: o.section.title}
        if o.skipped:
            sec[Section.skipped] = o.skipped
        if o.error:
            sec[Section.error] = o.error
        items = []
        for item in o.items:
            if isinstance(item, ReportTable):
                items.append(_table(item))
            else:
                w, h = _png_size(report.out_dir / "figures" / f"{item.name}.png")
                items.append(
                    {
                        Figure.figure: item.name,
                        Figure.title: item.title,
                        Figure.caption: item.caption,
                        Figure.width: w,
                        Figure.height: h,
                    }
                )
        sec[Section.items] = items
        sections.append(sec)
    link_paper_values(sections, idx)
    return {
        Overview.title: "rr report",
        Overview.rows: int(len(idx.df)),
        Overview.examples: len(idx.examples),
        Overview.systems: len(idx.systems),
        Overview.resamples: ctx.n_resamples,
        Overview.confidence: ctx.confidence,
        Overview.seed: ctx.seed,
        Overview.jobs: jobs,
        Overview.config_keys: differ,
        Overview.sweeps: _sweeps(ctx),
        Overview.left_out: _left_out(report),
        Overview.left_out_headline: report.coverage.headline() if report.coverage is not None else "",
        Overview.sections: sections,
        Overview.flip_counts: flip_counts(idx, flips),
        Overview.pairs: [
            {
                OverviewPair.label: p["label"],
                OverviewPair.differs_in: p["differs_in"],
                OverviewPair.dataset: p["dataset"],
                OverviewPair.examples: len(p["ex"]),
            }
            for p in pairs.compared
        ],
        Overview.pairs_apart: [{k: p[k] for k in PairApart.fields().values()} for p in pairs.apart],
        Overview.notes: list(notes),
        Overview.environment_note: environments_note(ctx),
        Overview.format_version: FORMAT_VERSION,
    }


#: A report table's column of verdicts (the paper section's): the overview folds such a table behind
#: one line of its verdicts' counts.
VERDICT = "verdict"


def _table(table: ReportTable) -> dict[str, Any]:
    df = table.df
    cols = [str(c) for c in df.columns]
    rows = [
        [json_number(v) if not isinstance(v, str) else v for v in r]
        for r in df.head(TABLE_ROWS).itertuples(index=False)
    ]
    return {
        Table.table: table.name,
        Table.title: table.title,
        Table.caption: table.caption,
        Table.digits: table.digits,
        Table.columns: cols,
        Table.rows: rows,
        Table.total_rows: int(len(df)),
        Table.verdicts: (
            {str(k): int(n) for k, n in df[VERDICT].astype(str).value_counts(sort=False).items()}
            if VERDICT in df.columns
            else None
        ),
    }


def _flat_config(job: JobInfo) -> dict[str, Any]:
    try:
        from omegaconf import OmegaConf

        node = job.config()
        if node is None:
            return {}
        cfg = OmegaConf.to_container(node, resolve=False)
    except Exception as err:  # a torn or foreign config: show the jobs without it
        log.warning("site: %s unreadable: %s", job.path / CONFIG_FILE, err)
        return {}
    flat: dict[str, Any] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, f"{prefix}{k}.")
        else:
            flat[prefix[:-1]] = (
                node if isinstance(node, str | int | float | bool) or node is None else str(node)
            )

    walk(cfg, "")
    return flat


def _left_out(report: Report) -> list[dict[str, Any]]:
    """The overview's :class:`~rr.reporting.site.format.LeftOutJob` list (from the report's coverage)."""
    if report.coverage is None:
        return []
    return [
        {
            LeftOutJob.job_id: item.state.job_id,
            LeftOutJob.state: item.state.state,
            LeftOutJob.folder: str(item.state.path or ""),
            LeftOutJob.detail: item.state.detail or item.state.overrides,
            LeftOutJob.command: item.command,
        }
        for item in report.coverage.left_out
    ]


def _sweeps(ctx: ReportContext) -> list[dict[str, Any]]:
    """Done / partial / missing jobs (``rr status``) of every sweep folder the jobs lie in."""
    roots = sorted({j.path.parent for j in ctx.jobs if is_sweep(j.path.parent)})
    out: list[dict[str, Any]] = []
    for root in roots:
        try:
            from rr.resume import status

            states = status(root)
        except Exception as err:  # the sweep's configs may no longer compose
            out.append({Sweep.folder: str(root), Sweep.error: f"{type(err).__name__}: {err}", Sweep.jobs: []})
            continue
        out.append(
            {
                Sweep.folder: str(root),
                Sweep.jobs: [
                    {
                        SweepJob.job_id: s.job_id,
                        SweepJob.state: s.state,
                        SweepJob.folder: str(s.path or ""),
                        SweepJob.detail: s.detail,
                    }
                    for s in states
                ],
            }
        )
    return out
