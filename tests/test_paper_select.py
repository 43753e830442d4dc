"""The paper section's row selection (issue 45, part 3): the index path (:class:`RunIndex` matches a value on its
cells, then gathers the cells' rows by position) and :func:`select` on the rows both give exactly the rows a
plain pandas filter written out by hand gives, on a small hand-made score table with string and categorical
columns."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

from rr.reporting.paper_match import RunIndex, select

MODELS = {
    "j1": ("org/model-a", "org/model-a"),
    "j2": ("org/model-b", "org/model-b"),
    "j3": ("org/model-a", ""),
}


def _scores() -> pd.DataFrame:
    rows = []
    # j1: model a on nq_open, vanilla and s2a, bm25 at k 5 and 10, two orders, and closed book
    # j2: model b on nq_open, vanilla only, bge at k 5, one order, and closed book
    # j3: model a on hotpot_qa, vanilla, bm25 at k 5 and 10, one order, no closed book
    grid = {
        "j1": ("nq_open", ["vanilla", "s2a"], ["bm25"], [5, 10], ["original", "reversed"], True),
        "j2": ("nq_open", ["vanilla"], ["bge_large"], [5], ["original"], True),
        "j3": ("hotpot_qa", ["vanilla"], ["bm25"], [5, 10], ["original"], False),
    }
    for job, (dataset, strategies, retrievers, ks, orders, closed) in grid.items():
        for e in range(3):
            for s in strategies:
                cells = [(r, k, o) for r in retrievers for k in ks for o in orders]
                if closed:
                    cells.append(("none", 0, "none"))
                for r, k, o in cells:
                    rows.append(
                        {
                            "example_id": f"{dataset}-{e}",
                            "job_id": job,
                            "dataset": dataset,
                            "strategy": s,
                            "retriever": r,
                            "k": k,
                            "order": o,
                            "doc_perturbation": "none",
                            "score": float((e + k) % 2),
                        }
                    )
    df = pd.DataFrame(rows)
    return df.astype({"example_id": "string", "job_id": "string", "strategy": "string"})


#: (setting, model ids, datasets, the plain pandas filter of the rows it selects; None: nothing).
CASES = [
    (
        "strategy=vanilla",
        "org/model-a",
        "nq_open",
        lambda d: (d["job_id"] == "j1") & (d["strategy"] == "vanilla"),
    ),
    (
        "strategy=vanilla;k=5",
        "org/model-a",
        "nq_open",
        lambda d: (d["job_id"] == "j1") & (d["strategy"] == "vanilla") & d["k"].isin([0, 5]),
    ),
    (
        "strategy=s2a;retriever=bm25;k=5+10;order=reversed",
        "org/model-a",
        "nq_open",
        lambda d: (
            (d["job_id"] == "j1") & (d["strategy"] == "s2a") & ((d["k"] == 0) | (d["order"] == "reversed"))
        ),
    ),
    (
        "strategy=vanilla;k=0",
        "org/model-a;org/model-b",
        "nq_open",
        lambda d: d["job_id"].isin(["j1", "j2"]) & (d["strategy"] == "vanilla") & (d["k"] == 0),
    ),
    (
        "strategy=vanilla;retriever=bge_large",
        "org/model-b",
        "nq_open",
        lambda d: d["job_id"] == "j2",
    ),
    ("strategy=vanilla;k=5+10+25", "org/model-a", "nq_open", None),  # k 25 was not run: a pooled grid fails
    ("strategy=vanilla;retriever=bge_large", "org/model-a", "nq_open", None),
    (
        "strategy=vanilla;k=10",
        "org/model-a",
        "nq_open+hotpot_qa",
        lambda d: d["job_id"].isin(["j1", "j3"]) & (d["strategy"] == "vanilla") & d["k"].isin([0, 10]),
    ),
]


@pytest.mark.parametrize(("setting", "model_ids", "datasets", "expect"), CASES)
def test_the_index_and_select_give_the_rows_of_a_plain_pandas_filter(setting, model_ids, datasets, expect):
    df = _scores()
    want = df[expect(df)] if expect is not None else df.iloc[0:0]
    index = RunIndex(df, MODELS, {k.split("=")[0] for k in setting.split(";")})
    value = SimpleNamespace(model_ids=model_ids, rr_datasets=datasets, setting=setting, out_of_reach="")
    cells = index.match(value)
    got = index.rows_of(cells) if not cells.empty else df.iloc[0:0]
    assert list(got.index) == list(want.index)
    pd.testing.assert_frame_equal(
        got.astype(str).reset_index(drop=True), want.astype(str).reset_index(drop=True), check_dtype=False
    )
    # select on the rows themselves, restricted to the value's jobs and datasets by hand
    jobs = [j for j, (m, _) in MODELS.items() if m in model_ids.split(";")]
    part = df[df["job_id"].isin(jobs) & df["dataset"].isin(datasets.split("+"))]
    selected = select(part, dict(kv.split("=") for kv in setting.split(";")))
    assert list(selected.index) == list(want.index)
    # and select on the index's categorical rows gives the same rows
    cat = index.scores[index.scores["job_id"].astype(str).isin(jobs)]
    cat = cat[cat["dataset"].astype(str).isin(datasets.split("+"))]
    assert list(select(cat, dict(kv.split("=") for kv in setting.split(";"))).index) == list(want.index)
