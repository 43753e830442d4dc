"""The site build's first stage: the score table indexed (:func:`index_scores` returns a
:class:`ScoreIndex`): examples, systems, cells, (example, system) list rows, each row's score
characters, the rows in example order and each example's original question. The later stages
read it and return their own records; none changes it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rr.analysis.intervals import system_by
from rr.reporting.registry import system_label
from rr.reporting.site.encoding import as_list
from rr.reporting.site.format import System
from rr.results import example_key

#: An example's question when none of the jobs holds its original query (only perturbed ones): its
#: systems' queries are shown as they are, diffed against nothing.
UNKNOWN_ORIGINAL = "(the original question is in none of these jobs; only perturbed queries of it are)"

#: Score characters: exact 0 and 1, else ``a`` + round(20 * score), ``-`` when the cell is missing.
MISSING = "-"


def _score_chars(scores: np.ndarray) -> np.ndarray:
    """One byte per score: ``0``/``1`` exactly, else ``a`` + round(20 * score)."""
    out = (ord("a") + np.rint(np.clip(scores, 0.0, 1.0) * 20)).astype(np.uint8)
    out[scores == 0.0] = ord("0")
    out[scores == 1.0] = ord("1")
    out[np.isnan(scores)] = ord(MISSING)
    return out


@dataclass(frozen=True)
class ScoreIndex:
    """The score table indexed for the site (:func:`index_scores`). Arrays ``per row`` follow the
    table's rows; a *slot* is an (example, system) list row's cell, ``offsets[row] + pos``."""

    df: pd.DataFrame  # the score table (a ``job_id`` column added when it has none)
    by: list[str]  # rr.analysis.intervals.system_by of the table
    sys_cols: list[str]  # by without dataset: what a system is
    examples: pd.DataFrame  # per example number: ``ds`` (dataset) and ``id``, sorted
    ex: np.ndarray  # per row: its example number
    systems: list[dict[str, Any]]  # per system number: format.System's label and cols
    sys: np.ndarray  # per row: its system number
    cells: list[list[Any]]  # per cell number: [k, retriever, order]
    cell: np.ndarray  # per row: its cell number
    k: np.ndarray  # per row: k
    sys_cells: list[list[int]]  # per system: its cell numbers
    pos: np.ndarray  # per row: its cell's position among its system's
    row: np.ndarray  # per row: its list row
    list_ex: np.ndarray  # per list row: its example
    list_sys: np.ndarray  # per list row: its system
    n_list_rows: int
    offsets: np.ndarray  # per list row: its first slot (and the slot count last)
    score: np.ndarray  # per row: its score (NaN: missing)
    score_buf: np.ndarray  # per slot: its score character
    acc: np.ndarray  # per list row: mean score of its k > 0 cells (NaN: none)
    cb: np.ndarray  # per list row: mean closed-book score (NaN: none)
    order: np.ndarray  # the rows by example, system, cell
    questions: list[str]  # per example: its original question (or UNKNOWN_ORIGINAL)
    answers: list[list[str]]  # per example: its gold answers
    notes: tuple[str, ...]  # what the site cannot show as the table is

    def slots(self, rows: np.ndarray) -> np.ndarray:
        """The slots of ``rows`` (row numbers of :attr:`df`)."""
        return self.offsets[self.row[rows]] + self.pos[rows]


def index_scores(df: pd.DataFrame) -> ScoreIndex:
    """Index the score table for the site (the build's first stage)."""
    notes: list[str] = []
    if "job_id" not in df.columns:
        df = df.assign(job_id="job")
    by = system_by(df)
    sys_cols = [c for c in by if c != "dataset"]
    ds = df["dataset"].astype(str) if "dataset" in df.columns else pd.Series("", index=df.index)
    ex_frame = pd.DataFrame({"ds": ds, "id": df["example_id"].astype(str)})
    ex = ex_frame.groupby(["ds", "id"], sort=True).ngroup().to_numpy()
    examples = ex_frame.drop_duplicates().sort_values(["ds", "id"]).reset_index(drop=True)
    grouped = df.groupby(sys_cols, sort=True, dropna=False) if sys_cols else None
    sys = grouped.ngroup().to_numpy() if grouped is not None else np.zeros(len(df), dtype=int)
    first = df.groupby(sys, sort=True).head(1).sort_index()
    first = first.assign(_s=sys[first.index]).sort_values("_s")
    systems: list[dict[str, Any]] = [
        {
            System.label: system_label(r, sys_cols) if sys_cols else "all",
            System.cols: {c: str(r[c]) for c in sys_cols},
        }
        for _, r in first.iterrows()
    ]
    k = pd.to_numeric(df["k"]).astype(int).to_numpy()
    retr = df["retriever"].astype(str).to_numpy()
    order = df["order"].astype(str).to_numpy()
    cell_frame = pd.DataFrame({"k": k, "r": retr, "o": order})
    cell = cell_frame.groupby(["k", "r", "o"], sort=True).ngroup().to_numpy()
    cells = cell_frame.drop_duplicates().sort_values(["k", "r", "o"]).values.tolist()
    # each system's cells, and a row's position among them
    pairs = pd.DataFrame({"s": sys, "c": cell}).drop_duplicates().sort_values(["s", "c"])
    sys_cells: list[list[int]] = [[] for _ in systems]
    for s, c in zip(pairs["s"], pairs["c"], strict=True):
        sys_cells[int(s)].append(int(c))
    pos_map = {(s, c): i for s, mine in enumerate(sys_cells) for i, c in enumerate(mine)}
    pos_of = pairs.assign(p=[pos_map[(int(s), int(c))] for s, c in zip(pairs["s"], pairs["c"], strict=True)])
    pos = pd.DataFrame({"s": sys, "c": cell}).merge(pos_of, on=["s", "c"], how="left")["p"].to_numpy()
    # list rows: (example, system), sorted by example then system
    n_sys = max(len(systems), 1)
    key = ex.astype(np.int64) * n_sys + sys
    uniq, row = np.unique(key, return_inverse=True)
    list_ex = (uniq // n_sys).astype(int)
    list_sys = (uniq % n_sys).astype(int)
    n_list_rows = len(uniq)
    widths = np.array([len(sys_cells[s]) for s in list_sys], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(widths)])
    scores = pd.to_numeric(df["score"], errors="coerce").astype(float).to_numpy()
    slot = offsets[row] + pos
    dup = np.bincount(slot, minlength=int(offsets[-1])) > 1
    if dup.any():
        notes.append(
            f"{int(dup.sum())} (example, system, cell)s have several rows (the grouping does not "
            "separate them); the site shows the first"
        )
    buf = np.full(int(offsets[-1]), ord(MISSING), dtype=np.uint8)
    buf[slot[::-1]] = _score_chars(scores)[::-1]  # the first row wins
    rag = k > 0
    acc_sum = np.bincount(row[rag], weights=scores[rag], minlength=n_list_rows)
    acc_n = np.bincount(row[rag], minlength=n_list_rows)
    cb_sum = np.bincount(row[~rag], weights=scores[~rag], minlength=n_list_rows)
    cb_n = np.bincount(row[~rag], minlength=n_list_rows)
    with np.errstate(invalid="ignore", divide="ignore"):
        acc = np.where(acc_n > 0, acc_sum / np.maximum(acc_n, 1), np.nan)
        cb = np.where(cb_n > 0, cb_sum / np.maximum(cb_n, 1), np.nan)
    questions, answers = _questions(df, ex)
    return ScoreIndex(
        df=df,
        by=by,
        sys_cols=sys_cols,
        examples=examples,
        ex=ex,
        systems=systems,
        sys=sys,
        cells=cells,
        cell=cell,
        k=k,
        sys_cells=sys_cells,
        pos=pos,
        row=row,
        list_ex=list_ex,
        list_sys=list_sys,
        n_list_rows=n_list_rows,
        offsets=offsets,
        score=scores,
        score_buf=buf,
        acc=acc,
        cb=cb,
        order=np.lexsort((cell, sys, ex)),  # rows by example, system, cell
        questions=questions,
        answers=answers,
        notes=tuple(notes),
    )


def _questions(df: pd.DataFrame, ex: np.ndarray) -> tuple[list[str], list[list[str]]]:
    """Each example's original question (query_perturbation none when present) and answers."""
    qcol = df["question"].astype(str) if "question" in df.columns else df["example_id"].astype(str)
    orig = (
        (df["query_perturbation"].astype(str) == "none").to_numpy()
        if "query_perturbation" in df.columns
        else np.ones(len(df), dtype=bool)
    )
    order = np.lexsort((~orig, ex))  # per example, original-query rows first
    first = order[np.concatenate([[True], ex[order][1:] != ex[order][:-1]])]
    questions = qcol.to_numpy()[first].tolist()
    if "answers" in df.columns:
        answers = [[str(a) for a in as_list(v)] for v in df["answers"].to_numpy()[first]]
    else:
        answers = [[] for _ in first]
    if "example_key" in df.columns and "question" in df.columns:
        # an example none of whose rows holds its original query: a perturbed question is its
        # original only if it has the example's fingerprint (rr.results.example_key)
        keys = df["example_key"].to_numpy()[first]
        for i in np.flatnonzero(~orig[first]):
            if example_key(questions[i], answers[i]) != str(keys[i]):
                questions[i] = UNKNOWN_ORIGINAL
    return questions, answers
