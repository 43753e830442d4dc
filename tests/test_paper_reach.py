"""Every shipped paper value is reached by a run of its paper's experiment config, or says why not
(issue 42, part 1; CONVENTIONS 17). Generated from the values data: each value's run (``experiment=<paper>``,
its dataset(s), its model, its ``run`` overrides) is composed as ``rr -m`` composes it, its jobs' cells
planned (:func:`rr.pipeline.planned_cells`), and the value matched against them as the report matches a
real run (:class:`rr.reporting.paper_match.RunIndex`). Each distinct job and each model is composed once."""

from __future__ import annotations

import pandas as pd
import pytest

from rr.papers import paper_values, run_overrides
from rr.pipeline import planned_cells
from rr.reporting.paper_reach import counts, key_counts, reach
from tests.conftest import compose_config


@pytest.fixture(scope="module")
def reached() -> pd.DataFrame:
    return reach()


def test_every_value_is_reached_by_its_papers_experiment_or_marked_out_of_reach(reached):
    missed = reached[~reached["reached"] & ~reached["out_of_reach"].astype(bool)]
    assert missed.empty, (
        missed[["paper", "location", "model", "metric", "setting", "differs"]].head(10).to_string()
    )
    table = counts(reached)
    print("\n" + table.to_string())  # the per-paper counts (docs/paper-values.md)
    assert table["neither"].sum() == 0
    # the three: Cao from its own config, the query-level values, RGB's Chinese files
    assert table.loc["cao2025", "reached"] == 40 and table.loc["query_level2025", "reached"] == 462
    zh = reached[(reached["paper"] == "rgb2024") & (reached["dataset"] == "RGB Chinese")]
    assert len(zh) == 70 and zh["reached"].all()
    # a value out of reach says why (the report prints it)
    rare = reached[reached["paper"] == "rare2025"]
    assert len(rare) == 40 and rare["out_of_reach"].str.contains("no loader for RARE-Set").all()


PAPERS = sorted(set(paper_values()["paper"]))


@pytest.mark.parametrize("paper", PAPERS)
def test_the_papers_config_reaches_every_value_on_every_setting_key_it_states(reached, paper):
    """Generated per paper (issue 49): each value names the job-level settings the paper states (corpus,
    retriever parameters, rewriter / NLI / judge models, filters, instances, decoding:
    :data:`rr.papers.settings.JOB_KEYS`), and the paper's experiment config composes every one of them."""
    mine = reached[reached["paper"] == paper]
    keys = key_counts(mine)
    print("\n" + keys.to_string())
    assert (keys["differs"] == 0).all(), keys[keys["differs"] > 0].to_string()
    missed = mine[~mine["reached"] & ~mine["out_of_reach"].astype(bool)]
    assert missed.empty, missed[["location", "model", "metric", "differs"]].head(5).to_string()
    if paper != "rare2025":  # RARE's values are all out of reach (no RARE-Set loader): no jobs composed
        assert mine["keys"].str.len().gt(0).all()  # every value states its job-level setting


def test_a_value_the_config_does_not_write_is_not_reached_and_says_which_key(reached):
    """The generated check fails where a value names what its paper's config never writes (today's Cao
    ``retriever=bm25+dense``, the mini configs' MiniLM for bge)."""
    values = paper_values()
    cao = values[values["paper"] == "cao2025"].head(1)
    bad = cao.assign(setting=cao["setting"].str.replace("bm25+bge_large", "bm25+dense", regex=False))
    (row,) = reach(bad).to_dict("records")
    assert not row["reached"] and row["differs"] == "retriever (bge_large+bm25 vs bm25+dense)"
    mini = cao.assign(run="", paper="cao2025_mini")  # the demo's config: packaged MiniLM, k 1-3
    (row,) = reach(mini).to_dict("records")
    assert not row["reached"]
    assert "retriever (bm25+dense vs bm25+bge_large)" in row["differs"] and "k (1+2+3 vs" in row["differs"]
    # the stand-ins are told apart key by key: the bundled lead paragraphs, bm25's default parameters
    for key in (
        "setting differs: corpus wiki_offline (paper: enwiki-20240601)",
        "setting differs: bm25_k1 0.9 (paper: 1.2)",
        "setting differs: judge match (paper: meta-llama/Llama-3.3-70B-Instruct)",
        "setting differs: max_new_tokens 24 (paper: 100)",
    ):
        assert key in row["differs"], row["differs"]
    assert not set(row["keys_reached"].split(";")) & {
        "corpus",
        "bm25_k1",
        "bm25_b",
        "judge",
        "max_new_tokens",
    }


def test_each_mini_experiment_is_a_stand_in_on_every_paper_key_it_differs_in():
    """A job on a mini experiment gets "setting differs: <key>" for each of its paper's values (SURE's
    rewriter and NLI filter, the query-level study's GPT-4o and TextAttack)."""
    values = paper_values()
    sure = values[
        (values["paper"] == "sure2025") & values["setting"].str.contains("perturbation=style:simple")
    ]
    (row,) = reach(sure.head(1).assign(paper="sure2025_mini")).to_dict("records")
    assert not row["reached"]
    assert "setting differs: corpus wiki_offline (paper: enwiki-20181220)" in row["differs"]
    assert {"rewriter", "nli"} <= set(row["keys"].split(";"))  # the mini rewrites with the model under test,
    assert not {"rewriter", "nli"} & set(row["keys_reached"].split(";"))  # no NLI filter
    ql = values[
        (values["paper"] == "query_level2025") & values["setting"].str.contains("query_kind=typo@0.25")
    ]
    mini = ql.head(1).assign(
        paper="query_level2025_mini", rr_datasets="mini", run="perturbation/query=typo_25"
    )
    (row,) = reach(mini).to_dict("records")
    assert "setting differs: typo nlpaug (paper: textattack)" in row["differs"], row["differs"]


def test_the_run_column_is_the_command_that_reaches_the_value(tmp_path):
    v = next(paper_values().query("paper == 'rgb2024' and dataset == 'RGB Chinese'").itertuples())
    (line,) = run_overrides(v)
    assert line == [
        "experiment=rgb2024",
        "dataset=rgb_zh",
        "generator=openai",
        "generator.model=gpt-3.5-turbo",
        "perturbation.doc.ratio=0",
    ]
    cells = planned_cells(compose_config([*line, "dataset.path=zh.json"], tmp_path))
    assert set(cells["dataset"]) == {"rgb_zh"} and set(cells["doc_perturbation"]) == {"noise_ratio@0", "none"}
    assert cells.loc[cells["k"] > 0, "n_docs_given"].eq(5).all()  # RGB's five documents


def test_rgb_chinese_values_need_rgbs_chinese_instruction(tmp_path):
    """RGB's Chinese values are reached on RGB's Chinese instruction only (its evalue.py reads
    instruction.yaml['zh'] for zh*.json): a job on the Chinese file that sends the English one is told so."""
    values = paper_values()
    zh = values[(values["paper"] == "rgb2024") & (values["rr_datasets"] == "rgb_zh")].head(1)
    assert "instruction=zh" in zh["setting"].iloc[0]
    (row,) = reach(zh).to_dict("records")
    assert row["reached"]
    (row,) = reach(zh.assign(run=zh["run"] + " dataset=rgb_zh dataset.language=en")).to_dict("records")
    assert not row["reached"] and "instruction (en vs zh)" in row["differs"]
    (line,) = run_overrides(next(zh.itertuples()))
    cells = planned_cells(compose_config([*line, "dataset.path=zh.json"], tmp_path))
    assert set(cells["instruction"]) == {"zh"}


def test_rgb_table7_is_reached_at_fact_evalues_noise_only():
    """Table 7 is RGB's fact_evalue.py at its defaults (noise_rate 0, correct_rate 0): a counterfactual
    job with noise documents (rgb2024's ratio 0.4) does not reach it."""
    values = paper_values()
    t7 = values[(values["paper"] == "rgb2024") & (values["location"] == "Table 7")].head(1)
    assert "doc_perturbation=counterfactual" in t7["setting"].iloc[0]
    (row,) = reach(t7).to_dict("records")
    assert row["reached"]
    noisy = t7.assign(run=t7["run"].str.replace("perturbation.doc.ratio=0", "perturbation.doc.ratio=0.4"))
    (row,) = reach(noisy).to_dict("records")
    assert (
        not row["reached"]
        and "doc_perturbation (counterfactual@noise0.4 vs counterfactual)" in row["differs"]
    )


def test_a_mini_experiment_says_it_is_a_stand_in(monkeypatch, capsys):
    """The _mini experiments are the offline stand-ins: the job's console line and ``rr --help`` say so."""
    from rr.papers.settings import stand_in_line
    from tests.test_cli_errors import rr_main

    line = stand_in_line("cao2025_mini")
    assert line is not None and "offline stand-in of experiment=cao2025" in line
    assert stand_in_line("cao2025") is None
    code, out, _ = rr_main(["--help"], monkeypatch, capsys)
    assert code == 0 and "the *_mini ones (cao2025_mini, the default) are offline stand-ins" in out
