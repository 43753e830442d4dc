"""PerturbationTag: the exact tag of every perturbation family rr writes, format/parse round trips,
clear errors for malformed tags, the score table's parameter columns, and analysis over tables
written before those columns existed."""

from __future__ import annotations

import json
import math
from collections.abc import Callable

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rr.metrics.query_level import perturbation_kind
from rr.metrics.rare import doc_type
from rr.metrics.rgb import noise_ratio_of, rgb_table
from rr.perturbations.base import VALUE, PerturbationTag, perturbation_columns
from rr.perturbations.composition import Counterfactual, NoiseRatio
from rr.perturbations.llm_rewrite import LLMRewritePerturbation
from rr.perturbations.none import NoDocPerturbation, NoQueryPerturbation
from rr.perturbations.rare import BackTranslate, DeleteAnswer, GroundTruth
from rr.perturbations.sure import (
    FormatPerturbation,
    LogicPerturbation,
    MetadataPerturbation,
    SourcePerturbation,
    StylePerturbation,
)
from rr.perturbations.typo import TypoPerturbation
from rr.reporting.rgb_rare import _counterfactual

T = PerturbationTag

#: (record, tag string), worked by hand: one per shape of tag rr writes.
CASES: list[tuple[PerturbationTag, str]] = [
    (T("none"), "none"),
    (T("noise_ratio", {VALUE: 0.4}), "noise_ratio@0.4"),
    (T("noise_ratio", {VALUE: 1}), "noise_ratio@1"),
    (T("noise_ratio", {VALUE: 0}), "noise_ratio@0"),
    (T("counterfactual"), "counterfactual"),
    (T("counterfactual", {"noise": 0.4, "correct": 0.2}), "counterfactual@noise0.4@correct0.2"),
    (T("counterfactual", {"correct": 0.2}), "counterfactual@correct0.2"),
    (T("typo", {VALUE: 0.25}, 3), "typo@0.25#3"),
    (T("typo", {VALUE: 0.25}, 0), "typo@0.25#0"),
    (T("char", {VALUE: 0.1}, 1), "char@0.1#1"),
    (T("typo", {VALUE: 1e-05}, 2), "typo@1e-05#2"),
    (T("formal", {}, 2), "formal#2"),
    (T("formal", {}, 12), "formal#12"),
    (T("format:json"), "format:json"),
    (T("metadata:timestamp_pre"), "metadata:timestamp_pre"),
    (T("logic:reverse", {VALUE: "gold"}), "logic:reverse@gold"),
    (T("format:markdown", {"rank": 2}), "format:markdown@rank2"),
    (T("ground_truth"), "ground_truth"),
]


@pytest.mark.parametrize(("record", "text"), CASES, ids=[c[1] for c in CASES])
def test_format_and_parse_by_hand(record: PerturbationTag, text: str) -> None:
    assert record.format() == text == str(record)
    parsed = PerturbationTag.parse(text)
    assert parsed == record and hash(parsed) == hash(record)
    assert list(parsed.params.items()) == list(record.params.items())
    assert [type(v) for v in parsed.params.values()] == [type(v) for v in record.params.values()]


def test_parse_by_hand() -> None:
    t = PerturbationTag.parse("counterfactual@noise0.4@correct0.2")
    assert (t.name, dict(t.params), t.variant) == ("counterfactual", {"noise": 0.4, "correct": 0.2}, None)
    t = PerturbationTag.parse("typo@0.25#3")
    assert (t.name, dict(t.params), t.variant) == ("typo", {"value": 0.25}, 3)
    assert PerturbationTag.parse("none") == PerturbationTag("none", {}, None)
    # parameter order is part of the identity (it is the written order)
    assert T("x", {"a": 1, "b": 2}) != T("x", {"b": 2, "a": 1})
    # non-canonical spellings read; they are written canonically
    assert PerturbationTag.parse("typo@0.40#1").format() == "typo@0.4#1"


def test_floats_are_kept_as_written() -> None:
    assert T("noise_ratio", {VALUE: 1 / 3}).format() == "noise_ratio@0.333333"
    assert T("noise_ratio", {VALUE: 1 / 3}) == PerturbationTag.parse("noise_ratio@0.333333")
    assert (
        T("noise_ratio", {VALUE: 1.0}).params == {VALUE: 1}
        and type(T("n", {VALUE: 1.0}).params[VALUE]) is int
    )
    assert T("x", {VALUE: 1e6}).format() == "x@1e+06"


# -- every family, as its class writes it ------------------------------------------------------

#: (how to get the tag from the class, the exact string of today's score tables)
PRODUCED: list[tuple[Callable[[], str], str]] = [
    (lambda: NoQueryPerturbation().name, "none"),
    (lambda: NoDocPerturbation().name, "none"),
    (lambda: NoiseRatio(ratio=0.4).name, "noise_ratio@0.4"),
    (lambda: NoiseRatio(ratio=1.0).name, "noise_ratio@1"),  # negative_rejection.yaml
    (lambda: NoiseRatio(ratio=0.0).name, "noise_ratio@0"),
    (lambda: NoiseRatio(ratio=0.2).name, "noise_ratio@0.2"),
    (lambda: Counterfactual().name, "counterfactual"),
    (lambda: Counterfactual(ratio=0.2, correct_ratio=0.2).name, "counterfactual@noise0.2@correct0.2"),
    (lambda: Counterfactual(ratio=0.4).name, "counterfactual@noise0.4"),
    (lambda: Counterfactual(correct_ratio=0.6).name, "counterfactual@correct0.6"),
    (lambda: TypoPerturbation(rate=0.25).tag(3), "typo@0.25#3"),
    (lambda: TypoPerturbation(rate=0.1).tag(1), "typo@0.1#1"),
    (lambda: TypoPerturbation(rate=0.1, n=1, candidates=5, name="char").tag(1), "char@0.1#1"),  # typo_rare
    (lambda: TypoPerturbation(rate=1).tag(2), "typo@1#2"),
    (lambda: LLMRewritePerturbation(kind="formal").tag(2), "formal#2"),
    (lambda: LLMRewritePerturbation(kind="redundancy").tag(1), "redundancy#1"),
    (lambda: LLMRewritePerturbation(kind="grammar", name="gram").tag(5), "gram#5"),
    (lambda: FormatPerturbation("json").name, "format:json"),
    (lambda: FormatPerturbation("markdown", target="gold").name, "format:markdown@gold"),
    (lambda: FormatPerturbation("markdown", target="rank:2").name, "format:markdown@rank2"),
    (lambda: MetadataPerturbation("timestamp_pre").name, "metadata:timestamp_pre"),
    (lambda: MetadataPerturbation("twitter", target="rank:10").name, "metadata:twitter@rank10"),
    (lambda: LogicPerturbation("reverse", target="gold").name, "logic:reverse@gold"),
    (lambda: LogicPerturbation("random").name, "logic:random"),
    (lambda: StylePerturbation("simple").name, "style:simple"),
    (lambda: SourcePerturbation("self").name, "source:self"),
    (lambda: GroundTruth().name, "ground_truth"),
    (lambda: DeleteAnswer(embedding_model=None).name, "delete_answer"),
    (lambda: BackTranslate().name, "backtranslate"),
]


@pytest.mark.parametrize(("make", "text"), PRODUCED, ids=[p[1] for p in PRODUCED])
def test_every_family_writes_todays_tag_and_round_trips(make: Callable[[], str], text: str) -> None:
    tag = make()
    assert tag == text
    record = PerturbationTag.parse(tag)
    assert record.format() == tag and PerturbationTag.parse(record.format()) == record


ratios = st.floats(0.0, 1.0, allow_nan=False)


@given(ratios)
def test_noise_ratio_tag_is_the_old_f_string(r: float) -> None:
    assert NoiseRatio(ratio=r).name == f"noise_ratio@{float(r):g}"


@given(ratios, ratios)
def test_counterfactual_tag_is_the_old_f_string(a: float, b: float) -> None:
    if a + b > 1:
        return
    old = "counterfactual" + (f"@noise{a:g}" if a else "") + (f"@correct{b:g}" if b else "")
    assert Counterfactual(ratio=a, correct_ratio=b).name == old


@given(st.floats(1e-6, 1.0, allow_nan=False), st.integers(1, 50))
def test_typo_tag_is_the_old_f_string(rate: float, i: int) -> None:
    assert TypoPerturbation(rate=rate).tag(i) == f"typo@{float(rate):g}#{i}"


names = st.from_regex(r"[a-z_][a-z_:0-9]{0,12}", fullmatch=True)
numbers = st.one_of(st.integers(-(10**9), 10**9), st.floats(allow_nan=False, allow_infinity=False))
words = st.from_regex(r"[a-z_]{1,8}", fullmatch=True)
labels = st.from_regex(r"[A-Za-z_]{1,8}", fullmatch=True).filter(lambda k: k != VALUE)


@given(
    names,
    st.one_of(st.none(), numbers, words),
    st.dictionaries(labels, numbers, max_size=3),
    st.one_of(st.none(), st.integers(0, 10**6)),
)
def test_round_trip_property(name: str, value: object, labelled: dict, variant: int | None) -> None:
    params = ({} if value is None else {VALUE: value}) | labelled
    t = PerturbationTag(name, params, variant)
    assert PerturbationTag.parse(t.format()) == t
    assert PerturbationTag.parse(t.format()).format() == t.format()


# -- errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", "non-empty string"),
        ("typo @0.1", "without whitespace"),
        ("@0.4", "empty name"),
        ("noise_ratio@", "empty parameter"),
        ("counterfactual@noise0.4@", "empty parameter"),
        ("formal#", "variant after '#'"),
        ("formal#x", "variant after '#'"),
        ("formal#1#2", "variant after '#'"),
        ("formal#-1", "variant after '#'"),
        ("x@0.1@0.2", "two unlabelled parameters"),
        ("x@0.1@gold", "two unlabelled parameters"),
        ("x@noise0.1@noise0.2", "two parameters labelled 'noise'"),
    ],
)
def test_malformed_tags_raise(text: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        PerturbationTag.parse(text)
    assert PerturbationTag.read(text) is None


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (("",), "name must be non-empty"),
        (("a@b",), "name must be non-empty"),
        (("a#b",), "name must be non-empty"),
        (("x", {VALUE: "rank1"}), "does not read back"),
        (("x", {VALUE: "a b"}), "does not read back"),
        (("x", {VALUE: float("nan")}), "does not read back"),
        (("x", {"noise": "high"}), "takes a number"),
        (("x", {"1a": 1}), "a key is"),
        (("x", {VALUE: True}), "booleans"),
        (("x", {VALUE: [1]}), "values are str, int or float"),
        (("x", {}, -1), "variant must be"),
        (("x", {}, True), "variant must be"),
    ],
)
def test_unwritable_records_raise(args: tuple, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        PerturbationTag(*args)


def test_typo_name_that_is_not_a_tag_fails_clearly() -> None:
    with pytest.raises(ValueError, match="name must be non-empty without '@'"):
        TypoPerturbation(rate=0.1, name="my@typo").tag(1)


# -- score-table columns and analysis ---------------------------------------------------------------


def test_perturbation_columns() -> None:
    cols = perturbation_columns("typo@0.25#3", "counterfactual@noise0.4@correct0.2")
    assert cols == {
        "query_perturbation_params": '{"value": 0.25}',
        "doc_perturbation_params": '{"noise": 0.4, "correct": 0.2}',
    }
    assert perturbation_columns("none", "logic:reverse@gold") == {
        "query_perturbation_params": "{}",
        "doc_perturbation_params": '{"value": "gold"}',
    }
    assert json.loads(
        perturbation_columns("formal#2", "format:markdown@rank2")["doc_perturbation_params"]
    ) == {"rank": 2}
    with pytest.raises(ValueError, match="empty parameter"):
        perturbation_columns("none", "noise_ratio@")


def test_analysis_reads_tags_with_or_without_the_params_columns() -> None:
    old = pd.DataFrame(
        {
            "example_id": ["a", "a", "b", "b"],
            "k": [5, 5, 5, 5],
            "doc_perturbation": ["noise_ratio@0.4", "noise_ratio@1", "noise_ratio@0.4", "noise_ratio@1"],
            "score": [1.0, 0.0, 0.0, 0.0],
            "generator": "g",
            "strategy": "s",
        }
    )
    new = old.assign(
        **{
            c: [perturbation_columns("none", t)[c] for t in old["doc_perturbation"]]
            for c in ("query_perturbation_params", "doc_perturbation_params")
        }
    )
    both = pd.concat([old.assign(generator="g0"), new], ignore_index=True)  # an older and a newer job
    for df in (old, new, both):
        table = rgb_table(df)
        assert sorted(set(table["noise_ratio"])) == [0.4, 1.0]
    assert noise_ratio_of("noise_ratio@0.4") == 0.4 and noise_ratio_of("noise_ratio@1") == 1.0
    for tag in ("none", "counterfactual@noise0.4", "noise_ratio", "noise_ratio@high", "nan", "x#y"):
        assert math.isnan(noise_ratio_of(tag))
    assert doc_type("delete_answer") == "lexical_similar" and doc_type("none") == "retrieval"
    assert doc_type("format:json") is None and doc_type("x@") is None
    assert perturbation_kind("typo@0.25#3") == "typo@0.25" and perturbation_kind("formal#12") == "formal"
    assert perturbation_kind("odd#tag") == "odd#tag"  # not a tag: its own kind
    dp = pd.DataFrame(
        {
            "doc_perturbation": [
                "none",
                "counterfactual",
                "counterfactual@noise0.2@correct0.2",
                "counterfactual_x",
            ]
        }
    )
    assert _counterfactual(dp).tolist() == [False, True, True, False]
