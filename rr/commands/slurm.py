"""Waiting on a sweep's SLURM jobs, and saying why SLURM refused or lost one.

``hydra/launcher=slurm`` (and ``slurm_cpu``) submit a sweep as one job array through submitit
(:class:`hydra_plugins.rr_launchers.RRSlurmLauncher`). Two things submitit alone does not do:

* **Notice a dead job in bounded time.** submitit learns job states from ``sacct``; on a
  cluster without job accounting it never learns that a cancelled job is gone, and waits for
  its result forever. :func:`wait_for_jobs` instead asks ``squeue`` (which every cluster
  answers) every ``poll_s`` seconds: a job that has left the queue without writing its result
  for ``grace_s`` seconds is dead. Its final state comes from ``sacct`` when there is
  accounting, else from ``scontrol show job`` (kept ``MinJobAge`` seconds), else ``UNKNOWN`` (an
  array task cancelled while pending leaves no record of its own).
  A requeued job (preempted, timed out, ``scontrol requeue``) stays in the queue, so it is
  waited for.
* **Name the setting behind an sbatch rejection** (:func:`rejection_message`).
* **Tell ``rr status`` what the scheduler says** of a job without a result (:func:`scheduler_states`;
  the launcher submits only what is not done and records which SLURM job runs which rr job).

It asks ``squeue --me`` (this user's jobs only), every ``hydra.launcher.poll_s`` seconds (30).
"""

from __future__ import annotations

import dataclasses
import subprocess
import time
from collections.abc import Sequence
from typing import Any

from rr.errors import UserError

#: sbatch's messages -> the launcher setting to change.
_REJECTIONS: tuple[tuple[str, str], ...] = (
    (
        "invalid generic resource",
        "hydra.launcher.gpus_per_node (or gres): this cluster has no such GPUs; "
        "use hydra/launcher=slurm_cpu or hydra.launcher.gpus_per_node=0",
    ),
    ("invalid partition", "hydra.launcher.partition"),
    ("more processors requested than permitted", "hydra.launcher.cpus_per_task (more than a node has)"),
    ("memory required by task is not available", "hydra.launcher.mem_gb (more than a node has)"),
    (
        "requested node configuration is not available",
        "hydra.launcher.cpus_per_task / mem_gb / gpus_per_node",
    ),
    ("requested time limit is invalid", "hydra.launcher.timeout_min (above the partition's limit)"),
    ("invalid account", "hydra.launcher.account"),
    ("invalid qos", "hydra.launcher.qos"),
    ("node count specification invalid", "hydra.launcher.nodes"),
)


class SlurmRejected(UserError):
    """sbatch refused the sweep's job array."""


class SlurmJobDied(UserError):
    """A SLURM job ended without writing its result (cancelled, killed, node failure, ...).

    Attributes:
        job_id: SLURM's id of the array task (``"12_1"``).
        state: Its final state (``CANCELLED``, ``TIMEOUT``, ``OUT_OF_MEMORY``, ``UNKNOWN``...).
        log: The job's stderr log.
    """

    def __init__(self, job_id: str, state: str, log: str) -> None:
        super().__init__(f"SLURM job {job_id} ended {state} without a result; its log: {log}")
        self.job_id, self.state, self.log = job_id, state, log

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.job_id, self.state, self.log), self.__dict__)


def rejection_message(sbatch_error: str) -> str:
    """One line for an sbatch rejection: sbatch's own reason and the setting to change."""
    lines = [line.strip() for line in sbatch_error.splitlines() if line.strip()]
    reasons = [line for line in lines if "error" in line.lower()] or lines or ["(no message)"]
    reason = reasons[-1].removeprefix("sbatch: error: ")
    text = sbatch_error.lower()
    setting = next((s for phrase, s in _REJECTIONS if phrase in text), "the hydra.launcher.* settings")
    return f"sbatch rejected the sweep's jobs: {reason}; change {setting}"


#: Launcher settings given for the launcher's ``gpus_per_node`` GPUs, scaled with a job's own count.
PER_GPU = ("cpus_per_task", "mem_gb")


def shaped_params(params: dict[str, Any], gpus: int | None) -> dict[str, Any]:
    """The launcher's settings for a job that needs ``gpus`` GPUs (its ``resources.gpus``).

    On a launcher that requests GPUs (``gpus_per_node`` > 0), ``gpus_per_node`` becomes ``gpus``
    and :data:`PER_GPU` settings scale with it (``slurm``'s 8 CPUs and 64 GB for one GPU: 32 and
    256 for four). ``gpus`` of ``None``, or a launcher that requests none (``slurm_cpu``), leaves
    them as they are.
    """
    base = params.get("gpus_per_node") or 0
    if gpus is None or base <= 0 or gpus == base:
        return dict(params)
    out = {**params, "gpus_per_node": gpus}
    for key in PER_GPU if gpus > 0 else ():
        if isinstance(params.get(key), int):
            out[key] = -(-params[key] * gpus // base)  # rounded up
    return out


def _run(cmd: list[str]) -> str | None:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def queued_jobs() -> set[str] | None:
    """Ids of the jobs SLURM still holds (pending, running, requeued...), one per array task;
    ``None`` when ``squeue`` does not answer."""
    states = queue_states()
    return None if states is None else set(states)


def queue_states() -> dict[str, str] | None:
    """``{job id: state}`` (``PENDING``, ``RUNNING``, ...) of this user's jobs in the queue, one per
    array task; ``None`` when ``squeue`` does not answer."""
    out = _run(["squeue", "--noheader", "--array", "--me", "--format=%i|%T"])
    if out is None:
        return None
    pairs = (line.strip().partition("|") for line in out.splitlines() if line.strip())
    return {job: state for job, _, state in pairs}


def final_state(job_id: str) -> str:
    """The state a finished job ended in: from ``sacct``, else ``scontrol``, else ``UNKNOWN``."""
    out = _run(["sacct", "--noheader", "--parsable2", "--allocations", "--format=State", "-j", job_id])
    if out and out.strip():
        return out.split()[0]
    out = _run(["scontrol", "show", "job", job_id])
    if out and "JobState=" in out:
        return out.split("JobState=")[1].split()[0]
    return "UNKNOWN (no record in sacct or scontrol: cancelled before it started?)"


def scheduler_states(states: list[Any]) -> list[Any]:
    """``rr status``'s job states with what SLURM says of each job that has no result yet: a
    ``missing`` or ``partial`` job rr submitted (:func:`rr.sweepfolder.scheduler_jobs`) is ``pending``
    or ``running`` while ``squeue`` lists it, and ``failed`` when ``sacct`` says it ended so
    (``FAILED``, ``CANCELLED``, ``TIMEOUT``, ``OUT_OF_MEMORY``, ``NODE_FAIL``...). Where there is
    no ``squeue`` (not a SLURM machine) the states are as they were."""
    from rr.sweepfolder import scheduler_jobs

    ids: dict[int, str] = {}
    for n, s in enumerate(states):
        if s.state not in ("missing", "partial"):
            continue
        sweep = s.sweep or (s.path.parent if s.path is not None else None)
        slurm_id = scheduler_jobs(sweep).get(s.job_id) if sweep is not None else None
        if slurm_id:
            ids[n] = slurm_id
    queue = queue_states() if ids else None
    if queue is None:
        return states
    out = list(states)
    for n, slurm_id in ids.items():
        queued = queue.get(slurm_id)
        if queued in ("PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"):
            new, detail = "pending", f"SLURM job {slurm_id} {queued}"
        elif queued is not None:
            new, detail = "running", f"SLURM job {slurm_id} {queued}"
        else:
            ended = final_state(slurm_id)
            if ended.split()[0] in ("COMPLETED", "UNKNOWN"):
                continue
            new, detail = "failed", f"SLURM job {slurm_id} ended {ended}"
        out[n] = dataclasses.replace(
            states[n], state=new, detail=f"{detail}; {states[n].detail}".rstrip("; ")
        )
    return out


def wait_for_jobs(
    jobs: Sequence[Any], job_overrides: Sequence[Sequence[str]], poll_s: float = 30.0, grace_s: float = 15.0
) -> list[Any]:
    """Wait for every submitit job; one Hydra ``JobReturn`` each, failed ones included.

    Args:
        jobs: submitit ``Job`` objects (one per array task), as ``map_array`` returns them.
        job_overrides: Each job's overrides (named in the returns of dead jobs).
        poll_s: Seconds between two looks at the queue.
        grace_s: Seconds a job may be out of the queue without a result before it counts as
            dead (the result file may reach a shared filesystem a little after the job ends).

    Returns:
        The job's own ``JobReturn`` when it wrote a result; a failed one holding
        :class:`SlurmJobDied` when it died without one, or submitit's error when the job
        itself crashed outside rr (e.g. it could not unpickle its task).
    """
    from hydra.core.utils import JobReturn, JobStatus

    results: list[Any] = [None] * len(jobs)
    pending = dict(enumerate(jobs))
    gone_since: dict[int, float] = {}
    while pending:
        queue = queued_jobs()
        for i, job in list(pending.items()):
            if job.paths.result_pickle.exists():
                try:
                    results[i] = job.results()[0]
                except Exception as e:  # the task crashed outside rr's own job function
                    results[i] = JobReturn(overrides=list(job_overrides[i]), status=JobStatus.FAILED)
                    results[i]._return_value = e
                del pending[i]
                continue
            if queue is None or str(job.job_id) in queue:
                gone_since.pop(i, None)
                continue
            if time.monotonic() - gone_since.setdefault(i, time.monotonic()) < grace_s:
                continue
            if job.paths.result_pickle.exists():  # finished just now
                continue
            died = SlurmJobDied(str(job.job_id), final_state(str(job.job_id)), str(job.paths.stderr))
            results[i] = JobReturn(overrides=list(job_overrides[i]), status=JobStatus.FAILED)
            results[i]._return_value = died
            del pending[i]
        if pending:
            time.sleep(poll_s)
    return results
