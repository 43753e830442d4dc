"""rr's Hydra sweeper and SLURM launcher: a sweep that reports its jobs and fails loudly.

* :class:`RRSweeper` (``hydra/sweeper=rr``, rr's default) expands and launches jobs exactly as
  Hydra's basic sweeper does, then prints one table of the sweep's jobs (done / skipped /
  resumed / failed, wall time, model calls, accuracy, folder; :mod:`rr.commands.status`) whatever
  the launcher, and ends the command with exit status 2 and one line per failed job. Hydra's
  own sweeper stops at the first failed job's traceback and exits 1.
* :class:`RRSlurmLauncher` (``hydra/launcher=slurm`` and ``slurm_cpu``) is hydra-submitit-launcher's
  ``SlurmLauncher`` that submits only the jobs not done yet (a finished sweep submits nothing),
  one array per GPU count (``resources.gpus``), with ``--requeue``; waits on them with
  :func:`rr.commands.slurm.wait_for_jobs` (``squeue --me`` every ``poll_s`` seconds: a dead job is
  noticed with or without job accounting), or returns at once (``detach``: ``rr -m ... --detach``);
  and turns an sbatch rejection into one line naming the setting to change.

Hydra instantiates sweepers and launchers only from the ``hydra_plugins`` package, hence here.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Sequence
from dataclasses import field, make_dataclass
from pathlib import Path
from typing import Any

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.utils import JobReturn
from omegaconf import OmegaConf

log = logging.getLogger(__name__)


class RRSweeper(BasicSweeper):
    """Hydra's basic sweeper (same jobs, same order, same ``multirun.yaml``) that reports.

    Unlike Hydra's, it composes every job before it writes anything, and replaces ``multirun.yaml``
    atomically: a sweep that fails to compose leaves the sweep folder byte for byte as it was.
    """

    def sweep(self, arguments: list[str]) -> Any:
        from rr.atomic import atomic_write
        from rr.commands.status import SweepFailed, print_sweep_table, rows_from_returns
        from rr.sweepfolder import keep_sweep_record

        assert self.config is not None and self.launcher is not None and self.hydra_context is not None
        params_conf = self._parse_config()
        params_conf.extend(arguments)
        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        self.overrides = self.split_arguments(parser.parse_overrides(params_conf), self.max_batch_size)
        # Every job composes before anything is written (Hydra's sweeper writes multirun.yaml first
        # and validates batch by batch): a typo in a sweep value leaves an earlier sweep's folder as it was.
        for batch in self.overrides:
            self.validate_batch_is_legal(batch)
        sweep_dir = Path(self.config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        record = OmegaConf.to_yaml(self.config)
        keep_sweep_record(sweep_dir, record)  # every sweep's record kept; multirun.yaml is the latest
        with atomic_write(sweep_dir / "multirun.yaml") as f:  # a reader sees the old file or the new one
            f.write(record)
        returns: list[Sequence[JobReturn]] = []
        initial_job_idx = 0
        while not self.is_done():
            batch = self.get_job_batch()
            returns.append(self.launcher.launch(batch, initial_job_idx=initial_job_idx))
            initial_job_idx += len(batch)
        rows = rows_from_returns([r for batch in returns for r in batch])
        print_sweep_table(rows, f"rr -m: {len(rows)} jobs in {sweep_dir}")
        if any(r.outcome == "failed" for r in rows):
            raise SweepFailed(rows, len(rows))
        return returns


try:
    from hydra_plugins.hydra_submitit_launcher.config import SlurmQueueConf
    from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher
except ImportError:  # the submitit extra is not installed: hydra/launcher=slurm is unavailable
    SlurmLauncher = None


def done_return(job_cfg: Any, overrides: Sequence[str]) -> Any:
    """A ``skipped`` Hydra ``JobReturn`` for a job whose folder holds its finished run (what the job
    itself would return: not submitted, so it takes no allocation), or ``None`` to submit it
    (not done, or ``force=true``)."""
    from hydra.core.utils import JobStatus

    from rr.commands.status import job_record
    from rr.config.identity import job_id
    from rr.resume import finished

    if OmegaConf.select(job_cfg, "force"):
        return None
    jid = job_id(job_cfg)
    folder = Path(str(job_cfg.hydra.sweep.dir)) / str(job_cfg.hydra.sweep.subdir)
    done = finished(folder, jid)
    if done is None:
        return None
    ret = JobReturn(overrides=list(overrides), status=JobStatus.COMPLETED, working_dir=str(folder))
    ret._return_value = job_record("skipped", jid, str(folder), dataclasses.replace(done, model_calls=0), 0.0)
    return ret


def record_submitted(
    jobs: Sequence[Any], job_cfgs: Sequence[Any], job_overrides: Sequence[Sequence[str]], sweep_dir: Path
) -> list[Any]:
    """Record each submitted job's SLURM id in the sweep folder (:func:`rr.sweepfolder.record_scheduler_jobs`);
    return a ``submitted`` Hydra ``JobReturn`` for each (what ``rr -m --detach`` reports)."""
    from hydra.core.utils import JobStatus

    from rr.commands.status import job_record
    from rr.config.identity import job_id
    from rr.sweepfolder import record_scheduler_jobs

    ids = [job_id(cfg) for cfg in job_cfgs]
    record_scheduler_jobs(sweep_dir, {jid: str(job.job_id) for jid, job in zip(ids, jobs, strict=True)})
    returns = []
    for jid, cfg, overrides in zip(ids, job_cfgs, job_overrides, strict=True):
        folder = Path(str(cfg.hydra.sweep.dir)) / str(cfg.hydra.sweep.subdir)
        ret = JobReturn(overrides=list(overrides), status=JobStatus.COMPLETED, working_dir=str(folder))
        ret._return_value = job_record("submitted", jid, str(folder), None, 0.0)
        returns.append(ret)
    return returns


#: rr's own launcher settings, taken out before the rest go to submitit.
RR_KEYS = ("poll_s", "requeue", "detach")

if SlurmLauncher is not None:
    from hydra.core.config_store import ConfigStore

    # hydra/launcher=slurm's schema: submitit's settings and rr's (RR_KEYS): poll_s, seconds between
    # two looks at the queue (squeue --me) while rr waits; requeue, submit with --requeue (SLURM
    # requeues a job whose node fails or that is preempted; the re-run resumes from the cache);
    # detach, submit and return (rr -m ... --detach). Made with make_dataclass: Hydra's plugin scan
    # runs this module outside sys.modules, where @dataclass cannot read string annotations.
    RRSlurmQueueConf = make_dataclass(
        "RRSlurmQueueConf",
        [
            ("_target_", str, field(default="hydra_plugins.rr_launchers.RRSlurmLauncher")),
            ("poll_s", float, field(default=30.0)),
            ("requeue", bool, field(default=True)),
            ("detach", bool, field(default=False)),
        ],
        bases=(SlurmQueueConf,),
    )
    ConfigStore.instance().store(
        group="hydra/launcher", name="slurm_schema", node=RRSlurmQueueConf, provider="rr"
    )

    class RRSlurmLauncher(SlurmLauncher):  # type: ignore[misc,valid-type]
        """hydra-submitit-launcher's ``SlurmLauncher`` that submits what is not done, one array per
        resource shape (jobs whose ``resources.gpus`` differ, :func:`rr.commands.slurm.shaped_params`),
        waits in bounded time or not at all, and rejects in one line."""

        def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
            # hydra-submitit-launcher 1.2's BaseSubmititLauncher.launch, except what it submits (jobs
            # not done yet, one array per resource shape, --requeue), how (an sbatch rejection
            # becomes SlurmRejected) and how it waits (rr.commands.slurm.wait_for_jobs instead of
            # job.results(), which waits forever on a dead job without accounting; detach: not at all).
            import submitit
            from hydra.core.singleton import Singleton
            from hydra.core.utils import filter_overrides
            from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf
            from submitit.core.utils import FailedJobError

            from rr.commands.slurm import SlurmRejected, rejection_message, shaped_params, wait_for_jobs

            assert self.config is not None and self.hydra_context is not None
            own = {k: self.params.get(k) for k in RR_KEYS}
            log.info(f"Submitit '{self._EXECUTOR}' sweep output dir : {self.config.hydra.sweep.dir}")
            sweep_dir = Path(str(self.config.hydra.sweep.dir))
            sweep_dir.mkdir(parents=True, exist_ok=True)
            if "mode" in self.config.hydra.sweep:
                os.chmod(sweep_dir, mode=int(str(self.config.hydra.sweep.mode), 8))
            returns: list[Any] = [None] * len(job_overrides)
            shapes: dict[int | None, list[int]] = {}
            job_params: list[Any] = []
            job_cfgs: list[Any] = []
            for i, overrides in enumerate(job_overrides):
                idx = initial_job_idx + i
                job_cfg = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
                job_cfgs.append(job_cfg)
                job_params.append(
                    (list(overrides), "hydra.sweep.dir", idx, f"job_id_for_{idx}", Singleton.get_state())
                )
                returns[i] = done_return(job_cfg, overrides)
                if returns[i] is None:  # not done: submitted
                    log.info(f"\t#{idx} : {' '.join(filter_overrides(overrides))}")
                    shapes.setdefault(OmegaConf.select(job_cfg, "resources.gpus"), []).append(i)
            if len(job_overrides) > sum(len(m) for m in shapes.values()):
                log.info(
                    f"{len(job_overrides) - sum(len(m) for m in shapes.values())} of {len(job_overrides)} "
                    "jobs are done already: not submitted (force=true runs them again)"
                )
            specific_init_keys = {"max_num_timeout"}
            init_keys = specific_init_keys | {"submitit_folder"} | set(RR_KEYS)
            baseparams = set(OmegaConf.structured(BaseQueueConf).keys())
            jobs: dict[int, Any] = {}
            for gpus, members in shapes.items():
                params = shaped_params(self.params, gpus)
                if own["requeue"]:
                    params["additional_parameters"] = {
                        **(params.get("additional_parameters") or {}),
                        "requeue": True,
                    }
                init_params = {"folder": params["submitit_folder"]}
                init_params.update(
                    **{f"{self._EXECUTOR}_{x}": y for x, y in params.items() if x in specific_init_keys}
                )
                executor = submitit.AutoExecutor(cluster=self._EXECUTOR, **init_params)
                executor.update_parameters(
                    **{
                        x if x in baseparams else f"{self._EXECUTOR}_{x}": y
                        for x, y in params.items()
                        if x not in init_keys
                    }
                )
                try:
                    submitted = executor.map_array(self, *zip(*[job_params[i] for i in members], strict=True))
                except FailedJobError as e:
                    raise SlurmRejected(rejection_message(str(e))) from e
                jobs.update(zip(members, submitted, strict=True))
                log.info(
                    f"SLURM jobs ({params.get('gpus_per_node') or 0} GPUs each): "
                    f"{', '.join(str(j.job_id) for j in submitted)}"
                )
            order = sorted(jobs)
            waited = record_submitted(
                [jobs[i] for i in order],
                [job_cfgs[i] for i in order],
                [job_overrides[i] for i in order],
                sweep_dir,
            )
            if not own["detach"]:  # detached: each submitted job's return says "submitted"
                waited = wait_for_jobs(
                    [jobs[i] for i in order],
                    [job_overrides[i] for i in order],
                    poll_s=float(own["poll_s"] or 30),
                )
            for i, ret in zip(order, waited, strict=True):
                returns[i] = ret
            return returns
