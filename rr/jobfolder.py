"""The job folder: the one place its file names and the format of its ``summary.json`` are defined.

A job's folder (``run_job``'s ``output_dir``) holds:

- :data:`CONFIG_FILE` (``config.yaml``): the resolved config, written first;
- :data:`SCORES_FILE` (``scores.parquet``): the score table (:mod:`rr.results`);
- :data:`PROMPTS_FILE` (``prompts.parquet``): each score row's prompt as sent, keyed on the row's
  key columns (:data:`rr.results.PROMPT_KEYS`), zstd-compressed; read only by who asks
  (:func:`rr.results.load_prompts`, the site's prompt view), never by ``rr.results.load``;
- :data:`RETRIEVAL_FILE` (``retrieval.csv``): answer recall per retriever, query variant and k;
- :data:`RUNS_DIR` (``runs/<retriever>.trec``) and :data:`QRELS_FILE` (``qrels.trec``): TREC runs and qrels;
- :data:`SUMMARY_FILE` (``summary.json``): counts, timings and metrics (:class:`JobSummary`), written
  last: a job is done when it exists;
- :data:`HISTORY_DIR` (``history/<n>.summary.json``, ``history/<n>.scores.parquet``,
  ``history/<n>.prompts.parquet``): the earlier runs
  of a job that ``force=true`` ran again (:func:`archive_run`, :func:`earlier_runs`), under names no
  reader of job folders takes for a job of its own.

Writers and readers use these names and :func:`write_summary` / :func:`read_summary`; a summary
carries :data:`SUMMARY_VERSION` (``summary_version``); one written before versions reads as version 0.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from rr.atomic import atomic_write

CONFIG_FILE = "config.yaml"
SUMMARY_FILE = "summary.json"
SCORES_FILE = "scores.parquet"
PROMPTS_FILE = "prompts.parquet"
RETRIEVAL_FILE = "retrieval.csv"
QRELS_FILE = "qrels.trec"
RUNS_DIR = "runs"
HISTORY_DIR = "history"

#: The format of ``summary.json``: 1 = the fields of :class:`JobSummary` (0: a summary without
#: ``summary_version``, written before it; same fields, some possibly absent); 2 adds
#: ``environment`` (:mod:`rr.environment`; absent from older summaries); 3 adds ``public_model``.
SUMMARY_VERSION = 3

#: Fields written only when the job has them (absent otherwise, as before versions).
_OPTIONAL = ("approximate_indexes", "planted", "examples_available", "data_scope")


@dataclass
class JobSummary(Mapping[str, Any]):
    """A job's ``summary.json``, typed. Fields are written in this order (``extra`` last).

    Also a read-only mapping of the JSON's keys to values (``summary["rows"]``, ``summary.get(...)``,
    ``"closed_book_accuracy" in summary``): a key the file lacks (an older job) is not in it.

    Attributes:
        summary_version: :data:`SUMMARY_VERSION` when written; 0 for a summary without one.
        job_id, name, model: The job's id, its ``name`` setting, the model under test's identity.
        public_model: Which public model it is, apart from where it was loaded from
            (:func:`rr.generation.base.public_model`: ``generator.model_name``, the API's reported
            model, a local folder's hub id, else ``model.model_id``); ``None`` in older summaries.
        examples, rows, cells: Examples run, score-table rows, distinct (strategy, cell) pairs.
        example_set: Which examples it ran: ``{"examples": n, "fingerprint": ...}`` of their
            :func:`rr.results.example_key` values (:func:`rr.results.example_set`).
        requests ... generation_steps: The model under test's request counts (:class:`LLMStats`).
        accuracy, closed_book_accuracy: Mean score over k > 0 rows and over k = 0 rows (``None``: no rows).
        answer_recall: Retriever -> k -> answer recall of the unperturbed queries.
        cells_short_of_k: The (retriever, k, query perturbation) cells in which the retriever returned
            fewer than k documents for some queries: ``queries``, ``queries_short``, ``fewest``.
        counters, prefix_cache, other_models, metrics: Named counts, vLLM's prefix cache, the other
            models' request counts, the robustness metrics (``rr.summary.job_metrics``).
        timings_s, wall_s, versions: Seconds per stage, in all, and the installed versions.
        environment: The lock the job's packages came from and whether they matched it
            (:func:`rr.environment.environment`: ``lock``, ``matches_lock``, ``differences``); not
            in the job id.
        index_rebuilds: Cached indexes found corrupt and rebuilt.
        approximate_indexes, planted, examples_available, data_scope: Written only when the job has
            them (an approximate dense index, a simulated reader's planted values, its data scope).
        extra: Keys this version does not know (a newer or a plugin's summary), kept as read.
        absent: Fields the file did not hold (not written back either).
    """

    summary_version: int = SUMMARY_VERSION
    job_id: str = ""
    name: str | None = None
    model: Any = None
    public_model: str | None = None
    examples: int | None = None
    example_set: dict[str, Any] | None = None
    rows: int | None = None
    cells: int | None = None
    requests: int | None = None
    unique_requests: int | None = None
    model_calls: int | None = None
    cache_hits: int | None = None
    prompt_tokens_generated_for: int | None = None
    completion_tokens: int | None = None
    generation_steps: list[dict[str, Any]] = field(default_factory=list)
    cache_torn_lines: int | None = None
    retrieval_runs_cached: int | None = None
    retrieval_runs_computed: int | None = None
    retrieval_runs_rebuilt: int | None = None
    answer_extraction_fallbacks: int | None = None
    rows_truncated_to_fit_window: int | None = None
    rows_over_window: int | None = None
    prompts_over_window: int | None = None
    accuracy: float | None = None
    closed_book_accuracy: float | None = None
    answer_recall: dict[str, dict[str, float]] = field(default_factory=dict)
    cells_short_of_k: list[dict[str, Any]] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=dict)
    prefix_cache: dict[str, Any] = field(default_factory=dict)
    other_models: list[dict[str, Any]] = field(default_factory=list)
    metrics: list[dict[str, Any]] = field(default_factory=list)
    timings_s: dict[str, float] = field(default_factory=dict)
    wall_s: float | None = None
    versions: dict[str, str] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    index_rebuilds: int | None = None
    approximate_indexes: dict[str, Any] | None = None
    planted: dict[str, Any] | None = None
    examples_available: int | None = None
    data_scope: list[str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    absent: frozenset[str] = frozenset(_OPTIONAL)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object written to ``summary.json`` (fields in order, absent ones left out)."""
        out = {f.name: getattr(self, f.name) for f in _FIELDS if f.name not in self.absent}
        return {**out, **self.extra}

    def with_fields(self, **values: Any) -> JobSummary:
        """A copy with ``values`` set (and written, even an optional field)."""
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        return JobSummary(**{**d, **values, "absent": self.absent - set(values)})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JobSummary:
        """A summary as read from JSON; a missing ``summary_version`` is version 0."""
        known = {f.name for f in _FIELDS}
        values = {k: v for k, v in data.items() if k in known}
        values.setdefault("summary_version", 0)
        return cls(
            **values,
            extra={k: v for k, v in data.items() if k not in known},
            absent=frozenset(known - set(data) - {"summary_version"}),
        )

    # the read-only mapping of the written JSON
    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_dict())

    def __len__(self) -> int:
        return len(self.to_dict())


#: The fields written to ``summary.json`` (not the bookkeeping ``extra`` and ``absent``).
_FIELDS = [f for f in fields(JobSummary) if f.name not in ("extra", "absent")]


def write_summary(job_dir: str | Path, summary: JobSummary) -> Path:
    """Write ``summary.json`` atomically (the last file of a job: it is done when it exists)."""
    path = Path(job_dir) / SUMMARY_FILE
    with atomic_write(path) as f:
        f.write(json.dumps(summary.to_dict(), indent=1, default=str))
    return path


def read_summary(job_dir: str | Path) -> JobSummary | None:
    """The job's summary, or ``None`` when ``summary.json`` is missing, unreadable or not an object
    (a job still running, killed, or a torn file). Old summaries without a version read as version 0."""
    return _read_summary_file(Path(job_dir) / SUMMARY_FILE)


def _read_summary_file(path: Path) -> JobSummary | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict):
        return None
    return JobSummary.from_dict(data)


def archive_run(job_dir: str | Path) -> int:
    """Keep a finished run's record before ``force=true`` runs the job again: its ``summary.json``,
    ``scores.parquet`` and ``prompts.parquet`` (where it has one) move to :data:`HISTORY_DIR` as the
    next numbered entry (renames, no copies).

    Returns:
        The entry's number (1 for the first run kept).
    """
    folder = Path(job_dir)
    history = folder / HISTORY_DIR
    history.mkdir(exist_ok=True)
    n = len(earlier_runs(folder)) + 1
    (folder / SCORES_FILE).replace(history / f"{n}.{SCORES_FILE}")
    if (folder / PROMPTS_FILE).is_file():
        (folder / PROMPTS_FILE).replace(history / f"{n}.{PROMPTS_FILE}")
    (folder / SUMMARY_FILE).replace(history / f"{n}.{SUMMARY_FILE}")  # last: it makes the entry count
    return n


def earlier_runs(job_dir: str | Path) -> list[JobSummary | None]:
    """The summaries of a job's earlier runs kept in :data:`HISTORY_DIR`, oldest first (``None``: unreadable)."""
    numbered = []
    for path in Path(job_dir, HISTORY_DIR).glob(f"*.{SUMMARY_FILE}"):
        number = path.name.removesuffix(f".{SUMMARY_FILE}")
        if number.isdigit():
            numbered.append((int(number), path))
    return [_read_summary_file(path) for _, path in sorted(numbered)]


def write_config(job_dir: str | Path, cfg: DictConfig) -> Path:
    """Write the job's resolved config (``config.yaml``), the first file of a job folder."""
    path = Path(job_dir) / CONFIG_FILE
    path.write_text(OmegaConf.to_yaml(cfg, resolve=True))
    return path


def read_config(job_dir: str | Path) -> DictConfig:
    """The job's resolved config as written by :func:`write_config`."""
    cfg = OmegaConf.load(Path(job_dir) / CONFIG_FILE)
    assert isinstance(cfg, DictConfig)
    return cfg


def is_started(job_dir: str | Path) -> bool:
    """Whether a job wrote its config into ``job_dir`` (it started there)."""
    return (Path(job_dir) / CONFIG_FILE).exists()
