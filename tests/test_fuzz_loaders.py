"""Fuzzing the JSONL dataset and corpus loaders (issue 14, "Fuzzing as a standing test").

Property: any file content loads, or fails with a :class:`~rr.data.base.DataError` whose
message starts with the file (and, for a bad line, ``path:line``); never another exception.
Valid rows (any unicode text, escaped or raw UTF-8, plain or gzip) load back unchanged.
Profiles: tests/conftest.py.
"""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from rr.data.base import DataError
from rr.data.jsonl import JsonlCorpus, JsonlDataset

pytestmark = pytest.mark.fuzz

#: Printable text without surrogates (what a valid UTF-8 file can hold).
TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=20)
#: Ids without whitespace (ids with whitespace are another part of issue 14).
IDS = st.text(st.characters(categories=["L", "N", "P"]), min_size=1, max_size=10)


def question_row() -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries(
        {
            "id": IDS,
            "question": TEXT.filter(str.strip),
            "answers": st.lists(TEXT.filter(str.strip), min_size=1),
        }
    )


def json_line(row: dict, ascii_only: bool) -> bytes:
    return json.dumps(row, ensure_ascii=ascii_only).encode("utf-8") + b"\n"


#: Lines that are valid, damaged (bytes cut, flipped or inserted) or random.
def line_bytes() -> st.SearchStrategy[bytes]:
    valid = st.builds(json_line, question_row(), st.booleans())
    surrogate = st.sampled_from(
        [b'{"id": "s", "question": "\\ud83d", "answers": ["a"]}\n', b'{"\\udfff": 1}\n', b'"\\ud800"\n']
    )

    def damage(data: bytes, pos: int, junk: bytes) -> bytes:
        pos %= len(data) + 1
        return data[:pos] + junk + data[pos + len(junk) :]

    damaged = st.builds(damage, valid, st.integers(0, 200), st.binary(min_size=1, max_size=4))
    torn = st.builds(lambda d, n: d[: n % (len(d) + 1)], valid, st.integers(0, 200))
    return st.one_of(valid, surrogate, damaged, torn, st.binary(max_size=30), st.just(b"\n"))


CONTENT = st.lists(line_bytes(), max_size=6).map(b"".join)


def _load_or_data_error(loader, path: Path) -> object | None:
    try:
        return loader.load()
    except DataError as e:
        assert str(path) in str(e), str(e)  # names the file (and the line, if one is bad)
        str(e).encode("utf-8")  # printable: a lone surrogate never reaches the message raw
        return None


def _write(data: bytes, gz: bool) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="rr-fuzz-"))
    path = folder / ("f.jsonl.gz" if gz else "f.jsonl")
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


@given(CONTENT, st.booleans())
@example(b'{"id": "q", "question": "caf\xc3', False)  # torn multi-byte character
@example(b'{"id": "q", "question": "a\\udc80", "answers": ["x"]}\n', False)
@example(b"\xef\xbb\xbf" + b'{"id": "q", "question": "a", "answers": ["x"]}\n', False)  # UTF-8 BOM
def test_dataset_loader_loads_or_raises_data_error(data: bytes, gz: bool) -> None:
    path = _write(data, gz)
    examples = _load_or_data_error(JsonlDataset(str(path)), path)
    if examples is not None:
        assert examples and all(ex.id.strip() and ex.question.strip() and ex.answers for ex in examples)
        for ex in examples:  # every loaded text can be hashed and written
            (ex.id + ex.question + "".join(ex.answers)).encode("utf-8")


@given(CONTENT, st.booleans())
@example(b'{"id": 1, "text": ""}\n{"id": 2, "text": "  "}\n', False)  # all texts empty
def test_corpus_loader_loads_or_raises_data_error(data: bytes, gz: bool) -> None:
    # the dataset rows double as corpus rows: "question" is not a text field, "id" is the id
    data = data.replace(b'"question"', b'"text"')
    path = _write(data, gz)
    corpus = _load_or_data_error(JsonlCorpus(str(path)), path)
    if corpus is not None:
        assert len(corpus) and any(p.text.strip() for p in corpus.passages)
        assert len(corpus.fingerprint()) == 16


@given(
    st.lists(question_row(), min_size=1, max_size=5, unique_by=lambda r: r["id"]),
    st.booleans(),
    st.booleans(),
)
def test_valid_dataset_rows_load_back_unchanged(rows: list[dict], ascii_only: bool, gz: bool) -> None:
    path = _write(b"".join(json_line(r, ascii_only) for r in rows), gz)
    examples = JsonlDataset(str(path)).load()
    assert [(ex.id, ex.question, ex.answers) for ex in examples] == [
        (r["id"], r["question"], r["answers"]) for r in rows
    ]
