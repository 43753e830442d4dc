"""What a sweep (``rr -m``) reports when it ends: one table of its jobs and an exit status.

Each job of a multirun returns a :func:`job_record`, its :class:`JobRow` (or, when it fails,
carries one on its exception as ``rr_record``); Hydra hands the launcher's ``JobReturn`` objects back to the
sweeper (:class:`hydra_plugins.rr_launchers.RRSweeper`), whatever the launcher: basic, joblib,
submitit local or SLURM. :func:`rows_from_returns` turns them into :class:`JobRow` objects,
:func:`print_sweep_table` prints them, and :class:`SweepFailed` ends the command with one line
per failed job and exit status 2.

Outcomes: ``done`` (ran to the end), ``skipped`` (already done before; nothing run),
``resumed`` (its folder held a cut-off run, e.g. a preempted SLURM job requeued: finished model
calls came from the cache), ``failed`` (raised, or its SLURM job ended without a result), and
``submitted`` (``rr -m ... --detach``: given to SLURM, not waited for; counted only when there is one).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from rr.commands.errors import user_message
from rr.errors import UserError
from rr.jobfolder import JobSummary
from rr.model_identity import recorded_identities
from rr.resume import CONFIG_FAILURE, config_failure, differing_overrides, shell_command, status_report

OUTCOMES = ("done", "skipped", "resumed", "failed")


#: Width of the tables written to a file or a pipe (a terminal's own width otherwise): wide enough
#: that a job's folder and overrides stay on one line, for grep and for tests.
PIPED_WIDTH = 400


@dataclass(frozen=True)
class JobRow:
    """One line of the sweep table.

    Attributes:
        outcome: One of :data:`OUTCOMES`.
        job: The job id, or its overrides when it failed before it had one.
        wall_s: Seconds the job ran, as its ``summary.json`` says (a skipped job: its finished run's;
            a failed one: until it failed), ``None`` when unknown.
        model_calls: Model calls this attempt made (cache hits excluded), ``None`` when unknown.
        accuracy: The job's mean score over k > 0, ``None`` when it has no such rows.
        closed_book_accuracy: Its mean score at k = 0 (closed book), ``None`` when it has none.
        folder: Its result folder (or, for a SLURM job that died, its log).
        error: Why it failed (one line), empty otherwise.
        overrides: The overrides that set it apart from the sweep's other jobs.
    """

    outcome: str
    job: str
    wall_s: float | None
    model_calls: int | None
    accuracy: float | None
    closed_book_accuracy: float | None
    folder: str
    error: str = ""
    overrides: str = ""


def job_record(outcome: str, job_id: str, folder: str, summary: JobSummary | None, wall_s: float) -> JobRow:
    """What one job returns to the sweep (its line of the sweep table, without the overrides that
    only the sweep knows): its outcome, wall time, model calls, its accuracy over k > 0 and its
    closed-book (k = 0) accuracy as ``summary.json`` names them, folder.

    The wall time is the summary's ``wall_s`` (the job's own clock, what ``rr status`` shows), one
    number wherever the job is listed; ``wall_s`` (the command's clock) only for a job without one.
    """
    summary = summary or JobSummary.from_dict({})
    wall = summary.wall_s
    return JobRow(
        outcome,
        job_id,
        # the summary's number as it is (rounding it here, then again for display, could show
        # 0.1 where rr status shows 0.2); the command's own clock to the centisecond
        wall if isinstance(wall, int | float) else round(wall_s, 2),
        summary.model_calls,
        summary.accuracy,
        summary.closed_book_accuracy,
        str(folder),
    )


def _error_line(error: BaseException) -> str:
    message = user_message(error) if isinstance(error, Exception) else None
    if message is None:
        message = f"{type(error).__name__}: {error}"
    return " ".join(message.split())


def rows_from_returns(returns: list[Any]) -> list[JobRow]:
    """One :class:`JobRow` per Hydra ``JobReturn`` (in launch order)."""
    from hydra.core.utils import JobStatus

    rows = []
    lists = [list(ret.overrides or []) for ret in returns]
    for ret, job_overrides, apart in zip(returns, lists, differing_overrides(lists), strict=True):
        value = ret._return_value  # the public property re-raises a failure; we report it instead
        # every job is named by what sets it apart from the sweep's other jobs (and by its id)
        overrides = " ".join(apart) or " ".join(job_overrides)
        folder = str(getattr(ret, "working_dir", "") or "")
        if ret.status == JobStatus.COMPLETED:
            rec = value if isinstance(value, JobRow) else JobRow("done", "", None, None, None, None, "")
            rows.append(
                replace(rec, job=rec.job or overrides, folder=rec.folder or folder, overrides=overrides)
            )
            continue
        failed: JobRow | None = getattr(value, "rr_record", None)
        rows.append(
            JobRow(
                "failed",
                (failed.job if failed else "") or overrides,
                failed.wall_s if failed else None,
                failed.model_calls if failed else None,
                None,
                None,
                (failed.folder if failed else "") or getattr(value, "log", None) or folder,
                _error_line(value) if isinstance(value, BaseException) else str(value),
                overrides,
            )
        )
    return rows


def print_sweep_table(rows: list[JobRow], title: str, file: TextIO | None = None) -> None:
    """Print the sweep table and a count per outcome (``2 done, 1 skipped, 0 resumed, 1 failed``)."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    file = file or sys.stdout
    table = Table(title=escape(title))
    for col in (
        "job",
        "overrides",
        "outcome",
        "wall s",
        "model calls",
        "accuracy (k > 0)",
        "closed-book (k = 0)",
        "folder",
    ):
        table.add_column(col, overflow="fold")

    def fmt(value: Any, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    for r in rows:
        table.add_row(
            *(
                escape(c)
                for c in (
                    r.job,
                    r.overrides if r.overrides != r.job else "",
                    r.outcome,
                    fmt(r.wall_s, ".1f"),
                    fmt(r.model_calls, "d"),
                    fmt(r.accuracy, ".3f"),
                    fmt(r.closed_book_accuracy, ".3f"),
                    r.folder,
                )
            )
        )
    console = Console(file=file, width=None if file.isatty() else PIPED_WIDTH)
    console.print(table)
    counted = [*OUTCOMES, *(["submitted"] if any(r.outcome == "submitted" for r in rows) else [])]
    console.print(", ".join(f"{sum(r.outcome == o for r in rows)} {o}" for o in counted))


def rerun_hint(folder: str | Path | None) -> str:
    """``; re-run: <the command the job recorded>`` (:func:`rr.sweepfolder.recorded_command`), said
    as :data:`rr.resume.CONFIG_FAILURE` for a job that failed on its configuration; ``""`` without one."""
    from rr.sweepfolder import recorded_command

    argv = recorded_command(folder) if folder else None
    if not folder or not argv:
        return ""
    return f"; {CONFIG_FAILURE if config_failure(folder) else 're-run'}: {shell_command(argv)}"


class SweepFailed(UserError):
    """Some jobs of a sweep failed: one line per failed job (job, what happened, its re-run command)."""

    lines = True

    def __init__(self, rows: list[JobRow], total: int) -> None:
        failed = [r for r in rows if r.outcome == "failed"]
        lines = [f"  {r.job}: {r.error}{rerun_hint(r.folder)}" for r in failed]
        super().__init__("\n".join([f"{len(failed)} of {total} jobs failed:", *lines]))
        self.rows = failed


@recorded_identities()  # reads jobs: asks no API server who its model is (issue 52)
def status_main(argv: list[str]) -> int:
    """``rr status [DIR]``: list done / partial / failed / missing jobs below DIR (default ``outputs``).

    Exit status 1 when a job failed, each with the command that re-runs it (``--ok-if-failed``:
    0); a sweep whose ``multirun.yaml`` cannot be read or re-expanded is named on stderr, its job
    folders still listed."""
    import argparse

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    ap = argparse.ArgumentParser(prog="rr status", description=status_main.__doc__)
    ap.add_argument("dir", nargs="?", default="outputs", help="a job, sweep, runs or outputs folder")
    ap.add_argument(
        "--config-dir",
        default=None,
        help="config folder to re-expand sweeps with (default: rr's own, or RR_CONFIG_DIR)",
    )
    ap.add_argument(
        "--ok-if-failed", action="store_true", help="exit 0 even when jobs failed (default: exit 1)"
    )
    a = ap.parse_args(argv)
    from rr.commands.slurm import scheduler_states

    report = status_report(a.dir, a.config_dir)
    states = scheduler_states(report.states)  # pending / running / failed, where SLURM knows the job
    unreadable = [
        f"could not read {path} ({_error_line(error)}): its job folders are listed, the jobs of that "
        "sweep that have no folder yet (missing) cannot be"
        for path, error in report.unreadable
    ]
    if not states and unreadable:
        raise UserError("; ".join(unreadable))
    if not states:
        raise UserError(
            f"no job below {a.dir} (no folder with a config.yaml, no multirun.yaml); a job writes "
            "its folder when it starts, under paths.output_root (outputs/runs/<name>/, outputs/multirun/<name>/)"
        )
    order = {"done": 0, "running": 1, "pending": 2, "partial": 3, "failed": 4, "missing": 5}
    states.sort(key=lambda s: (order[s.state], str(s.path or ""), s.job_id))
    table = Table(title=escape(f"rr status {a.dir}"))  # user text is not rich markup
    for col in ("state", "job id", "overrides", "folder", "detail"):
        table.add_column(col, overflow="fold")
    for s in states:
        cells = (s.state, s.job_id, s.overrides, str(s.path) if s.path else "-", s.detail)
        table.add_row(*(escape(c) for c in cells))
    console = Console(width=None if Console().is_terminal else PIPED_WIDTH)
    console.print(table)
    counts = {k: sum(s.state == k for s in states) for k in order}
    console.print(
        ", ".join(f"{n} {k}" for k, n in counts.items() if k not in ("failed", "running", "pending") or n)
    )
    for line in unreadable:
        print(f"rr status: {line}", file=sys.stderr)
    failed = [s for s in states if s.state == "failed"]
    for s in failed:
        print(
            f"rr status: failed {s.job_id} ({s.path}){rerun_hint(s.path) or ' (no re-run command recorded)'}",
            file=sys.stderr,
        )
    return 1 if failed and not a.ok_if_failed else 0
