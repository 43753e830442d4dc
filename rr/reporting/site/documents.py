"""The documents stage: each row's documents as the example shards store them (a prefix of its
ranking, the ranking reversed, positions in it, or passage numbers), and the passages they show,
numbered (:class:`rr.reporting.site.passages.Passages`)."""

from __future__ import annotations

import array
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rr.reporting.loading import JobInfo
from rr.reporting.site.encoding import codes, id_lists, int_literals, large_text, list_literals, str_list
from rr.reporting.site.index import ScoreIndex
from rr.reporting.site.passages import Passages


@dataclass(frozen=True)
class Documents:
    """Each row's documents as the example shards store them (:func:`number_documents`), rows in
    :attr:`ScoreIndex.order <rr.reporting.site.index.ScoreIndex.order>`."""

    ref: np.ndarray  # per row: its ranking's index among its example's (-1: none)
    docs: pa.Array  # per row: the JSON of its documents
    ranked: list[str]  # per example: the JSON of its rankings' passage numbers
    passages: Passages  # the passages they show, numbered (their texts read and written later)


def document_titles(ranked: Sequence[str], titles: Sequence[str]) -> list[str]:
    """Per example: the distinct titles of the passages in its rankings (``ranked``: each example's
    JSON of lists of passage numbers), in order of first appearance, one per line; what the examples
    list's search box looks in for documents (their texts are too large to load with the list)."""
    out = []
    for lists in ranked:
        seen = dict.fromkeys(titles[p] for ranking in json.loads(lists) for p in ranking)
        out.append("\n".join(t for t in seen if t))
    return out


def number_documents(
    idx: ScoreIndex, jobs: Sequence[JobInfo], corpus_loader: Callable[[Path], Any] | None = None
) -> Documents:
    """Each row's documents as the example shards store them (:func:`_documents`), and the
    passages they show, numbered in a new :class:`Passages` of the ``jobs``' corpora."""
    passages = Passages(jobs, corpus_loader)
    ref, docs, ranked = _documents(idx, idx.order, passages)
    return Documents(ref, docs, ranked, passages)


def _documents(
    idx: ScoreIndex, order: np.ndarray, passages: Passages
) -> tuple[np.ndarray, pa.Array, list[str]]:
    """Each row's documents (rows in ``order``), as the example shards store them.

    A ranking is the longest ``original``-order k > 0 list of a (job, example, retriever,
    perturbations); an example's rankings are its ``ranked`` lists of passage numbers, in
    the order of their first such row. A row's documents are ``n`` when they are its
    ranking's first ``n`` (compared as ids), ``-n`` when they are those reversed,
    ``{"r": [positions in the ranking]}`` when they are all in it (a shuffled order), else the
    list of their passage numbers; ``0`` without documents.
    """
    df = idx.df
    n = len(order)
    n_ex = len(idx.examples)
    none = (np.full(n, -1, dtype=np.int64), int_literals(np.zeros(n, dtype=np.int64)), ["[]"] * n_ex)
    if "doc_ids" not in df.columns or not n:
        return none
    column, lens = id_lists(df["doc_ids"].to_numpy()[order])
    has = lens > 0
    if not has.any():
        return none
    flat = np.concatenate(list(column[has]))  # every row's ids, one after the other
    ids = flat.tolist()
    start = np.r_[0, np.cumsum(lens)[:-1]]
    job = codes(df, "job_id", order)
    job_names = str_list(df, "job_id", order)
    # the (job, example, retriever, perturbations) of each row, as one number
    key = idx.ex[order].astype(np.int64)
    for name in ("retriever", "query_perturbation", "doc_perturbation"):
        part = codes(df, name, order)
        key = key * (int(part.max()) + 1) + part
    key = key * (int(job.max()) + 1) + job
    _, rk = np.unique(key, return_inverse=True)
    original = (
        (df["order"].astype(str) == "original").to_numpy(dtype=bool, na_value=False)[order]
        if "order" in df.columns
        else np.zeros(n, dtype=bool)
    )
    cand = np.flatnonzero(original & (idx.k[order] > 0) & has)
    # per key: its first candidate row (the ranking's place) and its longest (the first longest)
    by_first = cand[np.unique(rk[cand], return_index=True)[1]]
    longest = cand[np.lexsort((cand, -lens[cand], rk[cand]))]
    longest = longest[np.r_[True, rk[longest][1:] != rk[longest][:-1]]]
    ranking_of = np.full(int(rk.max()) + 1, -1, dtype=np.int64)  # key -> its ranking's row
    ranking_of[rk[longest]] = longest
    place = np.full(len(ranking_of), -1, dtype=np.int64)  # key -> index among its example's
    first_rows = np.sort(by_first)  # rankings in the order of their first row
    ex_of = idx.ex[order][first_rows]
    place[rk[first_rows]] = np.arange(len(first_rows)) - np.searchsorted(ex_of, ex_of, "left")
    # the rankings' passages numbered all at once, in example order (the order pages use them)
    rank_rows = ranking_of[rk[first_rows]]
    rank_lens = lens[rank_rows]
    bounds = np.r_[0, np.cumsum(rank_lens)]
    gather = np.repeat(start[rank_rows] - bounds[:-1], rank_lens) + np.arange(bounds[-1])
    numbers = passages.number_runs([job_names[r] for r in rank_rows.tolist()], rank_lens, flat[gather])
    rankings = list_literals(numbers, bounds)  # "[n,n,...]" per ranking
    per_ex = np.r_[0, np.cumsum(np.bincount(ex_of, minlength=n_ex))]
    ranked = list_literals(rankings, per_ex).to_pylist()  # "[[...],[...]]" per example
    # each row against its ranking: as ids, the first id checked first (most rows differ there)
    row_ranking = ranking_of[rk]
    ref = np.where(has & (row_ranking >= 0), place[rk], -1)
    rstart = start[np.maximum(row_ranking, 0)]
    rlen = lens[np.maximum(row_ranking, 0)]
    with_ref = (ref >= 0) & (lens <= rlen)
    head = flat[np.where(has, start, 0)]
    prefix = with_ref & (head == flat[np.where(with_ref, rstart, 0)])
    reverse = with_ref & ~prefix & (head == flat[np.where(with_ref, rstart + lens - 1, 0)])
    count = np.zeros(n, dtype=np.int64)  # n / -n rows (0: none, or a list below)
    listed: list[int] = []  # rows whose documents are a list: positions or passage numbers
    listed_r: list[bool] = []  # positions in the ranking ({"r": [...]}) or passage numbers
    values = array.array("q")  # the lists, one after the other
    # a shuffled row's ids as positions in its ranking: looked up in a small dict (the
    # ranking's), not the corpus-wide one, and written as 1-2 digits each
    positions: dict[int, dict[Any, int]] = {}
    current_ex = -1
    rows = np.flatnonzero(has)
    for i, e, s, m, rs, rrow, pre, rev in zip(
        rows.tolist(),
        idx.ex[order][rows].tolist(),
        start[rows].tolist(),
        lens[rows].tolist(),
        rstart[rows].tolist(),
        row_ranking[rows].tolist(),
        prefix[rows].tolist(),
        reverse[rows].tolist(),
        strict=True,
    ):
        mine = ids[s : s + m]
        if pre or rev:
            best = ids[rs : rs + m]
            if pre and mine == best:
                count[i] = m
                continue
            if rev and mine == best[::-1]:
                count[i] = -m
                continue
        listed.append(i)
        if rrow >= 0:
            if e != current_ex:  # rows come example by example: keep only this one's rankings
                positions.clear()
                current_ex = e
            pos = positions.get(rrow)
            if pos is None:
                r0, rn = int(start[rrow]), int(lens[rrow])
                pos = positions[rrow] = dict(zip(ids[r0 : r0 + rn], range(rn), strict=True))
            before = len(values)
            try:
                values.extend(map(pos.__getitem__, mine))
                listed_r.append(True)
                continue
            except KeyError:  # a passage outside the ranking: the row's are numbered instead
                del values[before:]
        listed_r.append(False)
        values.extend(passages.numbers(job_names[i], mine))
    docs = int_literals(count)
    if listed:
        at = np.asarray(listed, dtype=np.int64)
        lists = list_literals(np.frombuffer(values, dtype=np.int64), np.r_[0, np.cumsum(lens[at])])
        is_r = pa.array(listed_r, pa.bool_())
        wrapped = pc.binary_join_element_wise(large_text('{"r":'), lists, large_text("}"), large_text(""))
        lists = pc.if_else(is_r, wrapped, lists)
        mask = np.zeros(n, dtype=bool)
        mask[at] = True
        docs = pc.replace_with_mask(docs, pa.array(mask), lists)
    return ref, docs, ranked
