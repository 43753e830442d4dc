"""SURE §2: the oracle score, the oracle retriever and the preliminary K-S experiment.

* :func:`oracle_scores` (eq. 1): the summed log-probability of the gold answer's tokens given
  the RAG prompt, averaged over the answer variants.
* :func:`oracle_rerank`: the *oracle retriever* — a first-stage retrieval reranked by the oracle
  score of each document shown alone in the prompt. Cost: one forward pass per (example,
  document, answer variant), i.e. ``n_examples x depth x n_answers`` prompts of one document
  each (SURE: 100 documents per NQ-open question); nothing is generated. It is a function, not a
  ``retriever`` option, because it needs the gold answers: the retriever protocol sees only the
  query text, and an evaluation retriever must never see gold answers.
* :func:`preliminary_experiment` (§2.3): among the golden documents (those containing a gold
  answer) of each query, the oracle's first- vs last-ranked document (experimental group) and
  two randomly drawn ones (control group); :func:`document_features` measures Flesch reading
  ease, Distinct-1, dependency-tree depth, perplexity and token length, and :func:`ks_table`
  compares the two sets of each group with two-sample Kolmogorov-Smirnov tests (Tables 3-4).
* :func:`plot_feature_distributions`: Fig. 6 (feature histograms of both groups).

Everything returns pandas DataFrames; nothing here writes files except the plot.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from rr.answers import has_answer
from rr.data.base import Corpus, DataError
from rr.generation.base import Closable
from rr.hashing import rng_for
from rr.prompts import render
from rr.records import Example, Hit, Passage, Request

log = logging.getLogger(__name__)

FEATURES = ("flesch", "distinct_1", "dtd", "ppl", "token_length")
#: Feature names as printed in Tables 3-4.
FEATURE_LABELS = {
    "flesch": "Flesch score",
    "distinct_1": "Distinct-1",
    "dtd": "DTD",
    "ppl": "PPL",
    "token_length": "Token Length",
}


# ----------------------------------------------------------------------------- oracle score


def oracle_prompt(generator: Any, template: str, doc: Passage, question: str, doc_format: str) -> str:
    """The rendered RAG prompt ``P = (I, G, Q)`` with one document (the model's chat template
    applied), whose continuation the oracle score measures."""
    source = doc_format.format(title=doc.title, text=doc.text).strip()
    request = Request.user(render(template, sources=[source], question=question), generator.default_params())
    return generator.render(request)


def oracle_scores(generator: Any, prompts: Sequence[str], answers: Sequence[Sequence[str]]) -> list[float]:
    """SURE eq. 1 per prompt: ``sum_t log p(y_t | x, y_<t)``, averaged over the answer variants.

    Args:
        generator: A backend with ``score_continuations`` (:class:`rr.generation.hf.HFGenerator`).
        prompts: Rendered prompts.
        answers: The gold answer variants of each prompt (at least one each).

    Returns:
        One score (<= 0; higher = the documents make the gold answer more likely) per prompt.
        All (prompt, answer) pairs are scored in one batched call.
    """
    if len(prompts) != len(answers):
        raise ValueError(f"{len(prompts)} prompts but {len(answers)} answer lists")
    flat_p, flat_a, owner = [], [], []
    for i, (p, alts) in enumerate(zip(prompts, answers, strict=True)):
        alts = [a for a in alts if a.strip()]
        if not alts:
            raise ValueError(f"oracle score: prompt {i} has no non-empty gold answer")
        flat_p += [p] * len(alts)
        flat_a += alts
        owner += [i] * len(alts)
    scores = generator.score_continuations(flat_p, flat_a)
    sums = np.zeros(len(prompts))
    counts = np.zeros(len(prompts))
    np.add.at(sums, owner, scores)
    np.add.at(counts, owner, 1)
    return (sums / counts).tolist()


def oracle_rerank(
    generator: Any,
    examples: Sequence[Example],
    runs: dict[str, list[Hit]],
    corpus: Corpus,
    template: str = "sure_qa.j2",
    doc_format: str = "{title}\n{text}",
    golden_only: bool = False,
) -> dict[str, list[Hit]]:
    """The oracle retriever: each example's first-stage hits reranked by oracle score.

    Args:
        generator: The model whose preferences the oracle reflects (``score_continuations``).
        examples: Queries with gold answers.
        runs: First-stage hits per example id (e.g. a dense retriever's top 100).
        corpus: Passages by id.
        template: RAG prompt template (one document per prompt).
        doc_format: How the document appears in the prompt.
        golden_only: Keep only documents containing a gold answer (SURE §2.3 filters the rest).

    Returns:
        Example id -> hits sorted by oracle score (descending; ties keep first-stage order),
        ranks renumbered 1.., ``score`` = the oracle score.
    """
    items: list[tuple[str, Hit]] = []
    prompts: list[str] = []
    answers: list[list[str]] = []
    for ex in examples:
        for h in runs[ex.id]:
            doc = corpus[h.passage_id]
            if golden_only and not has_answer(doc.text, ex.answers):
                continue
            items.append((ex.id, h))
            prompts.append(oracle_prompt(generator, template, doc, ex.question, doc_format))
            answers.append(list(ex.answers))
    scores = oracle_scores(generator, prompts, answers) if prompts else []
    per: dict[str, list[tuple[float, int, Hit]]] = {ex.id: [] for ex in examples}
    for (qid, h), s in zip(items, scores, strict=True):
        per[qid].append((s, h.rank, h))
    out = {}
    for qid, scored in per.items():
        scored.sort(key=lambda t: (-t[0], t[1]))
        out[qid] = [Hit(h.passage_id, r, float(s)) for r, (s, _, h) in enumerate(scored, start=1)]
    return out


# ----------------------------------------------------------------------------- features


def flesch_reading_ease(text: str) -> float:
    """Flesch reading ease (``textstat`` 0.7.8; higher = easier; ~0-100 for ordinary text)."""
    import textstat

    return float(textstat.flesch_reading_ease(text))


def distinct_1(tokens: Sequence[str]) -> float:
    """Distinct-1: unique tokens / tokens (case-folded); ``nan`` for no tokens."""
    if not tokens:
        return float("nan")
    folded = [t.lower() for t in tokens]
    return len(set(folded)) / len(folded)


def dependency_tree_depth(doc: Any) -> int:
    """Maximum over the sentences of a spaCy ``Doc`` of its dependency tree's depth.

    Depth counts nodes on the longest root-to-leaf path (a one-word sentence has depth 1);
    0 for an empty document.
    """

    def depth(token: Any) -> int:
        return 1 + max((depth(c) for c in token.children), default=0)

    return max((depth(s.root) for s in doc.sents), default=0)


def perplexities(generator: Any, texts: Sequence[str]) -> list[float]:
    """Perplexity of each text under a causal LM: ``exp(-mean log p(token))`` over its tokens.

    The first token is conditioned on the tokenizer's BOS (else EOS) token.
    """
    tok = generator.tokenizer
    start = tok.bos_token or tok.eos_token
    lps = generator.score_continuations([start] * len(texts), list(texts))
    lengths = generator.count_tokens(list(texts))
    return [float(np.exp(-lp / n)) for lp, n in zip(lps, lengths, strict=True)]


def document_features(
    texts: Sequence[str], lm: Any | None = None, tokenizer_model: Any | None = None
) -> pd.DataFrame:
    """The five SURE §2.3 features of each text.

    Args:
        texts: Documents.
        lm: Backend for perplexity (``score_continuations``); ``None`` leaves ``ppl`` NaN.
        tokenizer_model: Backend whose tokenizer counts ``token_length`` (the model under
            test: the value is model-specific); ``None`` uses ``lm``, else NaN.

    Returns:
        Columns ``flesch``, ``distinct_1`` (over spaCy tokens without punctuation and spaces),
        ``dtd``, ``ppl``, ``token_length``; one row per text.
    """
    from rr.perturbations.sentences import spacy_pipeline

    docs = list(spacy_pipeline().pipe(list(texts), batch_size=64))
    counter = tokenizer_model or lm
    return pd.DataFrame(
        {
            "flesch": [flesch_reading_ease(t) for t in texts],
            "distinct_1": [distinct_1([t.text for t in d if not (t.is_punct or t.is_space)]) for d in docs],
            "dtd": [dependency_tree_depth(d) for d in docs],
            "ppl": perplexities(lm, texts) if lm is not None else [float("nan")] * len(texts),
            "token_length": counter.count_tokens(list(texts))
            if counter is not None
            else [float("nan")] * len(texts),
        }
    )


# ----------------------------------------------------------------------------- K-S tests


@dataclass(frozen=True)
class KSResult:
    """A two-sample Kolmogorov-Smirnov test (``scipy.stats.ks_2samp``, two-sided)."""

    statistic: float
    pvalue: float
    n1: int
    n2: int

    @property
    def stars(self) -> str:
        """``***`` p < 0.001, ``**`` p < 0.01, ``*`` p < 0.05, else ``""`` (Tables 3-4)."""
        return significance_stars(self.pvalue)


def significance_stars(p: float) -> str:
    """``***`` p < 0.001, ``**`` p < 0.01, ``*`` p < 0.05, else ``""``."""
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else ""


def ks_test(a: Sequence[float], b: Sequence[float]) -> KSResult:
    """Two-sided two-sample K-S test of ``a`` vs ``b`` (NaNs removed).

    Raises:
        ValueError: a sample is empty after removing NaNs.
    """
    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    x, y = x[~np.isnan(x)], y[~np.isnan(y)]
    if not len(x) or not len(y):
        raise ValueError(f"K-S test needs two non-empty samples, got sizes {len(x)} and {len(y)}")
    res = stats.ks_2samp(x, y)
    return KSResult(float(res.statistic), float(res.pvalue), len(x), len(y))


def ks_table(features: pd.DataFrame, feature_names: Sequence[str] = FEATURES) -> pd.DataFrame:
    """Tables 3-4: per feature, the K-S test between the two sets of each group.

    Args:
        features: Rows of :func:`preliminary_experiment` (columns ``group`` in
            {``experimental``, ``control``}, ``set`` in {``a``, ``b``}, and the features).
        feature_names: Features to test (those with only NaN values are skipped).

    Returns:
        Index: feature labels (``Flesch score``...); columns ``(group, statistic | p_value |
        stars | n)`` for the groups present, experimental first.
    """
    groups = [g for g in ("experimental", "control") if g in set(features["group"])]
    rows = {}
    for f in feature_names:
        if f not in features or features[f].isna().all():
            continue
        row: dict[tuple[str, str], Any] = {}
        for g in groups:
            part = features[features["group"] == g]
            r = ks_test(part.loc[part["set"] == "a", f], part.loc[part["set"] == "b", f])
            row.update(
                {
                    (g, "statistic"): r.statistic,
                    (g, "p_value"): r.pvalue,
                    (g, "stars"): r.stars,
                    (g, "n"): r.n1,
                }
            )
        rows[FEATURE_LABELS.get(f, f)] = row
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.columns = pd.MultiIndex.from_tuples(table.columns, names=["group", "value"])
    return table


# ----------------------------------------------------------------------------- the experiment


def preliminary_experiment(
    generator: Any,
    examples: Sequence[Example],
    runs: dict[str, list[Hit]],
    corpus: Corpus,
    seed: int = 0,
    template: str = "sure_qa.j2",
    doc_format: str = "{title}\n{text}",
    ppl_model: Any | None = None,
    max_answer_tokens: int | None = 5,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """SURE §2.3: features of the oracle's first- vs last-ranked golden documents, and a control.

    For each example with at least two golden documents among its first-stage hits (documents
    without a gold answer are filtered out), the oracle retriever (:func:`oracle_rerank`) ranks
    the golden ones; set ``a`` = the first-ranked, ``b`` = the last-ranked (experimental group).
    The control group draws two distinct golden documents at random (seeded by
    ``(seed, example id)``) as sets ``a`` and ``b``.

    Args:
        generator: The model under test (oracle scores and token lengths).
        examples: Queries; with ``max_answer_tokens``, only those whose every answer has fewer
            than that many tokens are kept (SURE footnote 1: answers of fewer than 5 tokens).
        runs: First-stage hits per example id.
        corpus: Passages by id.
        seed: Seed of the control group's draws.
        template: RAG prompt template of the oracle (one document per prompt).
        doc_format: How the document appears in the prompt.
        ppl_model: Backend for perplexity (a small LM; ``None``: ``generator``).
        max_answer_tokens: See ``examples``; ``None`` keeps every example.

    Returns:
        ``(features, ks)``: one row per (example, group, set) with ``passage_id``,
        ``oracle_score`` (NaN in the control group) and the five features; and
        :func:`ks_table` of it.
    """
    if max_answer_tokens is not None:
        examples = [
            ex
            for ex in examples
            if ex.answers and max(generator.count_tokens(list(ex.answers))) < max_answer_tokens
        ]
    ranked = oracle_rerank(generator, examples, runs, corpus, template, doc_format, golden_only=True)
    rows = []
    for ex in examples:
        hits = ranked[ex.id]
        if len(hits) < 2:
            continue
        rows.append(
            {
                "example_id": ex.id,
                "group": "experimental",
                "set": "a",
                "passage_id": hits[0].passage_id,
                "oracle_score": hits[0].score,
            }
        )
        rows.append(
            {
                "example_id": ex.id,
                "group": "experimental",
                "set": "b",
                "passage_id": hits[-1].passage_id,
                "oracle_score": hits[-1].score,
            }
        )
        first_stage = [h.passage_id for h in runs[ex.id] if h.passage_id in {x.passage_id for x in hits}]
        i, j = rng_for(seed, ex.id, "sure:control").choice(len(first_stage), size=2, replace=False)
        rows.append(
            {
                "example_id": ex.id,
                "group": "control",
                "set": "a",
                "passage_id": first_stage[int(i)],
                "oracle_score": float("nan"),
            }
        )
        rows.append(
            {
                "example_id": ex.id,
                "group": "control",
                "set": "b",
                "passage_id": first_stage[int(j)],
                "oracle_score": float("nan"),
            }
        )
    table = pd.DataFrame(rows, columns=["example_id", "group", "set", "passage_id", "oracle_score"])
    if table.empty:
        raise DataError("no example has two golden documents among its hits: nothing to compare")
    feats = document_features(
        [corpus[p].text for p in table["passage_id"]], lm=ppl_model or generator, tokenizer_model=generator
    )
    table = pd.concat([table.reset_index(drop=True), feats], axis=1)
    return table, ks_table(table)


def plot_feature_distributions(features: pd.DataFrame, path: str | Path, title: str = "") -> Path:
    """Fig. 6: per feature, histograms of sets ``a`` (first-ranked) and ``b`` (last-ranked) for
    the experimental group (top row) and the control group (bottom row). Writes ``path`` (PNG/PDF)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    feats = [f for f in FEATURES if f in features and not features[f].isna().all()]
    groups = [g for g in ("experimental", "control") if g in set(features["group"])]
    fig, axes = plt.subplots(
        len(groups), len(feats), figsize=(3.2 * len(feats), 2.8 * len(groups)), squeeze=False
    )
    labels = {"experimental": ("first-ranked", "last-ranked"), "control": ("random 1", "random 2")}
    for r, g in enumerate(groups):
        part = features[features["group"] == g]
        for c, f in enumerate(feats):
            ax = axes[r][c]
            values = part[f].astype(float)
            bins = np.histogram_bin_edges(values.dropna(), bins=20)
            for s, lab in zip(("a", "b"), labels[g], strict=True):
                ax.hist(part.loc[part["set"] == s, f].astype(float).dropna(), bins=bins, alpha=0.5, label=lab)
            ax.set_title(f"{g}: {FEATURE_LABELS[f]}", fontsize=9)
            if c == 0:
                ax.legend(fontsize=7)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path)
    plt.close(fig)
    return path


def preliminary_from_config(cfg: Any, output_dir: str | Path, depth: int = 100) -> pd.DataFrame:
    """Run :func:`preliminary_experiment` for a composed ``rr`` config and write its outputs.

    Uses the config's dataset, corpus, *first* retriever (the first stage, retrieved once at
    ``depth`` through the run cache), generator (the oracle; it must have
    ``score_continuations``: ``generator=hf`` or ``vllm``), its first strategy's ``template`` and
    ``doc_format``, and ``seed``. Writes ``features.csv``, ``ks.csv`` and ``fig6.png`` under
    ``output_dir``.

    Returns:
        The K-S table (Tables 3-4).
    """
    from rr.config.instantiation import instantiate
    from rr.preflight import check_resources
    from rr.retrieval.runs import RunCache

    check_resources(cfg)
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    examples = instantiate(cfg.dataset).load()
    corpus = instantiate(cfg.corpus).load()
    retriever = instantiate(next(iter(cfg.retriever.values())))
    strategy = next(iter(cfg.strategy.values()))
    runs = RunCache(cfg.paths.cache_dir).retrieve(
        retriever,
        corpus,
        [ex.id for ex in examples],
        [ex.question for ex in examples],
        depth,
        index_dir=cfg.paths.cache_dir,
    )
    usable = sum(
        sum(has_answer(corpus[h.passage_id].text, ex.answers) for h in runs[ex.id]) >= 2 for ex in examples
    )
    if usable == 0:  # checked before the oracle model loads and scores every pair
        raise DataError(
            f"sure-prelim: none of the {len(examples)} examples has two golden documents (passages "
            f"holding a gold answer) among its top {depth} hits, so there is nothing to compare; raise "
            f"dataset.n (e.g. dataset.n=100), --depth, or corpus.max_passages"
        )
    log.info("sure-prelim: %d of %d examples have two golden documents in their hits", usable, len(examples))
    generator = instantiate(cfg.generator)
    try:
        features, ks = preliminary_experiment(
            generator,
            examples,
            runs,
            corpus,
            seed=int(cfg.seed),
            template=strategy.get("template", "sure_qa.j2"),
            doc_format=strategy.get("doc_format", "{title}\n{text}"),
        )
    finally:  # vLLM's engine process must be shut down or the interpreter never exits
        if isinstance(generator, Closable):
            generator.close()
    features.to_csv(out / "features.csv", index=False)
    ks.to_csv(out / "ks.csv")
    plot_feature_distributions(features, out / "fig6.png", title=f"{generator.name}: oracle retriever")
    return ks
