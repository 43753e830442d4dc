"""The job folder: the one place its file names and the format of its ``summary.json`` are defined.

A job's folder (``run_job``'s ``output_dir``) holds:

- :data:`CONFIG_FILE` (``config.yaml``): the resolved config, written first;
- :data:`SCORES_FILE` (``scores.parquet``): the score table (:mod:`rr.results`);
- :data:`PROMPTS_FILE` (``prompts.parquet``): each score row's prompt as sent, keyed on the row's
  key columns (:data:`rr.results.PROMPT_KEYS`), zstd-compressed; read only by who asks
  (:func:`rr.results.load_prompts`, the site's prompt view), never by ``rr.results.load``;
- :data:`RETRIEVAL_FILE` (``retrieval.csv``): answer recall per retriever, query variant and k;
- :data:`CORPUS_FILE` (``corpus.jsonl``): only in a job ``rr score`` made, the documents its
  predictions file gave (``{"id", "title", "text"}`` per line), the job's ``corpus``;
- :data:`RUNS_DIR` (``runs/<retriever>.trec``) and :data:`QRELS_FILE` (``qrels.trec``): TREC runs and qrels;
- :data:`SUMMARY_FILE` (``summary.json``): counts, timings and metrics (:class:`JobSummary`), written
  last: a job is done when it exists;
- :data:`HISTORY_DIR` (``history/<n>.summary.json``, ``history/<n>.scores.parquet``,
  ``history/<n>.prompts.parquet``): the earlier runs
  of a job that ``force=true`` ran again (:func:`archive_run`, :func:`earlier_runs`), under names no
  reader of job folders takes for a job of its own.

Writers and readers use these names and :func:`write_summary` / :func:`read_summary`; a summary
carries :data:`SUMMARY_VERSION` (``summary_version``); an older one (one written before versions is
version 0) is migrated on read, one :data:`MIGRATIONS` step per version. Readers use the summary's
attributes (:class:`JobSummary` and its nested records), never its JSON keys.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, ClassVar, Self

from omegaconf import DictConfig, OmegaConf

from rr.atomic import atomic_write

CONFIG_FILE = "config.yaml"
SUMMARY_FILE = "summary.json"
SCORES_FILE = "scores.parquet"
PROMPTS_FILE = "prompts.parquet"
RETRIEVAL_FILE = "retrieval.csv"
CORPUS_FILE = "corpus.jsonl"
QRELS_FILE = "qrels.trec"
RUNS_DIR = "runs"
HISTORY_DIR = "history"

#: The format of ``summary.json``: 1 = the fields of :class:`JobSummary` (0: a summary without
#: ``summary_version``, written before it; same fields, some possibly absent); 2 adds
#: ``environment`` (:mod:`rr.environment`; absent from older summaries); 3 adds ``public_model``. An
#: older summary is read through :data:`MIGRATIONS`, one step per version.
SUMMARY_VERSION = 3

#: Fields written only when the job has them (absent otherwise, as before versions).
_OPTIONAL = (
    "approximate_indexes",
    "planted",
    "examples_available",
    "data_scope",
    "cells_cut_to_window",
    "rgb_rates",
)


# ----------------------------------------------------------------------------- the nested records


class _Record:
    """A nested record of the summary: read from its JSON object, the keys it does not know kept in
    ``extra`` (a newer version's), and written back as read (its fields in order, then ``extra``).

    A subclass names in ``_NESTED`` how a field's JSON value reads as its record(s), and in
    ``_OPTIONAL`` the fields written only when not ``None`` (absent from the JSON otherwise)."""

    extra: dict[str, Any]
    _NESTED: ClassVar[dict[str, Callable[[Any], Any]]] = {}
    _OPTIONAL: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        names = {f.name for f in fields(cls)} - {"extra"}  # type: ignore[arg-type]
        known = {k: v for k, v in data.items() if k in names}
        for name, read in cls._NESTED.items():
            if known.get(name) is not None:
                known[name] = read(known[name])
        return cls(**known, extra={k: v for k, v in data.items() if k not in names})  # type: ignore[call-arg]

    def to_dict(self) -> dict[str, Any]:
        return {**self._own("extra"), **self.extra}

    def _own(self, apart: str) -> dict[str, Any]:
        """The fields as JSON holds them, in order, but ``apart`` (and an ``_OPTIONAL`` one that is ``None``)."""
        return {
            f.name: _plain(value)
            for f in fields(self)  # type: ignore[arg-type]
            if f.name != apart and not ((value := getattr(self, f.name)) is None and f.name in self._OPTIONAL)
        }


@dataclass(frozen=True)
class GenerationStep(_Record):
    """One step of the model under test (``summary.json`` ``generation_steps``, in the order they ran).

    Attributes:
        step: The step's name (``closed_book``, ``vanilla:answer``, ...).
        requests, unique: Its requests, and the distinct ones among them (by cache key).
        cache_hits, model_calls: Distinct requests answered from the cache / sent to the model.
        over_window: Distinct prompts not sent: prompt plus ``max_new_tokens`` exceeds the window.
        seconds: Wall seconds of the step (rounded to ms).
        extra: Keys this version does not know, kept as read.
    """

    step: str = ""
    requests: int = 0
    unique: int = 0
    cache_hits: int = 0
    model_calls: int = 0
    over_window: int = 0
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PrefixCacheStats(_Record):
    """A vLLM engine's prefix cache during the job (``summary.json`` ``prefix_cache[<generator>]``).

    Attributes:
        queries: Prompt tokens looked up in the cache.
        hits: Prompt tokens found there.
        extra: Keys this version does not know, kept as read.
    """

    queries: int = 0
    hits: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EnvironmentRecord(_Record):
    """The Python environment the job ran in (``summary.json`` ``environment``, :func:`rr.environment.record`).

    Attributes:
        lock: The first 12 hex digits of the sha256 of the lock files (``None``: no lock beside rr).
        matches_lock: Whether the installed distributions are exactly the locked ones (``None``: no lock).
        differences: The first few that are not (``name: installed X, locked Y``), sorted.
        n_differences: How many there are in all (``None``: no lock).
        lock_files: The lock files it was compared with (``locks/rr.txt`` + ``locks/rr-data.txt``, or
            on a GPU node ``locks/rr-gpu.txt`` + ``locks/rr-data.txt``; empty in older summaries).
        extra: Keys this version does not know, kept as read.
    """

    lock: str | None = None
    matches_lock: bool | None = None
    differences: list[str] = field(default_factory=list)
    n_differences: int | None = None
    lock_files: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


class _SystemRow(_Record):
    """A row of a table grouped by system: the keys that are not its own fields name the system
    (``system``, written first, in order); it has no ``extra``."""

    system: dict[str, Any]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        own = {f.name for f in fields(cls)} - {"system"}  # type: ignore[arg-type]
        return cls(
            system={k: v for k, v in data.items() if k not in own},  # type: ignore[call-arg]
            **{k: v for k, v in data.items() if k in own},
        )

    def to_dict(self) -> dict[str, Any]:
        return {**self.system, **self._own("system")}

    def value(self, column: str) -> Any:
        """The row's value of ``column``: a system column (``strategy``), or one of its own fields
        (``retriever``, a metric); ``None`` where the row has none."""
        if column in self.system:
            return self.system[column]
        return getattr(self, column, None) if column in {f.name for f in fields(self)} else None  # type: ignore[arg-type]


#: The robustness-table columns of a :class:`MetricRow`, in the order they are written.
METRIC_COLUMNS = ("ndr", "rsr", "ror", "robustness", "accuracy", "closed_book_accuracy", "n_examples")


@dataclass(frozen=True)
class MetricRow(_SystemRow):
    """One row of the job's robustness table (``summary.json`` ``metrics``; :func:`rr.summary.job_metrics`):
    one system on one retriever, or its mean over retrievers.

    Attributes:
        system: The columns that name the system, in order: ``generator``, ``strategy`` and every
            perturbation column that varies within the job (:func:`rr.summary.summary_groups`).
        retriever: The retriever (``none`` for a closed-book-only system; ``mean(a,b)`` for the
            mean over retrievers).
        ndr, rsr, ror, robustness: Cao et al.'s metrics, each in [0, 1] (NaN where undefined:
            :func:`rr.metrics.robustness.metric_notes` says why).
        accuracy: Mean score of the k > 0 rows (NaN without any).
        closed_book_accuracy: Mean score of the system's k = 0 rows (NaN without any).
        n_examples: Distinct examples behind the row.
        n_orders: Document orders among its k > 0 rows (ROR with one is degenerate:
            :func:`rr.metrics.robustness.metric_notes`); ``None`` in a summary written before it was.

    ``None``: a row that does not hold the column (the robustness table always writes them all).
    """

    _OPTIONAL: ClassVar[tuple[str, ...]] = ("n_orders",)

    system: dict[str, Any] = field(default_factory=dict)
    retriever: str = ""
    ndr: float | None = None
    rsr: float | None = None
    ror: float | None = None
    robustness: float | None = None
    accuracy: float | None = None
    closed_book_accuracy: float | None = None
    n_examples: int | None = None
    n_orders: int | None = None


#: The rates of an :class:`RGBRates` row that RGB's tables have only where the job's judge writes
#: their columns (the LLM checks, ``evalue.py``'s ``rgb_corrected``).
_RGB_OPTIONAL = (
    "rejection_rate_llm",
    "error_detection_rate_llm",
    "error_correction_rate_llm",
    "error_correction_rate_evalue",
)


@dataclass(frozen=True)
class RGBRates(_SystemRow):
    """RGB's rates of one system and document perturbation (``summary.json`` ``rgb_rates``;
    :func:`rr.metrics.rgb.job_rates`, whose columns these are).

    Attributes:
        system: The columns that name the row: ``generator``, ``strategy``, ``doc_perturbation``.
        noise_ratio: The ``noise_ratio`` tag's ratio (``None`` for another perturbation).
        n_rows, n_skipped: ``k > 0`` rows scored, and rows RGB's code would skip (left out).
        accuracy, mean_score: RGB's accuracy; the mean score (partial credit, not RGB's).
        closed_book_accuracy: Table 7's Acc: RGB-correct ``k = 0`` rows of the system.
        rejection_all_rate, rejection_rate, rejection_rate_llm: Rej, refusals only, Rej* (at noise ratio 1).
        error_detection_rate, error_detection_rate_llm: ED, ED* (counterfactual documents).
        error_correction_rate, error_correction_rate_evalue, error_correction_rate_llm: rr's CR,
            ``evalue.py``'s, Table 7's (``fact_evalue.py``).

    ``None``: not a number (undefined, or a rate RGB's scripts do not compute there).
    """

    _OPTIONAL: ClassVar[tuple[str, ...]] = _RGB_OPTIONAL

    system: dict[str, Any] = field(default_factory=dict)
    noise_ratio: float | None = None
    n_rows: int | None = None
    n_skipped: int | None = None
    accuracy: float | None = None
    mean_score: float | None = None
    closed_book_accuracy: float | None = None
    rejection_all_rate: float | None = None
    rejection_rate: float | None = None
    rejection_rate_llm: float | None = None
    error_detection_rate: float | None = None
    error_detection_rate_llm: float | None = None
    error_correction_rate: float | None = None
    error_correction_rate_evalue: float | None = None
    error_correction_rate_llm: float | None = None


@dataclass(frozen=True)
class PlantedCell(_SystemRow):
    """One cell of a simulated reader's job (``summary.json`` ``planted.cells``): its planted (true)
    accuracy and refusal rate beside the measured ones (:func:`rr.summary.planted_summary`).

    Attributes:
        system: The columns that name the system (as :attr:`MetricRow.system`).
        retriever, doc_perturbation, k, order: The cell.
        planted_accuracy, planted_refusal_rate: The reader population's values in the cell.
        accuracy, refusal_rate: This job's, measured over its ``n`` rows (``None``: not a number).
    """

    system: dict[str, Any] = field(default_factory=dict)
    retriever: str = ""
    doc_perturbation: str = ""
    k: int = 0
    order: str = ""
    planted_accuracy: float | None = None
    planted_refusal_rate: float | None = None
    accuracy: float | None = None
    refusal_rate: float | None = None
    n: int = 0


@dataclass(frozen=True)
class Planted(_Record):
    """A simulated reader's planted (true) values (``summary.json`` ``planted``, :func:`rr.summary.planted_summary`).

    Attributes:
        method: How they were computed (``monte_carlo``).
        reps: Monte-Carlo draws per example.
        params: The reader's parameters (:class:`rr.generation.simulated.ReaderParams`).
        metrics: The robustness table of the planted score table (empty without one).
        cells: Per cell, planted beside measured accuracy and refusal rate.
        extra: Keys this version does not know, kept as read.
    """

    _NESTED: ClassVar[dict[str, Callable[[Any], Any]]] = {
        "metrics": lambda rows: [MetricRow.from_dict(r) for r in rows],
        "cells": lambda rows: [PlantedCell.from_dict(r) for r in rows],
    }

    method: str = ""
    reps: int = 0
    params: dict[str, Any] = field(default_factory=dict)
    metrics: list[MetricRow] = field(default_factory=list)
    cells: list[PlantedCell] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelRecord(_Record):
    """What a model is (``summary.json`` ``model``, ``other_models[*].model``: its generator's
    ``identity()``, the key of its cached answers).

    Attributes:
        model_id: The hub id, local path or API model name.
        revision: The hub commit, a local folder's content digest, ``unversioned``, ...
        extra: The backend's further keys (``dtype``, ``quantization``, ``tokenizer_identity``,
            ``reported_model``, ...), kept as written.
    """

    model_id: str | None = None
    revision: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class OtherModel(_Record):
    """A model besides the one under test (a judge, a rewriter; ``summary.json`` ``other_models``)
    and its request counts (:class:`rr.generation.client.LLMStats`, its steps left out).

    Attributes:
        model: What it is.
        requests, unique_requests, cache_hits, model_calls: Its requests, distinct ones, those
            answered from the cache / sent to the model.
        prompt_tokens, completion_tokens: Tokens it was sent / generated.
        seconds: Wall seconds of its steps.
        over_window: Distinct prompts not sent: prompt plus ``max_new_tokens`` exceeds its window.
        extra: Keys this version does not know, kept as read.
    """

    _NESTED: ClassVar[dict[str, Callable[[Any], Any]]] = {"model": ModelRecord.from_dict}

    model: ModelRecord | None = None
    requests: int = 0
    unique_requests: int = 0
    cache_hits: int = 0
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    over_window: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ExampleSet(_Record):
    """Which examples a job ran (``summary.json`` ``example_set``, :func:`rr.results.example_set`).

    Attributes:
        examples: How many distinct examples.
        fingerprint: The hash of their sorted :func:`rr.results.example_key` values (12 hex digits).
        extra: Keys this version does not know, kept as read.
    """

    examples: int = 0
    fingerprint: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ShortCell(_Record):
    """A (retriever, k, query perturbation) cell in which the retriever returned fewer than k
    documents for some queries (``summary.json`` ``cells_short_of_k``, :func:`rr.pipeline.short_cells`).

    Attributes:
        retriever, k, query_perturbation: The cell.
        queries: Queries of the cell.
        queries_short: Those that got fewer than k documents.
        fewest: The fewest documents any of them got.
        extra: Keys this version does not know, kept as read.
    """

    retriever: str = ""
    k: int = 0
    query_perturbation: str = "none"
    queries: int = 0
    queries_short: int = 0
    fewest: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CutCell(_SystemRow):
    """A cell not filled at its k: some of its rows held fewer documents than they were given, the
    rest not fitting the model's window (``summary.json`` ``cells_cut_to_window``).

    Attributes:
        system: ``strategy`` and the cell's perturbation columns, where the score table has them.
        retriever, k, order: The cell.
        rows, rows_cut: Its rows, and those that held fewer documents.
        fewest: The fewest documents one of them held.
    """

    system: dict[str, Any] = field(default_factory=dict)
    retriever: str = ""
    k: int = 0
    order: str = ""
    rows: int = 0
    rows_cut: int = 0
    fewest: int = 0


@dataclass(frozen=True)
class QueryRecall(_Record):
    """An approximate index's recall against exact search, measured on a seeded sample of the job's
    own queries (``summary.json`` ``approximate_indexes[<retriever>].job_queries``).

    Attributes:
        queries: Queries measured.
        of: Queries the job searched.
        seed: The sample's seed.
        recall: ``recall@k`` -> mean recall@k (written as keys of their own, k ascending).
        warn_below: The retriever's ``recall_warn_below``.
        below_threshold: Whether some recall@k is below it.
        extra: Keys this version does not know, kept as read.
    """

    queries: int = 0
    of: int = 0
    seed: int | None = None
    recall: dict[str, float] = field(default_factory=dict)
    warn_below: float | None = None
    below_threshold: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        recall = {k: v for k, v in data.items() if k.startswith("recall@")}
        rest = {k: v for k, v in data.items() if k not in recall}
        return replace(super().from_dict(rest), recall=recall)

    def to_dict(self) -> dict[str, Any]:
        out = {"queries": self.queries, "of": self.of, "seed": self.seed, **self.recall}
        return {**out, "warn_below": self.warn_below, "below_threshold": self.below_threshold, **self.extra}


@dataclass(frozen=True)
class ApproximateIndex(_Record):
    """An approximate dense index a job searched (``summary.json`` ``approximate_indexes[<retriever>]``).

    Attributes:
        spec: Its ``faiss.index_factory`` string (``IVF4096,Flat``).
        train_size, seed, n: Rows it was trained on, the seed, rows it holds.
        search_params: The ``faiss.ParameterSpace`` string it searched with (``None``: default).
        recall: ``recall@k`` -> stored recall vs exact search, passages as queries.
        recall_caveat: How to read that stored recall.
        job_queries: Recall on the job's own queries (``None``: not measured).
        extra: Keys this version does not know, kept as read.
    """

    _NESTED: ClassVar[dict[str, Callable[[Any], Any]]] = {"job_queries": QueryRecall.from_dict}
    _OPTIONAL: ClassVar[tuple[str, ...]] = ("job_queries",)

    spec: str = ""
    train_size: int | None = None
    seed: int | None = None
    n: int | None = None
    search_params: str | None = None
    recall: dict[str, float] = field(default_factory=dict)
    recall_caveat: str | None = None
    job_queries: QueryRecall | None = None
    extra: dict[str, Any] = field(default_factory=dict)


# ----------------------------------------------------------------------------- the summary


@dataclass
class JobSummary:
    """A job's ``summary.json``, typed. Fields are written in this order (``extra`` last).

    Read it by attribute (``summary.rows``, ``summary.metrics[0].ndr``); :meth:`to_dict` is the JSON
    object as written. A field the file lacks (an older job) keeps its default and is listed in
    ``absent`` (not written back either); :attr:`accuracy_of_all_rows` says how to read ``accuracy``.

    Attributes:
        summary_version: :data:`SUMMARY_VERSION` (an older file is migrated on read: :data:`MIGRATIONS`).
        job_id, name: The job's id, its ``name`` setting.
        model: What the model under test is (:class:`ModelRecord`).
        public_model: Which public model it is, apart from where it was loaded from
            (:func:`rr.generation.base.public_model`: ``generator.model_name``, the API's reported
            model, a local folder's hub id, else the model setting); ``None`` in older summaries.
        examples, rows, cells: Examples run, score-table rows, distinct (strategy, cell) pairs.
        example_set: Which examples it ran (:class:`ExampleSet`).
        requests ... completion_tokens: The model under test's request counts (:class:`LLMStats`).
        generation_steps: The model under test's steps (:class:`GenerationStep`), in the order they ran.
        accuracy, closed_book_accuracy: Mean score over k > 0 rows and over k = 0 rows (``None``: no rows).
        answer_recall: Retriever -> k -> answer recall of the unperturbed queries.
        cells_short_of_k: The (retriever, k, query perturbation) cells in which the retriever returned
            fewer than k documents for some queries (:class:`ShortCell`).
        cells_cut_to_window: The cells some of whose rows held fewer documents than given, the rest
            not fitting the window (:class:`CutCell`, :func:`rr.summary.cells_cut_to_window`): not
            filled at their k.
        counters: Named counts (``rr.runtime.Runtime.count``).
        prefix_cache: Generator name -> vLLM's prefix cache during the job (:class:`PrefixCacheStats`).
        other_models: The other models and their request counts (:class:`OtherModel`).
        metrics: The robustness table (:class:`MetricRow`, :func:`rr.summary.job_metrics`).
        timings_s, wall_s, versions: Seconds per stage, in all, and the installed versions.
        environment: The lock the job's packages came from and whether they matched it
            (:class:`EnvironmentRecord`; ``None`` in a summary written before version 2); not in the job id.
        index_rebuilds: Cached indexes found corrupt and rebuilt.
        approximate_indexes, planted, examples_available, data_scope: Written only when the job has
            them: its approximate dense indexes by retriever (:class:`ApproximateIndex`), a simulated
            reader's planted values (:class:`Planted`), its data scope.
        rgb_rates: RGB's rates (accuracy, Acc, Rej, Rej*, ED, ED*, CR), one :class:`RGBRates` per
            system and document perturbation (:func:`rr.metrics.rgb.job_rates`); written only
            for a job with RGB's prompt (``strategy=rgb``) scored by RGB's phrase rules (``judge=rgb``,
            ``judge=refusal_match``).
        extra: Keys this version does not know (a newer or a plugin's summary), kept as read.
        absent: Fields the file did not hold (not written back either).
    """

    summary_version: int = SUMMARY_VERSION
    job_id: str = ""
    name: str | None = None
    model: ModelRecord | None = None
    public_model: str | None = None
    examples: int | None = None
    example_set: ExampleSet | None = None
    rows: int | None = None
    cells: int | None = None
    requests: int | None = None
    unique_requests: int | None = None
    model_calls: int | None = None
    cache_hits: int | None = None
    prompt_tokens_generated_for: int | None = None
    completion_tokens: int | None = None
    generation_steps: list[GenerationStep] = field(default_factory=list)
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
    cells_short_of_k: list[ShortCell] = field(default_factory=list)
    cells_cut_to_window: list[CutCell] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=dict)
    prefix_cache: dict[str, PrefixCacheStats] = field(default_factory=dict)
    other_models: list[OtherModel] = field(default_factory=list)
    metrics: list[MetricRow] = field(default_factory=list)
    timings_s: dict[str, float] = field(default_factory=dict)
    wall_s: float | None = None
    versions: dict[str, str] = field(default_factory=dict)
    environment: EnvironmentRecord | None = None
    index_rebuilds: int | None = None
    approximate_indexes: dict[str, ApproximateIndex] | None = None
    planted: Planted | None = None
    examples_available: int | None = None
    data_scope: list[str] | None = None
    rgb_rates: list[RGBRates] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    absent: frozenset[str] = frozenset(_OPTIONAL)

    @property
    def model_id(self) -> str | None:
        """The model under test's id (``model.model_id``; ``None`` when the summary records none)."""
        model_id = self.model.model_id if self.model is not None else None
        return str(model_id) if model_id else None

    @property
    def accuracy_of_all_rows(self) -> bool:
        """Whether ``accuracy`` is the mean score of *all* rows: a summary written before
        ``closed_book_accuracy`` named the k = 0 rows apart (it lacks that field)."""
        return "closed_book_accuracy" in self.absent

    def top_numbers(self) -> dict[str, int | float]:
        """The numbers the JSON holds at its top level (``rows``, ``model_calls``, ``wall_s``, a
        newer version's or a plugin's count), in order; booleans are not numbers here."""
        return {
            k: v for k, v in self.to_dict().items() if isinstance(v, int | float) and not isinstance(v, bool)
        }

    def to_dict(self) -> dict[str, Any]:
        """The JSON object written to ``summary.json`` (fields in order, absent ones left out)."""
        out = {f.name: _plain(getattr(self, f.name)) for f in _FIELDS if f.name not in self.absent}
        return {**out, **self.extra}

    def with_fields(self, **values: Any) -> JobSummary:
        """A copy with ``values`` set (and written, even an optional field)."""
        return replace(self, **values, absent=self.absent - set(values))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JobSummary:
        """A summary as read from JSON, migrated to :data:`SUMMARY_VERSION` (:func:`migrate`)."""
        data = migrate(data)
        known = {f.name for f in _FIELDS}
        values = {k: v for k, v in data.items() if k in known}
        for name, read in _NESTED.items():
            if values.get(name) is not None:
                values[name] = read(values[name])
        return cls(
            **values,
            extra={k: v for k, v in data.items() if k not in known},
            absent=frozenset(known - set(data) - {"summary_version"}),
        )


def _plain(value: Any) -> Any:
    """A field's value as JSON holds it: nested records (and lists / dicts of them) as dicts."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


#: Field -> how its JSON value reads as its typed record(s).
_NESTED: dict[str, Callable[[Any], Any]] = {
    "generation_steps": lambda steps: [GenerationStep.from_dict(s) for s in steps],
    "prefix_cache": lambda per: {name: PrefixCacheStats.from_dict(s) for name, s in per.items()},
    "metrics": lambda rows: [MetricRow.from_dict(r) for r in rows],
    "environment": EnvironmentRecord.from_dict,
    "model": ModelRecord.from_dict,
    "example_set": ExampleSet.from_dict,
    "cells_short_of_k": lambda cells: [ShortCell.from_dict(c) for c in cells],
    "cells_cut_to_window": lambda cells: [CutCell.from_dict(c) for c in cells],
    "other_models": lambda models: [OtherModel.from_dict(m) for m in models],
    "approximate_indexes": lambda per: {name: ApproximateIndex.from_dict(i) for name, i in per.items()},
    "planted": Planted.from_dict,
    "rgb_rates": lambda rows: [RGBRates.from_dict(r) for r in rows],
}

#: The fields written to ``summary.json`` (not the bookkeeping ``extra`` and ``absent``).
_FIELDS = [f for f in fields(JobSummary) if f.name not in ("extra", "absent")]


# ----------------------------------------------------------------------------- migrations


def _from_version_0(data: dict[str, Any]) -> dict[str, Any]:
    """0 -> 1: a summary written before ``summary_version`` holds version 1's fields, some possibly
    absent (``closed_book_accuracy`` before the k = 0 rows were named apart: its ``accuracy`` is the
    mean of all rows, :attr:`JobSummary.accuracy_of_all_rows`); they stay absent."""
    return {"summary_version": 1, **data}


def _from_version_1(data: dict[str, Any]) -> dict[str, Any]:
    """1 -> 2: version 2 adds ``environment``; a version-1 summary has none (it stays absent:
    ``None``, which ``rr report`` shows as ``?``, no record)."""
    return {**data, "summary_version": 2}


def _from_version_2(data: dict[str, Any]) -> dict[str, Any]:
    """2 -> 3: version 3 adds ``public_model``; a version-2 summary has none (it stays absent: readers
    fall back to ``model.model_id``)."""
    return {**data, "summary_version": 3}


#: Version n -> the function that turns a version-n summary (its JSON object) into version n + 1.
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {
    0: _from_version_0,
    1: _from_version_1,
    2: _from_version_2,
}


def migrate(data: Mapping[str, Any]) -> dict[str, Any]:
    """A summary's JSON object brought to :data:`SUMMARY_VERSION`, one :data:`MIGRATIONS` step at a
    time (no ``summary_version``: version 0). A newer version than this rr knows is read as it is."""
    out = dict(data)
    version = out.get("summary_version", 0)
    while isinstance(version, int) and version in MIGRATIONS:
        out = MIGRATIONS[version](out)
        version = out["summary_version"]
    return out


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
