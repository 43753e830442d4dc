"""The ``rr`` command: a Hydra app that runs one job (or a multirun sweep with ``-m``)."""

from __future__ import annotations

import importlib
import logging
import os
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from rr.config import register_configs

log = logging.getLogger("rr")

#: ``rr <name> ...`` subcommands, dispatched before Hydra sees argv: name -> "module:function";
#: the function takes the remaining arguments and returns an exit code.
SUBCOMMANDS: dict[str, str] = {
    "status": "rr.resume:status_main",
    "plan": "rr.plan:plan_main",
    "report": "rr.reporting.command:main",
    "judge-agreement": "rr.analysis.agreement:main",
}

CONFIG_DIR = os.environ.get("RR_CONFIG_DIR", str(Path(__file__).resolve().parent.parent / "conf"))


def _app(cfg: DictConfig) -> float | None:
    from rr.config import job_id
    from rr.pipeline import run_job
    from rr.report import print_job_report
    from rr.resume import SUMMARY, finished

    output_dir = HydraConfig.get().runtime.output_dir
    jid = job_id(cfg)
    done = finished(output_dir, jid)
    if done is not None and not cfg.get("force", False):
        print(f"rr: job {jid} is already done; its results are in {output_dir} (force=true re-runs it)")
        return done.get("accuracy")
    Path(output_dir, SUMMARY).unlink(missing_ok=True)  # a forced re-run is not done until it ends
    result = run_job(cfg, output_dir)
    print_job_report(result)
    return result.summary.get("accuracy")


def main() -> None:
    """Entry point of the ``rr`` console script and ``python -m rr``."""
    if len(sys.argv) > 1 and sys.argv[1] in SUBCOMMANDS:
        module, func = SUBCOMMANDS[sys.argv[1]].split(":")
        sys.exit(getattr(importlib.import_module(module), func)(sys.argv[2:]))
    if not Path(CONFIG_DIR, "config.yaml").exists():
        sys.exit(
            f"rr: no config.yaml in {CONFIG_DIR}; install rr editable from its checkout "
            "(pip install -e .) or set RR_CONFIG_DIR"
        )
    register_configs()
    hydra.main(config_path=CONFIG_DIR, config_name="config", version_base="1.3")(_app)()
