"""Resume semantics: which jobs are done, which were cut off, which never started.

A job folder is **done** when its ``summary.json`` parses, names the folder's job id, and
``scores.parquet`` exists (``summary.json`` is written last, so its presence means the score
table is complete). It is **partial** when the folder exists (``config.yaml`` was written at
the start) but is not done: the job was killed or failed; re-running it redoes only the
model calls that are not in the generation cache. A job of a multirun is **missing** when
the sweep's job list (re-expanded from Hydra's ``multirun.yaml``) names a job id that has no
folder.

A job that stopped is **marked** (:mod:`rr.sweepfolder`): ``failed.json`` holds the one-line error
of a job that raised (``rr status`` lists it as **failed**), ``interrupted.json`` the signal that
stopped one (still partial: re-running the same command resumes it). The ``rr`` command writes
them (:func:`rr.sweepfolder.mark_stopped`) and removes them when the job starts again.

``rr status <dir>`` prints the lists; :func:`finished` is what the CLI uses to skip a
done job (``force=true`` re-runs it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from rr.config.identity import job_id
from rr.errors import UserError
from rr.jobfolder import (
    CONFIG_FILE,
    HISTORY_DIR,
    SCORES_FILE,
    SUMMARY_FILE,
    JobSummary,
    earlier_runs,
    read_config,
    read_summary,
)
from rr.model_identity import recorded_identities
from rr.sweepfolder import (
    FAILED,
    StopMark,
    failed_folders,
    is_sweep,
    read_sweep,
    recorded_command,
    run_in_progress,
    stopped,
    sweep_folders,
    sweep_records,
)


@dataclass(frozen=True)
class JobState:
    """One job of a status listing.

    Attributes:
        job_id: The job's content hash.
        state: ``done``, ``partial``, ``failed`` (its folder is marked with the error) or ``missing``.
        path: The job folder (``None`` for a missing job).
        detail: What was found (accuracy of a done job, the overrides of a missing one, ...).
        overrides: The overrides that set it apart from the other jobs of its folder (a sweep's
            jobs, or the runs of one name); :func:`status_report` fills them in.
        sweep: The sweep folder (with ``multirun.yaml``) of a missing job.
        record: The record of the sweep that asked for a missing job (one of
            :func:`rr.sweepfolder.sweep_records`): its ``rr -m`` finishes it.
    """

    job_id: str
    state: str
    path: Path | None
    detail: str = ""
    overrides: str = ""
    sweep: Path | None = None
    record: Path | None = None


def finished(output_dir: str | Path, jid: str) -> JobSummary | None:
    """The summary of a completed job ``jid`` in ``output_dir``, or ``None`` if it is not done.

    Done means: ``summary.json`` parses, its ``job_id`` is ``jid``, and ``scores.parquet`` exists.
    """
    out = Path(output_dir)
    if not (out / SCORES_FILE).is_file():
        return None
    summary = read_summary(out)
    if summary is None or summary.job_id != jid:
        return None
    return summary


def reported_models(summary: JobSummary | None) -> dict[str, str]:
    """API model -> the id its server reported, as a job's summary recorded them (its model under
    test and its other models): what its job id was computed with."""
    if summary is None:
        return {}
    idents = [summary.model, *(m.model for m in summary.other_models)]
    return {
        str(i.model_id): str(i.extra["reported_model"])
        for i in idents
        if i is not None and i.model_id and i.extra.get("reported_model")
    }


def folder_state(folder: Path) -> JobState:
    """The state of one job folder (one that holds a ``config.yaml`` written by ``run_job``, or a
    :data:`FAILED` marker of a job that failed before it wrote one)."""
    mark = stopped(folder)
    if not (folder / CONFIG_FILE).exists() and mark is not None:
        return _stopped_state(str(mark.job_id or folder.name), folder, mark)
    try:
        with recorded_identities(reported_models(read_summary(folder))):  # no request to any server
            jid = job_id(read_config(folder))
    except Exception as e:  # unreadable config: report, never hide
        return JobState(folder.name, "partial", folder, f"config.yaml unreadable: {e}")
    summary = finished(folder, jid)
    if summary is not None:
        detail = f"{summary.rows if summary.rows is not None else '?'} rows"
        labels: tuple[tuple[float | None, str], ...] = (
            (summary.accuracy, "accuracy (k > 0)"),
            (summary.closed_book_accuracy, "closed-book (k = 0)"),
        )
        if summary.accuracy_of_all_rows:  # written before the two were named apart
            labels = ((summary.accuracy, "mean score of all rows"),)
        for value, label in labels:
            if isinstance(value, float):
                detail += f", {label} {value:.3f}"
        detail += _calls_and_wall(summary)
        if earlier := earlier_runs(folder):  # force=true ran it again: the earlier runs are kept
            runs = "; ".join(_earlier_run(i, r) for i, r in enumerate(earlier, 1))
            detail += (
                f"; {len(earlier)} earlier run{'s' if len(earlier) > 1 else ''} ({HISTORY_DIR}/): {runs}"
            )
        return JobState(jid, "done", folder, detail)
    if (folder / SUMMARY_FILE).exists():
        return JobState(jid, "partial", folder, "summary.json does not match this job (or is torn)")
    if mark is not None:
        return _stopped_state(jid, folder, mark)
    run = run_in_progress(folder)
    if run is not None and run.alive:
        return JobState(jid, "partial", folder, f"running now (pid {run.pid} since {run.at})")
    if run is not None and run.alive is False:
        since = f"pid {run.pid} since {run.at}"
        detail = (
            f"its run ({since}) stopped without finishing (killed); run the same command again to resume it"
        )
        return JobState(jid, "partial", folder, detail)
    if run is not None and run.alive is None:  # another machine's process: unknowable here
        since = f"pid {run.pid} since {run.at}"
        return JobState(jid, "partial", folder, f"started on {run.host} ({since}): running there, or killed")
    return JobState(jid, "partial", folder, "started, no summary.json (killed, failed or running)")


def _calls_and_wall(summary: JobSummary) -> str:
    """``", 12 model calls, wall 3.4 s"`` from a summary (what it holds of the two)."""
    calls, wall = summary.model_calls, summary.wall_s
    return (f", {calls} model calls" if isinstance(calls, int) else "") + (
        f", wall {wall:.1f} s" if isinstance(wall, (int, float)) else ""
    )


def _earlier_run(number: int, summary: JobSummary | None) -> str:
    """``"#1 wall 3.4 s, 12 model calls"``: one earlier run of a job, from its kept summary."""
    if summary is None:
        return f"#{number} (summary unreadable)"
    calls, wall = summary.model_calls, summary.wall_s
    parts = ([f"wall {wall:.1f} s"] if isinstance(wall, (int, float)) else []) + (
        [f"{calls} model calls"] if isinstance(calls, int) else []
    )
    return " ".join([f"#{number}", ", ".join(parts)]).strip()


def _stopped_state(jid: str, folder: Path, mark: StopMark) -> JobState:
    at = f" at {mark.at}" if mark.at else ""
    message = "?" if mark.message is None else mark.message
    if mark.marker == FAILED:
        return JobState(jid, "failed", folder, f"failed{at}: {message}")
    return JobState(
        jid,
        "partial",
        folder,
        f"interrupted{at} ({message}); run the same command again to resume it",
    )


def job_folders(root: str | Path) -> list[Path]:
    """Every job folder below ``root`` (``root`` itself included): folders with a ``config.yaml``,
    or with the :data:`FAILED` marker of a job that failed before it wrote one."""
    root = Path(root)
    found = [p.parent for p in root.rglob(CONFIG_FILE)] + failed_folders(root)
    found = [p for p in found if p.name != ".hydra"]
    return sorted(set(found))


def sweep_jobs(overrides: list[str], sweeper_params: Any = None) -> list[list[str]]:
    """The override list of every job of a multirun, expanded as Hydra's basic sweeper does.

    ``sweeper_params`` (``hydra.sweeper.params``, e.g. from a ``sweeps/*.yaml`` file) come
    first, then ``overrides`` (the command line's); ``a=1,2 b=x,y`` gives four jobs.

    Written with Hydra's public override API (``Override.sweep_string_iterator``), following
    ``BasicSweeper.split_arguments`` (Hydra 1.3), which lives in Hydra's private ``_internal``:
    one list of ``key=value`` strings per key (a later override of a key replaces an earlier one in
    its first position), then their Cartesian product. ``tests/test_resume.py`` checks it against
    the job folders real multiruns write.
    """
    import itertools

    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    args = [f"{k}={v}" for k, v in (sweeper_params or {}).items()] + list(overrides)
    per_key: dict[str, list[str]] = {}
    for override in OverridesParser.create().parse_overrides(args):
        key = override.get_key_element()
        if not override.is_sweep_override():
            per_key[key] = [f"{key}={override.get_value_element_as_str()}"]
        elif override.is_discrete_sweep():
            per_key[key] = [f"{key}={value}" for value in override.sweep_string_iterator()]
        else:
            raise HydraException(f"{override.input_line}: a range/interval sweep needs another sweeper")
    return [list(job) for job in itertools.product(*per_key.values())]


def expected_jobs(
    sweep_dir: str | Path, config_dir: str | None = None, record: Path | None = None
) -> list[tuple[str, list[str]]]:
    """The (job id, overrides) of every job of the multirun whose ``multirun.yaml`` (or kept
    ``record``, :func:`rr.sweepfolder.sweep_records`) is in ``sweep_dir``.

    Re-expands the sweep exactly as Hydra's basic sweeper does (sweeper ``params`` first, then
    the command line's overrides) and composes each job's config to get its id.
    """
    from hydra import compose

    from rr.config.composition import hydra_context

    sweep = read_sweep(sweep_dir, record)
    jobs = sweep_jobs(sweep.overrides, sweep.sweeper_params)
    out = []
    with hydra_context(config_dir):
        for overrides in jobs:
            out.append((job_id(compose("config", overrides=overrides)), overrides))
    return out


@dataclass
class StatusReport:
    """What ``rr status`` found below a folder.

    Attributes:
        states: Done / partial / failed job folders, then the missing jobs of every sweep.
        unreadable: ``(multirun.yaml path, error)`` of each sweep whose job list could not be
            re-expanded (a torn file, a sweep value that no longer composes): its job folders are
            still in ``states``, its missing jobs cannot be known.
    """

    states: list[JobState]
    unreadable: list[tuple[Path, Exception]] = field(default_factory=list)


def status_report(root: str | Path, config_dir: str | None = None) -> StatusReport:
    """Done / partial / failed jobs below ``root``, plus the missing jobs of every multirun below it.

    A sweep whose ``multirun.yaml`` cannot be read or re-expanded is listed in
    :attr:`StatusReport.unreadable` instead of failing the whole listing.
    """
    root = Path(root)
    if not root.exists():
        raise UserError(
            f"no such folder: {root} (jobs are under outputs/runs/<name>/ and outputs/multirun/<name>/)"
        )
    report = StatusReport([folder_state(f) for f in job_folders(root)])
    present = {s.job_id for s in report.states}
    missing_in: dict[str, tuple[Path, list[str]]] = {}
    for sweep in sweep_folders(root):
        for record in sweep_records(sweep):  # every sweep of the folder, not only the latest
            try:
                expected = expected_jobs(sweep, config_dir, record)
            except Exception as e:  # noqa: BLE001 - reported by name; the job folders still are listed
                report.unreadable.append((record, e))
                continue
            for jid, overrides in expected:
                if jid not in present:
                    missing = JobState(jid, "missing", None, " ".join(overrides), sweep=sweep, record=record)
                    report.states.append(missing)
                    present.add(jid)
                    missing_in[jid] = (sweep, overrides)
    report.states = name_by_overrides(report.states, missing_in)
    return report


def job_overrides(folder: Path) -> list[str] | None:
    """The command-line overrides Hydra recorded for the job in ``folder`` (``.hydra/overrides.yaml``),
    or ``None`` when there is no readable record."""
    try:
        overrides = OmegaConf.load(folder / ".hydra" / "overrides.yaml")
    except Exception:  # noqa: BLE001 - absent or torn: the job is named by its id only
        return None
    return [str(o) for o in overrides] if OmegaConf.is_list(overrides) else None


def differing_overrides(jobs: list[list[str]]) -> list[list[str]]:
    """Each job's overrides less those every job of the list shares (all of them for a lone job)."""
    if len(jobs) < 2:
        return [list(j) for j in jobs]
    common = set.intersection(*(set(j) for j in jobs))
    return [[o for o in j if o not in common] for j in jobs]


def name_by_overrides(
    states: list[JobState], missing_in: dict[str, tuple[Path, list[str]]]
) -> list[JobState]:
    """``states`` with :attr:`JobState.overrides` set: per folder of jobs (a sweep, or the runs of
    one name), the overrides that differ between its jobs (a missing job: its sweep's folder and
    the overrides it would run with)."""
    from dataclasses import replace

    groups: dict[Path, list[tuple[int, list[str]]]] = {}
    for i, s in enumerate(states):
        if s.path is not None:
            found = job_overrides(s.path)
            if found is not None:
                groups.setdefault(s.path.parent, []).append((i, found))
        elif s.job_id in missing_in:
            parent, overrides = missing_in[s.job_id]
            groups.setdefault(parent, []).append((i, overrides))
    out = list(states)
    for members in groups.values():
        for (i, _), diff in zip(members, differing_overrides([o for _, o in members]), strict=True):
            out[i] = replace(out[i], overrides=" ".join(diff))
    return out


def finish_command(state: JobState) -> str:
    """The command that finishes a job that is not done, quoted for a shell: the command the job
    recorded when it started (:func:`rr.sweepfolder.recorded_command`: that job alone, in its own
    folder, through its sweep's launcher); for a job missing from a sweep, the ``rr -m ...`` of the
    sweep that asked for it (a re-run skips its done jobs and resumes the rest); for a folder written
    before jobs recorded their command, its sweep's or its own overrides; ``""`` when no record of
    the command is left."""
    import shlex

    if state.path is not None and (argv := recorded_command(state.path)) is not None:
        return shell_command(argv)
    sweep = state.sweep
    if sweep is None and state.path is not None and is_sweep(state.path.parent):
        sweep = state.path.parent
    if sweep is not None:
        try:
            task = read_sweep(sweep, state.record).overrides
        except Exception:  # noqa: BLE001 - torn: no command to offer
            return ""
        return " ".join(["rr -m", *(shlex.quote(o) for o in task)])
    found = job_overrides(state.path) if state.path is not None else None
    return "" if found is None else " ".join(["rr", *(shlex.quote(o) for o in found)])


def shell_command(argv: list[str]) -> str:
    """A recorded command as one line to paste into a shell (each argument after the program quoted)."""
    import shlex

    return " ".join(shlex.quote(a) if i else a for i, a in enumerate(argv))


def config_failure(folder: str | Path) -> bool:
    """Whether the job in ``folder`` failed on what it was given (its ``failed.json`` says
    ``cause: config``): re-running its command as it is fails the same way."""
    mark = stopped(folder)
    return mark is not None and mark.cause == "config"


def failed_on_configuration(state: JobState) -> bool:
    """:func:`config_failure` of a listed job (``False`` for one that did not fail)."""
    return state.state == "failed" and state.path is not None and config_failure(state.path)


#: What a hint says before the command of a job that failed on its configuration.
CONFIG_FAILURE = (
    "re-running it as it is will not help (it failed on its configuration): change what its error names, then"
)


def status(root: str | Path, config_dir: str | None = None) -> list[JobState]:
    """The job states of :func:`status_report` (done, partial, failed, missing)."""
    return status_report(root, config_dir).states
