"""Predictions made elsewhere (a vLLM script, FlashRAG, BERGEN), scored into rr job folders: ``rr score``.

A predictions file holds one record per (question, cell): JSON lines (``.jsonl``, ``.jsonl.gz``), a
JSON array (``.json``: FlashRAG's ``intermediate_data.json``, BERGEN's ``eval_dev_out.json``), CSV or
parquet. Each record gives the columns of :data:`REQUIRED` (one of :data:`ANSWER_TEXT` too) and may
give those of :data:`OPTIONAL`; a column comes from the record's field of its name, from another
field (:attr:`Columns.fields`, ``--map question=query``; a dotted path reads a nested field,
``output.pred``), or is one value for every record (:attr:`Columns.values`, ``--set model=...``).

:func:`read_predictions` checks every record and returns the rows, or raises
:class:`BadPredictions` with one line per bad record (``file:line: what is wrong``).
:func:`score_predictions` judges them with the job's judge (``judge=...``: rr's match, the papers'
scorers, an LLM judge) and builds each job's score table with :func:`rr.results.score_row`, one job
per (dataset, model) as a job of rr runs one; :func:`write_job` writes its folder (the files of
:mod:`rr.jobfolder`), so ``rr report``, the site, ``rr status``, W&B and :func:`rr.results.load`
read it as any job's. A k > 0 record that names no documents has ``n_docs_given = n_docs_used = k``
(as its cell says) and ``answer_in_docs`` unknown (null; ids alone: the same).
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import shutil
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from rr.atomic import atomic_write
from rr.config.identity import job_id, semantic_config
from rr.config.instantiation import instantiate, instantiate_as
from rr.config.settings import job_settings
from rr.context import RankedDoc
from rr.data.base import DataError
from rr.data.jsonl import file_sha256, parse_answer_groups, parse_answers, parse_id, parse_question
from rr.errors import ConfigError, UserError
from rr.generation.cache import GenerationCache
from rr.generation.client import LLM
from rr.hashing import content_hash
from rr.jobfolder import CORPUS_FILE, RETRIEVAL_FILE, JobSummary, read_summary, write_config, write_summary
from rr.judges.base import Judge, JudgeItem
from rr.prompts.answer import extract_answer, scored_text
from rr.records import Example, GenerationParams, MetaKey, Passage
from rr.results import example_key, example_set, score_row, write_scores
from rr.retrieval.runs import RunCache
from rr.runtime import Runtime
from rr.strategies.base import Cell, CellInput, StrategyOutput
from rr.summary import DataScope, build_summary

#: The columns every record gives (``k = 0``: closed book, with an empty ``retriever`` and ``order``;
#: without ``k``, a record that gives its documents has k = their number).
REQUIRED = ("id", "question", "answers", "retriever", "k", "order", "strategy", "model")
#: The text scored: ``prediction`` as given, or ``output`` (the raw generation) through ``scoring.text``.
ANSWER_TEXT = ("prediction", "output")
#: Columns a record may give: the documents in the prompt (ids, texts or ``{id, title, text}``
#: objects), the dataset's name (default: the file's name), the perturbations' names, the prompt as
#: sent, ASQA-style answer groups and the question's language (RGB's scorer on Chinese).
OPTIONAL = (
    "doc_ids",
    "documents",
    "dataset",
    "query_perturbation",
    "doc_perturbation",
    "prompt",
    "answer_groups",
    "language",
)
COLUMNS = (*REQUIRED, *ANSWER_TEXT, *OPTIONAL)
#: Where CSV holds a list (``answers``, ``doc_ids``, ``documents``): its items joined by ``|``.
CSV_LIST_SEPARATOR = "|"
#: Suffixes read, and how.
FORMATS = {
    ".jsonl": "JSON lines",
    ".gz": "JSON lines (gzip)",
    ".json": "a JSON array or JSON lines",
    ".csv": "CSV",
    ".parquet": "parquet",
}
#: Errors shown before the rest are counted (a file with every record bad says so in a screen).
MAX_LISTED = 20


class BadPredictions(UserError):
    """Records of a predictions file that cannot be scored: :attr:`bad` holds one line each."""

    def __init__(self, lines: list[str], total: int, files: Sequence[str | Path]) -> None:
        self.bad = lines
        names = ", ".join(map(str, files))
        more = f" (the first {len(lines)} above)" if total > len(lines) else " (above)"
        super().__init__(
            f"{total} record(s) of {names} cannot be scored{more}; nothing was written: fix them, or "
            "map the columns they lack (--map COLUMN=FIELD, --set COLUMN=VALUE)"
        )


@dataclass(frozen=True)
class Columns:
    """Where each column comes from: ``fields`` (column -> the record's field, a dotted path into
    nested objects) and ``values`` (column -> one value for every record). A column in neither is
    read from the field of its own name."""

    fields: dict[str, str] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for where, names in (("--map", self.fields), ("--set", self.values)):
            unknown = sorted(set(names) - set(COLUMNS))
            if unknown:
                raise ConfigError(
                    where, f"unknown column(s) {', '.join(unknown)}; the columns are {', '.join(COLUMNS)}"
                )
        both = sorted(set(self.fields) & set(self.values))
        if both:
            raise ConfigError("--set", f"{', '.join(both)} is both mapped (--map) and set (--set): keep one")


# ----------------------------------------------------------------------------- reading records


def _read_records(path: Path) -> Iterator[tuple[str, Any]]:
    """``(where, record)`` for each record of ``path``: ``where`` is ``file:line`` (``file: row n``
    for parquet); a record that cannot be parsed is a :class:`DataError` in place of the record."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        for i, rec in enumerate(pq.read_table(path).to_pylist(), start=1):
            yield f"{path}: row {i}", rec
        return
    if suffix == ".csv":
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            line = reader.line_num + 1
            for rec in reader:
                yield f"{path}:{line}", {k: v for k, v in rec.items() if k is not None}
                line = reader.line_num + 1
        return
    if suffix == ".gz":
        import gzip

        with gzip.open(path, "rt", encoding="utf-8") as f:
            text = f.read()
    else:
        text = path.read_text(encoding="utf-8-sig")
    if suffix == ".json" and text.lstrip().startswith("["):
        yield from _json_array(path, text)
        return
    for lineno, line_text in enumerate(text.splitlines(), start=1):
        if not line_text.strip():
            continue
        try:
            yield f"{path}:{lineno}", json.loads(line_text)
        except json.JSONDecodeError as e:
            yield (
                f"{path}:{lineno}",
                DataError(f"{path}:{lineno}: invalid JSON ({e.msg} at column {e.colno})"),
            )


def _json_array(path: Path, text: str) -> Iterator[tuple[str, Any]]:
    """Each element of a JSON array, with the line it starts on."""
    decoder = json.JSONDecoder()
    pos = text.index("[") + 1
    line = 1 + text.count("\n", 0, pos)
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            line += text[pos] == "\n"
            pos += 1
        if pos >= len(text) or text[pos] == "]":
            return
        try:
            rec, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            yield (
                f"{path}:{e.lineno}",
                DataError(f"{path}:{e.lineno}: invalid JSON ({e.msg} at column {e.colno})"),
            )
            return
        yield f"{path}:{line}", rec
        line += text.count("\n", pos, end)
        pos = end


_ABSENT = object()


def _lookup(record: Mapping[str, Any], path: str) -> Any:
    """The value at ``path`` in ``record``: a field of that name, else a dotted path
    (``output.pred``; ``output.retrieval_result.id`` takes ``id`` of each item of a list)."""
    if path in record:
        return record[path]
    node: Any = record
    for part in path.split("."):
        if isinstance(node, list):
            node = [item.get(part, _ABSENT) if isinstance(item, Mapping) else _ABSENT for item in node]
            if any(v is _ABSENT for v in node):
                return _ABSENT
        elif isinstance(node, Mapping) and part in node:
            node = node[part]
        else:
            return _ABSENT
    return node


def _null(value: Any) -> bool:
    """No value: no field, JSON null or a parquet NaN (an empty text is a value: an empty answer)."""
    return value is _ABSENT or value is None or (isinstance(value, float) and math.isnan(value))


def _missing(value: Any) -> bool:
    """An absent or empty cell: :func:`_null`, or an empty text (a CSV's empty cell)."""
    return _null(value) or (isinstance(value, str) and not value.strip())


# ----------------------------------------------------------------------------- one row


@dataclass(frozen=True)
class PredictionRow:
    """One checked record: the example, its cell, the documents shown and the text to score."""

    where: str
    dataset: str
    model: str
    strategy: str
    example: Example
    cell: Cell
    docs: tuple[RankedDoc, ...]
    texts_known: bool  # the documents' texts were given (else ids alone: answer_in_docs unknown)
    raw_output: str
    prediction: str | None  # as given (``None``: scored from ``raw_output``)
    prompt: str


def _as_list(value: Any, csv_row: bool) -> Any:
    if csv_row and isinstance(value, str):
        return [v.strip() for v in value.split(CSV_LIST_SEPARATOR)]
    if hasattr(value, "tolist"):  # a parquet list read as an array
        return value.tolist()
    return value


def _text(value: Any, column: str, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise DataError(f"{where}: {column} must be text, got {type(value).__name__} ({str(value)[:60]!r})")
    return value if isinstance(value, str) else str(value)


def _k(value: Any, where: str) -> int:
    try:
        k = int(value) if not isinstance(value, bool) and float(value) == int(float(value)) else -1
    except (TypeError, ValueError):
        k = -1
    if k < 0:
        raise DataError(f"{where}: k must be a whole number >= 0 (0 = closed book), got {value!r}")
    return k


def _documents(docs: Any, ids: Any, where: str, csv_row: bool) -> tuple[tuple[RankedDoc, ...], bool]:
    """The documents in prompt order (their rank: their place) and whether their texts are known."""
    passages: list[Passage] = []
    texts = not _missing(docs)
    if texts:
        docs = _as_list(docs, csv_row)
        if not isinstance(docs, list):
            raise DataError(f"{where}: documents must be a list (texts, or objects with id, title, text)")
        for i, d in enumerate(docs, start=1):
            if isinstance(d, str):
                passages.append(Passage("", d))
            elif isinstance(d, Mapping) and isinstance(text := d.get("text", d.get("contents")), str):
                pid = d.get("id", d.get("_id", d.get("docid", "")))
                passages.append(Passage(str(pid or ""), text, str(d.get("title") or "")))
            else:
                raise DataError(
                    f"{where}: document {i} must be a text or an object with a text (or contents) field"
                )
    if not _missing(ids):
        ids = _as_list(ids, csv_row)
        if not isinstance(ids, list) or not all(isinstance(i, str | int) for i in ids):
            raise DataError(f"{where}: doc_ids must be a list of ids")
        if texts and len(ids) != len(passages):
            raise DataError(f"{where}: {len(ids)} doc_ids but {len(passages)} documents")
        passages = (
            [Passage(str(i), p.text, p.title) for i, p in zip(ids, passages, strict=True)]
            if texts
            else [Passage(str(i), "") for i in ids]
        )
    passages = [
        p if p.id else Passage("doc-" + content_hash(["doc", p.title, p.text], 12), p.text, p.title)
        for p in passages
    ]
    return tuple(RankedDoc(p, rank) for rank, p in enumerate(passages, start=1)), texts


def parse_row(
    record: Any, where: str, columns: Columns, default_dataset: str, csv_row: bool
) -> PredictionRow:
    """One record checked and read into a :class:`PredictionRow`.

    Raises:
        DataError: ``where: what is wrong`` (a column missing, a value of the wrong kind).
    """
    if not isinstance(record, Mapping):
        raise DataError(
            f"{where}: expected an object (one record per question and cell), got {type(record).__name__}"
        )

    def get(column: str) -> Any:
        if column in columns.values:
            return columns.values[column]
        return _lookup(record, columns.fields.get(column, column))

    def required(column: str) -> Any:
        value = get(column)
        if value is _ABSENT:
            source = columns.fields.get(column)
            has = ", ".join(sorted(map(str, record))[:12])
            if source:
                raise DataError(f"{where}: no field {source!r} (mapped to {column}); the record has {has}")
            raise DataError(
                f"{where}: no {column!r} (the record has {has}): map a field to it (--map {column}=FIELD) "
                f"or give every record one value (--set {column}=VALUE)"
            )
        return value

    values = {c: required(c) for c in ("id", "question", "answers", "strategy", "model")}
    docs, texts = _documents(get("documents"), get("doc_ids"), where, csv_row)
    mapped = {"documents", "doc_ids"} & set(columns.fields)
    if get("k") is _ABSENT and "k" not in columns.fields and (docs or texts or mapped):
        k = len(docs)  # no k: the documents given (FlashRAG's retrieval_result; none: closed book)
    else:
        k = _k(required("k"), where)
    if len(docs) > k:
        raise DataError(f"{where}: {len(docs)} documents in a k={k} cell; k is the documents asked for")
    retriever, order = (get("retriever"), get("order")) if k else ("none", "none")
    for column, value in (("retriever", retriever), ("order", order)):
        if _missing(value):
            required(column)  # absent: says how to give it; present but empty:
            raise DataError(f"{where}: {column} is empty in a k={k} cell (only k=0, closed book, has none)")
    for column in ("strategy", "model"):
        if _missing(values[column]):
            raise DataError(f"{where}: {column} is empty")
    prediction, output = get("prediction"), get("output")
    if prediction is _ABSENT and output is _ABSENT:
        raise DataError(
            f"{where}: neither 'prediction' (scored as given) nor 'output' (the raw generation, scored "
            "through scoring.text): map one (--map prediction=FIELD or --map output=FIELD)"
        )
    no_prediction, no_output = _null(prediction), _null(output)
    if no_prediction and no_output:
        raise DataError(f"{where}: no text to score: prediction and output are both null")
    answers = _as_list(values["answers"], csv_row)
    groups = get("answer_groups")
    language = get("language")
    meta = {} if _missing(language) else {MetaKey.LANGUAGE: _text(language, "language", where)}
    example = Example(
        parse_id(values["id"], where),
        parse_question(values["question"], where),
        parse_answers(answers, where),
        None if _missing(groups) else parse_answer_groups(_as_list(groups, False), where),
        meta,
    )
    perturbations = {}
    for column in ("query_perturbation", "doc_perturbation"):
        value = get(column)
        perturbations[column] = "none" if _missing(value) else _text(value, column, where)
    dataset = get("dataset")
    raw = "" if no_output else _text(output, "output", where)
    given = None if no_prediction else _text(prediction, "prediction", where)
    prompt = get("prompt")
    return PredictionRow(
        where=where,
        dataset=default_dataset if _missing(dataset) else _text(dataset, "dataset", where),
        model=_text(values["model"], "model", where),
        strategy=_text(values["strategy"], "strategy", where),
        example=example,
        cell=Cell(
            _text(retriever, "retriever", where),
            k,
            _text(order, "order", where),
            perturbations["query_perturbation"],
            perturbations["doc_perturbation"] if k else "none",
        ),
        docs=docs,
        texts_known=texts,
        raw_output=raw if raw or given is None else given,
        prediction=given,
        prompt="" if _missing(prompt) else _text(prompt, "prompt", where),
    )


def read_predictions(files: Sequence[str | Path], columns: Columns) -> list[PredictionRow]:
    """Every record of ``files`` checked: the rows, in file order.

    Raises:
        BadPredictions: one line per bad record (``file:line: what is wrong``), the first
            :data:`MAX_LISTED` of them in :attr:`BadPredictions.bad`; a row that repeats another's
            (dataset, model, strategy, example and cell) and an id whose question or answers differ
            between rows are bad rows too.
        DataError: a file that cannot be read, or holds no record.
    """
    rows: list[PredictionRow] = []
    errors: list[str] = []
    seen: dict[tuple, str] = {}
    examples: dict[tuple[str, str], tuple[str, PredictionRow]] = {}
    for name in files:
        path = Path(name)
        if not path.is_file():
            raise DataError(f"no such predictions file: {path}")
        if path.suffix.lower() not in FORMATS:
            listed = ", ".join(f"{s} ({what})" for s, what in FORMATS.items())
            raise DataError(f"{path}: unknown format {path.suffix!r}; rr score reads {listed}")
        n = 0
        for where, record in _read_records(path):
            n += 1
            try:
                if isinstance(record, DataError):
                    raise record
                row = parse_row(
                    record, where, columns, path.name.split(".")[0], path.suffix.lower() == ".csv"
                )
                key = (row.dataset, row.model, row.strategy, row.example.id, row.cell)
                if key in seen:
                    raise DataError(
                        f"{where}: the same question and cell as {seen[key]} (id {row.example.id!r}, "
                        f"{row.strategy}, {_cell_name(row.cell)}, model {row.model})"
                    )
                if row.cell.query_perturbation == "none":
                    first = examples.setdefault((row.dataset, row.example.id), (where, row))
                    ex = first[1].example
                    if (ex.question, ex.answers) != (row.example.question, row.example.answers):
                        what = "question" if ex.question != row.example.question else "answers"
                        raise DataError(f"{where}: id {row.example.id!r} has another {what} at {first[0]}")
            except DataError as e:
                errors.append(str(e).replace("\n", " "))
                continue
            seen[key] = where
            rows.append(row)
        if not n:
            raise DataError(f"{path}: no records")
    if errors:
        raise BadPredictions(errors[:MAX_LISTED], len(errors), files)
    return rows


def _cell_name(cell: Cell) -> str:
    return "closed book (k=0)" if cell.k == 0 else f"{cell.retriever}, k={cell.k}, {cell.order}"


# ----------------------------------------------------------------------------- the model and the job


class RecordedModel:
    """The model that made a predictions file's answers (the job's ``generator``): its answers are
    recorded, so it is never asked. A judge that would ask the model under test (RGB's or RARE's
    LLM checks with ``judge.generator=null``) fails in one line naming the setting to give.

    Args:
        model: The model's name as the file gives it (the job's ``public_model`` and ``model_id``).
    """

    context_window = 0

    def __init__(self, model: str) -> None:
        self.name = model
        self.model = model
        self.model_name = model

    def identity(self) -> dict:
        return {"model_id": self.model, "revision": None, "source": "rr score"}

    def default_params(self) -> GenerationParams:
        return GenerationParams()

    def render(self, request: Any) -> str:
        raise ConfigError(
            "judge.generator",
            f"the judge asks the model under test ({self.model}), whose answers rr score reads from a file "
            "and cannot ask: give the judge a model of its own (judge.generator=...)",
        )

    def count_tokens(self, prompts: list[str]) -> list[int]:
        return [0 for _ in prompts]

    def generate(self, prompts: list[str], params: Any, progress: Any = None) -> list:
        self.render(None)
        return []


#: The generator node of a scored job's ``config.yaml``.
RECORDED_TARGET = f"{RecordedModel.__module__}.{RecordedModel.__qualname__}"


@dataclass
class ScoredJob:
    """One job of a predictions file: its config (``config.yaml``), id, score table and what its
    summary says."""

    cfg: DictConfig
    job_id: str
    scores: pd.DataFrame
    summary: JobSummary
    documents: list[Passage]  # every distinct document with its text (the job folder's corpus)
    recall: pd.DataFrame  # answer recall per retriever, query perturbation and k (empty: no texts)
    folder: Path  # where it is written
    already: bool = False  # the folder held this job, finished: nothing judged or written


def job_config(
    base: DictConfig,
    dataset: str,
    model: str,
    files: Sequence[Path],
    columns: Columns,
    corpus: dict[str, Any] | None,
) -> DictConfig:
    """The ``config.yaml`` of the job of one (dataset, model) of ``files``: what the file and the
    command say, nothing a job of rr would have run. The files' sha256 is in the job id; where they
    are (``paths.predictions``) is not."""
    resolved = OmegaConf.to_container(base, resolve=True)
    assert isinstance(resolved, dict)
    node: dict[str, Any] = {
        "name": resolved.get("name"),
        "seed": resolved.get("seed"),
        "experiment": None,
        "dataset": {"name": dataset},
        "generator": {"_target_": RECORDED_TARGET, "model": model},
        "judge": resolved["judge"],
        "scoring": resolved.get("scoring"),
        "predictions": {
            "sha256": [file_sha256(f) for f in files],
            "map": dict(columns.fields),
            "set": dict(columns.values),
        },
        "paths": {**resolved.get("paths", {}), "predictions": [str(f.resolve()) for f in files]},
        "logger": resolved.get("logger"),
    }
    if corpus is not None:
        node["corpus"] = corpus
    return OmegaConf.create(node)


def corpus_node(base: DictConfig, overridden: bool, folder: Path, has_texts: bool) -> dict[str, Any] | None:
    """The job's ``corpus``: the one the command chose (``corpus=... corpus.path=...``: the site
    reads the documents' texts there), else the job folder's :data:`~rr.jobfolder.CORPUS_FILE` of
    the texts the file gave, else none."""
    if overridden:
        node = OmegaConf.to_container(base.corpus, resolve=True)
        assert isinstance(node, dict)
        return {str(k): v for k, v in node.items()}
    if not has_texts:
        return None
    return {
        "_target_": "rr.data.jsonl.JsonlCorpus",
        "path": str((folder / CORPUS_FILE).resolve()),
        "name": "predictions",
        "id_field": "id",
        "text_field": "text",
        "title_field": "title",
        "max_passages": None,
    }


def score_job(
    cfg: DictConfig, rows: list[PredictionRow], judge: Judge, rt: Runtime, text: str
) -> pd.DataFrame:
    """The score table of one job's rows: each prediction (``output`` through ``scoring.text=text``)
    judged by ``judge``, its row built by :func:`rr.results.score_row`."""
    outputs = []
    for r in rows:
        if r.prediction is not None:
            prediction, marker = r.prediction, True  # scored as given: nothing extracted
        else:
            answer, marker = extract_answer(r.raw_output)
            prediction = scored_text(r.raw_output, answer, text)
        outputs.append(StrategyOutput(r.raw_output, prediction, marker, r.docs, prompt=r.prompt))
    judgments = judge.judge(
        [JudgeItem.of(r.example, o.prediction) for r, o in zip(rows, outputs, strict=True)], rt
    )
    jid = job_id(cfg)
    keys: dict[str, str] = {}
    for r in rows:  # a perturbed query keeps its original's key (the unperturbed row's question)
        if r.cell.query_perturbation == "none" or r.example.id not in keys:
            keys[r.example.id] = example_key(r.example.question, r.example.answers)
    table = []
    for r, o, jd in zip(rows, outputs, judgments, strict=True):
        row = score_row(
            CellInput(r.example, r.cell, r.docs),
            o,
            jd,
            dataset=r.dataset,
            generator=r.model,
            strategy=r.strategy,
            job_id=jid,
            seed=int(cfg.seed),
            key=keys[r.example.id],
        )
        if r.cell.k and not r.texts_known:
            row["answer_in_docs"] = None  # ids alone, or nothing: whether an answer is there is not known
        if r.cell.k and not r.docs:  # no documents recorded: the k the cell asked for, as given
            row["n_docs_given"] = row["n_docs_used"] = r.cell.k
        table.append(row)
    scores = pd.DataFrame(table)
    if not any(r.texts_known for r in rows):
        scores = scores.drop(columns="answer_in_docs")
    return scores


def answer_recall(scores: pd.DataFrame) -> pd.DataFrame:
    """``retrieval.csv``: per retriever, query perturbation and k, the share of examples whose
    documents (unperturbed; any order: the same documents) hold a gold answer."""
    columns = ["retriever", "query_perturbation", "k", "answer_recall"]
    if "answer_in_docs" not in scores.columns:
        return pd.DataFrame(columns=columns)
    rag = scores[
        (scores["k"] > 0) & (scores["doc_perturbation"] == "none") & scores["answer_in_docs"].notna()
    ]
    if rag.empty:
        return pd.DataFrame(columns=columns)
    per_example = rag.groupby(["retriever", "query_perturbation", "k", "example_id"])["answer_in_docs"].max()
    recall = per_example.astype(float).groupby(level=[0, 1, 2]).mean().rename("answer_recall")
    return recall.reset_index()[columns]


def job_folders(out: Path, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Path]:
    """Where each (dataset, model) job goes: ``out`` itself for a file of one job, else
    ``out/<dataset>__<model>`` each (characters a folder name cannot hold as ``_``)."""
    if len(keys) == 1:
        return {keys[0]: out}
    folders: dict[tuple[str, str], Path] = {}
    for dataset, model in keys:
        name = re.sub(r"[^\w.-]+", "_", f"{dataset}__{model}").strip("._") or "job"
        while out / name in folders.values():
            name += "_"
        folders[(dataset, model)] = out / name
    return folders


def _checked_folder(folder: Path, jid: str) -> bool:
    """Whether ``folder`` already holds this finished job (``True``: nothing to write); a folder that
    holds anything else is never written into.

    Raises:
        UserError: ``folder`` exists and is not empty, and is not this job's.
    """
    if not folder.exists():
        return False
    if not folder.is_dir():
        raise UserError(f"{folder} is a file, not a folder: give rr score another --out")
    done = read_summary(folder)
    if done is not None and done.job_id == jid:
        return True
    if any(folder.iterdir()):
        what = f"job {done.job_id}" if done is not None else "other files"
        raise UserError(
            f"{folder} already holds {what}; rr score never writes into a folder that is not its own: "
            "give another --out (or remove that folder yourself)"
        )
    return False


def score_predictions(
    base: DictConfig,
    files: Sequence[str | Path],
    columns: Columns,
    out: Path,
    corpus_overridden: bool = False,
) -> list[ScoredJob]:
    """Read, check and judge the predictions of ``files``: one :class:`ScoredJob` per (dataset,
    model), in order of first appearance, each bound for its :func:`job_folders` folder.

    Args:
        base: The composed rr config of the command (its ``judge``, ``scoring``, ``paths``, ``logger``).
        files: The predictions files.
        columns: Where each column comes from.
        out: The folder of the job (of the jobs, when the files hold several).
        corpus_overridden: The command chose a corpus (its texts are the documents').

    Raises:
        BadPredictions: records that cannot be scored (one line each); nothing is judged.
        UserError: a job's folder holds something else (nothing is judged or written).
    """
    t_start = time.perf_counter()
    paths = [Path(f) for f in files]
    rows = read_predictions(paths, columns)
    groups: dict[tuple[str, str], list[PredictionRow]] = {}
    for r in rows:
        groups.setdefault((r.dataset, r.model), []).append(r)
    folders = job_folders(out, list(groups))
    planned = []
    for key, mine in groups.items():
        corpus = corpus_node(base, corpus_overridden, folders[key], any(r.texts_known for r in mine))
        cfg = job_config(base, *key, paths, columns, corpus)
        jid = job_id(cfg)
        planned.append((cfg, jid, mine, folders[key], _checked_folder(folders[key], jid)))
    judge = instantiate_as(base.judge, Judge, "judge")
    settings = job_settings(base)
    jobs = []
    for cfg, jid, mine, folder, done in planned:
        if done:
            summary = read_summary(folder)
            assert summary is not None
            jobs.append(ScoredJob(cfg, jid, pd.DataFrame(), summary, [], pd.DataFrame(), folder, True))
            continue
        generator = RecordedModel(str(cfg.generator.model))
        llm = LLM(
            generator,
            GenerationCache(settings.cache_dir, generator.identity(), writer=jid),
            show_progress=settings.progress,
            plan_hint="rr score ...",
        )
        rt = Runtime(
            llm, Path(settings.cache_dir), seed=settings.seed, job_id=jid, show_progress=settings.progress
        )
        try:
            scores = score_job(cfg, mine, judge, rt, settings.scored_text)
        finally:
            rt.close()
        recall = answer_recall(scores)
        by_retriever: dict[str, dict[str, dict[int, float]]] = {}
        for rec in recall.itertuples():
            by_retriever.setdefault(str(rec.retriever), {}).setdefault(str(rec.query_perturbation), {})[
                int(rec.k)
            ] = float(rec.answer_recall)
        n_examples = scores["example_id"].nunique()
        names = ", ".join(str(p) for p in paths)
        scope = DataScope(n_examples, None, [f"examples: {n_examples} ({len(mine)} records of {names}, all)"])
        summary = build_summary(
            name=settings.name,
            job_id=jid,
            scores=scores,
            examples=n_examples,
            rt=rt,
            run_cache=RunCache(settings.cache_dir),
            recall=by_retriever,
            retrievers=[],
            timings={},
            t_start=t_start,
            scope=scope,
            example_set=example_set(scores["example_key"]),
        )
        documents: dict[str, Passage] = {}
        for r in mine:
            if r.texts_known:
                for d in r.docs:
                    documents.setdefault(d.passage.id, d.passage)
        jobs.append(ScoredJob(cfg, jid, scores, summary, list(documents.values()), recall, folder))
    return jobs


def write_job(job: ScoredJob) -> None:
    """Write a scored job's folder: its config, corpus file (the documents the file gave), score
    table, ``retrieval.csv`` and, last, ``summary.json``; all in a new folder beside it, renamed into
    place at the end (a folder that exists is empty: :func:`score_predictions` checked it)."""
    folder = job.folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.parent / f".{folder.name}.rr-score-{os.getpid()}"
    tmp.mkdir()
    try:
        write_config(tmp, job.cfg)
        if job.documents:
            with atomic_write(tmp / CORPUS_FILE) as f:
                for p in job.documents:
                    line = {"id": p.id, "title": p.title, "text": p.text}
                    f.write(json.dumps(line, ensure_ascii=False) + "\n")
        write_scores(job.scores, tmp)
        if not job.recall.empty:
            with atomic_write(tmp / RETRIEVAL_FILE) as f:
                job.recall.to_csv(f, index=False)
        write_summary(tmp, job.summary)
        os.replace(tmp, folder)  # onto a folder that is not there, or empty
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)


def log_job(job: ScoredJob) -> None:
    """Log the job to its ``logger`` (``logger=wandb``) as a job of rr logs itself."""
    if not job.cfg.get("logger"):
        return
    logger = instantiate(job.cfg.logger)
    try:
        logger.log_job(job.job_id, semantic_config(job.cfg), job.summary, job.scores, str(job.folder))
    finally:
        logger.finish()
