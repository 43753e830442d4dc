"""Experiment loggers (the ``logger`` config group). Logging is an optional output: ``none`` by default."""

from __future__ import annotations

import contextlib
import logging
import re
from pathlib import Path
from typing import Any

from rr.jobfolder import METRIC_COLUMNS, SCORES_FILE, SUMMARY_FILE, JobSummary
from rr.registry import component

log = logging.getLogger(__name__)


@component("logger", "none")
class NullLogger:
    """Logs nothing. The job's results are always on disk regardless of the logger."""

    def __init__(self) -> None:
        pass

    def log_job(
        self, job_id: str, config: dict[str, Any], summary: JobSummary, scores: Any, output_dir: str
    ) -> None:
        """Called once, after the score table and summary are written."""

    def finish(self) -> None:
        """Called in ``finally``, so a failed job still closes its run."""


#: Config keys whose values are never logged: a key one of whose words (split at ``_``, ``-``, ``.``
#: and case changes: ``api_key``, ``AuthToken``) is one of these. ``max_new_tokens`` is not a secret.
SECRET_MARKERS = ("key", "token", "secret", "password")


def _is_secret(key: Any) -> bool:
    words = re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", str(key))
    return any(w.lower() in SECRET_MARKERS for w in words)


def scrub_secrets(node: Any) -> Any:
    """A copy of a config tree without keys naming a key, token, secret or password."""
    if isinstance(node, dict):
        return {k: scrub_secrets(v) for k, v in node.items() if not _is_secret(k)}
    if isinstance(node, list | tuple):
        return [scrub_secrets(v) for v in node]
    return node


def flat_summary(summary: JobSummary) -> dict[str, float | int | str | None]:
    """The numbers of a job's ``summary.json`` as flat W&B summary keys.

    Counts (``requests``, ``model_calls``, ...), ``timings_s/<stage>``, ``counters/<name>``,
    ``answer_recall/<retriever>/k=<k>`` and ``metrics/<strategy>/<retriever>/<metric>``
    (NDR, RSR, ROR, robustness, accuracy per row of the job's robustness table). A metric the
    console and the report blank as undefined or degenerate (:func:`rr.metrics.robustness.metric_notes`,
    e.g. NDR when closed-book accuracy is 0) is ``None``, its reason beside it as ``<metric>_note``.
    """
    out: dict[str, float | int | str | None] = {}
    out.update(summary.top_numbers())
    for stage, sec in summary.timings_s.items():
        out[f"timings_s/{stage}"] = sec
    for name, n in summary.counters.items():
        out[f"counters/{name}"] = n
    for retriever, per_k in summary.answer_recall.items():
        for k, v in per_k.items():
            out[f"answer_recall/{retriever}/k={k}"] = v
    for row in summary.metrics:
        prefix = f"metrics/{row.value('strategy')}/{row.retriever}"
        notes = _notes(row)  # what the console and the report blank, and why
        for m in METRIC_COLUMNS[:-1]:  # not n_examples
            if m in notes:
                out[f"{prefix}/{m}"] = None
                out[f"{prefix}/{m}_note"] = notes[m]
            elif isinstance(value := getattr(row, m), int | float):
                out[f"{prefix}/{m}"] = value
    return out


def _notes(row: Any) -> dict[str, str]:
    """:func:`rr.metrics.robustness.metric_notes`, imported when a run is logged (it brings pandas:
    building the logger, as every job does, stays cheap)."""
    from rr.metrics.robustness import metric_notes

    return metric_notes(row)


def _shown(row: dict[str, Any]) -> dict[str, Any]:
    """A robustness-table row as the console shows it: undefined or degenerate metrics blank, a
    ``notes`` column saying why."""
    notes = _notes(row)
    return {
        **{k: (None if k in notes else v) for k, v in row.items()},
        "notes": "; ".join(dict.fromkeys(notes.values())),
    }


def _table_frame(df: Any, rows: int) -> Any:
    """The first ``rows`` rows of a score table with list/dict cells as strings (for wandb.Table)."""
    sample = df.head(rows).copy()
    for c in sample.columns:
        if sample[c].dtype == object or str(sample[c].dtype) in ("str", "string"):
            sample[c] = sample[c].map(
                lambda v: v if isinstance(v, str) else str(list(v) if hasattr(v, "__len__") else v)
            )
    return sample


@component("logger", "wandb")
class WandbLogger:
    """Logs each job as one Weights & Biases run; a W&B failure never costs the job its results.

    The run id is derived from the job's content hash (``rr-<job id>``) with ``resume="allow"``,
    so a re-run of a job continues the same run; the group is ``group`` or the job's ``name``
    (the sweep). Logged after the results are on disk: the job's resolved config as its ``config.yaml`` holds it, experiment included (keys naming a
    key, token, secret or password dropped), the summary's counts, per-stage timings, counters,
    answer recall and robustness metrics (run summary), the robustness table and the first
    ``table_rows`` score rows as ``wandb.Table``s, and ``scores.parquet`` + ``summary.json`` as
    an artifact of type ``scores``. Offline: ``mode=offline`` or ``WANDB_MODE=offline``.

    Any exception inside W&B is caught, logged as an error and written to
    ``<job folder>/wandb_error.txt``; the job's ``scores.parquet`` and ``summary.json`` are
    written before the logger is called and are never touched.

    Args:
        project: W&B project.
        entity: W&B entity (team or user); None = the account's default.
        group: Run group; None = the job's ``name`` (the sweep name).
        mode: ``online``, ``offline``, ``disabled`` or None (W&B's default / ``WANDB_MODE``).
        tags: Run tags.
        table_rows: Score-table rows logged as a ``wandb.Table`` (0 = none).
        log_artifact: Upload ``scores.parquet`` and ``summary.json`` as an artifact.
        dir: Folder for W&B's local files; None = ``$WANDB_DIR`` or the job folder.
    """

    def __init__(
        self,
        project: str = "rr",
        entity: str | None = None,
        group: str | None = None,
        mode: str | None = None,
        tags: list[str] = [],  # noqa: B006 (copied; Hydra needs a literal default for the schema)
        table_rows: int = 200,
        log_artifact: bool = True,
        dir: str | None = None,
    ) -> None:
        self.project, self.entity, self.group, self.mode = project, entity, group, mode
        self.tags = list(tags)
        self.table_rows, self.log_artifact, self.dir = int(table_rows), bool(log_artifact), dir
        self.run: Any = None
        self.errors: list[str] = []

    def log_job(
        self, job_id: str, config: dict[str, Any], summary: JobSummary, scores: Any, output_dir: str
    ) -> None:
        """Log one finished job (see the class docstring); never raises."""
        try:
            self._log(job_id, config, summary, scores, Path(output_dir))
        except Exception as err:  # W&B must never cost the job its results
            self._failed("logging", err, output_dir)

    def _log(self, job_id: str, config: dict[str, Any], summary: JobSummary, scores: Any, out: Path) -> None:
        import os

        import pandas as pd
        import wandb

        run_dir = self.dir or os.environ.get("WANDB_DIR") or str(out)
        Path(run_dir).mkdir(parents=True, exist_ok=True)
        name = summary.name or "rr"
        self.run = wandb.init(
            project=self.project,
            entity=self.entity,
            group=self.group or str(name),
            job_type="rr-job",
            id=f"rr-{job_id}",
            name=f"{name}-{job_id}",
            resume="allow",
            mode=self.mode,  # type: ignore[arg-type]
            tags=self.tags or None,
            dir=run_dir,
            config={**scrub_secrets(config), "job_id": job_id, "name": name},
            reinit="finish_previous",
        )
        run = self.run
        run.summary.update(flat_summary(summary))
        tables: dict[str, Any] = {}
        if summary.metrics:
            tables["robustness"] = wandb.Table(
                dataframe=pd.DataFrame([_shown(m.to_dict()) for m in summary.metrics])
            )
        if self.table_rows > 0 and len(scores):
            # a sample, named as one: the whole table is the artifact's scores.parquet
            tables["scores_sample"] = wandb.Table(dataframe=_table_frame(scores, self.table_rows))
            run.summary.update(
                {"scores_sample/rows": min(self.table_rows, len(scores)), "scores_sample/of": len(scores)}
            )
        if tables:
            run.log(tables)
        if self.log_artifact:
            art = wandb.Artifact(
                f"scores-{job_id}", type="scores", metadata={"job_id": job_id, "rows": len(scores)}
            )
            for f in (SCORES_FILE, SUMMARY_FILE):
                if (out / f).exists():
                    art.add_file(str(out / f))
            run.log_artifact(art)

    def finish(self) -> None:
        """Close the run (called in ``finally``); never raises."""
        run, self.run = self.run, None
        if run is None:
            return
        try:
            run.finish()
        except Exception as err:
            self._failed("finishing the run", err, None)

    def _failed(self, what: str, err: Exception, output_dir: str | None) -> None:
        msg = f"W&B {what} failed ({type(err).__name__}: {err}); the job's results on disk are unaffected"
        self.errors.append(msg)
        log.error(msg)
        if output_dir is not None:
            with contextlib.suppress(OSError):
                (Path(output_dir) / "wandb_error.txt").write_text(msg + "\n")
