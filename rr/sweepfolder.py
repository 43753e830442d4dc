"""The sweep folder and a job's run records: the one place their file names and formats are defined.

A multirun (``rr -m``) puts its jobs' folders (:mod:`rr.jobfolder`) below one sweep folder, which
holds :data:`MULTIRUN_FILE` (``multirun.yaml``): Hydra's record of the latest sweep, read back as a
:class:`Sweep` (the command line's overrides and the sweeper's parameters) to re-expand its job list
(:func:`rr.resume.expected_jobs`). Two sweeps of one name share the folder, so every sweep's record
is also kept beside it as ``multirun.<hash>.yaml`` (:data:`SWEEP_RECORD`, named by its content:
never overwritten, :func:`keep_sweep_record`), and each is re-expanded: a job the first sweep asked for
stays expected after a second sweep has run.

Beside a job's own files, the ``rr`` command keeps records of how its runs went (a job of a sweep
may fail before it writes ``config.yaml``, so these are the sweep's failures too):

- :data:`FAILED` (``failed.json``) and :data:`INTERRUPTED` (``interrupted.json``): a job that stopped
  before its summary, :class:`StopMark` (``{"job_id", "message", "at"}``): the one-line error of a
  job that raised, or the signal that stopped it. At most one is there (:func:`mark_stopped`), and
  both go when the job starts again (:func:`clear_stopped`).
- :data:`COMMAND` (``command.json``): the command that makes the job, ``{"job_id", "argv", "at"}``
  (:func:`record_command`), written when it starts; every "finish it" and "re-run" hint is read
  from it (:func:`recorded_command`), not from whichever sweep ran last in the folder.
- :data:`RUNNING` (``running.json``): a run of the job going on now, :class:`RunningMark`
  (``{"job_id", "pid", "host", "at"}``), written when the command starts the job and removed when
  it ends, however it ends (a SIGKILL leaves it, naming a process that is gone).

The sweep folder also holds :data:`SCHEDULER_JOBS` (``scheduler_jobs.json``): which SLURM job runs
each of its jobs, ``{"version": 1, "jobs": {<rr job id>: <SLURM job id>}}``, written when
``hydra/launcher=slurm`` submits (:func:`record_scheduler_jobs`) and read by ``rr status``
(:func:`scheduler_jobs`) to ask the scheduler about a job that has no result yet.

Writers and readers use these names and functions; nothing else spells them.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from rr.atomic import atomic_write

MULTIRUN_FILE = "multirun.yaml"
#: Every sweep's record, kept beside the others (:func:`keep_sweep_record`): ``multirun.<hash>.yaml``.
SWEEP_RECORD = "multirun.{}.yaml"
#: The command that makes a job (:func:`record_command`).
COMMAND = "command.json"
#: Markers of a job that stopped before its summary (:class:`StopMark`).
FAILED = "failed.json"
INTERRUPTED = "interrupted.json"
#: A run of the job going on now (:class:`RunningMark`). Another run of the same job that finds it
#: naming a live process runs beside it.
RUNNING = "running.json"
#: The SLURM job of each job of the sweep (:func:`record_scheduler_jobs`).
SCHEDULER_JOBS = "scheduler_jobs.json"
SCHEDULER_JOBS_VERSION = 1


# ----------------------------------------------------------------------------- the sweep


@dataclass(frozen=True)
class Sweep:
    """A sweep folder's ``multirun.yaml``, as rr reads it.

    Attributes:
        folder: The sweep folder.
        overrides: The command line's overrides (``hydra.overrides.task``).
        sweeper_params: The sweeper's parameters (``hydra.sweeper.params``, e.g. from a
            ``sweeps/*.yaml`` file; ``None`` when it has none).
    """

    folder: Path
    overrides: list[str]
    sweeper_params: Any = None


def multirun_file(folder: str | Path) -> Path:
    """The path of the sweep record in ``folder``."""
    return Path(folder) / MULTIRUN_FILE


def is_sweep(folder: str | Path) -> bool:
    """Whether ``folder`` is a sweep folder (it holds a ``multirun.yaml``)."""
    return multirun_file(folder).exists()


def sweep_folders(root: str | Path) -> list[Path]:
    """Every sweep folder below ``root`` (``root`` included), sorted."""
    return sorted(p.parent for p in Path(root).rglob(MULTIRUN_FILE))


def keep_sweep_record(folder: str | Path, text: str) -> Path:
    """Keep the record ``text`` of a sweep of ``folder`` as ``multirun.<hash>.yaml`` (its content's
    hash: the same sweep run twice is one record, and no record is ever overwritten)."""
    from rr.hashing import content_hash

    path = Path(folder, SWEEP_RECORD.format(content_hash(text, 12)))
    if not path.exists():
        with atomic_write(path) as f:
            f.write(text)
    return path


def sweep_records(folder: str | Path) -> list[Path]:
    """Every kept record of the sweeps of ``folder``, oldest first; ``multirun.yaml`` alone for a
    folder written before records were kept."""
    kept = sorted(Path(folder).glob(SWEEP_RECORD.format("*")), key=lambda p: (p.stat().st_mtime, p.name))
    return kept or ([multirun_file(folder)] if is_sweep(folder) else [])


def read_sweep(folder: str | Path, record: Path | None = None) -> Sweep:
    """The sweep record of ``folder`` (``record``: one of :func:`sweep_records`; default its
    ``multirun.yaml``); raises what OmegaConf raises on a missing or torn file."""
    loaded = OmegaConf.load(record or multirun_file(folder))
    assert isinstance(loaded, DictConfig)
    return Sweep(
        Path(folder),
        [str(o) for o in OmegaConf.select(loaded, "hydra.overrides.task") or []],
        OmegaConf.select(loaded, "hydra.sweeper.params"),
    )


def record_scheduler_jobs(folder: str | Path, jobs: dict[str, str]) -> None:
    """Add ``{rr job id: SLURM job id}`` to the sweep folder's :data:`SCHEDULER_JOBS` (a job
    submitted again gets its new SLURM id)."""
    merged = {**scheduler_jobs(folder), **jobs}
    with atomic_write(Path(folder) / SCHEDULER_JOBS) as f:
        f.write(json.dumps({"version": SCHEDULER_JOBS_VERSION, "jobs": merged}, indent=1, sort_keys=True))


def scheduler_jobs(folder: str | Path) -> dict[str, str]:
    """The SLURM job id of each job of the sweep in ``folder`` that rr submitted (``{}``: none)."""
    record = _read_record(Path(folder) / SCHEDULER_JOBS) or {}
    jobs = record.get("jobs")
    return {str(k): str(v) for k, v in jobs.items()} if isinstance(jobs, dict) else {}


# ----------------------------------------------------------------------------- a job's run records


@dataclass(frozen=True)
class StopMark:
    """Why a job stopped before its summary (:data:`FAILED` or :data:`INTERRUPTED`).

    Attributes:
        marker: Which file: :data:`FAILED` (the job raised) or :data:`INTERRUPTED` (a signal).
        job_id: The job's id (``None``: the record lacks one).
        message: The error (one line) or the signal's name (``None``: the record lacks one).
        at: When, ``%Y-%m-%d %H:%M:%S`` local time (``None``: the record lacks it).
        cause: ``config`` when the job failed on what it was given (a setting, a path, a value:
            re-running it as it is fails the same way), ``error`` otherwise (``None``: not recorded).
    """

    marker: str
    job_id: str | None = None
    message: str | None = None
    at: str | None = None
    cause: str | None = None


@dataclass(frozen=True)
class RunningMark:
    """A run of a job by some process (:data:`RUNNING`).

    Attributes:
        job_id, pid, host, at: The job, and the process running it: its id, its machine, since when.
        alive: Whether that process runs: ``True`` (on this machine), ``False`` (gone: that run was
            killed) or ``None`` (another machine's, which cannot be checked).
    """

    job_id: str | None = None
    pid: Any = None
    host: str | None = None
    at: str | None = None
    alive: bool | None = None


def _read_record(path: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return record if isinstance(record, dict) else None


def _known(cls: type, record: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in record.items() if k in names}


def record_command(folder: str | Path, jid: str, argv: list[str]) -> None:
    """Record ``argv``, the command that makes job ``jid`` in ``folder`` (:data:`COMMAND`)."""
    record = {"job_id": jid, "argv": list(argv), "at": time.strftime("%Y-%m-%d %H:%M:%S")}
    Path(folder).mkdir(parents=True, exist_ok=True)
    with atomic_write(Path(folder) / COMMAND) as f:
        f.write(json.dumps(record, indent=1))


def recorded_command(folder: str | Path) -> list[str] | None:
    """The command recorded by :func:`record_command` in ``folder`` (``None``: none readable)."""
    record = _read_record(Path(folder, COMMAND))
    argv = record.get("argv") if record else None
    return [str(a) for a in argv] if isinstance(argv, list) else None


def mark_running(folder: str | Path, jid: str) -> None:
    """Record that this process runs job ``jid`` in ``folder`` now (:data:`RUNNING`)."""
    record = {
        "job_id": jid,
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "at": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    with atomic_write(Path(folder) / RUNNING) as f:
        f.write(json.dumps(record, indent=1))


def clear_running(folder: str | Path) -> None:
    """Remove this process's :data:`RUNNING` record (another process's, written since, stays)."""
    record = _read_record(Path(folder, RUNNING))
    if record is not None and (record.get("pid"), record.get("host")) == (os.getpid(), socket.gethostname()):
        Path(folder, RUNNING).unlink(missing_ok=True)


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    return True


def run_in_progress(folder: str | Path) -> RunningMark | None:
    """The :data:`RUNNING` record of a run of this job by another process (``alive`` checked on
    this machine); ``None`` when there is no record, or it is this process's."""
    record = _read_record(Path(folder, RUNNING))
    if record is None:
        return None
    here = record.get("host") == socket.gethostname()
    if here and record.get("pid") == os.getpid():
        return None
    return RunningMark(**_known(RunningMark, record), alive=_alive(record.get("pid")) if here else None)


def mark_stopped(folder: str | Path, jid: str, marker: str, message: str, cause: str | None = None) -> None:
    """Mark job folder ``folder`` as stopped: ``marker`` is :data:`FAILED` or :data:`INTERRUPTED`,
    ``message`` one line (the error, or which signal), ``cause`` as :attr:`StopMark.cause`. Written
    atomically; the other marker goes."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    record = {"job_id": jid, "message": message, "at": time.strftime("%Y-%m-%d %H:%M:%S")}
    if cause is not None:
        record["cause"] = cause
    with atomic_write(folder / marker) as f:
        f.write(json.dumps(record, indent=1))
    for other in (FAILED, INTERRUPTED):
        if other != marker:
            (folder / other).unlink(missing_ok=True)


def clear_stopped(folder: str | Path) -> StopMark | None:
    """Remove the stop markers of a job that starts again; return what stopped it last, or ``None``."""
    last = stopped(folder)
    for marker in (FAILED, INTERRUPTED):
        Path(folder, marker).unlink(missing_ok=True)
    return last


def stopped(folder: str | Path) -> StopMark | None:
    """The marker of a job that failed or was interrupted, or ``None``."""
    for marker in (FAILED, INTERRUPTED):
        record = _read_record(Path(folder, marker))
        if record is not None:
            return StopMark(marker, **_known(StopMark, {k: v for k, v in record.items() if k != "marker"}))
    return None


def failed_folders(root: str | Path) -> list[Path]:
    """Every folder below ``root`` marked :data:`FAILED` (a job may fail before it writes its config)."""
    return [p.parent for p in Path(root).rglob(FAILED)]
