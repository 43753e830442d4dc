"""Experiment loggers (the ``logger`` config group). Logging is an optional output: ``none`` by default."""

from __future__ import annotations

from typing import Any

from rr.registry import component


@component("logger", "none")
class NullLogger:
    """Logs nothing. The job's results are always on disk regardless of the logger."""

    def __init__(self) -> None:
        pass

    def log_job(
        self, job_id: str, config: dict[str, Any], summary: dict[str, Any], scores: Any, output_dir: str
    ) -> None:
        """Called once, after the score table and summary are written."""

    def finish(self) -> None:
        """Called in ``finally``, so a failed job still closes its run."""
