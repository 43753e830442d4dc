"""The oracle retriever: only the gold passages (the query-level paper's "oracle" setting, §5.3).

"In oracle experiments, the existence of an 'oracle' retrieval system is assumed to return only
correct documents and nothing else." As a retriever option it makes the oracle setting a cell
like any other (``retriever=[bm25,dense,oracle]``), on the same (perturbed) queries: the
perturbation changes only the question the model sees, never the documents.
"""

from __future__ import annotations

from collections.abc import Sequence

from rr.data.base import Corpus, DataError
from rr.hashing import content_hash
from rr.records import Example, Hit
from rr.registry import component
from rr.retrieval.qrels import Qrels, base_qid, gold_passage_ids, read_qrels


@component("retriever", "oracle")
class OracleRetriever:
    """Returns each query's gold passages (at most k), most relevant first, then in corpus order.

    Args:
        qrels: A TREC or BEIR qrels file (BEIR datasets); ``None`` = the examples' own gold
            (``meta["gold_ids"]`` or ``meta["gold_titles"]``, e.g. the mini dataset).
        min_relevance: Judgments below this are not gold.
        name: Name in run files and the score table's ``retriever`` column.

    The pipeline calls :meth:`bind_examples` before retrieval and :meth:`search_qids` instead of
    ``search`` (the gold depends on the example, not on the query text). An example without any
    gold passage in the corpus is an error (the oracle setting is undefined for it).
    """

    def __init__(self, qrels: str | None = None, min_relevance: int = 1, name: str = "oracle") -> None:
        self.qrels_path = qrels
        self.min_relevance = int(min_relevance)
        self.name = name
        self._gold: dict[str, list[tuple[str, int]]] = {}

    def bind_examples(self, examples: Sequence[Example], corpus: Corpus) -> None:
        """Resolve every example's gold passages (ids in ``corpus``), ranked by relevance."""
        file_qrels: Qrels | None = read_qrels(self.qrels_path) if self.qrels_path else None
        order = {p.id: i for i, p in enumerate(corpus.passages)}
        gold: dict[str, list[tuple[str, int]]] = {}
        missing = []
        for ex in examples:
            if file_qrels is not None:
                judged = {d: r for d, r in file_qrels.get(ex.id, {}).items() if r >= self.min_relevance}
            else:
                judged = dict.fromkeys(gold_passage_ids(ex, corpus) or [], 1)
            docs = sorted(
                ((d, r) for d, r in judged.items() if d in corpus), key=lambda x: (-x[1], order[x[0]])
            )
            if not docs:
                missing.append(ex.id)
            gold[ex.id] = docs
        if missing:
            src = self.qrels_path or "meta gold_ids / gold_titles"
            raise DataError(
                f"oracle retriever: {len(missing)} examples have no gold passage in corpus {corpus.name!r} "
                f"(source: {src}), e.g. {missing[:5]}"
            )
        self._gold = gold

    def index(self, corpus: Corpus, cache_dir: str | None = None) -> None:
        """Nothing to index (the gold is resolved by :meth:`bind_examples`)."""

    def search_qids(self, qids: list[str], queries: list[str], k: int) -> list[list[Hit]]:
        """Gold hits per run query id (``<example id>[::<tag>]``); the query text is not used."""
        out = []
        for qid in qids:
            ex_id = base_qid(qid)
            if ex_id not in self._gold:
                raise KeyError(f"oracle retriever: no gold bound for {qid!r} (call bind_examples first)")
            out.append([Hit(d, r, float(rel)) for r, (d, rel) in enumerate(self._gold[ex_id][:k], 1)])
        return out

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        raise TypeError("the oracle retriever needs example ids: use search_qids(qids, queries, k)")

    def fingerprint(self) -> dict:
        """The resolved gold (so a changed qrels file or corpus gets its own run)."""
        return {
            "retriever": "oracle",
            "min_relevance": self.min_relevance,
            "gold": content_hash(sorted(self._gold.items()), 16),
        }
