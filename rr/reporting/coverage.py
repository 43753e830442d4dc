"""What a report leaves out: the jobs below its folders that are not finished.

A report reads finished jobs only (a ``scores.parquet`` is written when a job ends). The folders it
was given can also hold jobs that were interrupted, failed or never started (a sweep's jobs that
have no folder): :func:`coverage` finds them with the same rules as ``rr status``
(:func:`rr.resume.status_report`) and gives each the command that finishes it
(:func:`rr.resume.finish_command`), for the console, ``README.md`` and the site's overview.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rr.resume import CONFIG_FAILURE, JobState, failed_on_configuration, finish_command, status_report


@dataclass(frozen=True)
class LeftOut:
    """A job below the report's folders that is not in the report.

    Attributes:
        state: Its ``rr status`` state (``partial``, ``failed`` or ``missing``), folder and detail.
        command: The command that finishes it (``""`` when no record of it is left).
    """

    state: JobState
    command: str


@dataclass
class Coverage:
    """The jobs below a report's folders: how many, and those not finished.

    Attributes:
        jobs: Jobs found below the folders, finished or not.
        left_out: The unfinished ones, in ``rr status`` order (partial, failed, missing).
        unreadable: One line per sweep whose job list could not be read (its missing jobs are unknown).
    """

    jobs: int = 0
    left_out: list[LeftOut] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)

    def headline(self) -> str:
        """``3 of 4 jobs below the report's folders are not in this report (not finished)``, or ``""``."""
        if not self.left_out:
            return ""
        return (
            f"{len(self.left_out)} of {self.jobs} jobs below the report's folders are not in this report "
            "(not finished)"
        )

    def lines(self) -> list[str]:
        """One line per job left out: state, id, folder, what happened, the command that finishes it."""
        out = []
        for item in self.left_out:
            s = item.state
            where = str(s.path) if s.path is not None else f"no folder (sweep {s.sweep})" if s.sweep else "-"
            finish = f"; finish it: {item.command}" if item.command else ""
            if item.command and failed_on_configuration(s):
                finish = f"; {CONFIG_FAILURE}: {item.command}"
            out.append(f"{s.state} {s.job_id} {where}: {s.detail or s.overrides}{finish}")
        return out


def coverage(paths: str | Path | Sequence[str | Path], read: Sequence[Path] = ()) -> Coverage:
    """The jobs below every folder among ``paths`` (files and globs are read as they are) and
    those of them that are not finished; the folders of ``read`` (the jobs the report read)
    count as in the report whatever their state."""
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    out = Coverage()
    held = {Path(p).resolve() for p in read}
    seen: set[str] = set()
    order = {"partial": 0, "failed": 1, "missing": 2}
    left: list[LeftOut] = []
    for item in items:
        if not Path(item).is_dir():
            continue
        report = status_report(item)
        out.unreadable += [
            f"could not read {p} ({e}): its missing jobs are unknown" for p, e in report.unreadable
        ]
        for s in report.states:
            inside = s.path is not None and s.path.resolve() in held
            if s.job_id in seen and not inside:
                continue
            seen.add(s.job_id)
            out.jobs += 1
            if s.state != "done" and not inside:
                left.append(LeftOut(s, finish_command(s)))
    out.left_out = sorted(
        left, key=lambda x: (order.get(x.state.state, 3), str(x.state.path or ""), x.state.job_id)
    )
    return out
