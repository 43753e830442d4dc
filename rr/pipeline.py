"""One job: dataset -> retrieval (once, at max k) -> cells -> strategies -> judge -> score table.

See docs/design.md ("The pipeline"). Everything a job writes goes to its output folder:
``scores.parquet`` (the score table), ``summary.json`` (counts, timings, metrics),
``retrieval.csv`` (answer recall per retriever and k) and ``config.yaml`` (resolved config).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from rr.answers import has_answer_in
from rr.atomic import atomic_write
from rr.config.identity import job_id, resolved_config
from rr.config.instantiation import instantiate, instantiate_as
from rr.config.settings import JobSettings, job_settings
from rr.context import ORDERS, RankedDoc, order_indices
from rr.data.base import Corpus, DataError, Dataset, FilteringDataset, SampledDataset
from rr.data.rgb import file_language
from rr.errors import ConfigError, require_positive
from rr.generation.base import (
    ChecksStrategies,
    CountingBackend,
    Generator,
    PlantsValues,
)
from rr.generation.cache import GenerationCache
from rr.generation.client import LLM
from rr.job_env import plan_command
from rr.jobfolder import (
    QRELS_FILE,
    RETRIEVAL_FILE,
    RUNS_DIR,
    SUMMARY_FILE,
    JobSummary,
    Planted,
    ShortCell,
    is_started,
    write_config,
    write_summary,
)
from rr.judges.base import Judge, JudgeItem
from rr.perturbations.base import DocPerturbation, QueryPerturbation, QueryVariant
from rr.prompts.answer import scored_text
from rr.records import Example, Hit
from rr.results import example_key, example_set, score_row, write_scores
from rr.retrieval.base import ExampleAwareRetriever, Retriever
from rr.retrieval.qrels import qrels_from_examples, write_qrels
from rr.retrieval.runs import RunCache, write_trec_run
from rr.runtime import Runtime
from rr.strategies.base import Cell, CellInput, Strategy
from rr.summary import DataScope, build_summary, planted_summary, summary_groups

log = logging.getLogger(__name__)


@dataclass
class JobResult:
    """What :func:`run_job` returns (and writes under ``output_dir``)."""

    scores: pd.DataFrame
    summary: JobSummary
    output_dir: Path


class Stopwatch:
    """Wall time per named stage, for ``summary.json``."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        log.info("stage %s ...", name)
        try:
            yield
        finally:
            self.seconds[name] = round(self.seconds.get(name, 0.0) + time.perf_counter() - t0, 3)


def check_grid(strategies: list[Strategy], ks: list[int], orders: list[str], closed_book: bool) -> None:
    """Raise :class:`ConfigError` if no strategy has a cell to run (e.g. ``grid.k=[]`` and
    ``grid.closed_book=false``): the job would write an empty score table."""
    if not any(build_cells(s, ["retriever"], ks, orders, closed_book) for s in strategies):
        raise ConfigError(
            "grid",
            f"the grid is empty (grid.k={ks}, grid.orders={orders}, grid.closed_book=false): give grid.k "
            "and grid.orders at least one value each, or set grid.closed_book=true",
        )


def unfillable_ks(ks: list[int], n_passages: int) -> list[int]:
    """The grid's k > 0 values a corpus of ``n_passages`` cannot fill (each would hold every passage)."""
    return [k for k in ks if k > n_passages]


def check_ks_fit(ks: list[int], corpus: Corpus) -> None:
    """Refuse a grid k larger than the corpus before the job starts: its rows would hold all
    ``len(corpus)`` passages, the same documents as a smaller k under another label.

    Raises:
        ConfigError: one line naming each such k, what it would hold and the ``grid.k`` that runs.
    """
    n = len(corpus)
    over = unfillable_ks(ks, n)
    if not over or not n:
        return
    fits = [k for k in ks if k <= n] or [n]
    listed = ", ".join(f"k={k}" for k in over)
    raise ConfigError(
        "grid.k",
        f"corpus {corpus.name!r} has {n} passages, so {listed} cannot be filled: each would hold the same "
        f"{n} passages under a larger label; run grid.k=[{','.join(map(str, fits))}] or a larger corpus",
    )


def short_cells(
    run: dict[str, list[Hit]], variants: list[QueryVariant], retriever: str, ks: list[int]
) -> list[ShortCell]:
    """The (k, query perturbation) cells of one retriever in which it returned fewer than k
    documents for some queries (``summary.json`` ``cells_short_of_k``): how many, of how many, and
    the fewest it returned."""
    out = []
    tags = list(dict.fromkeys(v.tag for v in variants))
    for tag in tags:
        found = [len(run[variant_qid(v)]) for v in variants if v.tag == tag]
        for k in ks:
            short = [n for n in found if n < k]
            if short:
                out.append(ShortCell(retriever, k, tag, len(found), len(short), min(short)))
    return out


def writable_dir(path: str | Path, key: str) -> Path:
    """Create folder ``path`` if needed and check that it can be written.

    Raises:
        ConfigError: naming ``key`` (e.g. ``paths.cache_dir``) and the path, if it cannot be.
    """
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(key, f"cannot create {path} ({e.strerror}); choose a folder you can write") from e
    if not os.access(path, os.W_OK | os.X_OK):
        raise ConfigError(key, f"cannot write {path} (permission denied); choose a folder you can write")
    return path


def answer_recall(
    examples: list[Example], runs: dict[str, list[Hit]], corpus: Corpus, ks: list[int]
) -> dict[int, float]:
    """Cao et al. Fig. 3: share of examples whose gold answer occurs in the concatenated top-k."""
    out = {}
    for k in ks:
        found = [
            has_answer_in((corpus[h.passage_id].text for h in runs[ex.id][:k]), ex.answers) for ex in examples
        ]
        out[k] = sum(found) / len(found) if found else 0.0
    return out


def build_cells(
    strategy: Strategy, retrievers: list[str], ks: list[int], orders: list[str], closed_book: bool
) -> list[Cell]:
    """The cells a strategy is evaluated on: k = 0 (if enabled), then retriever x k x order."""
    cells = [Cell("none", 0, "none")] if closed_book or not strategy.uses_retrieval else []
    if strategy.uses_retrieval:
        cells += [Cell(r, k, o) for r in retrievers for k in ks for o in orders]
    return cells


def planned_cells(cfg: DictConfig) -> pd.DataFrame:
    """The cells a job of ``cfg`` writes score rows for, with the columns that name its setting, without
    loading data or models: one row per (strategy, query variant, cell) with ``dataset``, ``strategy``,
    ``retriever``, ``k``, ``order``, ``query_perturbation``, ``doc_perturbation`` and ``n_docs_given``
    (the documents a composing doc perturbation hands over, ``n``, else k), and a strategy's own columns
    (``planned_columns``: ``strategy=rgb``'s ``instruction``). Strategies and perturbations
    are instantiated (cheap; their names and tags are theirs to say); the dataset's name is its
    ``name`` setting where given. A query perturbation's variants are its ``tag(1..n)`` beside the
    originals. What the paper values' generated test composes a paper's runs into (issue 42)."""
    settings = job_settings(cfg)
    strategies = [
        instantiate_as(node, Strategy, f"strategy.{key}") for key, node in (cfg.strategy or {}).items()
    ]
    retrievers = (
        [str(node.get("name") or key) for key, node in (cfg.retriever or {}).items()] if settings.ks else []
    )
    dataset = cfg.dataset.get("name") or instantiate(cfg.dataset).name
    query = instantiate_as(cfg.perturbation.query, QueryPerturbation, "perturbation.query")
    doc = instantiate_as(cfg.perturbation.doc, DocPerturbation, "perturbation.doc")
    tags = ["none"]
    if hasattr(query, "tag") and int(getattr(query, "n", 0) or 0) > 0:
        tags += [query.tag(i) for i in range(1, int(query.n) + 1)]
    n_docs = getattr(doc, "n", None) if doc.name != "none" else None
    language = _planned_language(cfg.dataset)
    rows = []
    for strategy in strategies:
        # a strategy's own columns (strategy=rgb: the instruction its language gives, RGB's Chinese one)
        own = strategy.planned_columns(language) if hasattr(strategy, "planned_columns") else {}
        for cell in build_cells(strategy, retrievers, settings.ks, settings.orders, settings.closed_book):
            for tag in tags:
                rows.append(
                    {
                        **own,
                        "dataset": str(dataset),
                        "strategy": strategy.name,
                        "retriever": cell.retriever,
                        "k": cell.k,
                        "order": cell.order,
                        "query_perturbation": tag,
                        "doc_perturbation": doc.name if cell.k > 0 else "none",
                        "n_docs_given": 0 if cell.k == 0 else int(n_docs or cell.k),
                    }
                )
    return pd.DataFrame(rows)


def _planned_language(dataset: DictConfig) -> str | None:
    """The language a dataset config gives its examples (``dataset.language``; ``auto``: the RGB
    file's name, :func:`rr.data.rgb.file_language`), ``None`` where it names none or no file yet."""
    language = dataset.get("language")
    if language is None:
        return None
    if language != "auto":
        return str(language)
    return None if OmegaConf.is_missing(dataset, "path") else file_language(str(dataset.path))


@dataclass(frozen=True)
class JobPlan:
    """What a job runs, checked before anything is built: its id, folders and grid."""

    cfg: DictConfig
    settings: JobSettings
    job_id: str
    output_dir: Path
    ks: list[int]  # positive k values, sorted
    closed_book: bool
    orders: list[str]
    seed: int
    show_progress: bool


@dataclass
class Components:
    """Every component of a job, instantiated (so their configs are checked) before data or models load."""

    dataset: Dataset
    corpus_source: Any  # a corpus config's object (``load() -> Corpus``); None without retrieval
    query_perturbation: QueryPerturbation
    doc_perturbation: DocPerturbation
    retrievers: dict[str, Retriever]
    strategies: list[Strategy]
    generator: Generator
    judge: Judge


@dataclass
class Retrieval:
    """The retrieve step's output: one ranked list per (retriever, query variant) at max k."""

    runs: dict[str, dict[str, list[Hit]]]  # retriever name -> variant qid -> hits
    recall: dict[str, dict[str, dict[int, float]]]  # retriever -> variant tag -> k -> answer recall
    cache: RunCache
    short: list[ShortCell] = field(default_factory=list)  # cells with fewer than k documents


def run_job(
    cfg: DictConfig,
    output_dir: str | Path,
    make_llm: Callable[[Generator, GenerationCache], LLM] | None = None,
    resuming: bool | None = None,
) -> JobResult:
    """Run one job described by a composed ``rr`` config; write and return its results.

    The steps, each a function below: plan (check the grid and folders) -> build the components ->
    load the data -> the runtime (model under test, caches) -> query variants -> retrieve -> per
    strategy: cells, document perturbation, generation, judging, score rows -> write the outputs.

    ``make_llm`` replaces the :class:`LLM` built around the generator (``rr plan`` passes a
    planning stand-in that counts requests and calls no model). ``resuming``: an earlier run of this
    job was cut off (``None``: its folder has a ``config.yaml`` and no ``summary.json``); each
    generation step then says how many of its requests that run left in the cache.
    """
    from rr.job_env import set_progress
    from rr.papers.settings import stand_in_line
    from rr.preflight import check_resources

    t_start = time.perf_counter()
    settings = job_settings(cfg)  # the stage settings, typed, read once
    set_progress(settings.progress)  # in process too: progress=false draws no bar
    check_resources(cfg)  # a missing model, dataset or file: one line now, not after minutes of work
    if (line := stand_in_line(cfg.get("experiment"))) is not None:
        log.info("%s", line)
    if resuming is None:
        resuming = is_started(output_dir) and not Path(output_dir, SUMMARY_FILE).exists()
    plan = plan_job(cfg, settings, output_dir)
    watch = Stopwatch()
    logger = instantiate(cfg.logger) if cfg.get("logger") else None
    rt: Runtime | None = None
    try:
        parts = build_components(cfg, plan)
        with watch.stage("load_data"):
            examples, corpus = load_data(parts)
        check_ks_fit(plan.ks, corpus)  # before any model loads: k=10 of 5 passages is not k=10
        scope = data_scope(cfg, parts.dataset, examples, corpus)
        for line in scope.lines:  # how much of the data this job runs, and who decided
            log.info("%s", line)
        rt = make_runtime(plan, parts, make_llm)
        rt.llm.resuming = resuming
        with watch.stage("query_variants"):
            variants = query_variants(parts.query_perturbation, examples, rt)
        with watch.stage("retrieve"):
            retrieval = retrieve(parts.retrievers, examples, variants, corpus, plan)
        rows: list[dict[str, Any]] = []
        ranked: dict[tuple[str, str], list[RankedDoc]] = {}  # every cell slices the same ranked docs
        keys = {ex.id: example_key(ex.question, ex.answers) for ex in examples}  # of the originals
        for strategy in parts.strategies:
            inputs = cell_inputs(strategy, variants, retrieval, corpus, plan, parts.doc_perturbation, ranked)
            rows += run_strategy(strategy, inputs, parts, plan, rt, watch, keys)
        scores = pd.DataFrame(rows)
        count_backend_events(rt)
        _warn_over_window(scores, rt)
        planted = None
        if isinstance(parts.generator, PlantsValues) and rt.llm.calls_model and len(scores):
            with watch.stage("planted"):  # the simulated reader: true values beside the measured
                drawn = parts.generator.planted_scores(scores, examples, corpus)
                planted = planted_summary(drawn, scores, summary_groups(scores)) if drawn else None
        with watch.stage("write"):
            summary = write_outputs(
                JobOutputs(
                    scores, examples, corpus, retrieval, parts, plan, rt, watch, t_start, planted, scope
                )
            )
        if logger is not None:
            logger.log_job(plan.job_id, resolved_config(cfg), summary, scores, str(plan.output_dir))
        return JobResult(scores, summary, plan.output_dir)
    finally:
        if rt is not None:
            rt.close()
        if logger is not None:
            logger.finish()


def data_scope(cfg: DictConfig, dataset: Dataset, examples: list[Example], corpus: Corpus) -> DataScope:
    """The job's :class:`DataScope`: a subset of the user's data never goes unsaid (CONVENTIONS 13)."""
    from rr.config.origin import experiment_settings, setting_origin

    def shown(value: Any) -> str:  # as on the command line: null, [1, 2, 3], [original, reversed]
        if isinstance(value, list | tuple):
            return "[" + ", ".join(shown(v) for v in value) + "]"
        return "null" if value is None else str(value)

    def because(key: str) -> str:
        origin = setting_origin(key)
        return f"{key}={shown(OmegaConf.select(cfg, key))}" + (f" {origin}" if origin else "")

    n = OmegaConf.select(cfg, "dataset.n")
    available = dataset.available if isinstance(dataset, SampledDataset) else None
    if available is None:
        line = f"examples: {len(examples)}" + (f" ({because('dataset.n')})" if n is not None else "")
    elif len(examples) < available:
        line = f"examples: {len(examples)} of {available} ({because('dataset.n')}; dataset.n=null runs all)"
    else:
        line = f"examples: {len(examples)} of {available} (all)"
    lines = [line]
    if len(corpus):
        cap = OmegaConf.select(cfg, "corpus.max_passages")
        lines.append(
            f"corpus: {len(corpus)} passages" + (f" ({because('corpus.max_passages')})" if cap else "")
        )
    if (settings := experiment_settings(cfg)) is not None and settings[1]:
        name, values = settings
        listed = ", ".join(f"{k}={shown(v)}" for k, v in values.items())
        lines.append(f"experiment={name} sets {listed} (override any on the command line)")
    return DataScope(len(examples), available, lines)


def plan_job(cfg: DictConfig, settings: JobSettings, output_dir: str | Path) -> JobPlan:
    """Check the stage settings and folders, write the resolved ``config.yaml``; nothing is built yet."""
    require_positive("flush_every", settings.flush_every)
    out = writable_dir(output_dir, "paths.output_root")
    writable_dir(settings.cache_dir, "paths.cache_dir")
    orders = settings.orders
    for o in orders:
        if o not in ORDERS:
            raise ConfigError("grid.orders", f"unknown order {o!r}; known: {', '.join(ORDERS)}")
    write_config(out, cfg)
    return JobPlan(
        cfg,
        settings,
        job_id(cfg),
        out,
        settings.ks,
        settings.closed_book,
        orders,
        settings.seed,
        settings.progress,
    )


def build_components(cfg: DictConfig, plan: JobPlan) -> Components:
    """Instantiate every component (its config is checked against its protocol) before any data or
    model loads. Retrievers and the corpus are built only when the grid has k > 0."""
    strategies = [
        instantiate_as(node, Strategy, f"strategy.{key}") for key, node in (cfg.strategy or {}).items()
    ]
    if not strategies:
        raise ConfigError(
            "strategy",
            "no strategy selected: set strategy=vanilla (or a list: strategy=[vanilla,closed_book])",
        )
    retrievers = (
        {
            key: instantiate_as(node, Retriever, f"retriever.{key}")
            for key, node in (cfg.retriever or {}).items()
        }
        if plan.ks
        else {}
    )
    if plan.ks and not retrievers:
        raise ConfigError(
            "retriever", f"grid.k has k > 0 ({plan.ks}) but no retriever is selected (retriever=[bm25])"
        )
    names = [r.name for r in retrievers.values()]
    if len(set(names)) != len(names):
        raise ConfigError(
            "retriever", f"two selected retrievers share a name: {names}; set retriever.<option>.name"
        )
    components = Components(
        dataset=instantiate_as(cfg.dataset, Dataset, "dataset"),
        corpus_source=instantiate(cfg.corpus) if plan.ks else None,
        query_perturbation=instantiate_as(cfg.perturbation.query, QueryPerturbation, "perturbation.query"),
        doc_perturbation=instantiate_as(cfg.perturbation.doc, DocPerturbation, "perturbation.doc"),
        retrievers=retrievers,
        strategies=strategies,
        generator=instantiate_as(cfg.generator, Generator, "generator"),
        judge=instantiate_as(cfg.judge, Judge, "judge"),
    )
    check_grid(strategies, plan.ks, plan.orders, plan.closed_book)
    if isinstance(components.generator, ChecksStrategies):  # the simulated reader: readable prompts only
        components.generator.check_strategies(strategies)
    return components


def load_data(parts: Components) -> tuple[list[Example], Corpus]:
    """The dataset's examples and the corpus (an empty one for a closed-book-only job)."""
    examples = parts.dataset.load()
    if not examples:
        raise DataError(f"dataset {parts.dataset.name!r} produced no examples")
    corpus = parts.corpus_source.load() if parts.corpus_source is not None else Corpus([], name="none")
    return examples, corpus


def make_runtime(
    plan: JobPlan,
    parts: Components,
    make_llm: Callable[[Generator, GenerationCache], LLM] | None,
) -> Runtime:
    """The model under test behind its generation cache, and what the job's components share."""
    s = plan.settings
    cache = GenerationCache(s.cache_dir, parts.generator.identity(), writer=plan.job_id)
    if make_llm is not None:
        llm = make_llm(parts.generator, cache)
    else:
        llm = LLM(
            parts.generator,
            cache,
            flush_every=s.flush_every,
            show_progress=plan.show_progress,
            strict_window=s.strict_window,
            warn_after_s=None if s.cpu_warn_minutes is None else 60.0 * s.cpu_warn_minutes,
            plan_hint=plan_command(),
        )
    rt = Runtime(llm, Path(s.cache_dir), seed=plan.seed, job_id=plan.job_id, show_progress=plan.show_progress)
    if isinstance(parts.dataset, FilteringDataset):  # mini's answerable filter: counters dataset:*
        for what, n in parts.dataset.filter_counts.items():
            rt.count(f"dataset:{what}", n)
    return rt


def query_variants(
    perturbation: QueryPerturbation, examples: list[Example], rt: Runtime
) -> list[QueryVariant]:
    """The query variants of the examples (the originals alone for ``perturbation/query=none``), checked."""
    variants = perturbation.variants(examples, rt)
    _check_variants(variants, examples)
    return variants


def retrieve(
    retrievers: dict[str, Retriever],
    examples: list[Example],
    variants: list[QueryVariant],
    corpus: Corpus,
    plan: JobPlan,
) -> Retrieval:
    """Retrieve once per retriever and query variant at max(k) (every k and order is a slice of it),
    through the TREC run cache; answer recall per retriever, variant tag and k."""
    cache_dir = plan.settings.cache_dir
    out = Retrieval({}, {}, RunCache(cache_dir))
    tags = list(dict.fromkeys(v.tag for v in variants))
    for retriever in retrievers.values():
        if isinstance(retriever, ExampleAwareRetriever):  # gold-based retrievers (oracle)
            retriever.bind_examples(examples, corpus)
        run = out.cache.retrieve(
            retriever,
            corpus,
            [variant_qid(v) for v in variants],
            [v.example.question for v in variants],
            max(plan.ks),
            index_dir=cache_dir,
        )
        out.runs[retriever.name] = run
        for cell in short_cells(run, variants, retriever.name, plan.ks):
            out.short.append(cell)
            log.warning(
                "retriever %s returned fewer than k=%d documents for %d of %d queries (query perturbation "
                "%s; fewest %d): those rows of k=%d hold fewer documents (n_docs_given)",
                cell.retriever,
                cell.k,
                cell.queries_short,
                cell.queries,
                cell.query_perturbation,
                cell.fewest,
                cell.k,
            )
        out.recall[retriever.name] = {
            tag: answer_recall(
                [v.example for v in variants if v.tag == tag],
                {v.example.id: run[variant_qid(v)] for v in variants if v.tag == tag},
                corpus,
                plan.ks,
            )
            for tag in tags
        }
    return out


def cell_inputs(
    strategy: Strategy,
    variants: list[QueryVariant],
    retrieval: Retrieval,
    corpus: Corpus,
    plan: JobPlan,
    doc_perturbation: DocPerturbation,
    ranked: dict[tuple[str, str], list[RankedDoc]],
) -> list[CellInput]:
    """Every (cell, query variant) input of a strategy, its documents sliced and ordered."""
    cells = build_cells(strategy, list(retrieval.runs), plan.ks, plan.orders, plan.closed_book)
    return [
        CellInput(
            v.example,
            Cell(c.retriever, c.k, c.order, v.tag, doc_perturbation.name),
            _docs_for(v, c, retrieval.runs, corpus, plan.seed, ranked),
        )
        for c in cells
        for v in variants
    ]


def run_strategy(
    strategy: Strategy,
    inputs: list[CellInput],
    parts: Components,
    plan: JobPlan,
    rt: Runtime,
    watch: Stopwatch,
    keys: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Perturb the documents, generate, judge: the strategy's score-table rows (``keys``: each
    example id's :func:`~rr.results.example_key`, of its original question)."""
    with watch.stage(f"perturb_docs:{strategy.name}"):
        inputs = parts.doc_perturbation.apply(inputs, rt)
    log.info(
        "strategy %s: %d inputs (cells x query variants; a cell = one retriever, k and document order, "
        "or k = 0 without documents)",
        strategy.name,
        len(inputs),
    )
    with watch.stage(f"generate:{strategy.name}"):
        outputs = strategy.run(inputs, rt)
    if plan.settings.scored_text != "extracted":  # the text the paper's scorer reads (scoring.text)
        text = plan.settings.scored_text
        outputs = [replace(o, prediction=scored_text(o.raw_output, o.prediction, text)) for o in outputs]
    with watch.stage(f"judge:{strategy.name}"):
        judgments = parts.judge.judge(
            [JudgeItem.of(i.example, o.prediction) for i, o in zip(inputs, outputs, strict=True)], rt
        )
    return [
        score_row(
            inp,
            out,
            jd,
            dataset=parts.dataset.name,
            generator=parts.generator.name,
            strategy=strategy.name,
            job_id=plan.job_id,
            seed=plan.seed,
            key=keys.get(inp.example.id) if keys else None,
        )
        for inp, out, jd in zip(inputs, outputs, judgments, strict=True)
    ]


def count_backend_events(rt: Runtime) -> None:
    """Add each backend's own counters (e.g. the openai backend's retries) to the job's."""
    for other in rt.all_llms:
        if isinstance(other.generator, CountingBackend):
            for name, n in other.generator.counters.items():
                rt.count(f"{other.generator.name}:{name}", n)


@dataclass
class JobOutputs:
    """What a job hands to :func:`write_outputs`: its score table and the steps' results."""

    scores: pd.DataFrame
    examples: list[Example]
    corpus: Corpus
    retrieval: Retrieval
    parts: Components
    plan: JobPlan
    rt: Runtime
    watch: Stopwatch
    t_start: float
    planted: Planted | None = None  # a simulated reader's planted values (summary ``planted``)
    scope: DataScope | None = None


def write_outputs(o: JobOutputs) -> JobSummary:
    """Write ``scores.parquet``, ``retrieval.csv``, the TREC runs and qrels and ``summary.json``
    (last: a job is done when it exists); return the summary."""
    out = o.plan.output_dir
    write_scores(o.scores, out)
    recall_table = pd.DataFrame(
        [
            {"retriever": r, "query_perturbation": tag, "k": k, "answer_recall": v}
            for r, per_tag in o.retrieval.recall.items()
            for tag, per_k in per_tag.items()
            for k, v in per_k.items()
        ]
    )
    with atomic_write(out / RETRIEVAL_FILE) as f:
        recall_table.to_csv(f, index=False)
    # The job's TREC runs and qrels, for Recall@k / Precision@k (rr.analysis.query_level).
    for name, run in o.retrieval.runs.items():
        write_trec_run(out / RUNS_DIR / f"{name}.trec", run, tag=name)
    if o.retrieval.runs and (qrels := qrels_from_examples(o.examples, o.corpus)):
        write_qrels(out / QRELS_FILE, qrels)
    summary = build_summary(
        name=o.plan.settings.name,
        job_id=o.plan.job_id,
        scores=o.scores,
        examples=len(o.examples),
        rt=o.rt,
        run_cache=o.retrieval.cache,
        recall=o.retrieval.recall,
        retrievers=list(o.parts.retrievers.values()),
        timings=o.watch.seconds,
        t_start=o.t_start,
        planted=o.planted,
        scope=o.scope,
        example_set=example_set([example_key(ex.question, ex.answers) for ex in o.examples]),
        cells_short_of_k=o.retrieval.short,
    )
    write_summary(out, summary)
    return summary


def variant_qid(v: QueryVariant) -> str:
    """The query id of a variant in TREC runs: the example id, plus ``::tag`` when perturbed."""
    return v.example.id if v.tag == "none" else f"{v.example.id}::{v.tag}"


def _check_variants(variants: list[QueryVariant], examples: list[Example]) -> None:
    known = {ex.id for ex in examples}
    seen: set[str] = set()
    for v in variants:
        if v.example.id not in known:
            raise ValueError(f"query perturbation produced a variant of unknown example {v.example.id!r}")
        qid = variant_qid(v)
        if qid in seen:
            raise ValueError(f"query perturbation produced two variants tagged {v.tag!r} of {v.example.id!r}")
        seen.add(qid)
    if not variants:
        raise ValueError("query perturbation produced no query variants")


def _docs_for(
    v: QueryVariant,
    cell: Cell,
    runs: dict[str, dict[str, list[Hit]]],
    corpus: Corpus,
    seed: int,
    ranked: dict[tuple[str, str], list[RankedDoc]],
) -> tuple[RankedDoc, ...]:
    """The cell's documents in prompt order; ``ranked`` memoizes each run's documents."""
    ex = v.example
    if cell.k == 0:
        return ()
    key = (cell.retriever, variant_qid(v))
    if key not in ranked:
        ranked[key] = [RankedDoc(corpus[h.passage_id], h.rank) for h in runs[cell.retriever][key[1]]]
    top = ranked[key][: cell.k]
    return tuple(top[i] for i in order_indices(len(top), cell.order, seed, ex.id, cell.k))


def _warn_over_window(scores: pd.DataFrame, rt: Runtime) -> None:
    """One warning per job for rows whose prompt did not fit the context window (not sent)."""
    over = scores[scores["over_window"]]
    if len(over):
        ex = over.iloc[0]
        log.warning(
            "%d of %d rows have a prompt longer than the context window (%d tokens) minus "
            "max_new_tokens: not sent, empty prediction, over_window=true (e.g. example %r, "
            "strategy %s, k=%d); strict_window=true fails the job instead",
            len(over),
            len(scores),
            rt.llm.context_window,
            ex["example_id"],
            ex["strategy"],
            ex["k"],
        )
