"""The RGB loader and corpus on small files in RGB's exact JSON-lines format."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rr.data.base import DataError
from rr.data.rgb import (
    COUNTERFACTUAL,
    FAKE_ANSWER,
    NEGATIVE,
    POSITIVE,
    POSITIVE_GROUPS,
    RGBCorpus,
    RGBDataset,
    parse_rgb_answer,
)

# Rows shaped like RGB's data/en.json, en_int.json and en_fact.json (ids are ints there).
NOISE_ROWS = [
    {
        "id": 0,
        "query": "Who was awarded the 2022 Nobel prize in literature?",
        "answer": [["Annie Ernaux", "Ernaux"]],
        "positive": [
            "The Nobel Prize in Literature for 2022 is awarded to the French author Annie Ernaux.",
            "Annie Ernaux won the 2022 Nobel Prize in Literature.",
        ],
        "negative": [
            "The Nobel Prize in Literature for 2021 is awarded to the novelist Abdulrazak Gurnah.",
            "The 2020 Nobel Laureate in Literature, poet Louise Glück, has written both poetry and essays.",
            "The Nobel Prize is awarded annually in Stockholm.",
            "Literature prizes are announced in October.",
            "The Swedish Academy selects the laureate.",
        ],
    },
    {
        "id": 1,
        "query": "Which city hosted the 2004 Olympic games?",
        "answer": [["Athens"]],
        "positive": ["The 2004 Summer Olympics were held in Athens, Greece."],
        "negative": [
            "The 2008 Summer Olympics were held in Beijing.",
            "The 2000 Olympics took place in Sydney.",
        ],
    },
]
INT_ROW = {
    "id": 7,
    "query": "When were the ChatGPT app for iOS and ChatGPT api launched?",
    "answer": [["May 18", "18 May"], ["March 1", "1 March"]],
    "positive": [
        ["On May 18th, 2023, OpenAI introduced its own ChatGPT app for iOS.", "The iOS app came out May 18."],
        ["That changed on March 1, when OpenAI announced API access to ChatGPT."],
    ],
    "negative": ["OpenAI was founded in 2015."],
}
FACT_ROW = {
    "id": 3,
    "query": "Who acquired WhatsApp?",
    "answer": "Facebook",
    "fakeanswer": "Apple",
    "positive_wrong": [
        "Apple purchased WhatsApp in 2014.",
        "WhatsApp was acquired by Apple in February 2014.",
    ],
    "positive": [
        "Facebook purchased WhatsApp in 2014.",
        "WhatsApp was acquired by Facebook in February 2014.",
    ],
    "negative": ["WhatsApp was founded in 2009 by two former Yahoo employees."],
}


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_noise_file(tmp_path: Path) -> None:
    exs = RGBDataset(str(write_jsonl(tmp_path / "en.json", NOISE_ROWS))).load()
    assert [e.id for e in exs] == ["0", "1"]
    e = exs[0]
    assert e.question == NOISE_ROWS[0]["query"]
    assert e.answers == ["Annie Ernaux", "Ernaux"] and e.answer_groups is None
    assert e.meta[POSITIVE] == NOISE_ROWS[0]["positive"] and e.meta[NEGATIVE] == NOISE_ROWS[0]["negative"]
    assert e.meta["rgb_testbed"] == "noise" and e.meta["source"] == "rgb:en.json"


def test_integration_file(tmp_path: Path) -> None:
    (e,) = RGBDataset(str(write_jsonl(tmp_path / "en_int.json", [INT_ROW]))).load()
    assert e.answer_groups == [["May 18", "18 May"], ["March 1", "1 March"]]
    assert e.answers == ["May 18", "18 May", "March 1", "1 March"]
    assert e.meta[POSITIVE_GROUPS] == INT_ROW["positive"]
    assert e.meta[POSITIVE] == [*INT_ROW["positive"][0], *INT_ROW["positive"][1]]
    assert e.meta["rgb_testbed"] == "integration"


def test_counterfactual_file(tmp_path: Path) -> None:
    (e,) = RGBDataset(str(write_jsonl(tmp_path / "en_fact.json", [FACT_ROW]))).load()
    assert e.answers == ["Facebook"] and e.answer_groups is None
    assert e.meta[COUNTERFACTUAL] == FACT_ROW["positive_wrong"] and e.meta[FAKE_ANSWER] == "Apple"
    assert e.meta["rgb_testbed"] == "counterfactual"


def test_flat_answer_list_means_every_element_required() -> None:
    # RGB's checkanswer: a string element must occur, a list element is a group of alternatives.
    assert parse_rgb_answer(["1月3日", "1月12日"], "f:1") == [["1月3日"], ["1月12日"]]
    assert parse_rgb_answer("Tampa, Florida", "f:1") == [["Tampa, Florida"]]
    assert parse_rgb_answer([["a", "b"], "c"], "f:1") == [["a", "b"], ["c"]]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda r: r.pop("query"), r"en\.json:2: missing field 'query'"),
        (lambda r: r.update(answer=[]), r"en\.json:2: 'answer' must be a string or a non-empty list"),
        (lambda r: r.update(answer=[["x", ""]]), r"en\.json:2: answer element 0 must be"),
        (lambda r: r.update(positive="text"), r"en\.json:2: 'positive' must be a list of strings"),
        (lambda r: r.update(negative=[1, 2]), r"en\.json:2: 'negative' must be a list of strings"),
        (lambda r: r.update(id=None), r"en\.json:2: id must be a string or an integer"),
        (lambda r: r.update(id=0), r"en\.json:2: duplicate id '0' \(first at line 1\)"),
    ],
)
def test_malformed_rows_name_file_and_line(tmp_path: Path, mutate, message: str) -> None:
    rows = json.loads(json.dumps(NOISE_ROWS))
    mutate(rows[1])
    path = write_jsonl(tmp_path / "en.json", rows)
    with pytest.raises(DataError, match=message):
        RGBDataset(str(path)).load()


def test_malformed_counterfactual_rows(tmp_path: Path) -> None:
    bad = dict(FACT_ROW, positive_wrong=FACT_ROW["positive_wrong"][:1])
    with pytest.raises(
        DataError, match=r"en_fact\.json:1: 'positive_wrong' has 1 passages but 'positive' has 2"
    ):
        RGBDataset(str(write_jsonl(tmp_path / "en_fact.json", [bad]))).load()
    bad = {k: v for k, v in FACT_ROW.items() if k != "fakeanswer"}
    with pytest.raises(DataError, match=r"en_fact\.json:1: counterfactual row lacks 'fakeanswer'"):
        RGBDataset(str(write_jsonl(tmp_path / "en_fact.json", [bad])), testbed="counterfactual").load()
    (tmp_path / "bad.json").write_text('{"id": 1, "query": "q"\n')
    with pytest.raises(DataError, match=r"bad\.json:1: invalid JSON"):
        RGBDataset(str(tmp_path / "bad.json")).load()


def test_corpus_and_sampling(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "en.json", NOISE_ROWS)
    corpus = RGBCorpus(str(path)).load()
    assert len(corpus) == 2 + 5 + 1 + 2
    assert corpus["0/pos/1"].text == NOISE_ROWS[0]["positive"][1] and corpus["1/neg/0"].title == ""
    assert len(RGBDataset(str(path), n=1, seed=3).load()) == 1
    cf = RGBCorpus(str(write_jsonl(tmp_path / "en_fact.json", [FACT_ROW])), counterfactual=True).load()
    assert cf["3/cf/1"].text == FACT_ROW["positive_wrong"][1]


RGB_EXCERPTS = Path(__file__).parent / "rgb_data"


@pytest.mark.parametrize(
    ("name", "testbed", "language"),
    [
        ("en_fact.json", "counterfactual", "en"),
        ("zh_fact.json", "counterfactual", "zh"),
        ("zh_int.json", "integration", "zh"),
    ],
)
def test_rgb_released_rows_load(name: str, testbed: str, language: str) -> None:
    """Rows of RGB's own files (tests/rgb_data/README.md) load with the testbed and language RGB gives them."""
    examples = RGBDataset(str(RGB_EXCERPTS / name)).load()
    assert examples and {ex.meta["rgb_testbed"] for ex in examples} == {testbed}
    assert {ex.meta["language"] for ex in examples} == {language}


def test_zh_fact_list_fakeanswer() -> None:
    """zh_fact.json line 14 has ``"fakeanswer": ["中国", "北京"]``, a field RGB never reads: the row
    loads (it was rejected, and with it the whole file), its answer parts both required."""
    ex = {e.id: e for e in RGBDataset(str(RGB_EXCERPTS / "zh_fact.json")).load()}["13"]
    assert ex.meta[FAKE_ANSWER] == "中国; 北京"
    assert ex.answer_groups == [["澳大利亚"], ["悉尼"]]
    assert "中国北京" in ex.meta[COUNTERFACTUAL][0]


@pytest.mark.skipif(not os.environ.get("RGB_DATA_DIR"), reason="RGB_DATA_DIR (RGB's data/ folder) not set")
@pytest.mark.parametrize("name", ["en_fact.json", "zh_fact.json", "zh_int.json"])
def test_rgb_whole_files_load(name: str) -> None:
    """RGB's released files load whole (100 rows each)."""
    assert len(RGBDataset(str(Path(os.environ["RGB_DATA_DIR"]) / name)).load()) == 100
