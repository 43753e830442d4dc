"""The query-level robustness analysis (arXiv 2507.06956, §5 and App. A): pure functions over tidy tables.

Inputs are a job's (or sweep's) score table (:func:`rr.results.load`) and its retrieval runs
with qrels (written by every job as ``runs/<retriever>.trec`` and ``qrels.trec``). Outputs are
tidy DataFrames; the ``*_table`` functions pivot them into the paper's layouts:

* :func:`retrieval_metrics` / :func:`job_retrieval_metrics`: Recall@k and Precision@k per
  (retriever, example, query variant) with ``ir_measures`` (pytrec_eval) from qrels and runs, and
  BERGEN's Recall@k (``bergen_recall@k``: ties and queries without hits as BERGEN's pytrec_eval call
  has them); :func:`retriever_table` averages them per perturbation like Table 4.
* :func:`with_setting` / :func:`match_table`: end-to-end "Match" per setting (closed-book,
  oracle, RAG with each retriever) and perturbation, as in Figs. 3, 4 and 9.
* :func:`module_deltas` / :func:`correlations` / :func:`correlation_table`: §5.4 — per perturbed
  sample, the change from its original in Recall@5, closed-book, oracle and RAG Match, and the
  Pearson coefficients RET–RAG, CB–RAG, OR–RAG with p-values (``scipy.stats.pearsonr``), laid
  out like Tables 2, 5 and 6.
* :func:`quality_report`: App. A.2 / Fig. 6 — perplexity of original and perturbed queries under
  a small LM and their cosine similarity to the original under an embedder.

A perturbation's *kind* is its tag without the variant number (``typo@0.25#3`` -> ``typo@0.25``,
``formal#2`` -> ``formal``); the paper averages the 5 variants of a kind.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rr.jobfolder import QRELS_FILE, RUNS_DIR
from rr.metrics.query_level import ORIGINAL, PAIRS, perturbation_kind
from rr.records import Hit
from rr.retrieval.qrels import Qrels, base_qid, read_qrels
from rr.retrieval.runs import read_trec_run


def _measure_name(measure: str, k: int) -> str:
    return f"{measure}@{k}"


def retrieval_metrics(
    runs: dict[str, dict[str, list[Hit]]], qrels: Qrels, ks: Sequence[int] = (5,)
) -> pd.DataFrame:
    """Recall@k and Precision@k of every query of every run, computed by ``ir_measures``, and
    BERGEN's Recall@k (the query-level study's retrieval metric) computed as BERGEN computes it.

    Two Recall@k, each under its own name, because two rules differ:

    * ``recall@k`` (rr's): hits in their rank order (the retriever's ranking, whatever its scores),
      and a query with no hits scores 0.
    * ``bergen_recall@k``: BERGEN's ``eval_retrieval_kilt`` (naver/bergen ``utils.py`` at 13fbd28):
      ``pytrec_eval`` on the retriever's *scores*, so documents with equal scores across the
      cut-off are ordered as trec_eval orders them (by docid, descending), and a query with no
      hits is not in the run and is left out of the mean (NaN here; BERGEN's mean is over the
      queries pytrec_eval returns).

    Args:
        runs: ``{retriever: {run qid: hits}}``; a run qid is ``<example id>`` or
            ``<example id>::<tag>`` and is judged with its example's qrels.
        qrels: ``{example id: {passage id: relevance}}`` (relevance > 0 is relevant).
        ks: Cut-offs.

    Returns:
        One row per (retriever, example_id, query_perturbation) whose example has qrels, with
        columns ``recall@k`` and ``precision@k`` per k (in [0, 1]), then ``bergen_recall@k`` per k
        (NaN for a query with no hits). Queries whose example has no qrels are left out (there is
        nothing to measure).
    """
    import ir_measures
    import pytrec_eval  # ir-measures' evaluator (pytrec-eval-terrier), the package BERGEN calls
    from ir_measures import P, R

    measures = [m @ k for k in ks for m in (R, P)]
    rows = []
    for retriever, run in runs.items():
        judged = {q: base_qid(q) for q in run if base_qid(q) in qrels}
        if not judged:
            continue
        ir_qrels = [ir_measures.Qrel(q, d, int(r)) for q, ex in judged.items() for d, r in qrels[ex].items()]
        ir_run = [ir_measures.ScoredDoc(q, h.passage_id, float(-h.rank)) for q in judged for h in run[q]]
        values: dict[str, dict[str, float]] = {q: {} for q in judged}
        for m in ir_measures.iter_calc(measures, ir_qrels, ir_run):
            name = "recall" if str(m.measure).startswith("R@") else "precision"
            values[m.query_id][_measure_name(name, int(m.measure["cutoff"]))] = float(m.value)
        bergen = _bergen_recall(run, judged, qrels, ks, pytrec_eval)
        for q, ex in judged.items():
            tag = q.split("::", 1)[1] if "::" in q else ORIGINAL
            row: dict[str, Any] = {"retriever": retriever, "example_id": ex, "query_perturbation": tag}
            for k in ks:  # a query with no hits gets no value from trec_eval: it scores 0
                for name in ("recall", "precision"):
                    row[_measure_name(name, k)] = values[q].get(_measure_name(name, k), 0.0)
            for k in ks:  # BERGEN leaves a query with no hits out of its mean
                row[_measure_name("bergen_recall", k)] = bergen.get(q, {}).get(f"recall_{k}", math.nan)
            rows.append(row)
    cols = (
        ["retriever", "example_id", "query_perturbation"]
        + [_measure_name(n, k) for k in ks for n in ("recall", "precision")]
        + [_measure_name("bergen_recall", k) for k in ks]
    )
    return pd.DataFrame(rows, columns=cols)


def _bergen_recall(
    run: dict[str, list[Hit]], judged: dict[str, str], qrels: Qrels, ks: Sequence[int], pytrec_eval: Any
) -> dict[str, dict[str, float]]:
    """Per-query ``recall_<k>`` as BERGEN's ``eval_retrieval_kilt`` (naver/bergen ``utils.py`` at
    13fbd28) computes it: a ``pytrec_eval.RelevanceEvaluator`` over the qrels, the run as
    ``{qid: {docid: score}}`` (a repeated docid keeps its highest score), a query only when it has a
    hit. Queries without hits are absent from the result."""
    qrel = {q: {d: int(r) for d, r in qrels[ex].items()} for q, ex in judged.items()}
    scored: dict[str, dict[str, float]] = {}
    for q in judged:
        for h in run[q]:
            docs = scored.setdefault(q, {})
            docs[h.passage_id] = max(float(h.score), docs.get(h.passage_id, -math.inf))
    if not scored:
        return {}
    evaluator = pytrec_eval.RelevanceEvaluator(qrel, {f"recall_{k}" for k in ks})
    return {q: {m: float(v) for m, v in per.items()} for q, per in evaluator.evaluate(scored).items()}


def job_retrieval_metrics(
    job_dirs: str | Path | Sequence[str | Path], ks: Sequence[int] = (5,), qrels: str | Path | None = None
) -> pd.DataFrame:
    """:func:`retrieval_metrics` of one or more job folders (``runs/*.trec`` + ``qrels.trec``).

    Args:
        job_dirs: Job output folder(s).
        ks: Cut-offs.
        qrels: A qrels file to use instead of each job's ``qrels.trec`` (e.g. BEIR qrels).

    Returns:
        The metrics with a ``job`` column (the folder name).

    Raises:
        FileNotFoundError: a job has no ``runs/`` folder, or no qrels (and none was given).
    """
    dirs = [job_dirs] if isinstance(job_dirs, (str, Path)) else list(job_dirs)
    frames = []
    for d in map(Path, dirs):
        qpath = Path(qrels) if qrels is not None else d / QRELS_FILE
        if not qpath.exists():
            raise FileNotFoundError(f"{qpath}: no qrels (the job's examples carry no gold; pass qrels=...)")
        run_files = sorted((d / RUNS_DIR).glob("*.trec"))
        if not run_files:
            raise FileNotFoundError(f"{d}/runs: no TREC run files")
        runs = {f.stem: read_trec_run(f) for f in run_files}
        df = retrieval_metrics(runs, read_qrels(qpath), ks)
        df.insert(0, "job", d.name)
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def _kind_order(kinds: Sequence[str]) -> list[str]:
    uniq = list(dict.fromkeys(kinds))
    return ([ORIGINAL] if ORIGINAL in uniq else []) + sorted(k for k in uniq if k != ORIGINAL)


def retriever_table(metrics: pd.DataFrame, measure: str = "recall@5", percent: bool = True) -> pd.DataFrame:
    """Table 4: mean ``measure`` per retriever (rows) and perturbation kind (columns, ``none`` first).

    Every variant of a kind counts once (the paper averages its 5 perturbed samples).
    """
    df = metrics.assign(kind=metrics["query_perturbation"].map(perturbation_kind))
    table = df.pivot_table(index="retriever", columns="kind", values=measure, aggfunc="mean")
    table = table[_kind_order(list(table.columns))]
    table.columns.name = None
    return table * 100 if percent else table


def with_setting(scores: pd.DataFrame, oracle: str = "oracle") -> pd.DataFrame:
    """The score table with a ``setting`` column: ``closed_book`` (k = 0), ``oracle`` (the oracle
    retriever's rows) or ``rag`` (every other retriever), and ``kind`` (perturbation kind)."""
    setting = np.where(
        scores["k"] == 0, "closed_book", np.where(scores["retriever"] == oracle, "oracle", "rag")
    )
    return scores.assign(setting=setting, kind=scores["query_perturbation"].map(perturbation_kind))


def match_table(
    scores: pd.DataFrame, k: int = 5, order: str = "original", oracle: str = "oracle"
) -> pd.DataFrame:
    """Figs. 3/4/9: mean Match per (generator, setting, retriever) and perturbation kind.

    Uses the closed-book rows and the rows of cut-off ``k`` in document ``order``.
    """
    df = with_setting(scores, oracle)
    df = df[(df["k"] == 0) | ((df["k"] == k) & (df["order"] == order))]
    table = df.pivot_table(
        index=["generator", "setting", "retriever"], columns="kind", values="score", aggfunc="mean"
    )
    table = table[_kind_order(list(table.columns))]
    table.columns.name = None
    return table


def correlations(deltas: pd.DataFrame) -> pd.DataFrame:
    """Pearson r (and two-sided p) of each module's change with the RAG change, per kind.

    Returns:
        Rows (kind, pair, r, p, n) with pair ``RET`` (retriever–RAG), ``CB`` (closed-book–RAG)
        or ``OR`` (oracle–RAG). ``r``/``p`` are NaN when undefined (fewer than 2 samples or a
        constant column), never a silent 0.
    """
    from scipy.stats import pearsonr

    rows = []
    for kind in _kind_order(list(deltas["kind"])):
        d = deltas[deltas["kind"] == kind]
        for pair, col in PAIRS.items():
            x, y = d[col].to_numpy(float), d["d_rag"].to_numpy(float)
            if len(d) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
                r, p = math.nan, math.nan
            else:
                res = pearsonr(x, y)
                r, p = float(res.statistic), float(res.pvalue)
            rows.append({"kind": kind, "pair": pair, "r": r, "p": p, "n": len(d)})
    return pd.DataFrame(rows, columns=["kind", "pair", "r", "p", "n"])


def correlation_table(corr: pd.DataFrame, value: str = "r") -> pd.DataFrame:
    """Table 2 layout: rows RET, CB, OR; one column per perturbation kind; cells ``value``."""
    table = corr.pivot(index="pair", columns="kind", values=value)
    table = table.loc[[p for p in PAIRS if p in table.index], _kind_order(list(table.columns))]
    table.index.name, table.columns.name = "type", None
    return table


def perplexities(
    texts: Sequence[str], model: str = "packaged:smollm2-135m-instruct", batch_size: int = 16
) -> np.ndarray:
    """Perplexity of each text under a causal LM: ``exp`` of the mean token negative log-likelihood.

    The text is scored as plain text (no chat template), with the tokenizer's BOS token when it
    has one; the first token is conditioned on BOS (or not scored when there is none). The model
    is loaded through rr's HF backend (``packaged:`` names work offline).
    """
    import torch

    from rr.generation.hf import HFGenerator

    gen = HFGenerator(model=model, device="cpu" if not torch.cuda.is_available() else None)
    lm, tok = gen.load(), gen.tokenizer
    out = np.zeros(len(texts), dtype=np.float64)
    bos = [tok.bos_token_id] if tok.bos_token_id is not None else []
    for start in range(0, len(texts), batch_size):
        chunk = list(texts[start : start + batch_size])
        for i, text in enumerate(chunk):
            ids = bos + tok(text, add_special_tokens=False)["input_ids"]
            x = torch.tensor([ids], device=lm.device)
            with torch.no_grad():
                logits = lm(x).logits[0, :-1].float()
            nll = torch.nn.functional.cross_entropy(logits, x[0, 1:], reduction="mean")
            out[start + i] = float(torch.exp(nll))
    return out


def quality_report(
    scores: pd.DataFrame,
    lm: str = "packaged:smollm2-135m-instruct",
    embedder: str = "packaged:all-MiniLM-L6-v2",
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fig. 6: perplexity and similarity to the original of every query variant.

    Args:
        scores: A score table (the ``question`` column holds each variant's text).
        lm: Causal LM for perplexity (the paper: GPT2-Large; default the packaged SmolLM2).
        embedder: sentence-transformers model for cosine similarity (the paper: multilingual-e5-base).

    Returns:
        ``(per_query, per_kind)``: one row per (example_id, query_perturbation) with ``question``,
        ``perplexity``, ``similarity`` (1.0 for originals); and the means per kind with
        ``perplexity_original`` (mean over the originals of the same examples) beside them.
    """
    from rr.perturbations.selection import cosine_to_original

    q = scores[["example_id", "query_perturbation", "question"]].drop_duplicates(
        ["example_id", "query_perturbation"]
    )
    orig = q[q["query_perturbation"] == ORIGINAL].set_index("example_id")["question"]
    missing = sorted(set(q["example_id"]) - set(orig.index))
    if missing:
        raise ValueError(f"quality_report: examples without an original query row: {missing[:5]}")
    q = q.assign(kind=q["query_perturbation"].map(perturbation_kind)).reset_index(drop=True)
    originals = orig.loc[q["example_id"]].tolist()
    q["perplexity"] = perplexities(q["question"].tolist(), lm)
    q["similarity"] = cosine_to_original(originals, q["question"].tolist(), embedder).astype(float)
    ppl_orig = q[q["query_perturbation"] == ORIGINAL].set_index("example_id")["perplexity"]
    rows = []
    for kind in _kind_order(list(q["kind"])):
        d = q[q["kind"] == kind]
        rows.append(
            {
                "kind": kind,
                "n": len(d),
                "perplexity": d["perplexity"].mean(),
                "perplexity_original": ppl_orig.loc[d["example_id"].unique()].mean(),
                "similarity": d["similarity"].mean(),
            }
        )
    return q, pd.DataFrame(rows)
