"""One job: dataset -> retrieval (once, at max k) -> cells -> strategies -> judge -> score table.

See DESIGN.md ("The pipeline"). Everything a job writes goes to its output folder:
``scores.parquet`` (the score table), ``summary.json`` (counts, timings, metrics),
``retrieval.csv`` (answer recall per retriever and k) and ``config.yaml`` (resolved config).
"""

from __future__ import annotations

import json
import logging
import os
import platform
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from rr.atomic import atomic_write
from rr.config import instantiate, job_id, semantic_config
from rr.context import ORDERS, RankedDoc, order_indices
from rr.data.base import Corpus, DataError
from rr.errors import ConfigError, require_positive
from rr.generation.base import Generator
from rr.generation.cache import GenerationCache
from rr.generation.client import LLM
from rr.judges.base import JudgeItem
from rr.judges.normalize import has_answer_in
from rr.perturbations.base import QueryVariant, perturbation_columns
from rr.records import Example, Hit
from rr.results import varying, write_scores
from rr.retrieval.qrels import qrels_from_examples, write_qrels
from rr.retrieval.runs import RunCache, write_trec_run
from rr.runtime import Runtime
from rr.strategies.base import Cell, CellInput

log = logging.getLogger(__name__)


@dataclass
class JobResult:
    """What :func:`run_job` returns (and writes under ``output_dir``)."""

    scores: pd.DataFrame
    summary: dict[str, Any]
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


def grid_ks(cfg: DictConfig) -> tuple[list[int], bool]:
    """The positive k values of the grid (sorted, unique) and whether k = 0 cells are made."""
    ks = [int(k) for k in cfg.grid.k]
    if any(k < 0 for k in ks):
        raise ConfigError("grid.k", f"must be >= 0, got {ks}")
    return sorted({k for k in ks if k > 0}), bool(cfg.grid.closed_book) or 0 in ks


def check_grid(strategies: list[Any], ks: list[int], orders: list[str], closed_book: bool) -> None:
    """Raise :class:`ConfigError` if no strategy has a cell to run (e.g. ``grid.k=[]`` and
    ``grid.closed_book=false``): the job would write an empty score table."""
    if not any(build_cells(s, ["retriever"], ks, orders, closed_book) for s in strategies):
        raise ConfigError(
            "grid",
            f"the grid is empty (grid.k={ks}, grid.orders={orders}, grid.closed_book=false): give grid.k "
            "and grid.orders at least one value each, or set grid.closed_book=true",
        )


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
    strategy: Any, retrievers: list[str], ks: list[int], orders: list[str], closed_book: bool
) -> list[Cell]:
    """The cells a strategy is evaluated on: k = 0 (if enabled), then retriever x k x order."""
    cells = [Cell("none", 0, "none")] if closed_book or not getattr(strategy, "uses_retrieval", True) else []
    if getattr(strategy, "uses_retrieval", True):
        cells += [Cell(r, k, o) for r in retrievers for k in ks for o in orders]
    return cells


def run_job(
    cfg: DictConfig,
    output_dir: str | Path,
    make_llm: Callable[[Generator, GenerationCache], LLM] | None = None,
) -> JobResult:
    """Run one job described by a composed ``rr`` config; write and return its results.

    ``make_llm`` replaces the :class:`LLM` built around the generator (``rr plan`` passes a
    planning stand-in that counts requests and calls no model).
    """
    t_start = time.perf_counter()
    require_positive("flush_every", cfg.get("flush_every", 64))
    output_dir = writable_dir(output_dir, "paths.output_root")
    writable_dir(cfg.paths.cache_dir, "paths.cache_dir")
    jid = job_id(cfg)
    watch = Stopwatch()
    show = bool(cfg.get("progress", True))
    ks, closed_book = grid_ks(cfg)
    orders = list(cfg.grid.orders)
    for o in orders:
        if o not in ORDERS:
            raise ConfigError("grid.orders", f"unknown order {o!r}; known: {', '.join(ORDERS)}")
    (output_dir / "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True))

    logger = instantiate(cfg.logger) if cfg.get("logger") else None
    rt: Runtime | None = None
    try:
        # Every component is instantiated (and so its config checked) before any data or model loads.
        dataset = instantiate(cfg.dataset)
        corpus_source = instantiate(cfg.corpus) if ks else None
        query_pert = instantiate(cfg.perturbation.query)
        doc_pert = instantiate(cfg.perturbation.doc)
        retrievers = {key: instantiate(node) for key, node in (cfg.retriever or {}).items()} if ks else {}
        strategies = [instantiate(node) for node in cfg.strategy.values()]
        if not strategies:
            raise ConfigError(
                "strategy",
                "no strategy selected: set strategy=vanilla (or a list: strategy=[vanilla,closed_book])",
            )
        check_grid(strategies, ks, orders, closed_book)
        generator = instantiate(cfg.generator)
        judge = instantiate(cfg.judge)
        with watch.stage("load_data"):
            examples = dataset.load()
            if not examples:
                raise DataError(f"dataset {dataset.name!r} produced no examples")
            corpus: Corpus = corpus_source.load() if corpus_source is not None else Corpus([], name="none")

        cache = GenerationCache(cfg.paths.cache_dir, generator.identity(), writer=jid)
        if make_llm is not None:
            llm = make_llm(generator, cache)
        else:
            llm = LLM(
                generator,
                cache,
                flush_every=int(cfg.get("flush_every", 64)),
                show_progress=show,
                strict_window=bool(cfg.get("strict_window", False)),
            )
        rt = Runtime(llm, Path(cfg.paths.cache_dir), seed=int(cfg.seed), job_id=jid, show_progress=show)
        # a filtering dataset (mini's answerable filter) reports what it kept: counters dataset:*
        for what, n in (getattr(dataset, "filter_counts", None) or {}).items():
            rt.count(f"dataset:{what}", n)

        with watch.stage("query_variants"):
            variants = query_pert.variants(examples, rt)
        _check_variants(variants, examples)

        # Retrieve once per retriever and query variant at max(k); every k and order is a slice.
        runs: dict[str, dict[str, list[Hit]]] = {}
        recall: dict[str, dict[str, dict[int, float]]] = {}
        run_cache = RunCache(cfg.paths.cache_dir)
        if ks and not retrievers:
            raise ConfigError(
                "retriever", f"grid.k has k > 0 ({ks}) but no retriever is selected (retriever=[bm25])"
            )
        with watch.stage("retrieve"):
            names = [r.name for r in retrievers.values()]
            if len(set(names)) != len(names):
                raise ValueError(
                    f"two selected retrievers share a name: {names}; set retriever.<option>.name"
                )
            for retriever in retrievers.values():
                if hasattr(retriever, "bind_examples"):  # gold-based retrievers (oracle)
                    retriever.bind_examples(examples, corpus)
                runs[retriever.name] = run_cache.retrieve(
                    retriever,
                    corpus,
                    [variant_qid(v) for v in variants],
                    [v.example.question for v in variants],
                    max(ks),
                    index_dir=cfg.paths.cache_dir,
                )
                recall[retriever.name] = {
                    tag: answer_recall(
                        [v.example for v in variants if v.tag == tag],
                        {
                            v.example.id: runs[retriever.name][variant_qid(v)]
                            for v in variants
                            if v.tag == tag
                        },
                        corpus,
                        ks,
                    )
                    for tag in dict.fromkeys(v.tag for v in variants)
                }

        rows: list[dict[str, Any]] = []
        ranked: dict[tuple[str, str], list[RankedDoc]] = {}  # every cell slices the same ranked docs
        for strategy in strategies:
            cells = build_cells(strategy, list(runs), ks, orders, closed_book)
            inputs = [
                CellInput(
                    v.example,
                    Cell(c.retriever, c.k, c.order, v.tag, doc_pert.name),
                    _docs_for(v, c, runs, corpus, int(cfg.seed), ranked),
                )
                for c in cells
                for v in variants
            ]
            with watch.stage(f"perturb_docs:{strategy.name}"):
                inputs = doc_pert.apply(inputs, rt)
            log.info(
                "strategy %s: %d cells x %d query variants = %d inputs",
                strategy.name,
                len(cells),
                len(variants),
                len(inputs),
            )
            with watch.stage(f"generate:{strategy.name}"):
                outputs = strategy.run(inputs, rt)
            with watch.stage(f"judge:{strategy.name}"):
                judgments = judge.judge(
                    [
                        JudgeItem(
                            i.example.question, o.prediction, i.example.answers, i.example.answer_groups
                        )
                        for i, o in zip(inputs, outputs, strict=True)
                    ],
                    rt,
                )
            for inp, out, jd in zip(inputs, outputs, judgments, strict=True):
                ex, c = inp.example, inp.cell
                rows.append(
                    {
                        "example_id": ex.id,
                        "dataset": dataset.name,
                        "generator": generator.name,
                        "strategy": strategy.name,
                        "retriever": c.retriever,
                        "k": c.k,
                        "order": c.order,
                        "query_perturbation": c.query_perturbation,
                        "doc_perturbation": c.doc_perturbation,
                        **perturbation_columns(c.query_perturbation, c.doc_perturbation),
                        "n_docs_given": len(inp.docs),
                        "n_docs_used": len(out.docs_used),
                        "prediction": out.prediction,
                        "raw_output": out.raw_output,
                        "score": float(jd.score),
                        "judge": jd.judge,
                        "refused": bool(jd.refused),
                        "job_id": jid,
                        "seed": int(cfg.seed),
                        "question": ex.question,
                        "answers": list(ex.answers),
                        "doc_ids": [d.passage.id for d in out.docs_used],
                        "answer_in_docs": bool(out.docs_used)
                        and has_answer_in((d.passage.text for d in out.docs_used), ex.answers),
                        "marker_found": out.marker_found,
                        "over_window": out.over_window,
                        **inp.extra,
                        **jd.extra,
                        **out.extra,
                    }
                )
        for other in rt.all_llms:  # backend retries and failures (e.g. the openai backend's)
            for name, n in getattr(other.generator, "counters", {}).items():
                rt.count(f"{other.generator.name}:{name}", n)
        scores = pd.DataFrame(rows)
        _warn_over_window(scores, rt)
        with watch.stage("write"):
            write_scores(scores, output_dir)
            recall_table = pd.DataFrame(
                [
                    {"retriever": r, "query_perturbation": tag, "k": k, "answer_recall": v}
                    for r, per_tag in recall.items()
                    for tag, per_k in per_tag.items()
                    for k, v in per_k.items()
                ]
            )
            with atomic_write(output_dir / "retrieval.csv") as f:
                recall_table.to_csv(f, index=False)
            # The job's TREC runs and qrels, for Recall@k / Precision@k (rr.analysis.query_level).
            for name, run in runs.items():
                write_trec_run(output_dir / "runs" / f"{name}.trec", run, tag=name)
            if runs and (qrels := qrels_from_examples(examples, corpus)):
                write_qrels(output_dir / "qrels.trec", qrels)
            summary = _summary(cfg, jid, scores, examples, rt, run_cache, recall, watch, t_start)
            summary["index_rebuilds"] = sum(getattr(r, "index_rebuilds", 0) for r in retrievers.values())
            # approximate dense indexes opened by this job: spec, parameters, recall@k vs exact
            if approx := {
                r.name: r.index_info for r in retrievers.values() if getattr(r, "index_info", None)
            }:
                summary["approximate_indexes"] = approx
            with atomic_write(output_dir / "summary.json") as f:
                f.write(json.dumps(summary, indent=1, default=str))
        if logger is not None:
            logger.log_job(jid, semantic_config(cfg), summary, scores, str(output_dir))
        return JobResult(scores, summary, output_dir)
    finally:
        if rt is not None:
            rt.close()
        if logger is not None:
            logger.finish()


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


def summary_groups(scores: pd.DataFrame) -> list[str]:
    """Columns the job summary's robustness table groups by: system and strategy, plus every
    perturbation column that varies within the job (a query perturbation keeps the original
    queries beside their variants, so each cell has one row per variant)."""
    return ["generator", "strategy", *varying(scores, ("query_perturbation", "doc_perturbation"))]


def _summary(
    cfg: DictConfig,
    jid: str,
    scores: pd.DataFrame,
    examples: list[Example],
    rt: Runtime,
    run_cache: RunCache,
    recall: dict[str, dict[str, dict[int, float]]],
    watch: Stopwatch,
    t_start: float,
) -> dict[str, Any]:
    import torch
    import transformers

    from rr.metrics.robustness import robustness_table

    metrics: list[dict[str, Any]] = []
    rag = scores[scores["k"] > 0]
    if len(rag) and (scores["k"] == 0).any() and rag["k"].nunique() >= 2:
        by = summary_groups(scores)
        table = robustness_table(scores, by=by, per_retriever=True)
        metrics = table.to_dict(orient="records")
        if table["retriever"].nunique() > 1:  # the paper's figure: averaged over retrievers
            avg = robustness_table(scores, by=by).rename(columns={"retrievers": "retriever"})
            avg["retriever"] = "mean(" + avg["retriever"].astype(str) + ")"
            metrics += avg.to_dict(orient="records")
    llm = rt.llm
    stats = asdict(llm.stats)
    # A strategy that shows fewer documents on purpose (S2A's selection) reports what its first
    # prompt held in ``n_docs_shown``; only window fitting counts as truncation, measured against
    # the documents the strategy was given (a composing doc perturbation may give fewer than k).
    shown = (
        scores["n_docs_shown"].fillna(scores["n_docs_used"])
        if "n_docs_shown" in scores
        else scores["n_docs_used"]
    )
    truncated = int(((scores["k"] > 0) & (shown < scores["n_docs_given"])).sum())
    return {
        "job_id": jid,
        "name": cfg.get("name"),
        "model": llm.identity,
        "examples": len(examples),
        "rows": len(scores),
        "cells": int(scores.groupby(["strategy", "retriever", "k", "order"]).ngroups),
        "requests": stats["requests"],
        "unique_requests": stats["unique_requests"],
        "model_calls": stats["model_calls"],
        "cache_hits": stats["cache_hits"],
        "prompt_tokens_generated_for": stats["prompt_tokens"],
        "completion_tokens": stats["completion_tokens"],
        "generation_steps": stats["steps"],
        "cache_torn_lines": sum(m.cache.torn_lines for m in rt.all_llms),
        "retrieval_runs_cached": run_cache.hits,
        "retrieval_runs_computed": run_cache.misses,
        "retrieval_runs_rebuilt": run_cache.rebuilt,
        "answer_extraction_fallbacks": int((~scores["marker_found"] & ~scores["over_window"]).sum()),
        "rows_truncated_to_fit_window": truncated,
        "rows_over_window": int(scores["over_window"].sum()),
        "prompts_over_window": sum(other.stats.over_window for other in rt.all_llms),
        "accuracy": float(scores["score"].mean()),
        "answer_recall": {
            r: {str(k): round(v, 4) for k, v in per_tag.get("none", next(iter(per_tag.values()))).items()}
            for r, per_tag in recall.items()
            if per_tag
        },
        "counters": dict(sorted(rt.counters.items())),
        # vLLM: prompt tokens looked up in / found in its prefix cache during this job
        "prefix_cache": {
            other.generator.name: stats
            for other in rt.all_llms
            if callable(prefix_stats := getattr(other.generator, "prefix_cache_stats", None))
            and (stats := prefix_stats()) is not None
        },
        "other_models": [
            {"model": other.identity, **{k: v for k, v in asdict(other.stats).items() if k != "steps"}}
            for other in rt.all_llms[1:]
        ],
        "metrics": metrics,
        "timings_s": watch.seconds,
        "wall_s": round(time.perf_counter() - t_start, 3),
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
        },
    }
