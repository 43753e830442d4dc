"""The RARE-Set loader and corpus (rr/data/rare_set.py) on rows in its JSON-lines form."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rr.data.base import DataError
from rr.data.rare_set import RARESetCorpus, RARESetDataset
from rr.records import MetaKey

# Rows made from RARE's own prompt examples (Appendix F): question, answer, golden chunks, domain, hop type.
ROWS = [
    {
        "id": "fin-1",
        "question": "What were Smith A O Corp's consolidated sales for the year ended December 31, 2024?",
        "answer": "$3,818.1 million",
        "golden_chunks": ["Our sales in 2024 were $3,818.1 million, a decrease of $34.7 million."],
        "domain": "finance",
        "hop_type": "single",
    },
    {
        "id": "eco-1",
        "question": "Which country made all public transport free on March 1, 2020, and what does that aim to reduce?",
        "answer": ["Luxembourg; traffic congestion and carbon emissions"],
        "golden_chunks": [
            "On March 1, 2020, Luxembourg became the first country to make all public transport free.",
            "This policy aims to reduce traffic congestion and carbon emissions.",
        ],
        "domain": "economics",
        "hop_type": "chained",
    },
    {  # no id: its line number; a field RARE-Set's form does not name is left alone
        "question": "How many new housing units did the HOME program support in Pittsburgh?",
        "answer": "45",
        "golden_chunks": ["The HOME program supported the construction of 45 new housing units."],
        "domain": "policy",
        "hop_type": "single",
        "source_document": "CAPER 2023",
    },
]


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_rows_load_with_their_golden_chunks_domain_and_hop_type(tmp_path: Path) -> None:
    path = write(tmp_path / "rare_set.jsonl", ROWS)
    examples = RARESetDataset(str(path)).load()
    assert [e.id for e in examples] == ["fin-1", "eco-1", "3"]
    fin, eco, pol = examples
    assert fin.answers == ["$3,818.1 million"] and fin.meta[MetaKey.POSITIVE] == ROWS[0]["golden_chunks"]
    assert (eco.meta["domain"], eco.meta["hop_type"]) == ("economics", "chained")
    assert len(eco.meta[MetaKey.POSITIVE]) == 2 and pol.meta["domain"] == "policy"
    multi = RARESetDataset(str(path), hop_types=["chained", "star", "inverted_star"]).load()
    assert [e.id for e in multi] == ["eco-1"]
    assert [e.id for e in RARESetDataset(str(path), domains=["finance", "policy"]).load()] == ["fin-1", "3"]
    corpus = RARESetCorpus(str(path)).load()
    assert len(corpus) == 4 and corpus["eco-1/pos/1"].text == ROWS[1]["golden_chunks"][1]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r.pop("golden_chunks"), r"rare_set\.jsonl:2: missing field\(s\) \['golden_chunks'\]"),
        (lambda r: r.update(golden_chunks=[]), r":2: 'golden_chunks' must be a non-empty list"),
        (lambda r: r.update(domain="health"), r":2: 'domain' must be one of finance, economics, policy"),
        (
            lambda r: r.update(hop_type="multi"),
            r":2: 'hop_type' must be one of single, chained, star, inverted_star",
        ),
        (lambda r: r.update(id="fin-1"), r":2: duplicate id 'fin-1' \(first at line 1\)"),
    ],
)
def test_a_malformed_row_is_named_by_its_line(tmp_path: Path, change, message: str) -> None:
    rows = [dict(r) for r in ROWS]
    change(rows[1])
    with pytest.raises(DataError, match=message):
        RARESetDataset(str(write(tmp_path / "rare_set.jsonl", rows))).load()
    with pytest.raises(ValueError, match=r"dataset.domains: \['health'\] not among"):
        RARESetDataset(str(tmp_path / "rare_set.jsonl"), domains=["health"])
