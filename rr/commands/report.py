"""``rr report``: build a report folder from any number of jobs and sweeps."""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rr.errors import UserError
from rr.model_identity import recorded_identities


def default_out(paths: list[str]) -> Path:
    """``<dir>/report`` for a single job or sweep folder, else ``outputs/report``."""
    if len(paths) == 1 and Path(paths[0]).is_dir():
        return Path(paths[0]) / "report"
    return Path("outputs") / "report"


@contextmanager
def _report_folder_errors(out: Path) -> Iterator[None]:
    """An :class:`OSError` writing in the report folder ``out`` becomes a user error naming ``--out``
    (the option that moves it; the job's ``paths.*`` settings have nothing to do with it)."""
    try:
        yield
    except OSError as e:
        where = Path(e.filename) if e.filename is not None else None
        if where is None or not (where == out or out in where.parents):
            raise
        raise UserError(
            f"cannot write the report folder {out} ({e.strerror}: {where}); write the report elsewhere "
            "with --out DIR"
        ) from e


@recorded_identities()  # reads jobs: asks no API server who its model is (issue 52)
def main(argv: list[str]) -> int:
    """Parse ``rr report`` arguments, build the report, print where it is; return the exit code."""
    import matplotlib

    matplotlib.use("Agg")
    from rr.reporting.coverage import coverage
    from rr.reporting.loading import environments_note
    from rr.reporting.registry import sections
    from rr.reporting.report import build_report

    p = argparse.ArgumentParser(
        prog="rr report",
        description="Aggregate jobs (job folders, sweep folders, scores.parquet files or globs) into a "
        "report folder: tables (CSV, Markdown, LaTeX) with bootstrap intervals and figures (PNG, PDF).",
    )
    p.add_argument("paths", nargs="*", help="job folder, sweep folder, scores.parquet or glob")
    p.add_argument("--out", type=Path, default=None, help="report folder (default: <folder>/report)")
    p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (default 1000)")
    p.add_argument("--confidence", type=float, default=0.95, help="interval level (default 0.95)")
    p.add_argument("--seed", type=int, default=0, help="seed of every resampling (default 0)")
    p.add_argument("--only", nargs="*", default=None, help="run only these sections")
    p.add_argument("--list-sections", action="store_true", help="list the sections and exit")
    p.add_argument(
        "--no-site",
        action="store_true",
        help="do not write the result browser (<out>/site/index.html: overview, examples, flips)",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="exit with status 1 when a job below the folders is not finished (interrupted, failed or "
        "never started), besides when a section failed",
    )
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if args.list_sections:
        for s in sections():
            print(f"{s.name:28s} {s.title}")
        return 0
    if not args.paths:
        p.error("give at least one job folder, sweep folder, scores.parquet or glob")
    out = args.out or default_out(args.paths)
    if args.strict and (unfinished := coverage(args.paths)).left_out:
        # Said before the minutes of writing the report and its site, not only after them.
        print(
            f"rr report --strict: {unfinished.headline()}; the report is written without them, then rr "
            "exits with status 1",
            flush=True,
        )
    created = not out.exists()
    try:
        with _report_folder_errors(out):
            out.mkdir(parents=True, exist_ok=True)  # fail before loading anything if it cannot be written
            with tempfile.TemporaryFile(dir=out):
                pass
            report = build_report(
                args.paths,
                out,
                n_resamples=args.resamples,
                confidence=args.confidence,
                seed=args.seed,
                only=args.only,
            )
    except Exception:  # e.g. an unknown --only section: no empty report folder left behind
        if created and out.is_dir() and not any(out.iterdir()):
            out.rmdir()
        raise
    n_tables = sum(1 for f in report.files if f.suffix == ".csv")
    n_figs = sum(1 for f in report.files if f.suffix == ".png")
    print(f"report: {out}/README.md ({n_tables} tables, {n_figs} figures)")
    if report.context is not None and (note := environments_note(report.context)):
        print(f"  note: {note}")
    if not args.no_site:
        from rr.reporting.site import build_site

        with _report_folder_errors(out):
            site = build_site(report, out / "site")
        print(
            f"site: {site.out_dir}/index.html ({site.examples} examples, {site.list_rows} example x system "
            f"rows, {site.passages} passages, {site.bytes / 2**20:.1f} MiB, {site.seconds:.1f} s; opens "
            "offline, from file://)"
        )
        for note in site.notes:
            print(f"  site: {note}")
    from rr.reporting.paper_beside import console_lines

    for line in console_lines(report.outcomes):
        print(line)
    jobs = report.context.jobs if report.context is not None else []
    for note in report.context.notes if report.context is not None else []:
        print(f"  examples: {note}")
    short = [c for job in jobs for c in job.summary.cells_short_of_k]
    if short:
        print(
            f"  {len(short)} cell(s) hold fewer documents than their k (the retriever returned fewer); "
            f"{out}/README.md names them"
        )
    cut = sum(len(job.summary.cells_cut_to_window) for job in jobs)
    if cut:
        print(
            f"  {cut} cell(s) not filled at their k (documents cut to fit the window); {out}/README.md names them"
        )
    for o in report.outcomes:
        if o.skipped:
            print(f"  skipped {o.section.name}: {o.skipped}")
    for o in report.failed:
        print(f"  FAILED {o.section.name}: {o.error}")
    cov = report.coverage
    if cov is not None and (cov.left_out or cov.unreadable):
        if cov.left_out:
            print(f"{cov.headline()}:")
        for line in [*cov.lines(), *cov.unreadable]:
            print(f"  {line}")
    if args.strict and cov is not None and cov.left_out:
        print(f"rr report --strict: {cov.headline()}", file=sys.stderr)
        return 1
    return 1 if report.failed else 0
