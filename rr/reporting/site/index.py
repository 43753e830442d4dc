"""The score table indexed for the site: examples, systems, cells, (example, system) list rows,
each row's score characters and the flip buffer (:mod:`rr.reporting.site.flips` fills it in)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rr.metrics.flips import KINDS
from rr.reporting.core import ReportContext, system_by, system_label
from rr.reporting.site.clock import _Clock
from rr.reporting.site.encoding import _as_list
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


class _Model:
    """The score table indexed for the site: examples, systems, cells, list rows and flips."""

    # set by the stages that follow the indexing
    questions: list[str]  # each example's original question (rows.write_rows)
    answers: list[list[str]]
    row_chunks: list[int]  # first list row of each rows-NNN.js
    ex_shards: list[int]  # first example of each ex/e-NNNN.js
    order: np.ndarray  # rows by example, system, cell (documents.number_documents)

    def __init__(self, df: pd.DataFrame, ctx: ReportContext, clock: _Clock) -> None:
        self.notes: list[str] = []
        self.jobs = ctx.jobs  # the jobs' folders: their prompts.parquet (rows.write_examples)
        if "job_id" not in df.columns:
            df = df.assign(job_id="job")
        self.df = df
        self.by = system_by(df)
        self.sys_cols = [c for c in self.by if c != "dataset"]
        ds = df["dataset"].astype(str) if "dataset" in df.columns else pd.Series("", index=df.index)
        ex_frame = pd.DataFrame({"ds": ds, "id": df["example_id"].astype(str)})
        ex_codes = ex_frame.groupby(["ds", "id"], sort=True).ngroup().to_numpy()
        self.examples = ex_frame.drop_duplicates().sort_values(["ds", "id"]).reset_index(drop=True)
        self.ex = ex_codes
        grouped = df.groupby(self.sys_cols, sort=True, dropna=False) if self.sys_cols else None
        self.sys = grouped.ngroup().to_numpy() if grouped is not None else np.zeros(len(df), dtype=int)
        first = df.groupby(self.sys, sort=True).head(1).sort_index()
        first = first.assign(_s=self.sys[first.index]).sort_values("_s")
        self.systems: list[dict[str, Any]] = [
            {
                System.label: system_label(r, self.sys_cols) if self.sys_cols else "all",
                System.cols: {c: str(r[c]) for c in self.sys_cols},
            }
            for _, r in first.iterrows()
        ]
        k = pd.to_numeric(df["k"]).astype(int).to_numpy()
        retr = df["retriever"].astype(str).to_numpy()
        order = df["order"].astype(str).to_numpy()
        cell_frame = pd.DataFrame({"k": k, "r": retr, "o": order})
        cell_codes = cell_frame.groupby(["k", "r", "o"], sort=True).ngroup().to_numpy()
        self.cells = cell_frame.drop_duplicates().sort_values(["k", "r", "o"]).values.tolist()
        self.cell = cell_codes
        self.k = k
        # each system's cells, and a row's position among them
        pairs = pd.DataFrame({"s": self.sys, "c": self.cell}).drop_duplicates().sort_values(["s", "c"])
        self.sys_cells: list[list[int]] = [[] for _ in self.systems]
        for s, c in zip(pairs["s"], pairs["c"], strict=True):
            self.sys_cells[int(s)].append(int(c))
        pos_map = {(s, c): i for s, cells in enumerate(self.sys_cells) for i, c in enumerate(cells)}
        pos = pairs.assign(p=[pos_map[(int(s), int(c))] for s, c in zip(pairs["s"], pairs["c"], strict=True)])
        self.pos = (
            pd.DataFrame({"s": self.sys, "c": self.cell})
            .merge(pos, on=["s", "c"], how="left")["p"]
            .to_numpy()
        )
        # list rows: (example, system), sorted by example then system
        n_sys = max(len(self.systems), 1)
        key = self.ex.astype(np.int64) * n_sys + self.sys
        uniq, self.row = np.unique(key, return_inverse=True)
        self.list_ex = (uniq // n_sys).astype(int)
        self.list_sys = (uniq % n_sys).astype(int)
        self.n_list_rows = len(uniq)
        widths = np.array([len(self.sys_cells[s]) for s in self.list_sys], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(widths)])
        scores = pd.to_numeric(df["score"], errors="coerce").astype(float).to_numpy()
        self.score = scores
        slot = self.offsets[self.row] + self.pos
        dup = np.bincount(slot, minlength=int(self.offsets[-1])) > 1
        if dup.any():
            self.notes.append(
                f"{int(dup.sum())} (example, system, cell)s have several rows (the grouping does not "
                "separate them); the site shows the first"
            )
        buf = np.full(int(self.offsets[-1]), ord(MISSING), dtype=np.uint8)
        buf[slot[::-1]] = _score_chars(scores)[::-1]  # the first row wins
        self.score_buf = buf
        self.flip_buf = np.zeros(int(self.offsets[-1]), dtype=np.uint8)
        self.flip_errors: dict[str, list[str]] = {kind: [] for kind in KINDS}
        rag = k > 0
        acc_sum = np.bincount(self.row[rag], weights=scores[rag], minlength=self.n_list_rows)
        acc_n = np.bincount(self.row[rag], minlength=self.n_list_rows)
        cb_sum = np.bincount(self.row[~rag], weights=scores[~rag], minlength=self.n_list_rows)
        cb_n = np.bincount(self.row[~rag], minlength=self.n_list_rows)
        with np.errstate(invalid="ignore", divide="ignore"):
            self.acc = np.where(acc_n > 0, acc_sum / np.maximum(acc_n, 1), np.nan)
            self.cb = np.where(cb_n > 0, cb_sum / np.maximum(cb_n, 1), np.nan)
        self.pairs: list[dict[str, Any]] = []
        self.pairs_apart: list[dict[str, Any]] = []
        clock("index")

    def _questions(self) -> tuple[list[str], list[list[str]]]:
        """Each example's original question (query_perturbation none when present) and answers."""
        df = self.df
        qcol = df["question"].astype(str) if "question" in df.columns else df["example_id"].astype(str)
        orig = (
            (df["query_perturbation"].astype(str) == "none").to_numpy()
            if "query_perturbation" in df.columns
            else np.ones(len(df), dtype=bool)
        )
        order = np.lexsort((~orig, self.ex))  # per example, original-query rows first
        first = order[np.concatenate([[True], self.ex[order][1:] != self.ex[order][:-1]])]
        questions = qcol.to_numpy()[first].tolist()
        if "answers" in df.columns:
            answers = [[str(a) for a in _as_list(v)] for v in df["answers"].to_numpy()[first]]
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
