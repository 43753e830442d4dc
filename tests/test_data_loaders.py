"""Dataset and corpus loaders on small local files in the real formats (no network).

The HF loaders read the same files ``datasets.load_dataset("json"|"parquet", data_files=...)``
reads on a user's machine, laid out like the Hub's nq_open, hotpot_qa and din0s/asqa splits
(and HotpotQA's original JSON release). Every test runs with the Hub switched off.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rr.data.base import Corpus, DataError
from rr.data.hf import ASQA, HotpotQA, NQOpen
from rr.data.jsonl import JsonlCorpus, JsonlDataset
from rr.records import Example, Passage

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No Hub access: env vars for a fresh import, module flags for an earlier one."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    import datasets.config
    import huggingface_hub.constants

    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


# -- files in the real formats -------------------------------------------------------------


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


NQ_ROWS = [
    {
        "question": "when was the last time anyone was on the moon",
        "answer": ["14 December 1972 UTC", "December 1972"],
    },
    {"question": "who wrote he ain't heavy he's my brother lyrics", "answer": ["Bobby Scott", "Bob Russell"]},
    {"question": "how many seasons of the bastard executioner are there", "answer": ["one", "one season"]},
]

# Hub layout of hotpot_qa: supporting_facts / context are Sequence(dict) = struct of lists.
HOTPOT_ROWS = [
    {
        "id": "5a8b57f25542995d1e6f1371",
        "question": "Were Scott Derrickson and Ed Wood of the same nationality?",
        "answer": "yes",
        "type": "comparison",
        "level": "hard",
        "supporting_facts": {"title": ["Scott Derrickson", "Ed Wood"], "sent_id": [0, 0]},
        "context": {
            "title": ["Ed Wood (film)", "Scott Derrickson", "Ed Wood"],
            "sentences": [
                ["Ed Wood is a 1994 American biographical period comedy-drama film."],
                [
                    "Scott Derrickson (born July 16, 1966) is an American director.",
                    "He lives in Los Angeles.",
                ],
                ["Edward Davis Wood Jr. was an American filmmaker."],
            ],
        },
    },
    {
        "id": "5a8c7595554299585d9e36b6",
        "question": "What government position was held by the woman who portrayed Corliss Archer in the film Kiss and Tell?",
        "answer": "Chief of Protocol",
        "type": "bridge",
        "level": "hard",
        "supporting_facts": {
            "title": [
                "Kiss and Tell (1945 film)",
                "Kiss and Tell (1945 film)",
                "Shirley Temple",
                "Shirley Temple",
            ],
            "sent_id": [0, 1, 0, 1],
        },
        "context": {
            "title": ["Kiss and Tell (1945 film)", "Shirley Temple"],
            "sentences": [
                ["Kiss and Tell is a 1945 comedy film.", "Shirley Temple plays Corliss Archer."],
                ["Shirley Temple Black was an actress.", "She was Chief of Protocol."],
            ],
        },
    },
]

# din0s/asqa layout: qa_pairs / wikipages / annotations are lists of structs; sample_id int64.
ASQA_ROWS = [
    {
        "ambiguous_question": "When did the simpsons first air on television?",
        "qa_pairs": [
            {
                "context": "No context provided",
                "question": "When did the Simpsons first air on television as an animated short on the Tracey Ullman Show?",
                "short_answers": ["April 19, 1987"],
                "wikipage": "The Simpsons shorts",
            },
            {
                "context": "No context provided",
                "question": "When did the Simpsons first air as a half-hour prime time show?",
                "short_answers": ["December 17, 1989", "Dec 17, 1989"],
                "wikipage": "The Simpsons",
            },
        ],
        "wikipages": [
            {"title": "The Simpsons", "url": "https://en.wikipedia.org/wiki/The%20Simpsons"},
            {"title": "The Simpsons shorts", "url": "https://en.wikipedia.org/wiki/The%20Simpsons%20shorts"},
            {"title": "The Simpsons", "url": "https://en.wikipedia.org/wiki/The%20Simpsons"},
        ],
        "annotations": [
            {"knowledge": [{"content": None, "wikipage": "The Simpsons"}], "long_answer": "The Simpsons..."}
        ],
        "sample_id": -4469503464110108318,
    },
    {
        "ambiguous_question": "Who played the joker in the dark knight?",
        "qa_pairs": [
            {
                "context": "No context provided",
                "question": "Who played the Joker in the 2008 film The Dark Knight?",
                "short_answers": ["Heath Ledger", "Heath Andrew Ledger"],
                "wikipage": None,
            },
            {
                "context": "No context provided",
                "question": "Who voiced the Joker in The Dark Knight Returns?",
                "short_answers": ["Michael Emerson", "Heath Ledger"],
                "wikipage": None,
            },
        ],
        "wikipages": [
            {"title": "The Dark Knight", "url": "https://en.wikipedia.org/wiki/The%20Dark%20Knight"}
        ],
        "annotations": [{"knowledge": [], "long_answer": "..."}],
        "sample_id": 7089015503030534144,
    },
]


def nq(tmp_path: Path, rows: list[dict] | None = None, **kw: Any) -> NQOpen:
    files = write_jsonl(tmp_path / "nq_open-validation.jsonl", NQ_ROWS if rows is None else rows)
    kw.setdefault("n", None)
    return NQOpen(data_files=str(files), cache_dir=str(tmp_path / "cache"), **kw)


def hotpot(tmp_path: Path, rows: list[dict] | None = None, **kw: Any) -> HotpotQA:
    files = write_parquet(tmp_path / "hotpot_qa-validation.parquet", HOTPOT_ROWS if rows is None else rows)
    kw.setdefault("n", None)
    return HotpotQA(data_files=str(files), cache_dir=str(tmp_path / "cache"), **kw)


def asqa(tmp_path: Path, rows: list[dict] | None = None, **kw: Any) -> ASQA:
    files = write_parquet(tmp_path / "asqa-dev.parquet", ASQA_ROWS if rows is None else rows)
    kw.setdefault("n", None)
    return ASQA(data_files=str(files), cache_dir=str(tmp_path / "cache"), **kw)


# -- exact outputs -------------------------------------------------------------------------


NQ_EXPECTED = [
    Example(
        "nq_open-validation-00000",
        NQ_ROWS[0]["question"],
        ["14 December 1972 UTC", "December 1972"],
        None,
        {"source": "nq_open:validation"},
    ),
    Example(
        "nq_open-validation-00001",
        NQ_ROWS[1]["question"],
        ["Bobby Scott", "Bob Russell"],
        None,
        {"source": "nq_open:validation"},
    ),
    Example(
        "nq_open-validation-00002",
        NQ_ROWS[2]["question"],
        ["one", "one season"],
        None,
        {"source": "nq_open:validation"},
    ),
]


def test_nq_open_jsonl_exact(tmp_path: Path) -> None:
    assert nq(tmp_path).load() == NQ_EXPECTED


def test_nq_open_parquet_same_as_jsonl(tmp_path: Path) -> None:
    files = write_parquet(tmp_path / "validation-00000-of-00001.parquet", NQ_ROWS)
    ds = NQOpen(data_files=str(files), n=None, cache_dir=str(tmp_path / "cache"))
    assert ds.load() == NQ_EXPECTED


def test_nq_open_ids_name_the_split(tmp_path: Path) -> None:
    ids = [e.id for e in nq(tmp_path, split="train").load()]
    assert ids == ["nq_open-train-00000", "nq_open-train-00001", "nq_open-train-00002"]


def test_hotpot_qa_hub_layout_exact(tmp_path: Path) -> None:
    assert hotpot(tmp_path).load() == [
        Example(
            "5a8b57f25542995d1e6f1371",
            HOTPOT_ROWS[0]["question"],
            ["yes"],
            None,
            {
                "gold_titles": ["Scott Derrickson", "Ed Wood"],
                "type": "comparison",
                "level": "hard",
                "source": "hotpot_qa/distractor:validation",
            },
        ),
        Example(
            "5a8c7595554299585d9e36b6",
            HOTPOT_ROWS[1]["question"],
            ["Chief of Protocol"],
            None,
            {
                "gold_titles": ["Kiss and Tell (1945 film)", "Shirley Temple"],
                "type": "bridge",
                "level": "hard",
                "source": "hotpot_qa/distractor:validation",
            },
        ),
    ]


def test_hotpot_qa_original_release_layout(tmp_path: Path) -> None:
    """hotpot_dev_distractor_v1.json: a JSON array, ``_id``, supporting_facts as [title, sent_id] pairs."""
    original = [
        {
            "_id": r["id"],
            "question": r["question"],
            "answer": r["answer"],
            "type": r["type"],
            "level": r["level"],
            "supporting_facts": [
                [t, s]
                for t, s in zip(r["supporting_facts"]["title"], r["supporting_facts"]["sent_id"], strict=True)
            ],
            "context": [
                [t, s] for t, s in zip(r["context"]["title"], r["context"]["sentences"], strict=True)
            ],
        }
        for r in HOTPOT_ROWS
    ]
    path = tmp_path / "hotpot_dev_distractor_v1.json"
    path.write_text(json.dumps(original), encoding="utf-8")
    ds = HotpotQA(data_files=str(path), n=None, cache_dir=str(tmp_path / "cache"))
    assert ds.load() == hotpot(tmp_path).load()


def test_asqa_exact(tmp_path: Path) -> None:
    examples = asqa(tmp_path).load()
    assert examples == [
        Example(
            "-4469503464110108318",
            "When did the simpsons first air on television?",
            ["April 19, 1987", "December 17, 1989", "Dec 17, 1989"],
            [["April 19, 1987"], ["December 17, 1989", "Dec 17, 1989"]],
            {
                "gold_titles": ["The Simpsons", "The Simpsons shorts"],
                "sub_questions": [q["question"] for q in ASQA_ROWS[0]["qa_pairs"]],
                "source": "asqa:dev",
            },
        ),
        Example(
            "7089015503030534144",
            "Who played the joker in the dark knight?",
            ["Heath Ledger", "Heath Andrew Ledger", "Michael Emerson"],
            [["Heath Ledger", "Heath Andrew Ledger"], ["Michael Emerson", "Heath Ledger"]],
            {
                "gold_titles": ["The Dark Knight"],
                "sub_questions": [q["question"] for q in ASQA_ROWS[1]["qa_pairs"]],
                "source": "asqa:dev",
            },
        ),
    ]


def test_asqa_jsonl_and_alce_question_field(tmp_path: Path) -> None:
    """ALCE's asqa_eval files name the ambiguous question ``question``; JSON lines read like parquet."""
    alce = [{("question" if k == "ambiguous_question" else k): v for k, v in r.items()} for r in ASQA_ROWS]
    path = write_jsonl(tmp_path / "asqa_eval.jsonl", alce)
    ds = ASQA(data_files=str(path), n=None, cache_dir=str(tmp_path / "cache"))
    assert ds.load() == asqa(tmp_path).load()


# -- sampling ------------------------------------------------------------------------------


def many_nq(n_rows: int = 40) -> list[dict]:
    return [{"question": f"question {i}?", "answer": [f"answer {i}"]} for i in range(n_rows)]


def test_sampling_is_deterministic_and_seeded(tmp_path: Path) -> None:
    rows = many_nq()
    ids = lambda **kw: [e.id for e in nq(tmp_path, rows, **kw).load()]  # noqa: E731
    first = ids(n=10, seed=0)
    assert len(first) == 10 and len(set(first)) == 10
    assert first == ids(n=10, seed=0)
    assert first != ids(n=10, seed=1)
    assert first == sorted(first)  # source order is kept
    assert ids(n=None) == [f"nq_open-validation-{i:05d}" for i in range(40)]
    assert ids(n=1000) == ids(n=None)


def test_sample_ids_refer_to_split_rows_not_sample_positions(tmp_path: Path) -> None:
    sample = nq(tmp_path, many_nq(), n=5, seed=3).load()
    for ex in sample:
        i = int(ex.id.rsplit("-", 1)[1])
        assert ex.question == f"question {i}?" and ex.answers == [f"answer {i}"]


def test_asqa_and_hotpot_sampling(tmp_path: Path) -> None:
    rows = [dict(HOTPOT_ROWS[0], id=f"id{i:03d}") for i in range(30)]
    a = [e.id for e in hotpot(tmp_path, rows, n=7, seed=5).load()]
    assert a == [e.id for e in hotpot(tmp_path, rows, n=7, seed=5).load()]
    assert a != [e.id for e in hotpot(tmp_path, rows, n=7, seed=6).load()]


# -- malformed rows ------------------------------------------------------------------------


def _with(rows: list[dict], index: int, **changes: Any) -> list[dict]:
    rows = [dict(r) for r in rows]
    for k, v in changes.items():
        if v is _DROP:
            rows[index].pop(k)
        else:
            rows[index][k] = v
    return rows


_DROP = object()


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"question": None}, "question must be a string"),
        ({"question": "   "}, "question is empty"),
        ({"answer": []}, "answers is empty"),
        ({"answer": "December 1972"}, "answer must be a list"),
        ({"answer": ["ok", ""]}, "empty answer string"),
        ({"answer": ["ok", 3]}, "answers must be strings"),
    ],
)
def test_nq_open_malformed_row_names_source_and_row(tmp_path: Path, changes: dict, problem: str) -> None:
    with pytest.raises(DataError, match=problem) as err:
        nq(tmp_path, _with(NQ_ROWS, 2, **changes)).load()
    assert "row 2" in str(err.value) and "nq_open-validation.jsonl" in str(err.value)


def test_nq_open_missing_question_key(tmp_path: Path) -> None:
    """A row without the key reads as null (datasets unions the columns), and still fails."""
    with pytest.raises(DataError, match=r"row 1: question must be a string"):
        nq(tmp_path, _with(NQ_ROWS, 1, question=_DROP)).load()


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"answer": ["yes"]}, "answer must be a string"),
        ({"supporting_facts": {"title": [], "sent_id": []}}, "supporting_facts is empty"),
        ({"id": HOTPOT_ROWS[0]["id"]}, "duplicate id"),
    ],
)
def test_hotpot_qa_malformed_row(tmp_path: Path, changes: dict, problem: str) -> None:
    rows = _with(HOTPOT_ROWS, 1, **changes)
    path = write_jsonl(tmp_path / "hotpot.jsonl", rows)
    with pytest.raises(DataError, match=problem) as err:
        HotpotQA(data_files=str(path), n=None, cache_dir=str(tmp_path / "cache")).load()
    assert "row 1" in str(err.value) and "hotpot.jsonl" in str(err.value)


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"qa_pairs": []}, "qa_pairs is empty"),
        (
            {"qa_pairs": [{"question": "q", "short_answers": [], "context": "", "wikipage": None}]},
            "answer group 0: answers is empty",
        ),
        ({"ambiguous_question": ""}, "question is empty"),
    ],
)
def test_asqa_malformed_row(tmp_path: Path, changes: dict, problem: str) -> None:
    path = write_jsonl(tmp_path / "asqa.jsonl", _with(ASQA_ROWS, 1, **changes))
    with pytest.raises(DataError, match=problem) as err:
        ASQA(data_files=str(path), n=None, cache_dir=str(tmp_path / "cache")).load()
    assert "row 1" in str(err.value) and "asqa.jsonl" in str(err.value)


def test_missing_column_is_a_data_error(tmp_path: Path) -> None:
    rows = [{"question": r["question"], "answers": r["answer"]} for r in NQ_ROWS]
    with pytest.raises(DataError, match="lacks column 'answer'"):
        nq(tmp_path, rows).load()


def test_unreadable_file_is_a_data_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_text('{"question": "q", "answer": ["a"]}\n{not json\n', encoding="utf-8")
    with pytest.raises(DataError, match="broken.jsonl"):
        NQOpen(data_files=str(path), cache_dir=str(tmp_path / "cache")).load()


def test_unknown_data_files_format_fails_at_construction() -> None:
    with pytest.raises(DataError, match="cannot tell the format"):
        NQOpen(data_files="questions.csv")


def test_hotpot_subset_is_checked() -> None:
    with pytest.raises(ValueError, match="distractor"):
        HotpotQA(subset="dev")


# -- fingerprints, offline Hub, light import -----------------------------------------------


def test_fingerprint_tracks_content_not_location(tmp_path: Path) -> None:
    ds = nq(tmp_path, n=2, seed=0)
    fp = ds.fingerprint()
    assert fp == ds.fingerprint()
    assert fp["dataset"] == "nq_open" and fp["n"] == 2 and fp["seed"] == 0 and fp["split"] == "validation"
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    shutil.copy(ds.data_files, moved / "copy.jsonl")
    assert NQOpen(data_files=str(moved / "copy.jsonl"), n=2, seed=0).fingerprint() == fp
    assert NQOpen(data_files=ds.data_files, n=2, seed=1).fingerprint() != fp
    write_jsonl(Path(ds.data_files), NQ_ROWS[:2])
    assert NQOpen(data_files=ds.data_files, n=2, seed=0).fingerprint() != fp


def test_hub_fingerprint_has_id_subset_revision() -> None:
    fp = HotpotQA(subset="fullwiki", revision="abc123", n=500, seed=0).fingerprint()
    assert (fp["path"], fp["subset"], fp["revision"], fp["data_files"]) == (
        "hotpotqa/hotpot_qa",
        "fullwiki",
        "abc123",
        None,
    )


def test_hub_offline_raises_connection_error_with_hint(tmp_path: Path) -> None:
    with pytest.raises(ConnectionError, match="data_files"):
        NQOpen(cache_dir=str(tmp_path / "cache")).load()


def test_module_import_does_not_import_datasets() -> None:
    code = "import sys, rr.data.hf, rr.data.jsonl; assert 'datasets' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


# -- JSON-lines datasets -------------------------------------------------------------------


def test_jsonl_dataset_exact(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "qs.jsonl",
        [
            {"id": "a", "question": "Q1?", "answers": "x", "gold_titles": ["T"]},
            {"id": 7, "question": "Q2?", "answers": ["y", "z"], "answer_groups": [["y"], ["z", "zz"]]},
        ],
    )
    assert JsonlDataset(str(path)).load() == [
        Example("a", "Q1?", ["x"], None, {"gold_titles": ["T"]}),
        Example("7", "Q2?", ["y", "z"], [["y"], ["z", "zz"]], {}),
    ]


def test_jsonl_dataset_custom_fields_and_sampling(tmp_path: Path) -> None:
    rows = [{"qid": f"q{i}", "query": f"Q{i}?", "gold": [f"a{i}"], "extra": i} for i in range(20)]
    path = write_jsonl(tmp_path / "qs.jsonl", rows)
    make = lambda **kw: JsonlDataset(  # noqa: E731
        str(path),
        id_field="qid",
        question_field="query",
        answers_field="gold",
        answer_groups_field=None,
        name="mine",
        **kw,
    )
    assert make().load()[3] == Example("q3", "Q3?", ["a3"], None, {"extra": 3})
    assert len(make().load()) == 20
    a = [e.id for e in make(n=5, seed=0).load()]
    assert a == [e.id for e in make(n=5, seed=0).load()]
    assert a != [e.id for e in make(n=5, seed=1).load()]
    assert make().name == "mine"
    assert make(seed=1).fingerprint() != make(seed=0).fingerprint()


@pytest.mark.parametrize(
    ("lines", "problem"),
    [
        (
            [
                '{"id": "a", "question": "Q", "answers": ["x"]}',
                "",
                '{"id": "b", "question": "Q", "answers": [',
            ],
            r"qs.jsonl:3: invalid JSON",
        ),
        (
            ['{"id": "a", "question": "Q", "answers": ["x"]}', '["not", "an", "object"]'],
            r"qs.jsonl:2: expected a JSON object",
        ),
        (['{"id": "a", "question": "Q"}'], r"qs.jsonl:1: missing field 'answers'"),
        (['{"id": "a", "question": "Q", "answers": []}'], r"qs.jsonl:1: answers is empty"),
        (
            ['{"id": "a", "question": "Q", "answers": ["x"], "answer_groups": [["x"], []]}'],
            r"qs.jsonl:1: answer group 1: answers is empty",
        ),
        (
            [
                '{"id": "a", "question": "Q", "answers": ["x"]}',
                '{"id": "a", "question": "R", "answers": ["y"]}',
            ],
            r"qs.jsonl:2: duplicate id 'a' \(first at line 1\)",
        ),
        (['{"id": null, "question": "Q", "answers": ["x"]}'], r"qs.jsonl:1: id must be"),
    ],
)
def test_jsonl_dataset_malformed_lines(tmp_path: Path, lines: list[str], problem: str) -> None:
    path = tmp_path / "qs.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=problem):
        JsonlDataset(str(path)).load()


@pytest.mark.parametrize(
    ("line", "where"),
    [
        # cut short (a killed writer): the newline after it made this "column 1"
        ('{"id": "b", "question": "Q", "answers": ["y"]', "the line ends at column 45 before the JSON does"),
        ('{"id": "b", "question": "Q", "answers": ["y"],}', "at column 47"),  # the stray comma's real column
        ('{"id": "b", "question": "Q" "answers": ["y"]}', "at column 29"),
    ],
)
def test_invalid_json_names_its_real_column(tmp_path: Path, line: str, where: str) -> None:
    path = tmp_path / "qs.jsonl"
    path.write_text('{"id": "a", "question": "Q", "answers": ["x"]}\n' + line + "\r\n", encoding="utf-8")
    with pytest.raises(DataError) as err:
        JsonlDataset(str(path)).load()
    assert str(err.value).startswith(f"{path}:2: invalid JSON (") and str(err.value).endswith(f" {where})")


# -- JSON-lines corpora --------------------------------------------------------------------


@pytest.mark.parametrize(
    "rows",
    [
        [
            {"id": "d1", "title": "Ed Wood", "text": "Ed Wood was a filmmaker."},
            {"id": "d2", "text": "No title."},
        ],
        # BEIR corpus.jsonl
        [
            {"_id": "d1", "title": "Ed Wood", "text": "Ed Wood was a filmmaker.", "metadata": {}},
            {"_id": "d2", "title": "", "text": "No title."},
        ],
        # pyserini JsonCollection
        [
            {"id": "d1", "contents": "Ed Wood was a filmmaker.", "title": "Ed Wood"},
            {"docid": "d2", "contents": "No title."},
        ],
    ],
    ids=["native", "beir", "pyserini"],
)
def test_jsonl_corpus_formats(tmp_path: Path, rows: list[dict]) -> None:
    corpus = JsonlCorpus(str(write_jsonl(tmp_path / "c.jsonl", rows)), name="tiny").load()
    assert isinstance(corpus, Corpus) and corpus.name == "tiny"
    assert corpus.passages == [
        Passage("d1", "Ed Wood was a filmmaker.", "Ed Wood"),
        Passage("d2", "No title.", ""),
    ]
    assert corpus.ids_with_title(["Ed Wood"]) == ["d1"]


def test_jsonl_corpus_custom_fields_and_prefix(tmp_path: Path) -> None:
    rows = [{"pid": i, "body": f"text {i}", "heading": f"T{i}"} for i in range(10)]
    path = str(write_jsonl(tmp_path / "c.jsonl", rows))
    corpus = JsonlCorpus(
        path, id_field="pid", text_field="body", title_field="heading", max_passages=3
    ).load()
    assert corpus.passages == [Passage(str(i), f"text {i}", f"T{i}") for i in range(3)]
    full = JsonlCorpus(path, id_field="pid", text_field="body", title_field="heading").load()
    assert len(full) == 10 and full.fingerprint() != corpus.fingerprint()


@pytest.mark.parametrize(
    ("rows", "suffix", "kw"),
    [
        # native and BEIR fields, a title missing or null, extra nested fields, a blank line
        (
            [
                {"id": "d1", "title": "Ed Wood", "text": 'Ed "Wood"\nwas a filmmaker.', "meta": {"a": [1]}},
                {"_id": "d2", "title": None, "text": "No title."},
                {"docid": "d3", "contents": "pyserini"},
                {"id": "d4", "text": "never asked"},
            ],
            ".jsonl",
            {},
        ),
        ([{"id": 1, "text": "integer id"}, {"id": "d2", "text": "str id"}], ".jsonl", {}),  # line by line
        ([{"id": "d1", "text": "one"}, {"id": "d2", "text": "two"}], ".jsonl.gz", {}),
        ([{"id": "d1", "text": "one"}, {"id": "d2", "text": "two"}], ".jsonl", {"max_passages": 1}),
        (
            [{"pid": "d1", "body": "custom", "heading": "H"}],
            ".jsonl",
            {"id_field": "pid", "text_field": "body", "title_field": "heading"},
        ),
    ],
    ids=["layouts", "integer-ids", "gzip", "max-passages", "custom-fields"],
)
def test_jsonl_corpus_texts_of_reads_what_load_reads(
    tmp_path: Path, rows: list[dict], suffix: str, kw: dict
) -> None:
    """``texts_of`` (one streaming pass for the ids asked, the result site's reader) gives each id's
    title and text as ``load`` does, and null for ids the file (or its ``max_passages``) lacks."""
    import gzip

    path = tmp_path / f"c{suffix}"
    text = (
        "\n".join(json.dumps(r) for r in rows[:1]) + "\n\n" + "".join(json.dumps(r) + "\n" for r in rows[1:])
    )
    path.write_bytes(gzip.compress(text.encode()) if suffix.endswith(".gz") else text.encode())
    corpus = JsonlCorpus(str(path), **kw)
    loaded = corpus.load()
    asked = [p.id for p in loaded.passages if p.text != "never asked"][::-1] + ["absent", "d2"]
    table = corpus.texts_of(asked)
    got = list(zip(table.column("title").to_pylist(), table.column("text").to_pylist(), strict=True))
    want = [(loaded[i].title, loaded[i].text) if i in loaded else ("", None) for i in asked]
    assert got == want
    assert ("", None) in got


@pytest.mark.parametrize(
    ("rows", "problem"),
    [
        ([{"id": "d1", "text": "a"}, {"id": "d1", "text": "b"}], r"c.jsonl:2: duplicate passage id 'd1'"),
        ([{"id": "d1", "text": "a"}, {"id": "d2", "body": "b"}], r"c.jsonl:2: missing field 'text'"),
        ([{"text": "a"}], r"c.jsonl:1: missing field 'id'"),
        ([{"id": "d1", "text": ["a"]}], r"c.jsonl:1: 'text' must be a string"),
        ([{"id": "d1", "text": "a", "title": 3}], r"c.jsonl:1: 'title' must be a string"),
    ],
)
def test_jsonl_corpus_malformed(tmp_path: Path, rows: list[dict], problem: str) -> None:
    with pytest.raises(DataError, match=problem):
        JsonlCorpus(str(write_jsonl(tmp_path / "c.jsonl", rows))).load()


# -- YAML configs compose against the generated schemas ------------------------------------


@pytest.fixture
def compose_dataset():
    from rr.config import compose

    def run(overrides: list[str]):
        return compose(["+seed=7", *overrides], config_name=None)

    return run


@pytest.mark.parametrize(
    ("option", "cls", "extra"),
    [
        ("nq_open", NQOpen, []),
        ("hotpot_qa", HotpotQA, []),
        ("asqa", ASQA, []),
        ("jsonl", JsonlDataset, ["dataset.path=qs.jsonl"]),
    ],
)
def test_dataset_yamls_compose_and_instantiate(
    compose_dataset, option: str, cls: type, extra: list[str]
) -> None:
    from rr.config import instantiate

    cfg = compose_dataset([f"+dataset={option}", *extra])
    ds = instantiate(cfg.dataset)
    assert type(ds) is cls and ds.seed == 7
    assert ds.n == (None if option == "jsonl" else 500)


def test_corpus_yaml_composes(compose_dataset) -> None:
    from rr.config import instantiate

    cfg = compose_dataset(["+corpus=jsonl", "corpus.path=c.jsonl"])
    assert isinstance(instantiate(cfg.corpus), JsonlCorpus)


def test_yaml_typo_fails_at_compose(compose_dataset) -> None:
    from hydra.errors import ConfigCompositionException

    with pytest.raises(ConfigCompositionException):
        compose_dataset(["+dataset=nq_open", "dataset.splt=dev"])


# -- a UTF-8 byte-order mark (spreadsheet exports write one) ------------------------------------


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz"])
def test_jsonl_files_with_a_bom_are_read(tmp_path: Path, suffix: str) -> None:
    """A UTF-8 BOM before the first line is read past, by the dataset, the corpus (``load`` and the
    site's ``texts_of``, arrow and line-by-line readers) and the query-file reader; the first row's
    fields are intact and an error's column still counts from the first real character."""
    import gzip

    from rr.perturbations.query_file import read_query_file

    def write(name: str, rows: list[dict]) -> Path:
        data = "\ufeff".encode() + "".join(json.dumps(r) + "\n" for r in rows).encode()
        path = tmp_path / f"{name}{suffix}"
        path.write_bytes(gzip.compress(data) if suffix.endswith(".gz") else data)
        return path

    qs = write(
        "qs",
        [{"id": "q1", "question": "Q1?", "answers": ["a"]}, {"id": "q2", "question": "Q2?", "answers": "b"}],
    )
    assert JsonlDataset(str(qs)).load() == [Example("q1", "Q1?", ["a"]), Example("q2", "Q2?", ["b"])]

    for rows in ([{"id": "d1", "title": "T", "text": "one"}], [{"id": 1, "title": "T", "text": "one"}]):
        corpus = JsonlCorpus(str(write("c", rows)))
        assert corpus.load().passages == [Passage(str(rows[0]["id"]), "one", "T")]
        table = corpus.texts_of([str(rows[0]["id"])])  # the second: integer ids, read line by line
        assert table.column("text").to_pylist() == ["one"] and table.column("title").to_pylist() == ["T"]

    q = write("q", [{"id": "q1", "variant": "formal#1", "question": "Q?"}])
    assert [(r.id, r.variant) for r in read_query_file(q)] == [("q1", "formal#1")]

    bad = tmp_path / "bad.jsonl"
    bad.write_bytes("\ufeff".encode() + b'{"id": "q1" "question": "Q?"}\n')
    with pytest.raises(DataError, match=r"bad.jsonl:1: invalid JSON \(.* at column 13\)"):
        JsonlDataset(str(bad)).load()
