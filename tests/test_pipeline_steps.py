"""The job's building blocks: the one score-row builder, components checked against their protocols,
declared capabilities, and the sweep expansion `rr status` / `rr plan` re-do without Hydra's internals."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from rr.config import instantiate_as, protocol_members
from rr.context import RankedDoc
from rr.errors import ConfigError
from rr.pipeline import build_cells
from rr.records import Example, Judgment, Passage
from rr.results import ROW_COLUMNS, ColumnCollision, score_row
from rr.retrieval.base import ExampleAwareRetriever, Retriever
from rr.retrieval.bm25 import BM25Retriever
from rr.retrieval.oracle import OracleRetriever
from rr.strategies.base import Cell, CellInput, StrategyOutput
from rr.strategies.simple import ClosedBook, Vanilla

DOCS = (
    RankedDoc(Passage("p1", "Paris is the capital of France.", "Paris"), 1),
    RankedDoc(Passage("p2", "x"), 2),
)


def _row(out_extra=None, judge_extra=None, inp_extra=None) -> dict:
    ex = Example("q1", "capital of France?", ["Paris"])
    inp = CellInput(ex, Cell("bm25", 2, "reversed", "typo@0.25#1", "none"), DOCS, dict(inp_extra or {}))
    out = StrategyOutput("Answer: Paris", "Paris", True, DOCS[:1], dict(out_extra or {}))
    jd = Judgment(1.0, "match", extra=dict(judge_extra or {}))
    return score_row(inp, out, jd, dataset="mini", generator="smol", strategy="vanilla", job_id="abc", seed=3)


def test_score_row_is_built_in_one_place_with_the_contract_columns_first() -> None:
    row = _row(out_extra={"draft": "d"}, judge_extra={"em": 1.0}, inp_extra={"doc_similarity": 0.5})
    assert list(row)[: len(ROW_COLUMNS)] == list(ROW_COLUMNS)
    assert list(row)[len(ROW_COLUMNS) :] == ["doc_similarity", "em", "draft"]
    assert (row["k"], row["order"], row["retriever"], row["query_perturbation"]) == (
        2,
        "reversed",
        "bm25",
        "typo@0.25#1",
    )
    assert (row["n_docs_given"], row["n_docs_used"], row["doc_ids"]) == (2, 1, ["p1"])
    assert row["answer_in_docs"] is True and row["score"] == 1.0 and row["seed"] == 3


@pytest.mark.parametrize(
    ("extras", "message"),
    [
        (
            {"out_extra": {"score": 0.0}},
            "strategy 'vanilla' sets the score-table column 'score', which the pipeline",
        ),
        ({"judge_extra": {"k": 5}}, "judge 'match' sets the score-table column 'k'"),
        ({"inp_extra": {"x": 1}, "out_extra": {"x": 2}}, "which doc perturbation 'none' already sets"),
    ],
)
def test_an_extra_column_may_not_overwrite_another(extras: dict, message: str) -> None:
    with pytest.raises(ColumnCollision, match=message):
        _row(**extras)


def test_components_are_checked_against_their_protocol_when_built() -> None:
    node = OmegaConf.create({"_target_": "rr.records.Passage", "id": "p", "text": "t"})
    with pytest.raises(
        ConfigError,
        match=r"retriever\.mine: rr\.records\.Passage does not implement .*Retriever: it lacks name, index, search, fingerprint",
    ):
        instantiate_as(node, Retriever, "retriever.mine")
    assert protocol_members(ExampleAwareRetriever) == [
        "name",
        "index",
        "search",
        "fingerprint",
        "bind_examples",
        "search_qids",
    ]


def test_capabilities_are_declared_protocols() -> None:
    assert isinstance(OracleRetriever(), ExampleAwareRetriever)
    assert not isinstance(BM25Retriever(), ExampleAwareRetriever)
    assert [c.k for c in build_cells(ClosedBook(), ["bm25"], [1, 2], ["original"], closed_book=False)] == [0]
    assert [c.k for c in build_cells(Vanilla(), ["bm25"], [1, 2], ["original"], closed_book=False)] == [1, 2]


@pytest.mark.parametrize(
    ("params", "overrides"),
    [
        ({"strategy": "vanilla,closed_book", "seed": "0,1"}, []),
        (
            {"strategy": "vanilla,closed_book"},
            ["seed=3", "strategy=ownknow"],
        ),  # the command line wins, in place
        (None, ["grid.k=[1,2]", "seed=0,1,2", "retriever=bm25,dense"]),
        (None, ["grid.orders=[original,reversed]", "name=x", "+extra=1"]),
    ],
)
def test_sweep_expansion_matches_hydras_basic_sweeper(params, overrides) -> None:
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper  # the reference, in the test only
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from rr.resume import sweep_jobs

    args = [f"{k}={v}" for k, v in (params or {}).items()] + overrides
    expected = [
        list(j)
        for b in BasicSweeper.split_arguments(OverridesParser.create().parse_overrides(args), None)
        for j in b
    ]
    assert sweep_jobs(overrides, params) == expected
