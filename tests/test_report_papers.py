"""rr report's paper sections (query-level Table 2/4 and Figs. 3/4/9, RGB Tables 1/3/7, RARE Tables 4/8)
on small hand-worked score tables written as real job folders (scores.parquet, runs/*.trec, qrels.trec)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from rr.records import Hit
from rr.reporting import build_report
from rr.reporting.query_level import stars
from rr.results import write_scores
from rr.retrieval.qrels import write_qrels
from rr.retrieval.runs import write_trec_run

from .synthetic import write_synthetic_sweep

EXAMPLES = ("q0", "q1", "q2")
VARIANTS = ("none", "typo@0.1#1", "typo@0.1#2")


def row(
    example: str, score: float, *, generator: str = "org/g", retriever: str = "bm25", k: int = 5, **extra
) -> dict:
    """One score-table row (k = 0 rows are closed-book: retriever and order 'none')."""
    r = {
        "example_id": example,
        "dataset": "synth",
        "generator": generator,
        "strategy": "vanilla",
        "retriever": retriever if k else "none",
        "k": k,
        "order": "original" if k else "none",
        "query_perturbation": "none",
        "doc_perturbation": "none",
        "n_docs_used": k,
        "prediction": "x",
        "raw_output": "x",
        "score": float(score),
        "judge": "match",
        "refused": False,
        "seed": 0,
        "marker_found": True,
    }
    r.update(extra)
    return r


def write(root: Path, name: str, rows: list[dict]) -> Path:
    out = root / name
    out.mkdir(parents=True)
    write_scores(pd.DataFrame(rows).assign(job_id=name), out)
    return out


# Per (example, variant): bm25 finds the gold passage (Recall@5) / RAG Match / closed-book / oracle Match.
RECALL = {"none": (1, 1, 0), "typo@0.1#1": (0, 1, 0), "typo@0.1#2": (1, 0, 0)}
RAG = {"none": (1, 1, 0), "typo@0.1#1": (0, 1, 0), "typo@0.1#2": (1, 0, 1)}
CB = {"none": (0, 1, 0), "typo@0.1#1": (0, 0, 0), "typo@0.1#2": (0, 1, 0)}
ORACLE = {"none": (1, 1, 1), "typo@0.1#1": (1, 1, 1), "typo@0.1#2": (1, 1, 0)}


def write_query_level_job(root: Path) -> Path:
    rows = []
    for v in VARIANTS:
        for i, ex in enumerate(EXAMPLES):
            rows.append(row(ex, CB[v][i], k=0, query_perturbation=v))
            rows.append(row(ex, RAG[v][i], query_perturbation=v))
            rows.append(row(ex, ORACLE[v][i], retriever="oracle", query_perturbation=v))
    job = write(root, "ql_job", rows)
    write_qrels(job / "qrels.trec", {ex: {f"{ex}-gold": 1} for ex in EXAMPLES})
    bm25, oracle = {}, {}
    for v in VARIANTS:
        for i, ex in enumerate(EXAMPLES):
            qid = ex if v == "none" else f"{ex}::{v}"
            docs = [f"{ex}-gold"] * RECALL[v][i] + [f"junk{j}" for j in range(5 - RECALL[v][i])]
            bm25[qid] = [Hit(d, r + 1, 10.0 - r) for r, d in enumerate(docs)]
            oracle[qid] = [Hit(f"{ex}-gold", 1, 1.0)]
    write_trec_run(job / "runs" / "bm25.trec", bm25, "bm25")
    write_trec_run(job / "runs" / "oracle.trec", oracle, "oracle")
    return job


QL_SECTIONS = ["query_level_retrieval", "query_level_match", "query_level_correlations"]


def test_query_level_sections(tmp_path: Path) -> None:
    write_query_level_job(tmp_path / "jobs")
    out = tmp_path / "report"
    report = build_report(tmp_path / "jobs", out, n_resamples=50, strict=True, only=QL_SECTIONS)
    assert {o.section.name: o.skipped for o in report.outcomes} == dict.fromkeys(QL_SECTIONS)

    # Table 4: Recall@5 = 2/3 of the originals, 2/6 of the typo variants; one gold of 5 hits
    ret = pd.read_csv(out / "tables" / "query_level_retrieval.csv").set_index(["retriever", "measure"])
    assert list(ret.columns) == ["none", "typo@0.1"]
    assert ret.loc[("bm25", "Recall@5")].tolist() == pytest.approx([200 / 3, 100 / 3])
    assert ret.loc[("bm25", "Precision@5")].tolist() == pytest.approx([40 / 3, 20 / 3])
    assert ret.loc[("oracle", "Recall@5")].tolist() == pytest.approx([100, 100])
    assert ("bm25", "BERGEN Recall@5") in ret.index  # the paper's tool's rule, beside rr's (issue 42)

    # Figs. 3/4/9: Match per setting and kind
    match = pd.read_csv(out / "tables" / "query_level_match.csv").set_index(["setting", "kind"])
    assert match.loc[("closed_book", "none"), "match"] == pytest.approx(1 / 3)
    assert match.loc[("closed_book", "typo@0.1"), "match"] == pytest.approx(1 / 6)
    assert match.loc[("oracle", "typo@0.1"), "match"] == pytest.approx(5 / 6)
    assert match.loc[("rag", "none"), "match"] == pytest.approx(2 / 3)
    assert match.loc[("rag", "typo@0.1"), "match"] == pytest.approx(0.5)
    assert (match["match_ci_low"] <= match["match"] + 1e-12).all()

    # Table 2: per perturbed sample, ΔRET = (-1,0,0,-1,0,0), ΔCB = (0,0,-1,0,0,0), ΔOR = (0,...,0,-1),
    # ΔRAG = (-1,0,0,-1,0,1) (q0#1, q0#2, q1#1, q1#2, q2#1, q2#2): r = 5/√34, -1/√85, -7/√85
    corr = pd.read_csv(out / "tables" / "query_level_correlations.csv").set_index("pair")
    assert corr["r"].to_dict() == pytest.approx(
        {"RET": 5 / math.sqrt(34), "CB": -1 / math.sqrt(85), "OR": -7 / math.sqrt(85)}
    )
    assert (corr["n"] == 6).all() and set(corr["kind"]) == {"typo@0.1"}
    assert corr.loc["RET", "p"] < 0.05 < corr.loc["CB", "p"]
    assert corr["stars"].fillna("").tolist() == [stars(p) for p in corr["p"]]
    t2 = pd.read_csv(out / "tables" / "query_level_correlations_table2.csv")
    assert t2["type"].tolist() == ["RET", "CB", "OR"]
    assert t2["typo@0.1"].tolist()[:2] == [f"{5 / math.sqrt(34):.3f}*", f"{-1 / math.sqrt(85):.3f}"]
    for fig in ("query_level_match", "query_level_correlations"):
        assert (out / "figures" / f"{fig}.png").read_bytes()[:4] == b"\x89PNG"
    assert stars(0.0004) == "***" and stars(0.004) == "**" and stars(0.04) == "*" and stars(0.5) == ""
    assert stars(float("nan")) == ""


def write_rgb_jobs(root: Path) -> None:
    rej, rej_llm, scores = (True, True, False, True), (True, False, False, True), (0, 0, 1, 0)
    neg = [
        row(ex, s, doc_perturbation="noise_ratio@1", rgb_rejected=r, rgb_rejected_llm=rl)
        for ex, s, r, rl in zip(("q0", "q1", "q2", "q3"), scores, rej, rej_llm, strict=True)
    ]
    write(root, "rgb_negative", neg)
    cf = []
    for ex, cb, s, ed, edl in zip(
        ("q0", "q1", "q2", "q3"), (1, 1, 0, 1), (0, 1, 0, 1), (1, 1, 0, 0), (0, 1, 0, 0), strict=True
    ):
        cf.append(
            row(
                ex, cb, k=0, doc_perturbation="counterfactual", error_detected=False, error_detected_llm=False
            )
        )
        cf.append(
            row(
                ex,
                s,
                doc_perturbation="counterfactual",
                error_detected=bool(ed),
                error_detected_llm=bool(edl),
            )
        )
    write(root, "rgb_counterfactual", cf)


RGB_SECTIONS = ["accuracy_vs_noise_ratio", "rgb_rejection", "rgb_counterfactual"]


def test_rgb_sections(tmp_path: Path) -> None:
    write_rgb_jobs(tmp_path / "jobs")
    out = tmp_path / "report"
    report = build_report(tmp_path / "jobs", out, n_resamples=50, strict=True, only=RGB_SECTIONS)
    assert {o.section.name: o.skipped for o in report.outcomes} == dict.fromkeys(RGB_SECTIONS)
    table1 = pd.read_csv(out / "tables" / "rgb_accuracy_by_noise_ratio.csv")
    assert table1["noise 1"].tolist() == [0.25]
    rej = pd.read_csv(out / "tables" / "rgb_rejection.csv")
    # Rej as RGB reports it (evalue.py all_rate at ratio 1): q0, q1, q3 refuse and q2 is correct -> 4/4;
    # the refusals alone 3/4 (rr's number, its own name); Rej* 2/4
    assert rej[["rej", "rej_phrase_only", "rej_llm", "n_rows", "n_skipped"]].iloc[0].tolist() == [
        1.0,
        0.75,
        0.5,
        4,
        0,
    ]
    assert rej["rej_phrase_only_ci_low"].iloc[0] <= 0.75 <= rej["rej_phrase_only_ci_high"].iloc[0]
    cf = pd.read_csv(out / "tables" / "rgb_counterfactual.csv")
    assert cf["counterfactual"].tolist() == ["counterfactual"]
    # acc 3/4 closed-book; 2/4 with the documents; ED 2/4 (q0 wrong, q1 right: rr's CR 1/2); ED* 1/4
    # (q1: Table 7's CR, cr_llm, 1); no rgb_corrected column (judge=refusal_match rows): cr_evalue NaN
    assert math.isnan(cf["cr_evalue"].iloc[0])
    assert cf[["acc", "acc_doc", "ed", "cr", "ed_llm", "cr_llm"]].iloc[0].tolist() == [
        0.75,
        0.5,
        0.5,
        0.5,
        0.25,
        1.0,
    ]
    assert (out / "figures" / "accuracy_vs_noise_ratio.png").exists()


def test_rgb_table1_is_all_parts_accuracy_and_skips_rows_that_did_not_fit(tmp_path: Path) -> None:
    """The section titled as RGB Table 1 shows RGB's accuracy (every part present), not the mean score;
    a row whose prompt did not fit the window is left out (RGB skips a failed generation) and counted."""
    rows = [
        row("q0", 1.0, doc_perturbation="noise_ratio@0.2"),
        row("q1", 0.5, doc_perturbation="noise_ratio@0.2"),  # one of two answer parts
        row("q2", 0.5, doc_perturbation="noise_ratio@0.2"),
        row("q3", 0.0, doc_perturbation="noise_ratio@0.2", over_window=True),
    ]
    write(tmp_path / "jobs", "rgb_partial", rows)
    out = tmp_path / "report"
    build_report(tmp_path / "jobs", out, n_resamples=50, strict=True, only=["accuracy_vs_noise_ratio"])
    main = pd.read_csv(out / "tables" / "accuracy_by_noise_ratio.csv")
    # RGB: 1 of the 3 rows it scores is correct; the mean score (partial credit) would be 2/3
    assert main[["accuracy", "mean_score", "n_rows", "n_skipped"]].iloc[0].tolist() == pytest.approx(
        [1 / 3, 2 / 3, 3, 1]
    )
    assert pd.read_csv(out / "tables" / "rgb_accuracy_by_noise_ratio.csv")["noise 0.2"].tolist() == [
        pytest.approx(1 / 3)
    ]


def write_rare_jobs(root: Path) -> None:
    """g1 is always right; g2 fails the closed-book probe and is robust on 6 of its 8 overall trials."""
    rows = []
    for gen, cb, gt_typo, delete_refused, retrieval in (
        ("org/g1", (1, 1), (1, 1), (False, False), (1, 1)),
        ("org/g2", (0, 0), (1, 0), (True, False), (0, 1)),
    ):
        for i, ex in enumerate(("q0", "q1")):
            rows.append(row(ex, cb[i], generator=gen, k=0, judge="refusal_match"))
            rows.append(row(ex, 1, generator=gen, doc_perturbation="ground_truth", judge="refusal_match"))
            rows.append(
                row(
                    ex,
                    gt_typo[i],
                    generator=gen,
                    doc_perturbation="ground_truth",
                    query_perturbation="char@0.1#1",
                    judge="refusal_match",
                )
            )
            rows.append(row(ex, 1, generator=gen, doc_perturbation="backtranslate", judge="refusal_match"))
            rows.append(
                row(
                    ex,
                    cb[i],
                    generator=gen,
                    doc_perturbation="delete_answer",
                    judge="refusal_match",
                    refused=delete_refused[i],
                )
            )
            rows.append(row(ex, retrieval[i], generator=gen, judge="refusal_match"))
    write(root, "rare", rows)


def test_rare_section(tmp_path: Path) -> None:
    write_rare_jobs(tmp_path / "jobs")
    write_rgb_jobs(tmp_path / "jobs")  # another system, without RARE documents: not in the table
    out = tmp_path / "report"
    build_report(tmp_path / "jobs", out, n_resamples=50, strict=True, only=["rare_robustness"])
    table = pd.read_csv(out / "tables" / "rare_robustness.csv").set_index("generator")
    assert table.index.tolist() == ["org/g1", "org/g2"] and (table["n_examples"] == 2).all()
    cols = ["overall", "query", "document", "retrieval"]
    assert table.loc["org/g1", cols].tolist() == [1.0, 1.0, 1.0, 1.0]
    assert table.loc["org/g2", cols].tolist() == [0.75, 0.5, 0.75, 0.5]
    z = pd.read_csv(out / "tables" / "rare_ztests.csv").set_index("score")
    assert z["system_a"].unique().tolist() == ["g1"] and z["system_b"].unique().tolist() == ["g2"]
    o = z.loc["overall"]
    assert (o["p_a"], o["p_b"], o["n_a"], o["n_b"]) == (1.0, 0.75, 8, 8)
    # pooled p = 14/16: z = 0.25 / sqrt(0.875 * 0.125 * (1/8 + 1/8))
    assert o["z"] == pytest.approx(0.25 / math.sqrt(0.875 * 0.125 / 4))
    assert (z["p_holm"] >= z["p_value"] - 1e-12).all()


def test_paper_sections_skip_with_a_reason(tmp_path: Path) -> None:
    """On a sweep with no query variants, no RGB columns and no RARE documents, each new section says why."""
    sweep = write_synthetic_sweep(tmp_path / "sweep", n_examples=3, noise=False)
    names = [*QL_SECTIONS, "rgb_rejection", "rgb_counterfactual", "rare_robustness"]
    report = build_report(sweep, tmp_path / "out", n_resamples=20, strict=True, only=names)
    skipped = {o.section.name: o.skipped for o in report.outcomes}
    assert "runs/*.trec and qrels.trec" in skipped["query_level_retrieval"]
    assert "perturbed query variants" in skipped["query_level_match"]
    assert "oracle-retriever" in skipped["query_level_correlations"]
    assert skipped["rgb_rejection"] == "the score table lacks column(s) ['rgb_rejected']"
    assert skipped["rgb_counterfactual"] == "the score table lacks column(s) ['error_detected']"
    assert "ground_truth, backtranslate, delete_answer" in skipped["rare_robustness"]
    assert not list((tmp_path / "out").glob("tables/*.csv"))
