"""The data files of the examples list (``rows-NNN.js``), the example shards (``ex/e-NNNN.js``)
with their prompt shards (``pr/pr-NNNN.js``), and the index (``index.js``), written from the
indexed score table and the records of the stages before (flips, pairs, documents, passages)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rr.jobfolder import SCORES_FILE
from rr.reporting.loading import JobInfo
from rr.reporting.site.documents import Documents
from rr.reporting.site.encoding import (
    arrow_strings,
    char_diff,
    count_literals,
    flag_literals,
    int_literals,
    json_number,
    json_strings,
    runs_json,
    score_literals,
    str_list,
    to_json,
    write_data_file,
)
from rr.reporting.site.flips import FLIP_BITS, FLIP_CHARS, Flips, flip_counts, helped_count
from rr.reporting.site.format import FORMAT_VERSION, IndexPair, System
from rr.reporting.site.format import Example as E
from rr.reporting.site.format import ExampleCells as C
from rr.reporting.site.format import ExampleShard as X
from rr.reporting.site.format import ExampleSystem as S
from rr.reporting.site.format import Index as I
from rr.reporting.site.format import PromptShard as PR
from rr.reporting.site.format import RowsChunk as R
from rr.reporting.site.index import UNKNOWN_ORIGINAL, ScoreIndex
from rr.reporting.site.pairs import Pairs
from rr.reporting.site.passages import PassageFiles
from rr.results import PROMPT, PROMPT_KEYS, follow_split_ids, load_prompts

#: Byte budgets of the data files.
ROWS_PER_CHUNK = 4000
EXAMPLE_SHARD_BYTES = 300_000


def write_rows(idx: ScoreIndex, flips: Flips, data: Path, titles: Sequence[str]) -> list[int]:
    """Write the examples list's chunks (whole examples, ~:data:`ROWS_PER_CHUNK` list rows each;
    ``titles``: each example's document titles, :func:`~rr.reporting.site.documents.document_titles`);
    return the first list row of each."""
    score_str = idx.score_buf.tobytes().decode("ascii")
    flip_str = flips.chars().tobytes().decode("ascii")
    preds = slot_predictions(idx)
    row_chunks = []  # first list row of each chunk
    start = 0
    n = idx.n_list_rows
    chunk = 0
    while start < n:
        end = min(start + ROWS_PER_CHUNK, n)
        while end < n and idx.list_ex[end] == idx.list_ex[end - 1]:
            end += 1  # whole examples per chunk
        ex0, ex1 = int(idx.list_ex[start]), int(idx.list_ex[end - 1]) + 1
        off = idx.offsets
        payload = {
            R.first: start,
            R.ex0: ex0,
            R.id: idx.examples["id"].iloc[ex0:ex1].tolist(),
            R.ds: idx.examples["ds"].iloc[ex0:ex1].tolist(),
            R.q: idx.questions[ex0:ex1],
            R.a: idx.answers[ex0:ex1],
            R.dt: list(titles[ex0:ex1]),
            R.ex: idx.list_ex[start:end].tolist(),
            R.sys: idx.list_sys[start:end].tolist(),
            R.sc: [score_str[off[i] : off[i + 1]] for i in range(start, end)],
            R.fl: [flip_str[off[i] : off[i + 1]] for i in range(start, end)],
            R.acc: [json_number(v) for v in idx.acc[start:end]],
            R.cb: [json_number(v) for v in idx.cb[start:end]],
            R.pred: [preds[off[i] : off[i + 1]] for i in range(start, end)],
        }
        write_data_file(data / f"rows-{chunk:03d}.js", R.kind, chunk, payload)
        row_chunks.append(start)
        start, chunk = end, chunk + 1
    return row_chunks


def slot_predictions(idx: ScoreIndex) -> list[str]:
    """Each slot's prediction ('' where its cell is missing; the first row wins, as for scores)."""
    preds = np.full(int(idx.offsets[-1]), "", dtype=object)
    if "prediction" in idx.df.columns:
        values = idx.df["prediction"].fillna("").astype(str).to_numpy(dtype=object)
        preds[idx.slots(np.arange(len(idx.df)))[::-1]] = values[::-1]
    return preds.tolist()


def write_examples(
    idx: ScoreIndex, flips: Flips, documents: Documents, jobs: Sequence[JobInfo], folder: Path
) -> list[int]:
    """Write the example shards (and their prompt shards beside ``folder``, in ``pr/``; the
    prompts read from the ``jobs``' folders): whole examples, ~:data:`EXAMPLE_SHARD_BYTES` each;
    return the first example of each. A shard
    holds its examples (question, answers, rankings, systems with their row ranges) and
    their rows column by column (``cells``: one list per field, rows by example, system,
    cell): text columns joined by pyarrow from their JSON literals, the others encoded a
    shard's slice at a time."""
    df = idx.df
    order = idx.order
    flip_chars = np.array(list(FLIP_CHARS), dtype=object)
    n = len(order)
    ex_s, sys_s = idx.ex[order], idx.sys[order]
    # each column as the JSON literal of each row, joined a shard at a time by pyarrow
    literals = {
        C.c: int_literals(idx.cell[order]),
        C.sc: score_literals(idx.score[order]),
        C.pred: json_strings(arrow_strings(df, "prediction", order)),
        C.raw: json_strings(arrow_strings(df, "raw_output", order)),
        C.mk: flag_literals(df, "marker_found", order),
        C.rf: flag_literals(df, "refused", order),
        C.ow: flag_literals(df, "over_window", order),
        C.jd: json_strings(arrow_strings(df, "judge", order)),
        C.dp: json_strings(arrow_strings(df, "doc_perturbation", order, "none")),
        C.ref: int_literals(documents.ref),
        C.docs: documents.docs,
        C.fl: json_strings(pa.array(flip_chars[flips.buf[idx.slots(order)]])),
        C.ng: count_literals(df, "n_docs_given", order),
    }
    # (example, system) runs of rows, and each system's question where it is not the example's
    starts = np.flatnonzero(np.r_[True, (ex_s[1:] != ex_s[:-1]) | (sys_s[1:] != sys_s[:-1])])
    ends = np.r_[starts[1:], n]
    questions = str_list(df, "question", order[starts])
    n_ex = len(idx.examples)
    ex_first = np.searchsorted(ex_s, np.arange(n_ex), "left")
    # bytes of each example: its rows (their literals and commas), rankings, question, answers
    row_bytes = np.full(n, len(literals), dtype=np.int64)
    for values in literals.values():
        row_bytes += pc.binary_length(values).to_numpy()
    cum = np.r_[0, np.cumsum(row_bytes)]
    ex_bytes = cum[np.r_[ex_first[1:], n]] - cum[ex_first]
    ex_bytes += np.fromiter(map(len, idx.questions), dtype=np.int64, count=n_ex)
    ex_bytes += 50 * np.fromiter(map(len, idx.answers), dtype=np.int64, count=n_ex)
    ex_bytes += np.fromiter(map(len, documents.ranked), dtype=np.int64, count=n_ex)
    # shards of whole examples: one closes before the example that takes it past the budget
    firsts = [0]
    size = 0
    for e, b in enumerate(ex_bytes.tolist()):
        if size and size + b > EXAMPLE_SHARD_BYTES:
            firsts.append(e)
            size = 0
        size += b
    firsts.append(n_ex)
    row_bounds = [int(ex_first[e]) if e < n_ex else n for e in firsts]
    joined = {k: runs_json(v, row_bounds) for k, v in literals.items()}
    prompts = runs_json(json_strings(_prompt_strings(idx.df, jobs, order)), row_bounds)
    (folder.parent / "pr").mkdir(exist_ok=True)
    run = 0  # the (example, system) run at hand
    for shard, (first, last) in enumerate(zip(firsts[:-1], firsts[1:], strict=True)):
        r0 = row_bounds[shard]
        items = []
        for e in range(first, last):
            systems = []
            while run < len(starts) and ex_s[starts[run]] == e:
                s0, s1 = int(starts[run]), int(ends[run])
                sysd: dict[str, Any] = {S.s: int(sys_s[s0]), S.r: [s0 - r0, s1 - r0]}
                q = questions[run]
                if q != idx.questions[e]:
                    sysd[S.q] = q
                    if idx.questions[e] != UNKNOWN_ORIGINAL:  # only against its own original
                        sysd[S.diff] = char_diff(idx.questions[e], q)
                systems.append(sysd)
                run += 1
            item = {
                E.e: e,
                E.id: idx.examples["id"].iat[e],
                E.ds: idx.examples["ds"].iat[e],
                E.q: idx.questions[e],
                E.a: idx.answers[e],
                E.sys: systems,
            }
            items.append(f'{to_json(item)[:-1]},"{E.ranked}":{documents.ranked[e]}}}')
        cells = ",".join(f'"{k}":{next(v)}' for k, v in joined.items())
        text = (
            f'RR.load("{X.kind}",{shard},{{"{X.first}":{first},"{X.examples}":[{",".join(items)}],'
            f'"{X.cells}":{{{cells}}}}});\n'
        )
        (folder / f"e-{shard:04d}.js").write_bytes(text.encode("utf-8"))
        text = f'RR.load("{PR.kind}",{shard},{{"{PR.first}":{first},"{PR.pr}":{next(prompts)}}});\n'
        (folder.parent / "pr" / f"pr-{shard:04d}.js").write_bytes(text.encode("utf-8"))
    return firsts[:-1]


def _prompt_strings(df: pd.DataFrame, jobs: Sequence[JobInfo], order: np.ndarray) -> pa.Array:
    """The prompt as sent of the rows at ``order`` ('' where not recorded): the table's ``prompt``
    column where it has one, else read from the jobs' ``prompts.parquet`` (the score table does not
    hold it) and joined on :data:`rr.results.PROMPT_KEYS`."""
    if PROMPT in df.columns:
        return arrow_strings(df, PROMPT, order)
    frames = []
    for job in jobs:
        p = load_prompts(job.path / SCORES_FILE) if (job.path / SCORES_FILE).is_file() else None
        if p is not None and len(p):
            frames.append(p if "job_id" in p.columns else p.assign(job_id=job.job_id))
    if not frames:
        return arrow_strings(df, PROMPT, order)  # '' for every row
    # a prompt is stored under the id its dataset gave; the table may have split that id
    prompts = follow_split_ids(pd.concat(frames, ignore_index=True), df)
    keys = [c for c in PROMPT_KEYS if c in df.columns and c in prompts.columns]
    left = df[keys].iloc[order].reset_index(drop=True)
    for c in keys:
        if left[c].dtype != prompts[c].dtype:
            left[c], prompts[c] = left[c].astype(str), prompts[c].astype(str)
    merged = left.merge(prompts.drop_duplicates(keys), on=keys, how="left", sort=False)
    return pc.fill_null(pa.Array.from_pandas(merged[PROMPT], type=pa.large_string()), "")


def index_data(
    idx: ScoreIndex,
    flips: Flips,
    pairs: Pairs,
    notes: Sequence[str],
    row_chunks: list[int],
    ex_shards: list[int],
    passages: PassageFiles,
) -> dict[str, Any]:
    """``index.js``'s payload (:class:`~rr.reporting.site.format.Index`)."""
    return {
        I.systems: [{**s, System.cells: idx.sys_cells[i]} for i, s in enumerate(idx.systems)],
        I.system_columns: idx.sys_cols,
        I.cells: idx.cells,
        I.datasets: sorted(set(idx.examples["ds"])),
        I.n_examples: len(idx.examples),
        I.n_rows: idx.n_list_rows,
        I.row_chunks: row_chunks,
        I.ex_shards: ex_shards,
        I.p_shards: passages.shards,
        I.corpora: passages.corpora,
        I.flips: flip_counts(idx, flips),
        I.flip_bits: FLIP_BITS,
        I.helped: helped_count(idx),
        I.pairs: [{k: v for k, v in p.items() if k in IndexPair.fields().values()} for p in pairs.compared],
        I.notes: list(notes),
        I.format_version: FORMAT_VERSION,
    }
