"""Tests for rr.metrics: data-driven metric cases plus table and validation tests."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from rr.metrics import METRICS, get_metric, ndr, register_metric, robustness_table, ror, rsr
from rr.metrics.robustness import MetricUndefinedError

CASES_FILE = Path(__file__).parent / "metric_cases" / "robustness.yaml"
CASES = yaml.safe_load(CASES_FILE.read_text(encoding="utf-8"))
COLUMNS = ["example_id", "k", "order", "score"]


def table(rows: list[list]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=COLUMNS)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_metric_case(case: dict) -> None:
    value = METRICS[case["metric"]](table(case["rows"]))
    assert isinstance(value, float)
    assert value == pytest.approx(case["expected"], abs=case["tol"])


def test_registry() -> None:
    assert {"ndr", "rsr", "ror"} <= set(METRICS)
    assert METRICS["ndr"] is ndr and get_metric("rsr") is rsr and get_metric("ror") is ror
    with pytest.raises(KeyError, match="unknown metric 'nope'"):
        get_metric("nope")
    with pytest.raises(ValueError, match="already registered"):
        register_metric("ndr")(lambda df: 0.0)


def test_cases_cover_every_metric() -> None:
    """Every registered metric but RGB's and RARE's (tests/test_rgb_rare_metrics.py) has a case here."""
    assert {c["metric"] for c in CASES} == {m for m in METRICS if not m.startswith(("rgb_", "rare_"))}


# --------------------------------------------------------------------------- robustness_table


def _system_rows(generator: str, strategy: str, retriever: str, grid: dict) -> list[dict]:
    """grid: example_id -> {(k, order): score}."""
    return [
        {
            "generator": generator,
            "strategy": strategy,
            "retriever": retriever,
            "example_id": q,
            "k": k,
            "order": o,
            "score": s,
        }
        for q, cells in grid.items()
        for (k, o), s in cells.items()
    ]


def _two_retriever_table() -> pd.DataFrame:
    """One system (g1, vanilla), 2 examples, k in {1, 2}, orders o(riginal)/r(eversed).

    closed-book: q1 = 1, q2 = 0

    bm25            k=1 o/r   k=2 o/r        dense           k=1 o/r   k=2 o/r
      q1              1  1      0  1           q1              1  1      1  1
      q2              0  1      1  1           q2              0  0      0  1

    bm25:  NDR: q1 (vs 1) 1,1,0,1; q2 (vs 0) all 4 -> 7/8 = 0.875
           RSR: q1 o 0>=1 no, q1 r 1>=1, q2 o 1>=0, q2 r 1>=1 -> 3/4 = 0.75
           ROR: q1k1 [1,1] 1, q1k2 [0,1] 0, q2k1 [0,1] 0, q2k2 [1,1] 1 -> 2/4 = 0.5
           accuracy 6/8 = 0.75; robustness (0.875*0.75*0.5)^(1/3) = 0.6897310
    dense: NDR: q1 all 1 >= 1, q2 all >= 0 -> 1.0
           RSR: q1 o 1>=1, q1 r 1>=1, q2 o 0>=0, q2 r 1>=0 -> 1.0
           ROR: q1k1 1, q1k2 1, q2k1 [0,0] 1, q2k2 [0,1] 0 -> 3/4 = 0.75
           accuracy 5/8 = 0.625; robustness (1*1*0.75)^(1/3) = 0.9085603
    mean:  NDR 0.9375, RSR 0.875, ROR 0.625, accuracy 0.6875,
           robustness (0.9375*0.875*0.625)^(1/3) = 0.8003620; closed-book accuracy 0.5
    """
    bm25 = {
        "q1": {(1, "o"): 1, (1, "r"): 1, (2, "o"): 0, (2, "r"): 1},
        "q2": {(1, "o"): 0, (1, "r"): 1, (2, "o"): 1, (2, "r"): 1},
    }
    dense = {
        "q1": {(1, "o"): 1, (1, "r"): 1, (2, "o"): 1, (2, "r"): 1},
        "q2": {(1, "o"): 0, (1, "r"): 0, (2, "o"): 0, (2, "r"): 1},
    }
    closed = {"q1": {(0, "none"): 1}, "q2": {(0, "none"): 0}}
    rows = (
        _system_rows("g1", "vanilla", "bm25", bm25)
        + _system_rows("g1", "vanilla", "dense", dense)
        + _system_rows("g1", "vanilla", "none", closed)
        # a second system that never degrades: every score 1 (one retriever only)
        + _system_rows("g2", "vanilla", "bm25", {q: dict.fromkeys(bm25[q], 1) for q in bm25})
        + _system_rows("g2", "vanilla", "none", {q: {(0, "none"): 1} for q in closed})
    )
    return pd.DataFrame(rows)


def test_robustness_table_averages_over_retrievers() -> None:
    out = robustness_table(_two_retriever_table())
    assert list(out.columns) == [
        "generator",
        "strategy",
        "ndr",
        "rsr",
        "ror",
        "robustness",
        "accuracy",
        "closed_book_accuracy",
        "n_examples",
        "n_orders",
        "retrievers",
    ]
    g1 = out.set_index("generator").loc["g1"]
    assert g1["n_orders"] == 2  # orders o and r: ROR is a result (metric_notes reads this)
    assert g1["ndr"] == pytest.approx(0.9375)
    assert g1["rsr"] == pytest.approx(0.875)
    assert g1["ror"] == pytest.approx(0.625)
    assert g1["robustness"] == pytest.approx(0.8003619781)
    assert g1["accuracy"] == pytest.approx(0.6875)
    assert g1["closed_book_accuracy"] == pytest.approx(0.5)
    assert g1["n_examples"] == 2
    assert g1["retrievers"] == "bm25,dense"
    g2 = out.set_index("generator").loc["g2"]
    assert (g2["ndr"], g2["rsr"], g2["ror"], g2["robustness"]) == (1.0, 1.0, 1.0, 1.0)
    assert g2["retrievers"] == "bm25"


def test_robustness_table_per_retriever() -> None:
    out = robustness_table(_two_retriever_table(), per_retriever=True)
    assert list(out.columns[:3]) == ["generator", "strategy", "retriever"]
    g1 = out[out["generator"] == "g1"].set_index("retriever")
    assert list(g1.index) == ["bm25", "dense"]
    assert g1.loc["bm25", ["ndr", "rsr", "ror", "accuracy"]].tolist() == pytest.approx(
        [0.875, 0.75, 0.5, 0.75]
    )
    assert g1.loc["dense", ["ndr", "rsr", "ror", "accuracy"]].tolist() == pytest.approx(
        [1.0, 1.0, 0.75, 0.625]
    )
    assert g1.loc["bm25", "robustness"] == pytest.approx(0.6897310441)
    assert g1.loc["dense", "robustness"] == pytest.approx(0.75 ** (1 / 3))
    assert (g1["closed_book_accuracy"] == 0.5).all() and (g1["n_examples"] == 2).all()
    # averaging the per-retriever rows gives the default table's metrics
    avg = robustness_table(_two_retriever_table()).set_index("generator").loc["g1"]
    for m in ("ndr", "rsr", "ror", "accuracy"):
        assert g1[m].mean() == pytest.approx(avg[m])


def test_robustness_table_undefined_metrics_are_nan() -> None:
    df = _two_retriever_table()
    # one k only -> RSR undefined; no closed-book rows -> NDR undefined; both NaN, not an error
    out = robustness_table(df[df["k"].isin([2])], by="generator")
    g1 = out.set_index("generator").loc["g1"]
    assert math.isnan(g1["ndr"]) and math.isnan(g1["rsr"]) and math.isnan(g1["robustness"])
    assert g1["ror"] == pytest.approx((0.5 + 0.5) / 2)  # bm25 q1 [0,1] q2 [1,1]; dense q1 [1,1] q2 [0,1]
    assert math.isnan(g1["closed_book_accuracy"])
    # a closed-book-only group still gets a row
    closed_only = df[df["k"] == 0].assign(strategy="closed_book")
    out = robustness_table(pd.concat([df, closed_only]))
    row = out[(out["generator"] == "g1") & (out["strategy"] == "closed_book")].iloc[0]
    assert math.isnan(row["ndr"]) and row["closed_book_accuracy"] == 0.5 and row["retrievers"] == ""


def test_robustness_table_reports_duplicates_with_group() -> None:
    df = _two_retriever_table()
    # grouping by strategy alone mixes generators g1 and g2 in one group
    with pytest.raises(
        ValueError,
        match=r"^strategy='vanilla': duplicate rows: 2 rows for \(example_id='q1', k=1, order='o', "
        r"retriever='bm25'\) differ in \['generator'\], which by= does not name; add 'generator' to by "
        r"\(e.g. by=\['strategy', 'generator'\]\)",
    ):
        robustness_table(df, by=["strategy"])


def test_robustness_table_over_two_jobs_names_job_id() -> None:
    """Two jobs of one system in one folder (README's snippet after two plain ``rr`` runs).

    Without ``job_id`` in ``by`` the error names it; with it each job gets its own row, equal to
    the table of that job alone.
    """
    one = _two_retriever_table()
    two = pd.concat([one.assign(job_id="a"), one.assign(job_id="b")])  # index labels repeat, as in load()
    with pytest.raises(ValueError, match=r"differ in \['job_id'\].*add 'job_id' to by"):
        robustness_table(two, by=["generator", "strategy"])
    with pytest.raises(ValueError, match=r"example_id='q1', k=0\) differ in \['job_id'\]"):
        robustness_table(two[two["k"] == 0], by=["generator", "strategy"])
    per_job = robustness_table(two, by=["job_id", "generator", "strategy"])
    alone = robustness_table(one, by=["generator", "strategy"])
    assert per_job["job_id"].tolist() == ["a", "a", "b", "b"]
    for jid in ("a", "b"):
        got = per_job[per_job["job_id"] == jid].drop(columns="job_id").reset_index(drop=True)
        pd.testing.assert_frame_equal(got, alone)


def test_robustness_table_rejects_rag_rows_without_retriever() -> None:
    df = _two_retriever_table()
    df.loc[(df["generator"] == "g2") & (df["k"] == 1), "retriever"] = "none"
    with pytest.raises(ValueError, match=r"generator='g2'.*k > 0 have retriever='none'"):
        robustness_table(df)


# --------------------------------------------------------------------------- validation

GOOD = [
    ["q1", 0, "none", 1.0],
    ["q1", 5, "original", 1.0],
    ["q1", 5, "reversed", 0.0],
    ["q1", 10, "original", 1.0],
    ["q1", 10, "reversed", 1.0],
    ["q2", 0, "none", 0.0],
    ["q2", 5, "original", 0.0],
    ["q2", 5, "reversed", 1.0],
    ["q2", 10, "original", 1.0],
    ["q2", 10, "reversed", 1.0],
]


def test_good_table_passes_all_metrics() -> None:
    for metric in (ndr, rsr, ror):
        assert 0.0 <= metric(table(GOOD)) <= 1.0


@pytest.mark.parametrize("metric", [ndr, rsr, ror])
def test_missing_column(metric) -> None:
    with pytest.raises(ValueError, match=r"missing column\(s\) \['order'\]"):
        metric(table(GOOD).drop(columns="order"))


def test_example_lacking_closed_book_row() -> None:
    rows = [r for r in GOOD if not (r[0] == "q2" and r[1] == 0)]
    with pytest.raises(ValueError, match=r"example 'q2' lacks its closed-book \(k=0\) row"):
        ndr(table(rows))
    rsr(table(rows)), ror(table(rows))  # k = 0 rows are not needed by RSR / ROR


def test_no_closed_book_rows_at_all() -> None:
    rows = [r for r in GOOD if r[1] != 0]
    with pytest.raises(MetricUndefinedError, match="no k=0 rows"):
        ndr(table(rows))


@pytest.mark.parametrize("metric", [ndr, rsr, ror])
def test_incomplete_grid(metric) -> None:
    rows = [r for r in GOOD if not (r[0] == "q2" and r[1] == 10 and r[2] == "reversed")]
    with pytest.raises(
        ValueError, match=r"incomplete grid: example 'q2' lacks 1 .*\(k=10, order='reversed'\)"
    ):
        metric(table(rows))


def test_example_with_only_closed_book_row_is_incomplete_for_ndr() -> None:
    rows = [*GOOD, ["q3", 0, "none", 1.0]]
    with pytest.raises(ValueError, match=r"incomplete grid: example 'q3' lacks 4 of the 4"):
        ndr(table(rows))


@pytest.mark.parametrize("metric", [ndr, rsr, ror])
def test_duplicate_cells(metric) -> None:
    rows = [*GOOD, ["q1", 5, "reversed", 1.0]]
    with pytest.raises(
        ValueError, match=r"duplicate rows: 2 rows for \(example_id='q1', k=5, order='reversed'\).*one system"
    ):
        metric(table(rows))


def test_duplicate_closed_book_rows() -> None:
    rows = [*GOOD, ["q1", 0, "original", 1.0]]
    with pytest.raises(ValueError, match=r"example 'q1' has 2 closed-book \(k=0\) rows"):
        ndr(table(rows))


def test_rsr_needs_two_k() -> None:
    rows = [r for r in GOOD if r[1] != 10]
    with pytest.raises(ValueError, match=r"RSR needs at least 2 values of k > 0; the table has k=\[5\]"):
        rsr(table(rows))


def test_rsr_needs_rectangular_grid() -> None:
    rows = [r for r in GOOD if not (r[1] == 5 and r[2] == "reversed")]
    with pytest.raises(ValueError, match=r"order\(s\) \['reversed'\] are missing at k=5"):
        rsr(table(rows))
    ror(table(rows))  # fine for ROR: k=5 has one order (contributes 1)


@pytest.mark.parametrize("bad", [1.5, -0.1, float("nan")])
@pytest.mark.parametrize("metric", [ndr, rsr, ror])
def test_scores_outside_unit_interval(metric, bad: float) -> None:
    rows = [list(r) for r in GOOD]
    rows[3][3] = bad
    with pytest.raises(ValueError, match=r"score\(s\) outside \[0, 1\] or missing, e.g. example 'q1', k=10"):
        metric(table(rows))


def test_bad_k() -> None:
    rows = [list(r) for r in GOOD]
    rows[1][1] = 2.5
    with pytest.raises(ValueError, match="non-negative integers"):
        ndr(table(rows))


def test_empty_table() -> None:
    with pytest.raises(MetricUndefinedError, match="empty"):
        ror(table([]))


def test_metrics_do_not_mutate_input() -> None:
    df = table(GOOD)
    before = df.copy()
    ndr(df), rsr(df), ror(df)
    pd.testing.assert_frame_equal(df, before)


def test_every_metric_has_one_spec_that_names_it_as_the_papers_and_the_sections_do() -> None:
    """One vocabulary (issue 42): every registered function has a spec, and a spec's rate is the mean of
    its per-row values (the paper table's intervals average these); a spec's section is a real section."""
    from rr.metrics import SPECS, get_spec
    from rr.metrics.rgb import rejection_all_rate
    from rr.reporting.registry import sections

    names = {s.name for s in sections()}

    assert set(METRICS) <= set(SPECS)
    for name in SPECS:
        spec = get_spec(name)
        assert spec.name == name and spec.measures and spec.direction
        assert spec.section is None or spec.section in names, (name, spec.section)
        assert spec.fn is None or spec.fn is METRICS[name]
    # RGB Table 3's Rej is all_rate (a refusal or a correct answer), the rgb_rejection section's `rej`
    rej = get_spec("rgb_rejection_all_rate")
    assert (rej.section, rej.column, rej.printed_as) == ("rgb_rejection", "rej", ("rgb2024: Rej (Table 3)",))
    rows = pd.DataFrame(
        {"k": [5] * 4, "score": [1.0, 0.0, 0.0, 0.5], "rgb_rejected": [False, True, False, False]}
    )
    assert rej.per_row is not None and rej.per_row(rows).tolist() == [1.0, 1.0, 0.0, 0.0]
    assert rejection_all_rate(rows) == rej.per_row(rows).mean() == 0.5
    with pytest.raises(KeyError, match="unknown metric 'nope'"):
        get_spec("nope")


def test_ndr_of_a_categorical_example_id_whose_closed_book_scores_all_differ() -> None:
    """rr report's table holds example_id as a categorical; mapped to the closed-book scores of two
    examples (1 and 0, all different) it stayed a categorical and NDR raised a TypeError (issue 52)."""
    rows = [["q1", 0, "none", 1.0], ["q1", 1, "original", 0.0], ["q1", 2, "original", 1.0],
            ["q2", 0, "none", 0.0], ["q2", 1, "original", 1.0], ["q2", 2, "original", 1.0]]  # fmt: skip
    df = table(rows)
    assert ndr(df.astype({"example_id": "category"})) == ndr(df) == 0.75
