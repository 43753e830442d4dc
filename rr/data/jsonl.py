"""Datasets and corpora stored as local JSON-lines files (one JSON object per line).

Both readers are strict: a line that is not a JSON object, lacks a required field, has a
field of the wrong type or repeats an id raises :class:`~rr.data.base.DataError` whose
message starts with ``path:line`` (1-based line number). Blank lines are skipped; nothing
else is. Files ending in ``.gz`` are read through gzip. A UTF-8 byte-order mark at the start
of a file (spreadsheet exports write one) is read past.

The answer checks (:func:`parse_answers`, :func:`parse_answer_groups`) are shared with the
Hugging Face loaders in :mod:`rr.data.hf`, so every dataset obeys the same contract.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rr.data.base import Corpus, DataError, sample_examples
from rr.errors import require_positive
from rr.records import Example, Passage
from rr.registry import component

if TYPE_CHECKING:
    import pyarrow as pa

#: Field names tried, in order, when a corpus line lacks the configured field: BEIR uses
#: ``_id``/``title``/``text``, pyserini's JsonCollection ``id``/``contents`` (some dumps ``docid``).
CORPUS_ID_FALLBACKS = ("_id", "docid", "id")
CORPUS_TEXT_FALLBACKS = ("contents", "text")
CORPUS_TITLE_FALLBACKS = ("title",)
#: How every JSON-lines file rr reads is decoded: UTF-8, a byte-order mark at the start skipped.
JSONL_ENCODING = "utf-8-sig"


def parse_answers(value: Any, where: str) -> list[str]:
    """Validate gold answers: a non-empty string or a non-empty list of non-empty strings.

    Empty strings are rejected because substring matching would count any prediction as
    correct against them.

    Args:
        value: The raw field value.
        where: Location for the error message, e.g. ``"data.jsonl:12"``.

    Returns:
        The answers as a new list (a single string becomes a one-element list).

    Raises:
        DataError: If the value is missing, empty or not string(s).
    """
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise DataError(f"{where}: answers must be a string or a list of strings, got {type(value).__name__}")
    if not value:
        raise DataError(f"{where}: answers is empty")
    for a in value:
        if not isinstance(a, str):
            raise DataError(f"{where}: answers must be strings, got {type(a).__name__} ({a!r})")
        if not a.strip():
            raise DataError(f"{where}: empty answer string in {value!r}")
    return list(value)


def parse_answer_groups(value: Any, where: str) -> list[list[str]]:
    """Validate ASQA-style answer groups: a non-empty list of valid answer lists.

    Args:
        value: The raw field value (list of lists of strings).
        where: Location for the error message.

    Returns:
        The groups as new lists, in source order.

    Raises:
        DataError: If the value is not a non-empty list, or any group fails :func:`parse_answers`
            (a bare string is not accepted as a group).
    """
    if not isinstance(value, list) or not value:
        raise DataError(f"{where}: answer_groups must be a non-empty list of lists of strings, got {value!r}")
    groups = []
    for j, group in enumerate(value):
        if not isinstance(group, list):
            raise DataError(
                f"{where}: answer group {j} must be a list of strings, got {type(group).__name__}"
            )
        groups.append(parse_answers(group, f"{where}: answer group {j}"))
    return groups


def parse_id(value: Any, where: str) -> str:
    """An id from a string or an integer (bools, floats and empty strings are rejected).

    Ids containing whitespace are rejected too: example and passage ids become fields of the
    whitespace-separated TREC run files rr caches (``qid Q0 docid rank score tag``), where such
    an id would split into extra fields and poison every re-run. Rejecting at load (rather
    than escaping ids in the run file) keeps the run files standard for ``trec_eval`` and
    pyserini and makes the bad row easy to find.
    """
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise DataError(f"{where}: id must be a string or an integer, got {type(value).__name__} ({value!r})")
    text = str(value)
    if not text.strip():
        raise DataError(f"{where}: id is empty")
    if any(c.isspace() for c in text):
        raise DataError(
            f"{where}: id {text!r} contains whitespace, which TREC run files cannot hold; "
            "rename it (e.g. replace spaces with '_')"
        )
    return text


def parse_question(value: Any, where: str) -> str:
    """A non-empty question string."""
    if not isinstance(value, str):
        raise DataError(f"{where}: question must be a string, got {type(value).__name__} ({value!r})")
    if not value.strip():
        raise DataError(f"{where}: question is empty")
    return value


def file_sha256(path: str | Path) -> str:
    """Hex sha256 of a file's bytes (read in 1 MiB chunks)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


#: A surrogate code point: in a line read with ``surrogateescape`` it stands for a byte that is
#: not UTF-8; in a parsed value it came from a ``\\uD800``-``\\uDFFF`` escape with no partner.
_SURROGATE = re.compile("[\ud800-\udfff]")
#: A JSON escape that may decode to a lone surrogate (checked only when a line holds one).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _lone_surrogate(value: Any) -> str | None:
    """The first string (key or value) in a parsed JSON value that holds a lone surrogate."""
    if isinstance(value, str):
        return value if _SURROGATE.search(value) else None
    if isinstance(value, dict):
        items: list[Any] = [*value.keys(), *value.values()]
    elif isinstance(value, list):
        items = value
    else:
        return None
    return next((s for s in map(_lone_surrogate, items) if s is not None), None)


def read_examples(path: str | Path, parse: Callable[[dict[str, Any], str, int], Example]) -> list[Example]:
    """Every line of a JSON-lines file as an :class:`Example`, in file order: ``parse(row, where,
    line_number)`` makes each (``where`` is ``path:line``, the start of its errors).

    Raises:
        DataError: ``path:line`` for the first malformed line or repeated id.
        FileNotFoundError: If ``path`` does not exist.
    """
    examples: list[Example] = []
    first_line: dict[str, int] = {}
    for lineno, row in iter_jsonl(path):
        where = f"{path}:{lineno}"
        ex = parse(row, where, lineno)
        if ex.id in first_line:
            raise DataError(f"{where}: duplicate id {ex.id!r} (first at line {first_line[ex.id]})")
        first_line[ex.id] = lineno
        examples.append(ex)
    return examples


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line (1-based line numbers).

    Raises:
        DataError: ``path:line`` if a line is not valid UTF-8, not valid JSON, not a JSON
            object, or holds a string with a lone surrogate (``"\\ud800"``: no UTF-8 text can
            hold it, so hashing and writing it would fail later).
        FileNotFoundError: If ``path`` does not exist.
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    # surrogateescape: a byte that is not UTF-8 becomes one surrogate, so the line (and its
    # number) is still found, and the error names the byte and its column. utf-8-sig: a
    # byte-order mark at the file's start is dropped (elsewhere it stays, and is invalid JSON).
    with opener(path, "rt", encoding=JSONL_ENCODING, errors="surrogateescape") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            if bad := _SURROGATE.search(line):
                raise DataError(
                    f"{path}:{lineno}: not valid UTF-8 (byte 0x{ord(bad.group()) & 0xFF:02x} at column "
                    f"{bad.start() + 1}); re-encode the file as UTF-8"
                )
            text = line.rstrip(
                "\r\n"
            )  # with the newline, an error at the line's end is "column 1" of the next
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as e:
                where = (
                    f": the line ends at column {len(text.rstrip())} before the JSON does"
                    if e.pos >= len(text.rstrip())
                    else f" at column {e.colno}"
                )
                raise DataError(f"{path}:{lineno}: invalid JSON ({e.msg}{where})") from e
            if not isinstance(obj, dict):
                raise DataError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
            if _SURROGATE_ESCAPE.search(line) and (lone := _lone_surrogate(obj)) is not None:
                raise DataError(
                    f"{path}:{lineno}: a lone surrogate escape (\\u{ord(_SURROGATE.findall(lone)[0]):04x}) "
                    f"in {lone[:40]!r}; a surrogate must come in a high+low pair"
                )
            yield lineno, obj


@component("dataset", "jsonl")
class JsonlDataset:
    """Questions with gold answers from a local JSON-lines file.

    Each line is one example, e.g.
    ``{"id": "q1", "question": "...", "answers": ["a", "b"], "gold_titles": ["..."]}``.
    ``answers`` may be one string or a list of strings; ``answer_groups`` (optional, ASQA
    style) a list of lists of strings. Every other field is copied into ``Example.meta``
    unchanged. Ids may be strings or integers (integers become strings) and must be unique.

    Args:
        path: The ``.jsonl`` (or ``.jsonl.gz``) file.
        n: Number of examples to sample (``None`` = all), see :func:`~rr.data.base.sample_examples`.
        seed: Sampling seed.
        id_field: Field holding the example id (required on every line).
        question_field: Field holding the question (required, non-empty string).
        answers_field: Field holding the gold answers (required).
        answer_groups_field: Field holding answer groups; ``None`` = never read groups. When
            set, lines without the field get ``answer_groups=None``.
        name: The dataset's name in the score table and cache keys.
    """

    def __init__(
        self,
        path: str,
        n: int | None = None,
        seed: int = 0,
        id_field: str = "id",
        question_field: str = "question",
        answers_field: str = "answers",
        answer_groups_field: str | None = "answer_groups",
        name: str = "jsonl",
    ) -> None:
        self.path = path
        self.n = n
        self.seed = seed
        self.available: int | None = None  # after load: examples there were to sample n from
        self.id_field = id_field
        self.question_field = question_field
        self.answers_field = answers_field
        self.answer_groups_field = answer_groups_field
        self.name = name

    def _example(self, row: dict[str, Any], where: str) -> Example:
        for f in (self.id_field, self.question_field, self.answers_field):
            if f not in row:
                raise DataError(f"{where}: missing field {f!r} (fields: {sorted(row)})")
        groups = None
        if self.answer_groups_field is not None and row.get(self.answer_groups_field) is not None:
            groups = parse_answer_groups(row[self.answer_groups_field], where)
        own = {self.id_field, self.question_field, self.answers_field, self.answer_groups_field}
        return Example(
            id=parse_id(row[self.id_field], where),
            question=parse_question(row[self.question_field], where),
            answers=parse_answers(row[self.answers_field], where),
            answer_groups=groups,
            meta={k: v for k, v in row.items() if k not in own},
        )

    def load(self) -> list[Example]:
        """Read and validate every line, then sample ``n`` examples with ``seed``.

        Returns:
            Examples in file order (the sample keeps file order).

        Raises:
            DataError: ``path:line`` for the first malformed line or repeated id.
            FileNotFoundError: If ``path`` does not exist.
        """
        examples = read_examples(self.path, lambda row, where, _: self._example(row, where))
        if not examples:
            raise DataError(f"{self.path}: no examples")
        self.available = len(examples)
        return sample_examples(examples, self.n, self.seed)

    def fingerprint(self) -> dict:
        """Name, file content hash, field mapping, ``n`` and ``seed`` (the path itself is left out)."""
        return {
            "dataset": "jsonl",
            "name": self.name,
            "sha256": file_sha256(self.path),
            "fields": [self.id_field, self.question_field, self.answers_field, self.answer_groups_field],
            "n": self.n,
            "seed": self.seed,
        }


def _pick(row: dict[str, Any], configured: str, fallbacks: tuple[str, ...]) -> str | None:
    """The configured field if present, else the first fallback field present, else ``None``."""
    if configured in row:
        return configured
    return next((f for f in fallbacks if f in row), None)


@component("corpus", "jsonl")
class JsonlCorpus:
    """Passages from a local JSON-lines file, one passage per line.

    The configured fields are used when present. When a line lacks one, the common
    pyserini / BEIR layouts are recognised automatically: the id is taken from ``_id``,
    ``docid`` or ``id``, the text from ``contents`` or ``text``, the title from ``title``.
    So BEIR ``corpus.jsonl`` (``{"_id", "title", "text"}``) and pyserini JsonCollection files
    (``{"id", "contents"}``) load with the defaults. pyserini ``contents`` is kept as is
    (some collections put the title on its first line; it is not split off).

    A title is optional (missing or ``null`` = ``""``); the id and the text are required,
    and ids must be unique.

    Args:
        path: The ``.jsonl`` (or ``.jsonl.gz``) file.
        name: Short name for cache keys and file names.
        id_field: Field holding the passage id (string or integer).
        text_field: Field holding the passage text.
        title_field: Field holding the article title.
        max_passages: Keep only the first ``max_passages`` passages of the file (``None`` = all);
            meant for quick trials on a prefix of a large corpus.
    """

    def __init__(
        self,
        path: str,
        name: str = "jsonl",
        id_field: str = "id",
        text_field: str = "text",
        title_field: str = "title",
        max_passages: int | None = None,
    ) -> None:
        require_positive("max_passages", max_passages, optional=True)
        self.path = path
        self.name = name
        self.id_field = id_field
        self.text_field = text_field
        self.title_field = title_field
        self.max_passages = max_passages

    def _passage(self, row: dict[str, Any], where: str) -> Passage:
        id_key = _pick(row, self.id_field, CORPUS_ID_FALLBACKS)
        text_key = _pick(row, self.text_field, CORPUS_TEXT_FALLBACKS)
        if id_key is None or text_key is None:
            missing = self.id_field if id_key is None else self.text_field
            raise DataError(f"{where}: missing field {missing!r} (fields: {sorted(row)})")
        text = row[text_key]
        if not isinstance(text, str):
            raise DataError(f"{where}: {text_key!r} must be a string, got {type(text).__name__}")
        title_key = _pick(row, self.title_field, CORPUS_TITLE_FALLBACKS)
        title = row[title_key] if title_key is not None else None
        if title is None:
            title = ""
        if not isinstance(title, str):
            raise DataError(f"{where}: {title_key!r} must be a string, got {type(title).__name__}")
        return Passage(id=parse_id(row[id_key], where), text=text, title=title)

    def load(self) -> Corpus:
        """Read, validate and return the passages in file order.

        Raises:
            DataError: ``path:line`` for the first malformed line or repeated id, or if the
                file holds no passage.
            FileNotFoundError: If ``path`` does not exist.
        """
        passages: list[Passage] = []
        first_line: dict[str, int] = {}
        for lineno, row in iter_jsonl(self.path):
            if self.max_passages is not None and len(passages) >= self.max_passages:
                break
            where = f"{self.path}:{lineno}"
            p = self._passage(row, where)
            if p.id in first_line:
                raise DataError(f"{where}: duplicate passage id {p.id!r} (first at line {first_line[p.id]})")
            first_line[p.id] = lineno
            passages.append(p)
        if not passages:
            raise DataError(f"{self.path}: no passages")
        return Corpus(passages, name=self.name, source=str(self.path))

    def texts_of(self, ids: Sequence[str]) -> pa.Table:
        """The titles and texts of the passages ``ids``, read in one streaming pass that keeps only
        those, without :meth:`load`'s checks: for showing passages of a corpus that a job has
        already loaded (the report's result site), where a full :meth:`load` of a large corpus
        would cost more than everything else.

        pyarrow's JSON reader parses the file block by block (the id, text and title fields only,
        with the same fallbacks as :meth:`load`), keeping the rows whose id is asked for; a file it
        cannot read as one table (integer ids, a text that is not a string, a line that is not
        JSON) is read line by line instead, skipping lines that do not parse. ``max_passages``
        holds as in :meth:`load`; a repeated id gives its first passage.

        Args:
            ids: Passage ids.

        Returns:
            A table aligned with ``ids``: ``title`` (``""`` when absent) and ``text`` (null for an
            id the file does not hold), both strings.
        """
        import pyarrow as pa

        try:
            return self._texts_arrow(ids)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            found = self._texts_lines(ids)
        titles: list[str] = []
        texts: list[str | None] = []
        for pid in ids:
            title, text = found.get(pid, ("", None))
            titles.append(title)
            texts.append(text)
        return pa.table({"title": pa.array(titles, pa.string()), "text": pa.array(texts, pa.string())})

    def _fields(self) -> tuple[list[str], list[str], list[str]]:
        """The id, text and title fields in the order :meth:`load` tries them."""
        return (
            list(dict.fromkeys([self.id_field, *CORPUS_ID_FALLBACKS])),
            list(dict.fromkeys([self.text_field, *CORPUS_TEXT_FALLBACKS])),
            list(dict.fromkeys([self.title_field, *CORPUS_TITLE_FALLBACKS])),
        )

    def _texts_arrow(self, ids: Sequence[str]) -> pa.Table:
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.json as pj

        fields = self._fields()
        schema = pa.schema([(f, pa.string()) for f in dict.fromkeys(f for fs in fields for f in fs)])
        # one thread: the result site reads while it builds the rest; a line longer than the
        # 32 MiB block fails here and is read by lines
        reader = pj.open_json(
            self.path,
            read_options=pj.ReadOptions(block_size=1 << 25, use_threads=False),
            parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
        )
        wanted = pa.array(list(ids), pa.string())
        found = np.zeros(len(wanted), dtype=bool)
        at: list[np.ndarray] = []  # positions in ids of the passages found, batch by batch
        kept: list[pa.Table] = []
        left = self.max_passages
        for batch in reader:
            if left is not None:
                batch = batch.slice(0, left)
                left -= batch.num_rows
            # the first field present, as load's _pick (a field given as null counts as absent)
            pid, text, title = (pc.coalesce(*(batch.column(f) for f in fs)) for fs in fields)
            # the batch's ids hashed, the wanted ids looked up in them: the cost grows with the
            # batch and the ids asked for, not with their product
            missing = np.nonzero(~found)[0]
            where = pc.index_in(wanted.take(missing), value_set=pc.if_else(pc.is_null(text), None, pid))
            rows = pc.fill_null(where, -1).to_numpy()
            hit = rows >= 0
            if hit.any():
                rows = pa.array(rows[hit])
                kept.append(pa.table({"title": title.take(rows), "text": text.take(rows)}))
                at.append(missing[hit])
                found[missing[hit]] = True
            if left == 0 or found.all():
                break
        if not kept:
            kept.append(pa.table({"title": pa.array([], pa.string()), "text": pa.array([], pa.string())}))
            at.append(np.array([], dtype=np.int64))
        # each id's row among the rows kept (-1: not in the file), then one take in the ids' order
        row_of = np.full(len(wanted), -1, dtype=np.int64)
        row_of[np.concatenate(at)] = np.arange(sum(t.num_rows for t in kept))
        table = pa.concat_tables(kept).take(pa.array(row_of, mask=row_of < 0))
        return table.set_column(0, "title", pc.fill_null(table.column("title"), ""))

    def _texts_lines(self, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        wanted = set(ids)
        out: dict[str, tuple[str, str]] = {}
        id_f, text_f, title_f = self._fields()
        path = Path(self.path)
        opener = gzip.open if path.suffix == ".gz" else open
        n = 0
        with opener(path, "rt", encoding=JSONL_ENCODING, errors="replace") as f:
            for line in f:
                if not line.strip():
                    continue
                if self.max_passages is not None and n >= self.max_passages:
                    break
                n += 1
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if not isinstance(row, dict):
                    continue
                id_key = next((k for k in id_f if k in row), None)
                text_key = next((k for k in text_f if k in row), None)
                if id_key is None or text_key is None:
                    continue
                pid, text = row[id_key], row[text_key]
                if isinstance(pid, bool) or not isinstance(pid, str | int) or not isinstance(text, str):
                    continue
                pid = str(pid)
                if pid in wanted and pid not in out:
                    title_key = next((k for k in title_f if k in row), None)
                    title = row[title_key] if title_key is not None else ""
                    out[pid] = (title if isinstance(title, str) else "", text)
        return out
