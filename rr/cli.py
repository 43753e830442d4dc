"""The ``rr`` command: a Hydra app that runs one job (or a multirun sweep with ``-m``)."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from rr.config import register_configs

log = logging.getLogger("rr")

CONFIG_DIR = os.environ.get("RR_CONFIG_DIR", str(Path(__file__).resolve().parent.parent / "conf"))


def _app(cfg: DictConfig) -> float | None:
    from rr.pipeline import run_job
    from rr.report import print_job_report

    output_dir = HydraConfig.get().runtime.output_dir
    result = run_job(cfg, output_dir)
    print_job_report(result)
    return result.summary.get("accuracy")


def _report(argv: list[str]) -> int:
    from rr.reporting.command import main as report_main

    return report_main(argv)


def _judge_agreement(argv: list[str]) -> int:
    from rr.analysis.agreement import main as agreement_main

    return agreement_main(argv)


#: ``rr <name> ...`` subcommands, dispatched before Hydra sees argv: name -> main(argv) -> exit code.
SUBCOMMANDS = {"report": _report, "judge-agreement": _judge_agreement}


def main() -> None:
    """Entry point of the ``rr`` console script and ``python -m rr``."""
    if len(sys.argv) > 1 and sys.argv[1] in SUBCOMMANDS:
        sys.exit(SUBCOMMANDS[sys.argv[1]](sys.argv[2:]))
    if not Path(CONFIG_DIR, "config.yaml").exists():
        sys.exit(
            f"rr: no config.yaml in {CONFIG_DIR}; install rr editable from its checkout "
            "(pip install -e .) or set RR_CONFIG_DIR"
        )
    register_configs()
    hydra.main(config_path=CONFIG_DIR, config_name="config", version_base="1.3")(_app)()
