"""The score table: one row per (job, example, cell); written as parquet, read back as pandas.

Columns (docs/design.md contract, plus extras): see :data:`COLUMNS`. A row's ``prompt`` (the
prompt as sent, ~30 kB a row at k = 100) is not in ``scores.parquet``: :func:`write_scores` puts it
in the job's ``prompts.parquet`` with the row's :data:`PROMPT_KEYS`, which :func:`load` never reads
and :func:`load_prompts` does.
"""

from __future__ import annotations

import glob as _glob
import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from rr.answers import has_answer_in
from rr.atomic import atomic_write
from rr.errors import UserError
from rr.hashing import content_hash
from rr.jobfolder import PROMPTS_FILE, SCORES_FILE, ExampleSet
from rr.perturbations.base import perturbation_columns
from rr.records import MetaKey

if TYPE_CHECKING:
    from rr.records import Judgment
    from rr.strategies.base import CellInput, StrategyOutput

log = logging.getLogger(__name__)

#: Column -> meaning. The first block is the contract of docs/design.md; the rest are extras.
COLUMNS: dict[str, str] = {
    "example_id": "id of the original example (a perturbed query keeps its example's id)",
    "dataset": "dataset name",
    "generator": "generator name",
    "strategy": "prompting strategy",
    "retriever": "retriever name; 'none' for closed-book (k = 0)",
    "k": "documents asked for; 0 = no retrieval",
    "order": "original | reversed | shuffled; 'none' when k = 0",
    "query_perturbation": "'none' or the perturbation with its parameters",
    "doc_perturbation": "'none' or the perturbation with its parameters",
    "n_docs_used": "documents actually in the prompt after fitting the context window",
    "prediction": "the text judged: the extracted answer, or the whole or first line of the output (scoring.text)",
    "raw_output": "the model's full output",
    "score": "correctness in [0, 1]",
    "judge": "which judge produced score",
    "refused": "whether the output is a refusal",
    # extras
    "job_id": "content hash of the job's semantic config",
    "seed": "the job's seed",
    "question": "the question as asked (after any query perturbation)",
    "answers": "gold answers",
    "example_key": "fingerprint of the example's original question and gold answers (rr.results.example_key): "
    "what the example is, kept by its perturbed queries; reports pair and count examples by it, not by id",
    "query_perturbation_params": "JSON object of query_perturbation's parameters ('{}' for none): "
    'typo@0.25#3 -> {"value": 0.25} (rr.perturbations.base.perturbation_columns)',
    "doc_perturbation_params": "JSON object of doc_perturbation's parameters ('{}' for none): "
    'counterfactual@noise0.4@correct0.2 -> {"noise": 0.4, "correct": 0.2}',
    "n_docs_given": "documents handed to the strategy (after slicing, ordering and doc perturbation)",
    "doc_ids": "passage ids in the prompt, in prompt order",
    "answer_in_docs": "whether a gold answer string occurs in the documents used",
    "over_window": "a prompt of the row (any step) plus max_new_tokens did not fit the context window: "
    "it was not sent (empty output, prediction '', no model call); strict_window=true fails the job instead",
    "marker_found": "whether the 'Answer:' marker was found (False = fallback extraction)",
    "prompt": "the final step's prompt exactly as rendered for the model (chat template applied, documents "
    "after window fitting); the one sent, or, with over_window, the one that was not. Stored in the job's "
    "prompts.parquet, not scores.parquet (rr.results.load_prompts)",
    "em": "SQuAD exact match (max over gold answers)",
    "f1": "SQuAD token F1 (max over gold answers)",
}

#: The columns the contract requires.
REQUIRED = list(COLUMNS)[:15]

#: The columns that place a row in its system's grid (docs/design.md: retriever × k × order; k = 0
#: rows have retriever and order ``none``). Paired, grouped or deduplicated "per cell", rows are
#: keyed on these plus what the place keeps apart (``example_id``, the system, perturbations).
CELL_KEYS = ("retriever", "k", "order")

#: The columns :func:`score_row` itself sets on every row, in order (the contract's and the job's
#: own); a component's ``extra`` may not reuse them.
ROW_COLUMNS = (
    *REQUIRED[:9],
    *("query_perturbation_params", "doc_perturbation_params", "n_docs_given"),
    *REQUIRED[9:],
    *(
        "job_id",
        "seed",
        "question",
        "answers",
        "example_key",
        "doc_ids",
        "answer_in_docs",
        "marker_found",
        "over_window",
    ),
    "prompt",
)

#: The score-table column kept out of ``scores.parquet`` (in ``prompts.parquet``).
PROMPT = "prompt"

#: The columns that tell a job's rows apart, with which ``prompts.parquet`` keys each prompt
#: (those the table has): the job, the system, the example, the perturbations and the cell.
PROMPT_KEYS = (
    "job_id",
    "dataset",
    "generator",
    "strategy",
    "example_id",
    "query_perturbation",
    "doc_perturbation",
    *CELL_KEYS,
)


class ColumnCollision(ValueError):
    """A component's extra score-table column reuses a name another part of the row already set."""


def score_row(
    inp: CellInput,
    out: StrategyOutput,
    judgment: Judgment,
    *,
    dataset: str,
    generator: str,
    strategy: str,
    job_id: str,
    seed: int,
    key: str | None = None,
) -> dict[str, Any]:
    """The score-table row of one judged strategy output: the one place a row is built.

    Args:
        inp: The cell input the strategy answered (example, cell, documents given; its ``extra``
            holds a document perturbation's columns).
        out: The strategy's output (its ``extra``: strategy columns).
        judgment: The judge's verdict (its ``extra``: judge columns, e.g. ``em``/``f1``).
        dataset, generator, strategy: The components' names.
        job_id, seed: The job's identity.
        key: The example's :func:`example_key`, of its *original* question (default: from the
            example's ``original_question`` meta when a query perturbation set it, else its question).

    Returns:
        The columns of :data:`ROW_COLUMNS`, then the extras of the document perturbation, the judge and the strategy.

    Raises:
        ColumnCollision: an extra column reuses a pipeline column (``score``, ``k``, ...) or another
            component's extra column, which would silently overwrite it.
    """
    ex, cell = inp.example, inp.cell
    row: dict[str, Any] = {
        "example_id": ex.id,
        "dataset": dataset,
        "generator": generator,
        "strategy": strategy,
        "retriever": cell.retriever,
        "k": cell.k,
        "order": cell.order,
        "query_perturbation": cell.query_perturbation,
        "doc_perturbation": cell.doc_perturbation,
        **perturbation_columns(cell.query_perturbation, cell.doc_perturbation),
        "n_docs_given": len(inp.docs),
        "n_docs_used": len(out.docs_used),
        "prediction": out.prediction,
        "raw_output": out.raw_output,
        "score": float(judgment.score),
        "judge": judgment.judge,
        "refused": bool(judgment.refused),
        "job_id": job_id,
        "seed": int(seed),
        "question": ex.question,
        "answers": list(ex.answers),
        "example_key": key
        if key is not None
        else example_key(ex.meta.get(MetaKey.ORIGINAL_QUESTION, ex.question), ex.answers),
        "doc_ids": [d.passage.id for d in out.docs_used],
        "answer_in_docs": bool(out.docs_used)
        and has_answer_in((d.passage.text for d in out.docs_used), ex.answers),
        "marker_found": out.marker_found,
        "over_window": out.over_window,
        "prompt": out.prompt,
    }
    extras: list[tuple[str, Mapping[str, Any]]] = [
        (f"doc perturbation {cell.doc_perturbation!r}", inp.extra),
        (f"judge {judgment.judge!r}", judgment.extra),
        (f"strategy {strategy!r}", out.extra),
    ]
    set_by: dict[str, str] = {}
    for who, extra in extras:
        for key, value in extra.items():
            if key in row:
                first = set_by.get(key, "the pipeline")
                raise ColumnCollision(
                    f"{who} sets the score-table column {key!r}, which {first} already sets; "
                    "rename the component's extra column"
                )
            row[key] = value
            set_by[key] = who
    return row


def example_key(question: str, answers: Sequence[str]) -> str:
    """What an example *is*: 16 hex characters of the hash of its question and gold answers.

    Two rows are the same example only when their ``example_id`` and this key agree; a perturbed
    query keeps the key of its original question. Answers are kept in their order (a dataset
    gives them in a fixed order)."""
    return content_hash(["example", str(question), [str(a) for a in answers]], 16)


def example_set(keys: Sequence[str] | pd.Series) -> ExampleSet:
    """``summary.json`` ``example_set``: how many distinct examples a job ran and a fingerprint of
    which (the hash of their sorted :func:`example_key` values, 12 hex characters)."""
    distinct = sorted({str(k) for k in keys})
    return ExampleSet(len(distinct), content_hash(["example_set", distinct], 12))


#: How :func:`identify_examples` writes an id that names different examples in different jobs.
SPLIT_ID = "{id}~{key}"
#: The words of :func:`identify_examples`' note on ids it split (the one note :func:`load` warns of).
SPLIT_NOTE = "kept apart"


def _listed(values: Sequence[str], most: int = 5) -> str:
    shown = ", ".join(values[:most])
    return shown + (f" and {len(values) - most} more" if len(values) > most else "")


def identify_examples(df: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Give every row of a (pooled) score table its example's identity, so that examples are pooled,
    paired and counted only when they are the same question with the same gold answers.

    * Rows without an ``example_key`` (a table written before rr recorded it) get one from their
      example's question and answers: per job and example id, the question of its unperturbed
      row (a perturbed query keeps its original's identity); without a ``question`` column, the
      id alone.
    * An ``example_id`` whose rows of one ``dataset`` hold more than one key (two files of one
      dataset name that use the same ids for different questions) is split: each such row's id
      becomes ``<id>~<first 8 of its key>`` (:data:`SPLIT_ID`), so every grouping, pairing and
      count by ``example_id`` keeps them apart. An example is its dataset and its content: the
      same id in datasets of different names is not split (everything that pools, pairs or counts
      examples does so within a dataset: ``dataset`` is a system column,
      :func:`rr.analysis.intervals.system_by`); :func:`follow_split_ids` names a job's own
      per-example files (``prompts.parquet``, ``runs/*.trec``) as the table does.

    Returns:
        The table (a copy when anything changed) and one line per thing done, to be said to the user.
    """
    notes: list[str] = []
    if "example_id" not in df.columns or df.empty:
        return df, notes
    missing = df["example_key"].isna().to_numpy() if "example_key" in df.columns else np.ones(len(df), bool)
    if missing.any():
        df = df.copy()
        if "example_key" not in df.columns:
            df["example_key"] = None
        old = df[missing]
        jobs = sorted(old["job_id"].astype(str).unique()) if "job_id" in old.columns else []
        whose = f" of job(s) {_listed(jobs)}" if jobs else ""
        if "question" in old.columns:
            unit = _codes(old, [c for c in ("job_id", "example_id") if c in old.columns])
            perturbed = (
                (old["query_perturbation"].astype(str) != "none").to_numpy()
                if "query_perturbation" in old.columns
                else np.zeros(len(old), bool)
            )
            order = np.lexsort((perturbed, unit))  # per (job, id): the original query's row first
            first = order[np.r_[True, unit[order][1:] != unit[order][:-1]]]
            answers = old["answers"].to_numpy() if "answers" in old.columns else np.full(len(old), None)
            questions = old["question"].to_numpy()
            keys = np.empty(unit.max() + 1, dtype=object)
            for i in first:
                keys[unit[i]] = example_key(str(questions[i]), [] if answers[i] is None else list(answers[i]))
            df.loc[missing, "example_key"] = keys[unit]
            notes.append(
                f"{int(missing.sum())} rows{whose} have no example_key (written before rr recorded it): "
                "derived from each example's question and gold answers"
            )
        else:
            df.loc[missing, "example_key"] = "id:" + old["example_id"].astype(str)
            notes.append(
                f"{int(missing.sum())} rows{whose} have neither an example_key nor a question: their "
                "examples are matched by id alone"
            )
    # an example's place: its dataset and id (an id is split only within one dataset)
    id_codes = _codes(df, [c for c in ("dataset", "example_id") if c in df.columns])
    id_names = np.empty(int(id_codes.max()) + 1, dtype=object)
    id_names[id_codes] = df["example_id"].to_numpy(dtype=object)
    key_codes, key_names = pd.factorize(df["example_key"])
    width = len(key_names) + 1
    pairs, row_pair = np.unique(id_codes.astype(np.int64) * width + key_codes, return_inverse=True)
    per_id = np.bincount(pairs // width, minlength=len(id_names))
    if (per_id > 1).any():
        df = df.copy()
        split = per_id[pairs // width] > 1
        named = np.array(
            [
                SPLIT_ID.format(id=id_names[p // width], key=str(key_names[p % width])[:8]) if s else ""
                for p, s in zip(pairs.tolist(), split.tolist(), strict=True)
            ],
            dtype=object,
        )
        rows = split[row_pair]
        df["example_id"] = np.where(rows, named[row_pair], df["example_id"].to_numpy(dtype=object))
        names = sorted(set(map(str, id_names[per_id > 1])), key=natural_key)
        notes.append(
            f"{len(names)} example id(s) ({_listed(names)}) hold different questions or answers in different "
            f"jobs: {SPLIT_NOTE} as <id>~<fingerprint>, never pooled or paired"
        )
    return df, notes


def _codes(df: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """One integer per row, equal for rows equal in ``columns`` (0 .. number of distinct - 1)."""
    combined = np.zeros(len(df), dtype=np.int64)
    for c in columns:
        codes, names = pd.factorize(df[c])
        combined = combined * (len(names) + 1) + codes
    return pd.factorize(combined)[0]


def given_id(example_id: str, key: str) -> str:
    """The id a dataset gave an example, from the one :func:`identify_examples` may have split."""
    suffix = "~" + str(key)[:8]
    return example_id[: -len(suffix)] if example_id.endswith(suffix) else example_id


def distinct_examples(df: pd.DataFrame) -> int:
    """How many examples a (pooled) score table holds: its distinct (``dataset``, ``example_id``)
    (an example is its dataset and its content; :func:`identify_examples` split the ids that
    hold several contents within one dataset)."""
    return len(df[[c for c in ("dataset", "example_id") if c in df.columns]].drop_duplicates())


def given_ids(df: pd.DataFrame) -> pd.Series:
    """Each row's ``example_id`` as its dataset gave it (:func:`given_id`: a split
    ``<id>~<fingerprint>`` back to ``<id>``), the name a job's own per-example files use."""
    ids = df["example_id"].astype(str)
    if "example_key" not in df.columns:
        return ids
    split = ids.str.contains("~", regex=False).to_numpy()
    if not split.any():
        return ids
    ids = ids.copy()
    keys = df["example_key"].astype(str).to_numpy()[split]
    ids[split] = [given_id(e, k) for e, k in zip(ids[split].tolist(), keys.tolist(), strict=True)]
    return ids


def follow_split_ids(frame: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (rows a job stored per example: ``job_id`` and the ``example_id`` its dataset gave,
    as in ``prompts.parquet`` or a TREC run) with each ``example_id`` as ``scores`` (a table
    :func:`identify_examples` named) names that job's example: ids it split follow. Returns
    ``frame`` itself when nothing was split, else a copy."""
    if "example_id" not in frame.columns or "job_id" not in frame.columns or "job_id" not in scores.columns:
        return frame
    given = given_ids(scores)
    named = scores["example_id"].astype(str)
    changed = (given != named).to_numpy()
    if not changed.any():
        return frame
    jobs = scores["job_id"].astype(str).to_numpy()[changed]
    places = zip(jobs.tolist(), given[changed].tolist(), strict=True)
    to_split = dict(zip(places, named[changed].tolist(), strict=True))
    out = frame.copy()
    out["example_id"] = [
        to_split.get((j, e), e)
        for j, e in zip(
            frame["job_id"].astype(str).tolist(), frame["example_id"].astype(str).tolist(), strict=True
        )
    ]
    return out


def natural_key(text: str) -> tuple:
    """Sort key reading digit runs as numbers (``q2`` before ``q10``)."""
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text))


def write_scores(df: pd.DataFrame, output_dir: str | Path) -> Path:
    """Write ``scores.parquet`` into ``output_dir`` atomically and return its path.

    A ``prompt`` column goes to ``prompts.parquet`` instead (with the table's :data:`PROMPT_KEYS`,
    zstd), written first; a table without one removes a ``prompts.parquet`` left there.
    """
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise ValueError(f"score table lacks required columns {missing}")
    out = Path(output_dir)
    if PROMPT in df.columns:
        keys = [c for c in PROMPT_KEYS if c in df.columns]
        with atomic_write(out / PROMPTS_FILE, mode=None) as tmp:
            df[[*keys, PROMPT]].to_parquet(tmp, index=False, compression="zstd")
        df = df.drop(columns=PROMPT)
    else:
        (out / PROMPTS_FILE).unlink(missing_ok=True)
    path = out / SCORES_FILE
    with atomic_write(path, mode=None) as tmp:
        df.to_parquet(tmp, index=False)
    return path


def find_score_files(paths: str | Path | Sequence[str | Path]) -> list[Path]:
    """The ``scores.parquet`` files (resolved, each once) under job or sweep folders, files or globs.

    Raises:
        NoScoresError: nothing matched (a :class:`FileNotFoundError` and a user error).
    """
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    files: list[Path] = []
    for item in items:
        p = Path(item)
        if p.is_dir():
            files.extend(sorted(p.rglob(SCORES_FILE)))
        elif p.is_file():
            files.append(p)
        else:
            for m in sorted(_glob.glob(str(item), recursive=True)):
                mp = Path(m)
                files.extend(sorted(mp.rglob(SCORES_FILE)) if mp.is_dir() else [mp])
    files = list(dict.fromkeys(f.resolve() for f in files))
    if not files:
        raise NoScoresError(_nothing_found(items))
    return files


class NoScoresError(UserError, FileNotFoundError):
    """No score table under the given paths (a user error: one line, exit status 2)."""


def _nothing_found(items: list[str | Path]) -> str:
    """Why no ``scores.parquet`` matched ``items``: the paths that do not exist, or that hold no job."""
    absent = [str(i) for i in items if not Path(i).exists() and not _glob.glob(str(i), recursive=True)]
    if absent:
        return (
            f"no such folder, file or glob match: {', '.join(map(repr, absent))} (give a job folder, a sweep "
            "folder, a scores.parquet file or a glob; jobs are under outputs/runs/<name>/ and outputs/multirun/<name>/)"
        )
    where = ", ".join(repr(str(i)) for i in items)
    return (
        f"no {SCORES_FILE} under {where}: no finished job there (a job writes it when it ends; "
        f"`rr status {items[0]}` lists the jobs that started)"
    )


def load(path_or_glob: str | Path | list[str | Path]) -> pd.DataFrame:
    """Concatenate the score tables of any number of jobs and sweeps.

    Args:
        path_or_glob: A ``scores.parquet`` file, a job or sweep folder (searched recursively
            for ``scores.parquet``), a glob pattern, or a list of these.

    Raises:
        NoScoresError: nothing matched (a :class:`FileNotFoundError` and a user error).
    """
    files = find_score_files(path_or_glob)
    df, notes = identify_examples(pd.concat([_read_scores(f) for f in files], ignore_index=True))
    for note in notes:
        # An id split apart changes what is pooled: a warning. Keys derived for an old table (or
        # ids alone) keep what such a table always meant: a debug line here (rr report's README
        # and console say it through its context's notes), so a command's one-line error stays one line.
        log.log(logging.WARNING if SPLIT_NOTE in note else logging.DEBUG, "%s", note)
    return df


def _read_scores(path: Path) -> pd.DataFrame:
    """One ``scores.parquet`` without a ``prompt`` column (a table written before ``prompts.parquet`` has one)."""
    names = pq.read_schema(path).names
    if PROMPT not in names:
        return pd.read_parquet(path)
    return pd.read_parquet(path, columns=[c for c in names if c != PROMPT])


def load_prompts(path_or_glob: str | Path | list[str | Path]) -> pd.DataFrame:
    """The prompts as sent of the jobs under ``path_or_glob`` (as :func:`load` finds them): the
    :data:`PROMPT_KEYS` each job's table has, and ``prompt``.

    Read from each job's ``prompts.parquet``; a table written before it (a ``prompt`` column in
    ``scores.parquet``) gives that column; a job with neither gives no rows. Join on the keys both
    frames have: ``load(p).merge(load_prompts(p), how="left")``.
    """
    frames = []
    for f in find_score_files(path_or_glob):
        side = f.parent / PROMPTS_FILE
        if side.is_file():
            frames.append(pd.read_parquet(side))
            continue
        names = pq.read_schema(f).names
        if PROMPT in names:
            frames.append(pd.read_parquet(f, columns=[*(c for c in PROMPT_KEYS if c in names), PROMPT]))
    if not frames:
        return pd.DataFrame({PROMPT: pd.Series([], dtype=object)})
    return pd.concat(frames, ignore_index=True)


def varying(df: pd.DataFrame, columns: Sequence[str]) -> list[str]:
    """The columns of ``columns`` present in ``df`` with more than one distinct value."""
    return [c for c in columns if c in df.columns and df[c].astype(str).nunique() > 1]
