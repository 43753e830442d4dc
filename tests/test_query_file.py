"""Perturbed query files: the generation step writes them, the ``file`` perturbation reads them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rr.commands.perturb_queries import main, read_questions
from rr.data.base import DataError
from rr.perturbations.query_file import FileQueryPerturbation, read_query_file
from rr.perturbations.typo import TypoPerturbation
from rr.records import Example

EXAMPLES = [
    Example("q1", "when does the cannes film festival take place", ["May"]),
    Example("q2", "Who wrote the novel War and Peace?", ["Leo Tolstoy"]),
]


def _write(path: Path, rows: list[object]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_typo_command_roundtrip_equals_in_process(tmp_path: Path) -> None:
    qfile = _write(tmp_path / "q.jsonl", [{"id": e.id, "question": e.question} for e in EXAMPLES])
    out = tmp_path / "typos.jsonl"
    main(["typo", "--input", str(qfile), "--output", str(out), "--rate", "0.25", "--n", "5", "--seed", "3"])
    rows = read_query_file(out)
    assert len(rows) == 10 and rows[0].original == EXAMPLES[0].question
    counts: dict[str, int] = {}
    got = FileQueryPerturbation(str(out)).perturb(EXAMPLES, lambda k, n: counts.__setitem__(k, n))
    want = TypoPerturbation(rate=0.25, n=5).perturb(EXAMPLES, 3)
    assert [(v.example.id, v.tag, v.example.question) for v in got] == [
        (v.example.id, v.tag, v.example.question) for v in want
    ]
    assert counts == {}


def test_typo_command_explains_its_counters(tmp_path: Path, capsys) -> None:
    """``typo:duplicate_variant: 1`` alone meant nothing to a reader (issue 30): each counter says what it counts."""
    qfile = _write(tmp_path / "q.jsonl", [{"id": e.id, "question": e.question} for e in EXAMPLES])
    out = tmp_path / "typos.jsonl"
    main(["typo", "--input", str(qfile), "--output", str(out), "--rate", "0.01", "--n", "8"])  # one edit each
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"wrote 16 variants of 2 questions to {out}"
    dup = next(line for line in lines if line.startswith("  typo:duplicate_variant: "))
    assert (
        dup.endswith(TypoPerturbation.COUNTERS["duplicate_variant"])
        and " - variants identical to another" in dup
    )


def test_questions_command_writes_dataset(tmp_path: Path) -> None:
    out = tmp_path / "questions.jsonl"
    main(["questions", str(out), "dataset=mini", "dataset.n=3"])
    qs = read_questions(out)
    assert len(qs) == 3 and all(q.question for q in qs)


def test_subset_and_counters(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "f.jsonl",
        [
            {"id": "q1", "variant": "formal#1", "question": "When is the Cannes Film Festival held?"},
            {"id": "q1", "variant": "formal#2", "question": EXAMPLES[0].question},  # unchanged: dropped
            {"id": "q9", "variant": "formal#1", "question": "other dataset row"},
        ],
    )
    counts: dict[str, int] = {}
    got = FileQueryPerturbation(str(path), on_missing="skip", include_original=False).perturb(
        EXAMPLES, lambda k, n: counts.__setitem__(k, counts.get(k, 0) + n)
    )
    assert [(v.example.id, v.tag) for v in got] == [("q1", "formal#1")]
    assert (
        got[0].example.answers == ["May"] and got[0].example.meta["original_question"] == EXAMPLES[0].question
    )
    assert counts == {"file:rows_not_in_dataset": 1, "file:missing_example": 1, "file:unchanged": 1}
    only = FileQueryPerturbation(str(path), on_missing="skip", variants=["formal#2"]).perturb(EXAMPLES)
    assert [v.tag for v in only] == ["none", "none"]


@pytest.mark.parametrize(
    ("rows", "match"),
    [
        (['{"id": "q1", "variant": "t#1", "question": "x"}', "{not json"], r"f\.jsonl:2: invalid JSON"),
        ([{"id": "q1", "question": "x"}], r"f\.jsonl:1: missing field 'variant'"),
        ([{"id": "q1", "variant": "none", "question": "x"}], r"f\.jsonl:1: variant"),
        ([{"id": "q1", "variant": "t#1", "question": ""}], r"f\.jsonl:1: question"),
        ([{"id": "q1", "variant": "t#x", "question": "x"}], r"f\.jsonl:1: variant is not a tag.*after '#'"),
        ([{"id": "q1", "variant": "t@0.1@0.2", "question": "x"}], r"f\.jsonl:1: variant is not a tag.*two"),
        (
            [
                {"id": "q1", "variant": "t#1", "question": "a"},
                {"id": "q1", "variant": "t#1", "question": "b"},
            ],
            r"f\.jsonl:2: duplicate \(id, variant\).*first at line 1",
        ),
    ],
)
def test_malformed_lines_name_file_and_line(tmp_path: Path, rows: list[object], match: str) -> None:
    path = _write(tmp_path / "f.jsonl", rows)
    with pytest.raises(DataError, match=match):
        read_query_file(path)


def test_missing_ids_and_wrong_original_are_errors(tmp_path: Path) -> None:
    path = _write(tmp_path / "f.jsonl", [{"id": "q1", "variant": "t#1", "question": "wehn does"}])
    with pytest.raises(DataError, match=r"no perturbed query for 1 of 2 examples \(e\.g\. \['q2'\]\)"):
        FileQueryPerturbation(str(path)).perturb(EXAMPLES)
    bad = _write(
        tmp_path / "g.jsonl",
        [{"id": "q1", "variant": "t#1", "question": "wehn", "original": "another question"}],
    )
    with pytest.raises(DataError, match=r"g\.jsonl:1: original .* differs"):
        FileQueryPerturbation(str(bad), on_missing="skip").perturb(EXAMPLES)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        FileQueryPerturbation(str(tmp_path / "nope.jsonl")).perturb(EXAMPLES)
