"""rr report on a synthetic multi-job sweep: every table and figure file, the index, the section registry."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

from rr.analysis.intervals import system_by
from rr.metrics.robustness import robustness_table
from rr.reporting import SECTIONS, ReportTable, build_report, load_jobs, section
from rr.reporting.writers import display_frame, to_latex

from .synthetic import write_synthetic_sweep

TABLES = [
    "robustness",
    "robustness_by_retriever",
    "robustness_by_order",
    "accuracy_by_k",
    "accuracy_by_k_retriever_order",
    "answer_recall",
    "accuracy_by_perturbation",
    "accuracy_by_noise_ratio",
    "rgb_accuracy_by_noise_ratio",
    "paired_comparisons",
    "oracle_curves",
    "sure_robustness_rates",
]
FIGURES = [
    "robustness_vs_performance",
    "robustness_metrics_by_model",
    "robustness_by_order",
    "accuracy_vs_k",
    "accuracy_vs_k_by_retriever_order",
    "answer_recall_vs_k",
    "accuracy_vs_noise_ratio",
    "oracle_curves",
]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_synthetic_sweep(tmp_path_factory.mktemp("sweep") / "sweep", n_examples=6)


def test_rr_report_command_writes_every_table_and_figure(
    sweep: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    from rr.commands.cli import main

    out = tmp_path / "report"
    monkeypatch.setattr(sys, "argv", ["rr", "report", str(sweep), "--out", str(out), "--resamples", "60"])
    with pytest.raises(SystemExit) as stop:
        main()
    assert stop.value.code == 0
    assert f"report: {out}/README.md (12 tables, 8 figures)" in capsys.readouterr().out
    for name in TABLES:
        for ext in ("csv", "md", "tex"):
            assert (out / "tables" / f"{name}.{ext}").stat().st_size > 0, (name, ext)
    for name in FIGURES:
        png = (out / "figures" / f"{name}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        assert (out / "figures" / f"{name}.pdf").read_bytes()[:5] == b"%PDF-"
    index = (out / "README.md").read_text()
    for name in TABLES:
        assert f"(tables/{name}.csv)" in index
    for name in FIGURES:
        assert f"(figures/{name}.png)" in index
    assert "Read 6 job(s)" in index and "Failed" not in index
    # the sweep has no query variants, TREC runs, RGB judge columns or RARE documents
    skipped = {"query_level_retrieval", "query_level_match", "query_level_correlations"}
    skipped |= {"rgb_rejection", "rgb_counterfactual", "rare_robustness"}
    skipped |= {"paper_beside"}  # the simulated reader is no paper's model: no value or claim to lay beside
    assert set(re.findall(r"\*Skipped \((\w+)\):\*", index)) == skipped

    # the robustness CSV holds robustness_table's numbers, with intervals around them
    got = pd.read_csv(out / "tables" / "robustness.csv")
    scores, _ = load_jobs(sweep)
    want = robustness_table(scores, by=system_by(scores))
    assert len(got) == len(want) == 6
    for m in ("ndr", "rsr", "ror", "robustness", "accuracy"):
        assert got[m].to_numpy() == pytest.approx(want[m].to_numpy())
        assert (got[m + "_ci_low"] <= got[m] + 1e-12).all() and (got[m] <= got[m + "_ci_high"] + 1e-12).all()
    # each retriever's NDR beside their mean: the robustness table's NDR is the mean of the
    # retrievers' NDR, each computed here from the scores (k > 0 cells at or above closed book)
    per = pd.read_csv(out / "tables" / "robustness_by_retriever.csv")
    cols = [c for c in system_by(scores) if c in per.columns]
    for key, rows in per.groupby(cols):
        mine = scores.merge(pd.DataFrame([dict(zip(cols, key, strict=True))]), on=cols)
        cb = mine[mine["k"] == 0].set_index("example_id")["score"]
        ndr = {}
        for r, rag in mine[mine["k"] > 0].groupby("retriever"):
            ndr[r] = (rag["score"].to_numpy() >= rag["example_id"].map(cb).to_numpy()).mean()
        got_r = rows.set_index("retriever")["ndr"]
        assert list(got_r.index) == [*sorted(ndr), "mean"]
        assert got_r.drop("mean").to_numpy() == pytest.approx([ndr[r] for r in sorted(ndr)])
        assert got_r["mean"] == pytest.approx(sum(ndr.values()) / len(ndr))
        table_row = got.merge(pd.DataFrame([dict(zip(cols, key, strict=True))]), on=cols)
        assert float(table_row["ndr"].iloc[0]) == pytest.approx(got_r["mean"])
    tex = (out / "tables" / "robustness.tex").read_text()
    assert "\\toprule" in tex and "\\midrule" in tex and "\\bottomrule" in tex and "doc\\_perturbation" in tex
    md = (out / "tables" / "robustness.md").read_text()
    assert md.startswith("| dataset | generator | strategy | doc_perturbation | ndr |") and " [" in md
    noise = pd.read_csv(out / "tables" / "accuracy_by_noise_ratio.csv")
    assert sorted(noise["noise_ratio"]) == [0.2, 0.6]
    table1 = pd.read_csv(out / "tables" / "rgb_accuracy_by_noise_ratio.csv")
    assert list(table1.columns[-2:]) == ["noise 0.2", "noise 0.6"] and len(table1) == 1
    pairs = pd.read_csv(out / "tables" / "paired_comparisons.csv")
    assert set(pairs["differs_in"]) == {"generator", "strategy", "doc_perturbation"}
    assert (pairs["p_holm"] >= pairs["p_value"] - 1e-12).all() and (
        pairs["p_bh"] <= pairs["p_holm"] + 1e-12
    ).all()


def test_sections_that_do_not_apply_are_skipped_with_a_reason(sweep: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    jobs = sorted(sweep.iterdir())
    for job in jobs:
        scores = pd.read_parquet(job / "scores.parquet")
        if (scores["doc_perturbation"] == "none").all():
            shutil.copytree(job, plain / job.name)
    # the same job twice (copied into a second folder) is read once
    shutil.copytree(next(plain.iterdir()), tmp_path / "copy" / "again")
    only = ["answer_recall", "accuracy_by_perturbation", "accuracy_vs_noise_ratio", "sure_robustness_rates"]
    report = build_report(
        [plain, tmp_path / "copy"], tmp_path / "out", n_resamples=30, strict=True, only=only
    )
    skipped = {o.section.name: o.skipped for o in report.outcomes if o.skipped}
    assert set(skipped) == {"accuracy_by_perturbation", "accuracy_vs_noise_ratio", "sure_robustness_rates"}
    assert [o.section.name for o in report.outcomes] == only
    assert "noise_ratio@0.4" in skipped["accuracy_vs_noise_ratio"]
    index = (tmp_path / "out" / "README.md").read_text()
    assert "Read 4 job(s)" in index and "*Skipped (accuracy_vs_noise_ratio):*" in index


def test_a_new_section_is_one_decorated_function(sweep: Path, tmp_path: Path) -> None:
    @section("test_extra", title="Extra", requires=("score",), order=999)
    def extra(df: pd.DataFrame, ctx) -> list:
        return [
            ReportTable("extra", "Rows per job", df.groupby("job_id").size().rename("rows").reset_index())
        ]

    @section("test_needs_column", title="Needs", requires=("rr_no_such_column",))
    def needs(df: pd.DataFrame, ctx) -> list:
        raise AssertionError("must not run")

    try:
        report = build_report(sweep, tmp_path / "r", n_resamples=20, only=["test_extra", "test_needs_column"])
        assert (tmp_path / "r" / "tables" / "extra.csv").exists()
        skipped = {o.section.name: o.skipped for o in report.outcomes}
        assert skipped == {
            "test_extra": None,
            "test_needs_column": "the score table lacks column(s) ['rr_no_such_column']",
        }
    finally:
        SECTIONS.pop("test_extra", None)
        SECTIONS.pop("test_needs_column", None)


def test_display_frame_folds_intervals() -> None:
    t = ReportTable(
        "t",
        "t",
        pd.DataFrame({"m": [0.51234, float("nan")], "m_ci_low": [0.4, 0.1], "m_ci_high": [0.6, 0.2]}),
    )
    assert display_frame(t)["m"].tolist() == ["0.512 [0.400, 0.600]", ""]


def test_latex_escapes_every_special_character_and_keeps_the_columns() -> None:
    t = ReportTable(
        "odd_cells",
        "t",
        pd.DataFrame(
            {
                "doc_perturbation": ["50% of $x_1 & #2 {a~b^c\\d}", "a & b"],
                "m": [0.5, 0.25],
                "m_ci_low": [0.4, 0.2],
                "m_ci_high": [0.6, 0.3],
            }
        ),
        caption="Rates (%) ~ ^ \\ & co.",
    )
    assert to_latex(t) == (
        "\\begin{table}[t]\n"
        "\\caption{Rates (\\%) \\textasciitilde \\space \\textasciicircum \\space \\textbackslash \\space \\& co.}\n"
        "\\label{tab:odd_cells}\n"
        "\\begin{tabular}{ll}\n"
        "\\toprule\n"
        "doc\\_perturbation & m \\\\\n"
        "\\midrule\n"
        "50\\% of \\$x\\_1 \\& \\#2 \\{a\\textasciitilde b\\textasciicircum c\\textbackslash d\\} & 0.500 [0.400, 0.600] \\\\\n"
        "a \\& b & 0.250 [0.200, 0.300] \\\\\n"
        "\\bottomrule\n"
        "\\end{tabular}\n"
        "\\end{table}\n"
    )


def test_oracle_curves_and_sure_rates_sections(sweep: Path, tmp_path: Path) -> None:
    only = ["oracle_curves", "sure_robustness_rates"]
    report = build_report(sweep, tmp_path / "r", n_resamples=20, strict=True, only=only)
    assert [o.skipped for o in report.outcomes] == [None, None]
    for name in only:
        for ext in ("csv", "md", "tex"):
            assert (tmp_path / "r" / "tables" / f"{name}.{ext}").stat().st_size > 0
    assert (tmp_path / "r" / "figures" / "oracle_curves.png").read_bytes()[:4] == b"\x89PNG"
    scores, _ = load_jobs(sweep)
    base = scores[(scores["generator"] == "org/model-large") & (scores["strategy"] == "vanilla")]
    none = base[base["doc_perturbation"] == "none"]

    # perfect NDR at k = 5, by hand: mean over rows of max(f(q, 5, o), f(q, 0))
    oracle = pd.read_csv(tmp_path / "r" / "tables" / "oracle_curves.csv")
    row = oracle[
        (oracle["generator"] == "org/model-large")
        & (oracle["strategy"] == "vanilla")
        & (oracle["doc_perturbation"] == "none")
        & (oracle["k"] == 5)
    ].iloc[0]
    closed = none[none["k"] == 0].set_index("example_id")["score"]
    k5 = none[none["k"] == 5]
    assert row["perfect_ndr"] == pytest.approx(k5["score"].clip(lower=k5["example_id"].map(closed)).mean())
    assert row["actual"] == pytest.approx(k5["score"].mean())
    assert (oracle["perfect_ndr"] >= oracle["actual"] - 1e-12).all()

    # SURE RR of noise_ratio@0.2, by hand: share of k > 0 cells whose score did not change
    sure = pd.read_csv(tmp_path / "r" / "tables" / "sure_robustness_rates.csv")
    assert set(sure["doc_perturbation"]) == {"noise_ratio@0.2", "noise_ratio@0.6"}
    got = sure[sure["doc_perturbation"] == "noise_ratio@0.2"].iloc[0]
    cell = ["example_id", "retriever", "k", "order"]
    pairs = none[none["k"] > 0].merge(base[base["doc_perturbation"] == "noise_ratio@0.2"], on=cell)
    assert got["n"] == len(pairs) == 6 * 18
    assert got["RR"] == pytest.approx(100 * (pairs["score_x"] == pairs["score_y"]).mean())
    assert got["LR"] + got["RR"] + got["WR"] == pytest.approx(100)

    # not applicable: no closed-book rows / no perturbed rows
    reason = SECTIONS["oracle_curves"].skip_reason(scores[scores["k"] > 0])
    assert reason is not None and "k = 0" in reason
    assert SECTIONS["sure_robustness_rates"].skip_reason(none) is not None


def test_the_package_names_are_their_rooms_objects_after_every_room_is_imported() -> None:
    """``rr.reporting.<name>`` stays the room's object once the rooms are imported (a room named
    like one of the package's names would shadow it: why the section registry is ``registry.py``)."""
    import importlib

    import rr.reporting as pkg

    rooms = ["rr.reporting.registry", "rr.reporting.loading", "rr.reporting.writers", "rr.reporting.report"]
    for room in rooms:
        importlib.import_module(room)
    assert set(pkg.__all__) == set(pkg._HOMES)
    for name in pkg.__all__:
        assert getattr(pkg, name) is getattr(importlib.import_module(pkg._HOMES[name]), name), name
