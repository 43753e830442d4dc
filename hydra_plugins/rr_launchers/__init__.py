"""rr's Hydra sweeper and SLURM launcher: a sweep that reports its jobs and fails loudly.

* :class:`RRSweeper` (``hydra/sweeper=rr``, rr's default) expands and launches jobs exactly as
  Hydra's basic sweeper does, then prints one table of the sweep's jobs (done / skipped /
  resumed / failed, wall time, model calls, accuracy, folder; :mod:`rr.commands.status`) whatever
  the launcher, and ends the command with exit status 2 and one line per failed job. Hydra's
  own sweeper stops at the first failed job's traceback and exits 1.
* :class:`RRSlurmLauncher` (``hydra/launcher=slurm`` and ``slurm_cpu``) is hydra-submitit-launcher's
  ``SlurmLauncher`` that waits on its jobs with :func:`rr.commands.slurm.wait_for_jobs` (a dead job is
  noticed within seconds, with or without job accounting) and turns an sbatch rejection into
  one line naming the setting to change.

Hydra instantiates sweepers and launchers only from the ``hydra_plugins`` package, hence here.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
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
    from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher
except ImportError:  # the submitit extra is not installed: hydra/launcher=slurm is unavailable
    SlurmLauncher = None


if SlurmLauncher is not None:

    class RRSlurmLauncher(SlurmLauncher):  # type: ignore[misc,valid-type]
        """hydra-submitit-launcher's ``SlurmLauncher`` with bounded waiting, one-line rejections and
        a resource shape per job: jobs whose ``resources.gpus`` differ go in one array each
        (:func:`rr.commands.slurm.shaped_params`)."""

        def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
            # hydra-submitit-launcher 1.2's BaseSubmititLauncher.launch, except how it submits
            # (one array per resource shape; an sbatch rejection becomes SlurmRejected) and how it
            # waits (rr.commands.slurm.wait_for_jobs instead of job.results(), which waits forever
            # on a dead job without accounting).
            import submitit
            from hydra.core.singleton import Singleton
            from hydra.core.utils import filter_overrides
            from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf
            from submitit.core.utils import FailedJobError

            from rr.commands.slurm import SlurmRejected, rejection_message, shaped_params, wait_for_jobs

            assert self.config is not None and self.hydra_context is not None
            log.info(f"Submitit '{self._EXECUTOR}' sweep output dir : {self.config.hydra.sweep.dir}")
            sweep_dir = Path(str(self.config.hydra.sweep.dir))
            sweep_dir.mkdir(parents=True, exist_ok=True)
            if "mode" in self.config.hydra.sweep:
                os.chmod(sweep_dir, mode=int(str(self.config.hydra.sweep.mode), 8))
            shapes: dict[int | None, list[int]] = {}
            job_params: list[Any] = []
            for idx, overrides in enumerate(job_overrides, start=initial_job_idx):
                log.info(f"\t#{idx} : {' '.join(filter_overrides(overrides))}")
                job_cfg = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
                shapes.setdefault(OmegaConf.select(job_cfg, "resources.gpus"), []).append(len(job_params))
                job_params.append(
                    (list(overrides), "hydra.sweep.dir", idx, f"job_id_for_{idx}", Singleton.get_state())
                )
            specific_init_keys = {"max_num_timeout"}
            init_keys = specific_init_keys | {"submitit_folder"}
            baseparams = set(OmegaConf.structured(BaseQueueConf).keys())
            jobs: list[Any] = [None] * len(job_params)
            for gpus, members in shapes.items():
                params = shaped_params(self.params, gpus)
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
                for i, job in zip(members, submitted, strict=True):
                    jobs[i] = job
                log.info(
                    f"SLURM jobs ({params.get('gpus_per_node') or 0} GPUs each): "
                    f"{', '.join(str(j.job_id) for j in submitted)}"
                )
            return wait_for_jobs(jobs, job_overrides)
