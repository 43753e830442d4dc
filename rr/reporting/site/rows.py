"""The data files of the examples list (``rows-NNN.js``), the example shards (``ex/e-NNNN.js``)
and their prompts (``pr/pr-NNNN.js``), and the index (``index.js``), written from the indexed score table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rr.jobfolder import SCORES_FILE
from rr.reporting.site.documents import _Documents
from rr.reporting.site.encoding import (
    _arrow_strings,
    _char_diff,
    _count_literals,
    _flag_literals,
    _int_literals,
    _json,
    _json_strings,
    _num,
    _runs_json,
    _score_literals,
    _str_list,
    _write,
)
from rr.reporting.site.flips import FLIP_BITS, FLIP_CHARS, flip_counts
from rr.reporting.site.format import FORMAT_VERSION, IndexPair, System
from rr.reporting.site.format import Example as E
from rr.reporting.site.format import ExampleCells as C
from rr.reporting.site.format import ExampleShard as X
from rr.reporting.site.format import ExampleSystem as S
from rr.reporting.site.format import Index as I
from rr.reporting.site.format import PromptShard as PR
from rr.reporting.site.format import RowsChunk as R
from rr.reporting.site.index import UNKNOWN_ORIGINAL, _Model
from rr.reporting.site.passages import _Passages
from rr.results import PROMPT, PROMPT_KEYS, load_prompts

#: Byte budgets of the data files.
ROWS_PER_CHUNK = 4000
EXAMPLE_SHARD_BYTES = 300_000


def write_rows(model: _Model, data: Path) -> None:
    model.questions, model.answers = model._questions()
    score_str = model.score_buf.tobytes().decode("ascii")
    flip_str = np.frombuffer(FLIP_CHARS.encode(), dtype=np.uint8)[model.flip_buf].tobytes().decode("ascii")
    model.row_chunks = []  # first list row of each chunk
    start = 0
    n = model.n_list_rows
    chunk = 0
    while start < n:
        end = min(start + ROWS_PER_CHUNK, n)
        while end < n and model.list_ex[end] == model.list_ex[end - 1]:
            end += 1  # whole examples per chunk
        ex0, ex1 = int(model.list_ex[start]), int(model.list_ex[end - 1]) + 1
        off = model.offsets
        payload = {
            R.first: start,
            R.ex0: ex0,
            R.id: model.examples["id"].iloc[ex0:ex1].tolist(),
            R.ds: model.examples["ds"].iloc[ex0:ex1].tolist(),
            R.q: model.questions[ex0:ex1],
            R.a: model.answers[ex0:ex1],
            R.ex: model.list_ex[start:end].tolist(),
            R.sys: model.list_sys[start:end].tolist(),
            R.sc: [score_str[off[i] : off[i + 1]] for i in range(start, end)],
            R.fl: [flip_str[off[i] : off[i + 1]] for i in range(start, end)],
            R.acc: [_num(v) for v in model.acc[start:end]],
            R.cb: [_num(v) for v in model.cb[start:end]],
        }
        _write(data / f"rows-{chunk:03d}.js", R.kind, chunk, payload)
        model.row_chunks.append(start)
        start, chunk = end, chunk + 1


def write_examples(model: _Model, folder: Path, documents: _Documents) -> None:
    """Write the example shards: whole examples, ~:data:`EXAMPLE_SHARD_BYTES` each. A shard
    holds its examples (question, answers, rankings, systems with their row ranges) and
    their rows column by column (``cells``: one list per field, rows by example, system,
    cell): text columns joined by pyarrow from their JSON literals, the others encoded a
    shard's slice at a time."""
    df = model.df
    order = model.order
    flip_chars = np.array(list(FLIP_CHARS), dtype=object)
    n = len(order)
    ex_s, sys_s = model.ex[order], model.sys[order]
    # each column as the JSON literal of each row, joined a shard at a time by pyarrow
    literals = {
        C.c: _int_literals(model.cell[order]),
        C.sc: _score_literals(model.score[order]),
        C.pred: _json_strings(_arrow_strings(df, "prediction", order)),
        C.raw: _json_strings(_arrow_strings(df, "raw_output", order)),
        C.mk: _flag_literals(df, "marker_found", order),
        C.rf: _flag_literals(df, "refused", order),
        C.ow: _flag_literals(df, "over_window", order),
        C.jd: _json_strings(_arrow_strings(df, "judge", order)),
        C.dp: _json_strings(_arrow_strings(df, "doc_perturbation", order, "none")),
        C.ref: _int_literals(documents.ref),
        C.docs: documents.docs,
        C.fl: _json_strings(
            pa.array(flip_chars[model.flip_buf[model.offsets[model.row[order]] + model.pos[order]]])
        ),
        C.ng: _count_literals(df, "n_docs_given", order),
    }
    # (example, system) runs of rows, and each system's question where it is not the example's
    starts = np.flatnonzero(np.r_[True, (ex_s[1:] != ex_s[:-1]) | (sys_s[1:] != sys_s[:-1])])
    ends = np.r_[starts[1:], n]
    questions = _str_list(df, "question", order[starts])
    n_ex = len(model.examples)
    ex_first = np.searchsorted(ex_s, np.arange(n_ex), "left")
    # bytes of each example: its rows (their literals and commas), rankings, question, answers
    row_bytes = np.full(n, len(literals), dtype=np.int64)
    for values in literals.values():
        row_bytes += pc.binary_length(values).to_numpy()
    cum = np.r_[0, np.cumsum(row_bytes)]
    ex_bytes = cum[np.r_[ex_first[1:], n]] - cum[ex_first]
    ex_bytes += np.fromiter(map(len, model.questions), dtype=np.int64, count=n_ex)
    ex_bytes += 50 * np.fromiter(map(len, model.answers), dtype=np.int64, count=n_ex)
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
    joined = {k: _runs_json(v, row_bounds) for k, v in literals.items()}
    prompts = _runs_json(_json_strings(_prompt_strings(model, order)), row_bounds)
    (folder.parent / "pr").mkdir(exist_ok=True)
    model.ex_shards = firsts[:-1]  # first example of each shard
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
                if q != model.questions[e]:
                    sysd[S.q] = q
                    if model.questions[e] != UNKNOWN_ORIGINAL:  # only against its own original
                        sysd[S.diff] = _char_diff(model.questions[e], q)
                systems.append(sysd)
                run += 1
            item = {
                E.e: e,
                E.id: model.examples["id"].iat[e],
                E.ds: model.examples["ds"].iat[e],
                E.q: model.questions[e],
                E.a: model.answers[e],
                E.sys: systems,
            }
            items.append(f'{_json(item)[:-1]},"{E.ranked}":{documents.ranked[e]}}}')
        cells = ",".join(f'"{k}":{next(v)}' for k, v in joined.items())
        text = (
            f'RR.load("{X.kind}",{shard},{{"{X.first}":{first},"{X.examples}":[{",".join(items)}],'
            f'"{X.cells}":{{{cells}}}}});\n'
        )
        (folder / f"e-{shard:04d}.js").write_bytes(text.encode("utf-8"))
        text = f'RR.load("{PR.kind}",{shard},{{"{PR.first}":{first},"{PR.pr}":{next(prompts)}}});\n'
        (folder.parent / "pr" / f"pr-{shard:04d}.js").write_bytes(text.encode("utf-8"))


def _prompt_strings(model: _Model, order: np.ndarray) -> pa.Array:
    """The prompt as sent of the rows at ``order`` ('' where not recorded): the table's ``prompt``
    column where it has one, else read from the jobs' ``prompts.parquet`` (the score table does not
    hold it) and joined on :data:`rr.results.PROMPT_KEYS`."""
    df = model.df
    if PROMPT in df.columns:
        return _arrow_strings(df, PROMPT, order)
    frames = []
    for job in model.jobs:
        p = load_prompts(job.path / SCORES_FILE) if (job.path / SCORES_FILE).is_file() else None
        if p is not None and len(p):
            frames.append(p if "job_id" in p.columns else p.assign(job_id=job.job_id))
    if not frames:
        return _arrow_strings(df, PROMPT, order)  # '' for every row
    prompts = pd.concat(frames, ignore_index=True)
    keys = [c for c in PROMPT_KEYS if c in df.columns and c in prompts.columns]
    left = df[keys].iloc[order].reset_index(drop=True)
    for c in keys:
        if left[c].dtype != prompts[c].dtype:
            left[c], prompts[c] = left[c].astype(str), prompts[c].astype(str)
    merged = left.merge(prompts.drop_duplicates(keys), on=keys, how="left", sort=False)
    return pc.fill_null(pa.Array.from_pandas(merged[PROMPT], type=pa.large_string()), "")


def index(model: _Model, passages: _Passages) -> dict[str, Any]:
    return {
        I.systems: [{**s, System.cells: model.sys_cells[i]} for i, s in enumerate(model.systems)],
        I.system_columns: model.sys_cols,
        I.cells: model.cells,
        I.datasets: sorted(set(model.examples["ds"])),
        I.n_examples: len(model.examples),
        I.n_rows: model.n_list_rows,
        I.row_chunks: model.row_chunks,
        I.ex_shards: model.ex_shards,
        I.p_shards: passages.shards,
        I.corpora: passages.corpora_info(),
        I.flips: flip_counts(model),
        I.flip_bits: FLIP_BITS,
        I.pairs: [{k: v for k, v in p.items() if k in IndexPair.fields().values()} for p in model.pairs],
        I.notes: model.notes,
        I.format_version: FORMAT_VERSION,
    }
