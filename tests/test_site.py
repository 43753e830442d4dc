"""The report's result browser (``rr report`` -> ``report/site/``), opened from ``file://`` in a real
browser (Debian's chromium through Playwright; tests/browser.py) and checked against numbers this
module computes from ``scores.parquet`` itself.

One small sweep, built once: a simulated-reader job (synthetic task, real BM25, 8 questions,
vanilla and OwnKnow, k in {1, 3, 5}, two orders, closed book) plus a perturbed-query job made here
from its vanilla rows (typo'd questions, a few verdicts turned), since the simulated reader reads
only unperturbed synthetic questions. ``RR_UPDATE_SCREENSHOTS=1`` copies the screenshots the tests
take into ``docs/img/`` (shown in docs/reporting.md).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from rr.metrics.flips import doc_perturbation_flips, robustness_flips
from rr.metrics.robustness import ndr, ror, rsr
from rr.metrics.spurious import robustness_rates
from rr.pipeline import run_job
from rr.results import PROMPT_KEYS, load, load_prompts, write_scores
from tests import browser
from tests.conftest import compose_config
from tests.synthetic import job_rows, write_job

pytestmark = pytest.mark.timeout(300)

SIM = [
    "generator=simulated",
    "dataset=synthetic",
    "corpus=synthetic",
    "retriever=[bm25]",
    "strategy=[vanilla,ownknow]",
    "dataset.n=8",
    "corpus.max_passages=200",
    "grid.k=[1,3,5]",
    "grid.orders=[original,reversed]",
]
TYPO = "typo@0.1#0"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "img"


def _typo(question: str) -> str:
    """Swap the 2nd and 3rd letters of the question's third word (a made-up typo)."""
    words = question.split(" ")
    w = words[2]
    words[2] = w[0] + w[2] + w[1] + w[3:] if len(w) > 3 else w + "x"
    return " ".join(words)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The sweep's folder, its report folder and its score table (both jobs)."""
    from rr.commands.report import main as report_main

    root = tmp_path_factory.mktemp("site")
    folder = root / "sweep"
    job = folder / "sim"
    run_job(compose_config(SIM, root), job)
    # the score table and, joined on its keys, its prompts (prompts.parquet: the site reads them there)
    base = load(job).merge(load_prompts(job), on=list(PROMPT_KEYS), how="left", validate="one_to_one")
    typo = base[base["strategy"] == "vanilla"].copy()
    typo["query_perturbation"] = TYPO
    typo["question"] = typo["question"].map(_typo)
    typo["job_id"] = "typo00000001"
    # verdicts the perturbation turns: two examples right closed-book and wrong at k = 5 (NDR
    # flips of the perturbed system, and query flips)
    first = sorted(typo["example_id"].unique())[:2]
    turn = typo["example_id"].isin(first)
    typo.loc[turn & (typo["k"] == 0), "score"] = 1.0
    typo.loc[turn & (typo["k"] == 5), "score"] = 0.0
    (folder / "typo").mkdir(parents=True)
    write_scores(typo.reset_index(drop=True), folder / "typo")
    shutil.copyfile(job / "config.yaml", folder / "typo" / "config.yaml")
    report = root / "report"
    code = report_main([str(folder), "--out", str(report), "--resamples", "200"])
    assert (report / "site" / "index.html").exists(), code
    scores = pd.concat([base, typo], ignore_index=True)
    return {"folder": folder, "report": report, "site": report / "site", "scores": scores}


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """Debian's chromium (installed with apt-get when missing) through Playwright."""
    reason, installed_s = browser.install()
    if reason is None:
        try:
            from playwright.sync_api import sync_playwright
        except ImportError as err:
            reason = f"playwright is not installed ({err}); it is in rr's dev extra"
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the browser tests must run in CI: {reason}")
        pytest.skip(reason)
    if installed_s:
        print(f"\nchromium: apt-get install {installed_s:.1f} s")
    pw = sync_playwright().start()
    try:
        b = browser.launch(pw)
        yield b
        b.close()
    finally:
        pw.stop()


@pytest.fixture
def page(chromium: Any) -> Iterator[Any]:
    """A fresh page; the test fails if the browser console shows an error or a script throws."""
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.errors = errors
    yield pg
    context.close()
    assert not errors, f"browser console errors: {errors}"


def goto(pg: Any, site: Path, name: str) -> None:
    pg.goto(
        (site / name).as_uri()
        if "#" not in name
        else (site / name.split("#")[0]).as_uri() + "#" + name.split("#", 1)[1]
    )
    pg.wait_for_selector("body[data-ready='1']", timeout=15000)


def screenshot(pg: Any, name: str, tmp_path: Path, full_page: bool = False) -> None:
    path = tmp_path / f"site-{name}.png"
    pg.screenshot(path=str(path), full_page=full_page)
    if os.environ.get("RR_UPDATE_SCREENSHOTS") == "1":  # docs/img: 256 colours, a few dozen kB
        from PIL import Image

        DOCS.mkdir(parents=True, exist_ok=True)
        with Image.open(path) as img:
            img.convert("RGB").quantize(256).save(DOCS / path.name, optimize=True)


def label(row: pd.Series | dict) -> str:
    return f"{row['generator']} / {row['strategy']} / {row['query_perturbation']}"


def list_rows(pg: Any) -> set[tuple[str, str]]:
    """(system label, example id) of every row the examples list shows, across its pages."""
    seen: set[tuple[str, str]] = set()
    while True:
        rows = pg.eval_on_selector_all(
            "#rows tr[data-ex]", "trs => trs.map(t => [t.children[1].textContent, t.dataset.ex])"
        )
        seen |= {(s, e) for s, e in rows}
        if pg.is_disabled("#pg-next"):
            return seen
        pg.click("#pg-next")


# ----------------------------------------------------------------------------- the overview


def test_overview_shows_the_report_tables_and_robustness_values_equal_the_csv(
    page: Any, sweep: dict[str, Any], tmp_path: Path
) -> None:
    goto(page, sweep["site"], "index.html")
    screenshot(page, "overview", tmp_path)
    shown = page.eval_on_selector_all(
        "#t-robustness tbody tr",
        "trs => trs.map(t => Object.fromEntries([...t.children].map(td => [td.dataset.col, td.dataset.v ?? td.textContent])))",
    )
    csv = pd.read_csv(sweep["report"] / "tables" / "robustness.csv")
    assert len(shown) == len(csv) == 3
    scores = sweep["scores"]
    for _, want in csv.iterrows():
        got = next(
            r
            for r in shown
            if r["strategy"] == want["strategy"] and r["query_perturbation"] == want["query_perturbation"]
        )
        for m in ("ndr", "rsr", "ror", "robustness", "accuracy", "closed_book_accuracy"):
            assert float(got[m]) == pytest.approx(want[m], rel=1e-9, abs=1e-12), m
        # and from the score table itself, without rr.metrics: accuracy, closed-book accuracy, NDR
        mine = scores[
            (scores["strategy"] == want["strategy"])
            & (scores["query_perturbation"] == want["query_perturbation"])
        ]
        rag, cb = mine[mine["k"] > 0], mine[mine["k"] == 0].set_index("example_id")["score"]
        assert float(got["accuracy"]) == pytest.approx(rag["score"].mean())
        assert float(got["closed_book_accuracy"]) == pytest.approx(cb.mean())
        assert float(got["ndr"]) == pytest.approx(
            (rag["score"].to_numpy() >= rag["example_id"].map(cb).to_numpy()).mean()
        )
    # every table and figure of the report is on the page; the sweep's jobs too
    for name in [p.stem for p in (sweep["report"] / "tables").glob("*.csv")]:
        assert page.locator(f"#t-{name}").count() == 1, name
    figures = sorted(p.name for p in (sweep["report"] / "figures").glob("*.png"))
    imgs = page.eval_on_selector_all(
        "figure img", "imgs => imgs.map(i => [i.getAttribute('src'), i.naturalWidth])"
    )
    assert sorted(src.split("/")[-1] for src, _ in imgs) == figures
    assert page.locator("#jobs-table tbody tr").count() == 2


# ----------------------------------------------------------------------------- the examples list


def test_overview_folds_the_paper_section_to_its_verdicts_and_skipped_sections_to_one_line(
    page: Any, sweep: dict[str, Any]
) -> None:
    site = sweep["site"]
    sections = site_data(site, "overview")["sections"]
    skipped = [s for s in sections if "skipped" in s]
    assert skipped and len(skipped) < len(sections)
    goto(page, site, "index.html")
    toc = page.locator("nav.toc li").all_inner_texts()
    assert len(toc) == 3 + len(sections) - len(skipped) and not any("skipped" in t for t in toc)
    line = page.inner_text("#skipped summary")
    assert "\n" not in line and all(s["title"] in line for s in skipped)
    assert not page.is_visible(f"#sec-{skipped[0]['name']}")  # its reason, one click away
    page.click("#skipped summary")
    for s in skipped:
        assert s["skipped"] in page.inner_text(f"#sec-{s['name']}")
    # the paper section: one line of verdict counts per table, every verdict of its CSV counted
    paper = page.locator("#sec-paper_beside")
    for name in ("paper_values", "paper_claims"):
        counts = pd.read_csv(site / "tables" / f"{name}.csv")["verdict"].value_counts()
        text = paper.locator(f"p.verdicts[data-table='{name}']").inner_text()
        assert all(f"{n} {v}" in text for v, n in counts.items()), text
        assert not paper.locator(f"table[data-table='{name}']").is_visible()
    paper.locator("details.fold summary").click()
    assert paper.locator("table[data-table='paper_values']").is_visible()


def expected_flips(scores: pd.DataFrame, kind: str) -> set[tuple[str, str]]:
    """(system label, example id) of the flips of ``kind``, computed here from the table."""
    out = set()
    for (_, _, _, ex), g in scores.groupby(["generator", "strategy", "query_perturbation", "example_id"]):
        sys_label = label(g.iloc[0])
        rag = g[g["k"] > 0]
        if kind == "ndr":
            cb = g.loc[g["k"] == 0, "score"]
            if len(cb) and cb.iloc[0] == 1 and (rag["score"] == 0).any():
                out.add((sys_label, ex))
        elif kind == "ror":
            if (rag.groupby(["retriever", "k"])["score"].nunique() > 1).any():
                out.add((sys_label, ex))
        elif kind == "query" and g.iloc[0]["query_perturbation"] != "none":
            orig = scores[
                (scores["example_id"] == ex)
                & (scores["strategy"] == g.iloc[0]["strategy"])
                & (scores["query_perturbation"] == "none")
            ]
            merged = g.merge(orig, on=["retriever", "k", "order"], suffixes=("", "_o"))
            if (merged["score"] != merged["score_o"]).any():
                out.add((sys_label, ex))
    return out


def test_ndr_flip_filter_lists_exactly_the_examples_right_closed_book_and_wrong_at_some_k(
    page: Any, sweep: dict[str, Any], tmp_path: Path
) -> None:
    goto(page, sweep["site"], "examples.html")
    page.check("#f-flip-ndr")
    want = expected_flips(sweep["scores"], "ndr")
    assert want and any(s.endswith(TYPO) for s, _ in want)
    assert list_rows(page) == want
    screenshot(page, "examples", tmp_path)


@pytest.mark.parametrize("kind", ["ror", "query"])
def test_other_flip_filters_match_their_definitions(page: Any, sweep: dict[str, Any], kind: str) -> None:
    goto(page, sweep["site"], f"examples.html#flip={kind}")
    want = expected_flips(sweep["scores"], kind)
    assert want
    assert list_rows(page) == want


def flip_rows(site: Path, kind: str) -> set[tuple[str, str]]:
    """(system label, example id) of every examples-list row with a cell of flip ``kind``, read from
    the site's ``rows-*.js`` (each cell's flip-mask character, ``Index.flip_bits``) as the list's
    flip filter reads them, without a browser."""
    from rr.reporting.site.flips import FLIP_CHARS

    index = site_data(site, "index")
    bit = index["flip_bits"][kind]
    out = set()
    for f in sorted((site / "data").glob("rows-*.js")):
        chunk = site_payload(f)
        for ex, system, masks in zip(chunk["ex"], chunk["sys"], chunk["fl"], strict=True):
            if any(FLIP_CHARS.index(ch) & bit for ch in masks):
                out.add((index["systems"][system]["label"], chunk["id"][ex - chunk["ex0"]]))
    return out


@pytest.mark.parametrize("kind", ["ndr", "ror", "query"])
def test_the_rows_flip_masks_are_the_flips_computed_from_the_score_table(
    sweep: dict[str, Any], kind: str
) -> None:
    """The data behind the flip filters (the browser tests above): in the fast tier (make check)."""
    want = expected_flips(sweep["scores"], kind)
    assert want and flip_rows(sweep["site"], kind) == want


@pytest.fixture(scope="module")
def three_orders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A small site of synthetic rows: two retrievers, k in {5, 10, 25}, three orders."""
    from rr.reporting.report import build_report
    from rr.reporting.site import build_site

    root = tmp_path_factory.mktemp("orders")
    table = job_rows("m", "vanilla", 16, base=0.5, gain=0.2)
    write_job(root / "sweep", table)
    report = build_report([root / "sweep"], root / "report", n_resamples=20, only=["robustness"])
    return {"site": build_site(report, corpus_loader=lambda job_dir: {}).out_dir, "scores": table}


def test_order_pair_filter_lists_the_examples_whose_verdict_the_two_orders_change(
    page: Any, three_orders: dict[str, Any]
) -> None:
    """ "Which examples flipped when the documents were reversed": original vs reversed, and any
    two orders; narrower than the ROR flip (which any two of the three orders disagreeing makes)."""
    scores = three_orders["scores"]
    wide = scores[scores["k"] > 0].pivot_table(
        index=["example_id", "retriever", "k"], columns="order", values="score"
    )

    def flipped(a: str, b: str, k: int | None = None) -> set[tuple[str, str]]:
        w = wide if k is None else wide[wide.index.get_level_values("k") == k]
        return {("m / vanilla", e) for e in w.index[w[a] != w[b]].get_level_values("example_id")}

    goto(page, three_orders["site"], "examples.html#orders=original|reversed")
    want = flipped("original", "reversed")
    ror = {("m / vanilla", e) for e in wide.index[wide.nunique(axis=1) > 1].get_level_values("example_id")}
    assert want and want < ror
    assert list_rows(page) == want
    page.select_option("#f-orders", "reversed|shuffled")
    assert list_rows(page) == flipped("reversed", "shuffled")
    page.select_option("#f-k", "10")  # with a cell filter: the (retriever, k) cells it selects
    assert list_rows(page) == flipped("reversed", "shuffled", 10)
    options = page.eval_on_selector_all("#f-orders option", "os => os.map(o => o.textContent)")
    assert options == ["any", "original vs reversed", "original vs shuffled", "reversed vs shuffled"]


def test_cell_filters_and_search_narrow_the_list(page: Any, sweep: dict[str, Any]) -> None:
    scores = sweep["scores"]
    goto(page, sweep["site"], "examples.html")
    assert (
        page.locator("#rows tr[data-ex]").count()
        == scores.groupby(["strategy", "query_perturbation", "example_id"]).ngroups
    )
    one = scores[(scores["strategy"] == "vanilla") & (scores["query_perturbation"] == "none")].iloc[0]
    page.fill("#f-search", one["question"].split(" ", 2)[2])  # the question without its first words
    rows = list_rows(page)
    assert (label(one), one["example_id"]) in rows and len({e for _, e in rows}) == 1
    page.fill("#f-search", "")
    # NDR flips at k = 5 only: the cells' flips, as the closed-book score and k = 5 scores say
    page.select_option("#f-k", "5")
    page.check("#f-flip-ndr")
    want = set()
    for (g, s, q, ex), grp in scores.groupby(["generator", "strategy", "query_perturbation", "example_id"]):
        cb = grp.loc[grp["k"] == 0, "score"]
        if len(cb) and cb.iloc[0] == 1 and (grp.loc[grp["k"] == 5, "score"] == 0).any():
            want.add((f"{g} / {s} / {q}", ex))
    assert list_rows(page) == want


def test_filters_round_trip_through_the_url(page: Any, sweep: dict[str, Any]) -> None:
    """Every filter kind (select, search box, cell filter, flip check box, pair and its direction)
    writes its URL key, and a page opened at that URL shows the same controls and rows."""
    goto(page, sweep["site"], "examples.html")
    pair = page.locator("#f-pair option", has_text="(query_perturbation)").get_attribute("value")
    chosen = {"#f-k": "5", "#f-cb": "right", "#f-pair": pair, "#f-pair-dir": "a"}
    for sel, value in chosen.items():
        page.select_option(sel, value)
    page.check("#f-flip-ndr")
    if not list_rows(page):  # the turned examples: the perturbed query is the pair's first or second
        chosen["#f-pair-dir"] = "b"
        page.select_option("#f-pair-dir", "b")
    rows = list_rows(page)
    assert rows
    example = sorted(rows)[0][1]
    question = sweep["scores"].loc[lambda d: d["example_id"] == example, "question"].iloc[0]
    page.fill("#f-search", question.split(" ")[-1])
    rows = list_rows(page)
    fragment = page.url.split("#", 1)[1]
    assert {p.split("=")[0] for p in fragment.split("&")} == {"k", "cb", "pair", "dir", "q", "flip"}
    page.goto("about:blank")
    goto(page, sweep["site"], "examples.html#" + fragment)
    assert all(page.input_value(sel) == value for sel, value in chosen.items())
    assert page.input_value("#f-search") == question.split(" ")[-1] and page.is_checked("#f-flip-ndr")
    assert not page.is_checked("#f-flip-rsr")
    assert rows and list_rows(page) == rows


def test_mcnemar_pair_filter_lists_the_discordant_examples(page: Any, sweep: dict[str, Any]) -> None:
    scores = sweep["scores"][lambda d: d["query_perturbation"] == "none"]
    goto(page, sweep["site"], "examples.html")
    option = page.locator("#f-pair option", has_text="(strategy)")
    first, second = option.inner_text().split(" (")[0].split(" vs ")
    page.select_option("#f-pair", option.get_attribute("value"))
    page.select_option("#f-pair-dir", "a")  # first right, second wrong
    wide = scores.pivot_table(
        index=["example_id", "retriever", "k", "order"], columns="strategy", values="score"
    )
    ex = wide[
        (wide[first.split(" / ")[-1]] == 1) & (wide[second.split(" / ")[-1]] == 0)
    ].index.get_level_values(0)
    want = {(f"simulated / {s} / none", e) for e in set(ex) for s in ("vanilla", "ownknow")}
    assert want and list_rows(page) == want


def site_payload(path: Path) -> Any:
    """The payload of a data file (``RR.load(kind, key, payload);``)."""
    return json.loads(path.read_text().split(",", 2)[2].rstrip().removesuffix(");"))


def site_data(site: Path, name: str) -> Any:
    """The payload of ``data/<name>.js``."""
    return site_payload(site / "data" / f"{name}.js")


def test_mcnemar_pairs_are_the_paired_tests_pairs_and_the_others_say_why(
    page: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two jobs one factor apart on different k-grids: the report does not test them against each
    other, so the site offers no McNemar filter for them and its overview says why; a third job on
    the first one's grid is paired with it. The pairs read from the report's tables are those the
    pairing rule gives when the site calls it itself."""
    from rr.reporting.report import build_report
    from rr.reporting.site import build_site

    sweep = tmp_path / "sweep"
    vanilla = job_rows("m", "vanilla", 12, base=0.5, gain=0.2)
    ownknow = job_rows("m", "ownknow", 12, base=0.4, gain=0.2)
    s2a = job_rows("m", "s2a", 12, base=0.45, gain=0.2)
    s2a = s2a[s2a["k"] != 25].reset_index(drop=True)  # k in {5, 10} only
    for df in (vanilla, ownknow, s2a):
        write_job(sweep, df)
    report = build_report([sweep], tmp_path / "report", n_resamples=50)
    with monkeypatch.context() as m:  # the report ran the rule: the site reads its tables
        m.setattr("rr.reporting.site.pairs.system_pairs", lambda *a: pytest.fail("the rule ran twice"))
        site = build_site(report).out_dir
    index = site_data(site, "index")
    offered = sorted(p["label"] for p in index["pairs"])
    tested = pd.read_csv(tmp_path / "report" / "tables" / "paired_comparisons.csv")
    assert offered == sorted(
        {f"{a} vs {b}" for a, b in zip(tested["system_a"], tested["system_b"], strict=True)}
    )
    assert offered == ["ownknow vs vanilla"]
    apart = pd.read_csv(tmp_path / "report" / "tables" / "not_comparable.csv")
    apart = apart[apart["metric"] == "all"]
    assert len(apart) == 2  # s2a against each of the others
    # the same pairs when the site calls the rule (a table given apart from the report)
    ruled = build_site(report, tmp_path / "ruled", scores=report.scores).out_dir
    assert site_data(ruled, "index")["pairs"] == index["pairs"]
    assert site_data(ruled, "overview")["pairs_apart"] == site_data(site, "overview")["pairs_apart"]
    assert site_data(ruled, "pairs") == site_data(site, "pairs")
    goto(page, site, "index.html")
    shown = page.eval_on_selector_all("#pairs-apart li", "lis => lis.map(li => li.textContent)")
    assert sorted(shown) == sorted(
        f"{r.system_a} vs {r.system_b} ({r.differs_in}): {r.reason}" for r in apart.itertuples()
    )
    assert all("different cells: k ∈ {" in t for t in shown), shown
    assert page.locator("#pairs-compared li").count() == 1
    page.click("#pairs-compared a")
    page.wait_for_selector("body[data-ready='1'] #rows tr[data-ex]")
    options = page.eval_on_selector_all("#f-pair option", "os => os.map(o => o.textContent)")
    assert options == ["any", "ownknow vs vanilla (strategy)"]
    assert page.input_value("#f-pair") == "0"


def test_keyboard_reaches_every_filter(page: Any, sweep: dict[str, Any]) -> None:
    goto(page, sweep["site"], "examples.html")
    filters = set(
        page.eval_on_selector_all(
            "#filters select, #filters input", "els => els.filter(e => !e.disabled).map(e => e.id)"
        )
    )
    assert {
        "f-dataset",
        "f-system",
        "f-search",
        "f-retriever",
        "f-k",
        "f-order",
        "f-flip-ndr",
        "f-pair",
    } <= filters
    reached = set()
    page.locator("body").focus()
    for _ in range(80):
        page.keyboard.press("Tab")
        reached.add(page.evaluate("document.activeElement && document.activeElement.id"))
    assert filters <= reached, filters - reached


def originals(scores: pd.DataFrame) -> dict[str, str]:
    """Each example's original question (its unperturbed rows')."""
    plain = scores[scores["query_perturbation"] == "none"]
    return plain.groupby("example_id")["question"].first().to_dict()


def test_rag_helped_filter_lists_the_rows_wrong_closed_book_and_right_at_some_k(
    page: Any, sweep: dict[str, Any]
) -> None:
    scores = sweep["scores"]

    def helped(ks: set[int] | None = None) -> set[tuple[str, str]]:
        out = set()
        for (g, s, q, e), grp in scores.groupby(
            ["generator", "strategy", "query_perturbation", "example_id"]
        ):
            cb = grp.loc[grp["k"] == 0, "score"]
            rag = grp[(grp["k"] > 0) & (grp["k"].isin(ks) if ks else True)]
            if len(cb) and cb.mean() <= 0 and (rag["score"] >= 1).any():
                out.add((f"{g} / {s} / {q}", e))
        return out

    want = helped()
    assert want, "the sweep has no row RAG helped"
    index = site_data(sweep["site"], "index")
    assert index["helped"]["rows"] == len(want)
    goto(page, sweep["site"], "examples.html")
    assert f", {len(want)}" in page.inner_text("label[for='f-helped']")
    page.check("#f-helped")
    assert "flip=helped" in page.url
    assert list_rows(page) == want
    assert (
        page.locator("#rows tr[data-ex] .badge.helped").count() == page.locator("#rows tr[data-ex]").count()
    )
    page.select_option("#f-k", "5")  # right at k = 5 itself
    assert list_rows(page) == helped({5}) != want


def test_search_finds_a_prediction_and_the_list_shows_predictions_under_the_question(
    page: Any, sweep: dict[str, Any]
) -> None:
    """The search box looks in the predictions as well as the question; each row is labelled by
    its question (its id in the link's tooltip) and shows its predictions."""
    scores = sweep["scores"]
    question = originals(scores)
    key = ["generator", "strategy", "query_perturbation", "example_id"]
    preds = scores.groupby(key)["prediction"].agg(lambda p: "\n".join(map(str, p)))
    words = None
    for (*_, e), text in preds.items():  # a prediction word that is not in its question
        for w in text.split():
            if len(w) > 3 and w.lower() not in question[e].lower():
                words = w
                break
        if words:
            break
    assert words, "no prediction says something its question does not"
    want = {
        (f"{g} / {s} / {q}", e)
        for (g, s, q, e), text in preds.items()
        if words.lower() in (question[e] + "\n" + text).lower()
    }
    goto(page, sweep["site"], "examples.html")
    page.fill("#f-search", words)
    assert list_rows(page) == want
    assert any(words.lower() not in question[e].lower() for _, e in want)
    page.fill("#f-search", "")
    row = scores[(scores["strategy"] == "vanilla") & (scores["query_perturbation"] == "none")].iloc[0]
    tr = page.locator(f"#rows tr[data-ex='{row['example_id']}']:has(td:text-is('{label(row)}'))")
    link = tr.locator("td").first.locator("a")
    assert link.inner_text() == question[row["example_id"]]
    assert row["example_id"] in link.get_attribute("title")
    shown = tr.locator("td.preds .pred").all_inner_texts()
    mine = scores[(scores[key[:3]] == row[key[:3]]).all(axis=1) & (scores["example_id"] == row["example_id"])]
    distinct = list(dict.fromkeys(mine.sort_values(["k", "retriever", "order"])["prediction"].astype(str)))
    assert shown == [p or "(empty)" for p in distinct[:3]]


def column(pg: Any, n: int) -> list[str]:
    """The n-th column's texts of the examples list, across its pages (from the first)."""
    out: list[str] = []
    while True:
        out += pg.eval_on_selector_all(
            "#rows tr[data-ex]", f"trs => trs.map(t => t.children[{n}].textContent)"
        )
        if pg.is_disabled("#pg-next"):
            return out
        pg.click("#pg-next")


def test_every_column_sorts_both_ways_by_click_or_keyboard(page: Any, sweep: dict[str, Any]) -> None:
    goto(page, sweep["site"], "examples.html")
    heads = page.locator("#examples-head th")
    names = heads.all_inner_texts()
    assert names == ["question", "system", "gold answers", "predictions", "closed-book", "accuracy", "flips"]
    unsorted = column(page, 5)
    page.click("#examples-head button[data-sort='acc']")
    assert heads.nth(5).get_attribute("aria-sort") == "ascending" and "sort=acc" in page.url
    numbers = [float(v) for v in column(page, 5) if v != "–"]
    assert numbers == sorted(numbers) and sorted(numbers) == sorted(float(v) for v in unsorted if v != "–")
    assert numbers != sorted(numbers, reverse=True)
    page.focus("#examples-head button[data-sort='acc']")
    page.keyboard.press("Enter")  # the same header again: descending
    assert heads.nth(5).get_attribute("aria-sort") == "descending" and "sort=-acc" in page.url
    assert [float(v) for v in column(page, 5) if v != "–"] == sorted(numbers, reverse=True)
    for n, key in enumerate(["q", "sys", "a", "pred", "cb", "acc", "flips"]):
        page.focus(f"#examples-head button[data-sort='{key}']")
        page.keyboard.press(" ")
        assert heads.nth(n).get_attribute("aria-sort") in ("ascending", "descending"), key
    # a sorted list survives a reload from its address
    page.click("#examples-head button[data-sort='sys']")
    order = column(page, 1)
    url = page.url
    page.goto("about:blank")
    goto(page, sweep["site"], "examples.html#" + url.split("#", 1)[1])
    assert column(page, 1) == order
    # the overview's tables: a header sorts its rows by value, numbers as numbers
    goto(page, sweep["site"], "index.html")
    table = page.locator("table.report[data-table]").first
    col = table.locator("tbody tr").first.locator("td.num").first.get_attribute("data-col")
    idx = table.locator("thead th").all_inner_texts().index(col)
    values = f"trs => trs.map(t => t.children[{idx}].getAttribute('data-v'))"
    table.locator("thead th").nth(idx).locator("button").click()
    got = [float(v) for v in table.locator("tbody tr").evaluate_all(values) if v is not None]
    assert got == sorted(got)
    table.locator("thead th").nth(idx).locator("button").click()
    got = [float(v) for v in table.locator("tbody tr").evaluate_all(values) if v is not None]
    assert got == sorted(got, reverse=True)


# ----------------------------------------------------------------------------- one example


def open_example(page: Any, site: Path, example_id: str, system: str) -> None:
    goto(page, site, "examples.html")
    page.click(f"#rows tr[data-ex='{example_id}']:has(td:text-is('{system}')) a")
    page.wait_for_selector("body[data-ready='1'] #panel-a h3")


def test_example_page_shows_documents_in_prompt_order_with_the_answer_highlighted(
    page: Any, sweep: dict[str, Any], tmp_path: Path
) -> None:
    scores = sweep["scores"]
    vanilla = scores[(scores["strategy"] == "vanilla") & (scores["query_perturbation"] == "none")]
    row = vanilla[(vanilla["k"] == 5) & (vanilla["order"] == "reversed") & vanilla["answer_in_docs"]].iloc[0]
    page.set_viewport_size({"width": 1280, "height": 1250})
    open_example(page, sweep["site"], row["example_id"], label(row))
    section = page.locator(".system", has=page.locator("h2", has_text=label(row))).first
    section.locator("button.cell[aria-label^='bm25, k = 5, reversed:']").click()
    page.wait_for_selector("#panel-a h3:has-text('k = 5, reversed')")
    docs = page.eval_on_selector_all(
        "#panel-a li.doc",
        "lis => lis.map(li => [li.dataset.id, li.querySelector('p.text').textContent, "
        "[...li.querySelectorAll('mark.gold')].map(m => m.textContent)])",
    )
    assert [d[0] for d in docs] == list(row["doc_ids"])  # prompt order
    answers = [a.lower() for a in row["answers"]]
    assert any(marks for _, _, marks in docs)
    for _, text, marks in docs:
        has = any(a in text.lower() for a in answers)
        assert bool(marks) == has and all(m.lower() in answers for m in marks)
    ranks = page.eval_on_selector_all("#panel-a li.doc .rank", "els => els.map(e => e.textContent)")
    assert ranks == [f"rank {i}" for i in range(5, 0, -1)]  # reversed: best document last
    assert page.inner_text("#panel-a .verdict").startswith("right" if row["score"] == 1 else "wrong")
    assert page.inner_text("#panel-a pre.raw") == row["raw_output"]
    assert page.inner_text("#panel-a .marker") == ("yes" if row["marker_found"] else "no")
    page.check("#target-b")  # a second cell beside it, for the screenshot
    section.locator("button.cell[aria-label^='bm25, k = 5, original:']").click()
    page.wait_for_selector("#panels.two #panel-b h3:has-text('k = 5, original')")
    screenshot(page, "example", tmp_path)


def test_an_example_opens_on_closed_book_beside_its_best_and_worst_rag_cell(
    page: Any, sweep: dict[str, Any]
) -> None:
    scores = sweep["scores"]
    vanilla = scores[(scores["strategy"] == "vanilla") & (scores["query_perturbation"] == "none")]
    mixed = vanilla[vanilla["k"] > 0].groupby("example_id")["score"].nunique() > 1
    example = mixed[mixed].index[0]
    rows = vanilla[vanilla["example_id"] == example]
    rag = rows[rows["k"] > 0].sort_values(["k", "retriever", "order"], kind="stable")
    best, worst = rag.loc[rag["score"].idxmax()], rag.loc[rag["score"].idxmin()]
    open_example(page, sweep["site"], example, label(rows.iloc[0]))
    page.wait_for_selector("#panels.three #panel-c h3")
    titles = [page.inner_text(f"#panel-{w} h3") for w in "abc"]
    name = label(rows.iloc[0])
    assert titles == [
        f"{name} · closed-book (k = 0)",
        f"{name} · {best['retriever']}, k = {best['k']}, {best['order']}",
        f"{name} · {worst['retriever']}, k = {worst['k']}, {worst['order']}",
    ]
    assert best["score"] > worst["score"]
    assert all(page.is_visible(f"#panel-{w}") for w in "abc")
    assert page.inner_text("h1") == rows["question"].iloc[0]  # labelled by its question
    page.click("#clear-c")  # two panels again
    page.wait_for_selector("#panels:not(.three)")
    assert not page.is_visible("#panel-c") and page.is_visible("#panel-b")


def test_example_page_shows_the_prompt_exactly_as_the_model_received_it(
    page: Any, sweep: dict[str, Any], tmp_path: Path
) -> None:
    """The chosen cell's final prompt (the score table's ``prompt``, which
    tests/test_prompt_as_sent.py shows is what the generator received), gold answers marked in
    it, for an OwnKnow cell (its prompt holds the closed-book draft) and a closed-book cell."""
    scores = sweep["scores"]
    own = scores[(scores["strategy"] == "ownknow") & (scores["k"] == 3) & (scores["order"] == "reversed")]
    row = own[own["answer_in_docs"]].iloc[0]
    open_example(page, sweep["site"], row["example_id"], label(row))
    section = page.locator(".system", has=page.locator("h2", has_text=label(row))).first
    section.locator("button.cell[aria-label^='bm25, k = 3, reversed:']").click()
    page.wait_for_selector("#panel-a h3:has-text('k = 3, reversed')")
    page.click("#panel-a details.prompt summary")
    page.wait_for_selector("#panel-a details.prompt[data-loaded='1']")
    assert page.inner_text("#panel-a pre.prompt") == row["prompt"]
    assert row["ownknow_draft"] in row["prompt"]
    marks = page.eval_on_selector_all(
        "#panel-a pre.prompt mark.gold", "ms => ms.map(m => m.textContent.toLowerCase())"
    )
    assert marks and set(marks) <= {a.lower() for a in row["answers"]}
    page.set_viewport_size({"width": 1280, "height": 1100})
    page.locator("#panel-a details.prompt").scroll_into_view_if_needed()
    screenshot(page, "prompt", tmp_path)
    closed = scores[(scores["example_id"] == row["example_id"]) & (scores["strategy"] == "ownknow")]
    closed = closed[closed["k"] == 0].iloc[0]
    section.locator("button.cell[aria-label^='closed-book']").click()
    page.wait_for_selector("#panel-a h3:has-text('closed-book')")
    page.click("#panel-a details.prompt summary")
    page.wait_for_selector("#panel-a details.prompt[data-loaded='1']")
    assert page.inner_text("#panel-a pre.prompt") == closed["prompt"]


def test_example_grid_marks_the_cells_each_flip_counts(page: Any, sweep: dict[str, Any]) -> None:
    """NDR marks the k > 0 cells scored below the closed-book cell; ROR every order of a
    (retriever, k) whose orders disagree; computed here from the scores."""
    scores = sweep["scores"]
    want = sorted(expected_flips(scores, "ndr") & expected_flips(scores, "ror"))
    sys_label, example = want[0]
    rows = scores[(scores["example_id"] == example) & (scores.apply(label, axis=1) == sys_label)]
    open_example(page, sweep["site"], example, sys_label)
    marked = page.eval_on_selector_all(
        f".system:has(h2:text-is('{sys_label}')) button.cell",
        "bs => bs.map(b => [b.getAttribute('aria-label').split(':')[0], b.dataset.flips.split(' ')])",
    )
    cb = rows.loc[rows["k"] == 0, "score"].iloc[0]
    rag = rows[rows["k"] > 0]
    differ = rag.groupby(["retriever", "k"])["score"].transform("nunique") > 1
    names = rag["retriever"] + ", k = " + rag["k"].astype(str) + ", " + rag["order"]
    assert {n for n, kinds in marked if "ndr" in kinds} == set(names[rag["score"] < cb])
    assert {n for n, kinds in marked if "ror" in kinds} == set(names[differ])
    assert page.locator(".cflip").first.is_visible()


def test_two_cells_side_by_side_and_perturbed_query_as_a_character_diff(
    page: Any, sweep: dict[str, Any]
) -> None:
    scores = sweep["scores"]
    typo = scores[scores["query_perturbation"] == TYPO].iloc[0]
    original = scores[(scores["example_id"] == typo["example_id"]) & (scores["query_perturbation"] == "none")]
    open_example(page, sweep["site"], typo["example_id"], label(typo))
    diff = page.locator(f".system:has(h2:text-is('{label(typo)}')) .diff")
    ops = diff.evaluate("el => [...el.childNodes].map(n => [n.nodeName, n.textContent])")
    before = "".join(t for n, t in ops if n != "INS")
    after = "".join(t for n, t in ops if n != "DEL")
    assert before == original["question"].iloc[0] and after == typo["question"]
    assert any(n == "INS" for n, _ in ops) and any(n == "DEL" for n, _ in ops)
    page.check("#target-b")
    page.locator("button.cell[aria-label^='closed-book']").first.click()
    page.wait_for_selector("#panels.two #panel-b h3:has-text('closed-book')")
    assert page.locator("#panel-a h3").count() == 1 and page.is_visible("#panel-b")


def test_unreadable_corpus_shows_the_ids_and_says_so(
    page: Any, sweep: dict[str, Any], tmp_path: Path
) -> None:
    from rr.reporting.report import build_report
    from rr.reporting.site import build_site

    report = build_report([sweep["folder"]], tmp_path / "report", n_resamples=50, only=["robustness"])

    def gone(job_dir: Path) -> Any:
        raise FileNotFoundError(f"{job_dir}/corpus.jsonl")

    info = build_site(report, corpus_loader=gone)
    assert info.passages and info.passages_unreadable == info.passages
    assert any("not readable" in n for n in info.notes)
    row = sweep["scores"].query("k == 5 and strategy == 'vanilla'").iloc[0]
    open_example(page, info.out_dir, row["example_id"], label(row))
    texts = page.eval_on_selector_all(".panel li.doc", "lis => lis.map(li => li.textContent)")
    assert texts and all("not readable: FileNotFoundError" in t for t in texts)


# ----------------------------------------------------------------------------- without a browser


def decoded_rows(site: Path) -> dict[tuple[str, str, int, str, str], dict[str, Any]]:
    """Every row of a site's example shards, its documents decoded as example.js's docsOf does:
    ``n`` / ``-n`` (its ranking's first n, or those reversed), ``{"r": positions in its ranking}``,
    or passage numbers; keyed by (example id, system label, k, retriever, order)."""
    index = site_data(site, "index")
    passage_id = {}
    for f in sorted((site / "data" / "p").glob("*.js")):
        d = site_payload(f)
        passage_id.update({d["first"] + i: pid for i, pid in enumerate(d["id"])})
    out = {}
    for f in sorted((site / "data" / "ex").glob("*.js")):
        d = site_payload(f)
        c = d["cells"]
        for x in d["examples"]:
            for system in x["sys"]:
                for i in range(*system["r"]):
                    ref, docs = c["ref"][i], c["docs"][i]
                    ranking = x["ranked"][ref] if ref >= 0 else []
                    if isinstance(docs, int):
                        numbers = ranking[:docs] if docs >= 0 else ranking[:-docs][::-1]
                    elif isinstance(docs, dict):
                        numbers = [ranking[j] for j in docs["r"]]
                    else:
                        numbers = docs
                    k, retriever, order = index["cells"][c["c"][i]]
                    key = (x["id"], index["systems"][system["s"]]["label"], k, retriever, order)
                    out[key] = {
                        "doc_ids": [passage_id[n] for n in numbers],
                        **{
                            name: c[col][i]
                            for name, col in (("score", "sc"), ("prediction", "pred"), ("raw_output", "raw"))
                        },
                    }
    return out


def test_every_rows_documents_and_output_decode_from_the_shards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Prefix, reversed and shuffled cells of a ranking, a cell with a passage outside it,
    closed-book rows, outputs that need escapes: each row's documents (in prompt order), score and
    outputs read back from the example shards equal the score table's."""
    from rr.reporting.report import build_report
    from rr.reporting.site import build_site

    table = job_rows("m", "vanilla", 6, base=0.5, gain=0.2)
    rng = np.random.default_rng(0)
    docs = []
    for r in table.itertuples():
        ranking = [f"{r.example_id}-{r.retriever}-{j}" for j in range(25)]
        mine = ranking[: r.k]
        if r.order == "reversed":
            mine = mine[::-1]
        elif r.order == "shuffled":
            mine = [mine[j] for j in rng.permutation(r.k)]
            if r.example_id == "q001" and r.k == 10:
                mine[3] = "elsewhere"  # not in the ranking: passage numbers
        docs.append(mine)
    table["doc_ids"] = docs
    table.loc[table["example_id"] == "q003", "prediction"] = 'say "yes"\\ \n'  # escapes
    write_job(tmp_path / "sweep", table)
    report = build_report([tmp_path / "sweep"], tmp_path / "report", n_resamples=20, only=["robustness"])
    monkeypatch.setattr("rr.reporting.site.rows.EXAMPLE_SHARD_BYTES", 6_000)
    site = build_site(report, corpus_loader=lambda job_dir: {}).out_dir
    rows = decoded_rows(site)
    assert len(rows) == len(table)
    # whole examples per shard, each shard within its budget (the estimate counts every part)
    shards = sorted((site / "data" / "ex").glob("*.js"))
    assert len(shards) > 1
    for f in shards:
        assert len(site_payload(f)["examples"]) == 1 or f.stat().st_size <= 6_000 * 1.1, f.stat().st_size

    def kind(d: Any) -> str:
        if isinstance(d, dict):
            return "positions in the ranking"
        if isinstance(d, list):
            return "passage numbers"
        return "none" if d == 0 else "prefix" if d > 0 else "reversed prefix"

    kinds = {kind(d) for f in shards for d in site_payload(f)["cells"]["docs"]}
    assert len(kinds) == 5, kinds  # every way a row's documents are stored
    for r in table.itertuples():
        got = rows[(r.example_id, "m / vanilla", r.k, r.retriever, r.order)]
        assert got["doc_ids"] == list(r.doc_ids), (r.example_id, r.retriever, r.k, r.order)
        assert (got["score"], got["prediction"], got["raw_output"]) == (r.score, r.prediction, r.raw_output)


def test_rows_chunks_hold_each_cells_prediction_and_the_rag_helped_rows(tmp_path: Path) -> None:
    """The examples list's data: each row's predictions in its score characters' cell order, and
    the RAG-helped count (wrong closed-book, right at some k > 0 cell) as the table says."""
    from rr.reporting.site.flips import compute_flips, helped_rows
    from rr.reporting.site.index import index_scores
    from rr.reporting.site.pairs import Pairs
    from rr.reporting.site.passages import PassageFiles
    from rr.reporting.site.rows import index_data, write_rows

    table = pd.concat(
        [job_rows("m", s, 9, base=0.4, gain=0.4) for s in ("vanilla", "ownknow")], ignore_index=True
    )
    table["prediction"] = [f"p{i}" for i in range(len(table))]  # each row's own
    idx = index_scores(table)
    flips = compute_flips(idx)
    write_rows(idx, flips, tmp_path, [""] * len(idx.examples))
    chunk = site_payload(tmp_path / "rows-000.js")
    cells = [tuple(c) for c in idx.cells]
    by_cell = table.set_index(["strategy", "example_id", "k", "retriever", "order"])["prediction"]
    for e, s, sc, pred in zip(chunk["ex"], chunk["sys"], chunk["sc"], chunk["pred"], strict=True):
        system, example = idx.systems[s]["cols"]["strategy"], chunk["id"][e - chunk["ex0"]]
        assert len(pred) == len(sc) == len(idx.sys_cells[s])
        assert pred == [by_cell[(system, example, *cells[c])] for c in idx.sys_cells[s]]
    want = 0
    for _, grp in table.groupby(["strategy", "example_id"]):
        cb = grp.loc[grp["k"] == 0, "score"]
        want += bool(cb.mean() <= 0 and (grp.loc[grp["k"] > 0, "score"] >= 1).any())
    assert 0 < want < idx.n_list_rows
    assert int(helped_rows(idx).sum()) == want
    index = index_data(idx, flips, Pairs([], []), [], [0], [0], PassageFiles([0], [], 0, 0, ()))
    assert index["helped"]["rows"] == want


def test_json_runs_are_the_runs_json_lists_a_few_at_a_time() -> None:
    """The shards' JSON lists, made by pyarrow from each value's literal a few runs at a time,
    are what json.dumps makes of each run (strings that need escapes, missing values, empty
    runs, and runs across the chunks)."""
    import pyarrow as pa

    from rr.reporting.site.encoding import json_strings, runs_json

    values = ["plain", 'a "quote"', "back\\slash", "new\nline\ttab", None, "é \u2028", "", "x"]
    bounds = [0, 2, 2, 5, 6, 8]
    literals = json_strings(pa.array(values))
    got = list(runs_json(literals, bounds, per=2))
    assert [json.loads(g) for g in got] == [values[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    numbers = list(runs_json(pa.array([str(i) for i in range(7)], pa.large_string()), [0, 3, 7], per=1))
    assert numbers == ["[0,1,2]", "[3,4,5,6]"]


def test_flips_are_the_comparisons_the_metrics_fail() -> None:
    table = job_rows("m", "vanilla", 30, base=0.5, gain=0.2)
    flips = robustness_flips(table)
    for r, mine in table[table["k"] > 0].groupby("retriever"):
        sub = pd.concat([mine, table[table["k"] == 0]])
        n_cells = len(mine)
        n_rsr = len(mine[mine["k"] != mine["k"].min()])
        f = flips[flips["retriever"] == r]
        assert (f["kind"] == "ndr").sum() == round((1 - ndr(sub)) * n_cells)
        assert (f["kind"] == "rsr").sum() == round((1 - rsr(sub)) * n_rsr)
        ror_cells = f.loc[f["kind"] == "ror", ["example_id", "k"]].drop_duplicates()
        spread = mine.groupby(["example_id", "k"])["score"].nunique() > 1
        assert len(ror_cells) == int(spread.sum()) and ror(sub) < 1
    perturbed = job_rows("m", "vanilla", 30, base=0.5, gain=0.2, doc_perturbation="format:json")
    both = pd.concat([table, perturbed], ignore_index=True)
    rates = robustness_rates(both, subsets=False)
    dflips = doc_perturbation_flips(both)
    n = int(rates[("Total", "n")].iloc[0])
    assert len(dflips) == round((rates[("Total", "LR")].iloc[0] + rates[("Total", "WR")].iloc[0]) * n)


def test_site_data_are_scripts_and_the_flag_turns_the_site_off(sweep: dict[str, Any], tmp_path: Path) -> None:
    from rr.commands.report import main as report_main

    site = sweep["site"]
    for f in [site / "data" / "index.js", *sorted((site / "data" / "ex").glob("*.js"))[:1]]:
        text = f.read_text()
        assert text.startswith("RR.load(") and text.rstrip().endswith(");")
    index = site_data(site, "index")
    assert index["n_examples"] == sweep["scores"]["example_id"].nunique()
    assert sorted(p["differs_in"] for p in index["pairs"]) == ["query_perturbation", "strategy"]
    # each passage once
    ids = []
    for f in sorted((site / "data" / "p").glob("*.js")):
        ids += site_payload(f)["id"]
    assert len(ids) == len(set(ids)) == len({p for d in sweep["scores"]["doc_ids"] for p in d})
    assert not any(
        "http://" in f.read_text() or "https://" in f.read_text() for f in (site / "assets").iterdir()
    )
    report_main([str(sweep["folder"]), "--out", str(tmp_path / "r"), "--only", "robustness", "--no-site"])
    assert (tmp_path / "r" / "README.md").exists() and not (tmp_path / "r" / "site").exists()
    assert np.isfinite(index["flips"]["ndr"]["rows"])


def test_data_files_hold_exactly_the_declared_fields(sweep: dict[str, Any]) -> None:
    """Each data file's payload, and each record nested in one, has the fields
    rr/reporting/site/format.py declares, in its order (tests/test_site_format.py checks the page
    scripts read only those)."""
    from rr.reporting.site import format as fmt

    def names(record: type[fmt.Record]) -> list[str]:
        return [str(f) for f in record.fields().values()]

    site = sweep["site"]
    index = site_data(site, "index")
    assert list(index) == names(fmt.Index) and index["format_version"] == fmt.FORMAT_VERSION
    assert all(list(s) == names(fmt.System) for s in index["systems"])
    assert all(list(f) == names(fmt.FlipCount) for f in index["flips"].values())
    assert index["pairs"] and all(list(p) == names(fmt.IndexPair) for p in index["pairs"])
    assert all(list(p) == names(fmt.PairExamples) for p in site_data(site, "pairs"))
    overview = site_data(site, "overview")
    assert list(overview) == names(fmt.Overview) and overview["format_version"] == fmt.FORMAT_VERSION
    assert all(list(f) == names(fmt.FlipCount) for f in overview["flip_counts"].values())
    assert all(list(p) == names(fmt.OverviewPair) for p in overview["pairs"])
    assert all(list(p) == names(fmt.PairApart) for p in overview["pairs_apart"])
    assert overview["jobs"] and all(list(j) == names(fmt.OverviewJob) for j in overview["jobs"])
    sections = overview["sections"]
    section = names(fmt.Section)
    assert all(
        [f for f in section if f in s] == list(s) and {"name", "title", "items"} <= set(s) for s in sections
    )
    items = [it for s in sections for it in s["items"]]
    tables, figures = [it for it in items if "table" in it], [it for it in items if "figure" in it]
    assert tables and all(list(t) == names(fmt.Table) for t in tables)
    assert len(tables) + len(figures) == len(items) and all(list(f) == names(fmt.Figure) for f in figures)
    for f in sorted((site / "data").glob("rows-*.js")):
        assert list(site_payload(f)) == names(fmt.RowsChunk)
    perturbed = 0
    for f in sorted((site / "data" / "ex").glob("*.js")):
        shard = site_payload(f)
        assert list(shard) == names(fmt.ExampleShard) and list(shard["cells"]) == names(fmt.ExampleCells)
        for item in shard["examples"]:
            assert list(item) == names(fmt.Example)
            for sysd in item["sys"]:  # q and diff only where the system's question is perturbed
                assert list(sysd) in (names(fmt.ExampleSystem)[:2], names(fmt.ExampleSystem))
                perturbed += len(sysd) == 4
    assert perturbed
    for f in sorted((site / "data" / "p").glob("*.js")):
        assert list(site_payload(f)) == names(fmt.PassageShard)
    prompts = sorted((site / "data" / "pr").glob("*.js"))
    assert len(prompts) == len(list((site / "data" / "ex").glob("*.js")))
    for f in prompts:
        assert list(site_payload(f)) == names(fmt.PromptShard)


# ----------------------------------------------------------------------------- rough edges


def test_examples_list_follows_an_address_change_and_badges_follow_the_cell_filters(
    page: Any, sweep: dict[str, Any]
) -> None:
    scores = sweep["scores"]
    goto(page, sweep["site"], "examples.html#flip=ndr")
    assert list_rows(page) == expected_flips(scores, "ndr")
    page.evaluate("location.hash = 'flip=ror'")  # a link or a hand edit, not the form
    page.wait_for_function(
        "document.getElementById('f-flip-ror').checked && !document.getElementById('f-flip-ndr').checked"
    )
    assert list_rows(page) == expected_flips(scores, "ror")

    def badges() -> set[str]:
        seen: set[str] = set()
        while True:
            seen |= set(page.eval_on_selector_all("#rows .badge", "bs => bs.map(b => b.textContent)"))
            if page.is_disabled("#pg-next"):
                return seen
            page.click("#pg-next")

    page.evaluate("location.hash = ''")
    page.wait_for_function("!document.getElementById('f-flip-ror').checked")
    assert {"NDR", "ROR", "QUERY"} <= badges()
    # closed-book cells only: NDR and ROR compare k > 0 cells, so no row shows them; a query flip can
    page.evaluate("location.hash = 'k=0'")
    page.wait_for_function("document.getElementById('f-k').value === '0'")
    assert badges() == {"QUERY"}


def test_disabled_flip_boxes_are_never_checked_and_zero_flips_are_not_linked(
    page: Any, sweep: dict[str, Any]
) -> None:
    goto(page, sweep["site"], "index.html")
    doc = page.locator("#flips li", has_text="doc-perturbation flip").first
    assert doc.locator("a").count() == 0 and "0 example × system rows" in doc.inner_text()
    goto(page, sweep["site"], "examples.html#flip=doc")  # an old link to a kind no row has
    assert page.is_disabled("#f-flip-doc") and not page.is_checked("#f-flip-doc")
    assert (
        len(list_rows(page))
        == sweep["scores"].groupby(["example_id", "strategy", "query_perturbation"]).ngroups
    )


def test_at_400_px_nothing_scrolls_sideways_and_the_panels_stack(
    page: Any, sweep: dict[str, Any], tmp_path: Path
) -> None:
    scores = sweep["scores"]
    row = scores[(scores["strategy"] == "vanilla") & (scores["query_perturbation"] == "none")].iloc[0]
    page.set_viewport_size({"width": 400, "height": 800})
    for name in ("index.html", "examples.html#flip=ndr"):
        goto(page, sweep["site"], name)
        assert page.evaluate("document.documentElement.scrollWidth") <= 400, name
    open_example(page, sweep["site"], row["example_id"], label(row))
    page.check("#target-b")
    page.locator("button.cell[aria-label^='closed-book']").first.click()
    page.wait_for_selector("#panels.two #panel-b h3")
    a, b = (page.locator(s).bounding_box() for s in ("#panel-a", "#panel-b"))
    assert b["y"] >= a["y"] + a["height"]  # stacked, not side by side
    assert page.evaluate("document.documentElement.scrollWidth") <= 400


def test_closed_book_cell_stands_apart_from_the_order_columns_and_figures_reserve_space(
    page: Any, sweep: dict[str, Any]
) -> None:
    goto(page, sweep["site"], "index.html")
    imgs = page.eval_on_selector_all(
        "figure img",
        "imgs => imgs.map(i => [i.getAttribute('width'), i.getAttribute('height'), i.naturalWidth, i.naturalHeight])",
    )
    assert imgs
    from PIL import Image

    assert all(w and h for w, h, *_ in imgs)
    for name in sorted(p.name for p in (sweep["site"] / "figures").glob("*.png")):
        with Image.open(sweep["site"] / "figures" / name) as im:
            size = [str(v) for v in im.size]
        got = page.eval_on_selector(
            f"figure img[src='figures/{name}']", "i => [i.getAttribute('width'), i.getAttribute('height')]"
        )
        assert got == size, name
    scores = sweep["scores"]
    row = scores[scores["strategy"] == "vanilla"].iloc[0]
    open_example(page, sweep["site"], row["example_id"], label(row))
    assert page.locator("table.grid button[aria-label^='closed-book']").count() == 0
    assert page.locator(".system p.closed-book button.cell").count() == page.locator(".system").count()


def test_one_system_is_singular_and_a_skip_link_leads_to_the_content(
    page: Any, three_orders: dict[str, Any]
) -> None:
    goto(page, three_orders["site"], "index.html")
    lead = page.inner_text("p.lead")
    assert "1 system from 1 job." in lead and "16 examples" in lead, lead
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip"
    assert page.is_visible("a.skip")
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main"


# ----------------------------------------------------------------------------- text


def test_search_finds_the_examples_whose_documents_a_title_names(page: Any, tmp_path: Path) -> None:
    """A word only a document's title holds finds the examples that retrieved that document (the
    rows-*.js titles; the texts stay in the passage shards), and no other."""
    from rr.records import Passage
    from rr.reporting.report import build_report
    from rr.reporting.site import build_site

    table = job_rows("m", "vanilla", 4, base=0.5, gain=0.2)
    table["doc_ids"] = [
        [f"{e}-{j}" for j in range(int(k))] for e, k in zip(table["example_id"], table["k"], strict=True)
    ]
    corpus = {
        f"{e}-{j}": Passage(f"{e}-{j}", "filler text", "Kowloon" if (e, j) == ("q002", 3) else f"Title {j}")
        for e in table["example_id"].unique()
        for j in range(25)
    }
    write_job(tmp_path / "sweep", table)
    report = build_report([tmp_path / "sweep"], tmp_path / "report", n_resamples=20, only=["robustness"])
    site = build_site(report, corpus_loader=lambda job_dir: corpus).out_dir
    goto(page, site, "examples.html")
    page.fill("#f-search", "kowloon")
    assert list_rows(page) == {("m / vanilla", "q002")}
    page.fill("#f-search", "Title 24")  # only k = 25 cells hold the 25th document
    assert list_rows(page) == {("m / vanilla", e) for e in table["example_id"].unique()}


def test_passage_text_highlights_wraps_keeps_lines_and_isolates_bidi(page: Any, tmp_path: Path) -> None:
    """A Turkish İ before the answer shifts no mark; a short answer is marked as a word only;
    line breaks stay; a 3,000-character token does not widen the page; U+202E in a title or id
    stays inside it; highlighting a 40,000-character passage with a one-letter answer is fast."""
    from rr.records import Passage
    from rr.reporting.report import build_report
    from rr.reporting.site import build_site

    table = job_rows("m", "vanilla", 2, base=0.5, gain=0.2)
    special = ["p-tr", "p-long", "\u202eid-evil"]
    ranking = special + [f"p-{j}" for j in range(22)]
    table["doc_ids"] = [ranking[: int(k)] for k in table["k"]]
    table["answers"] = [["Ankara", "an"]] * len(table)
    corpus = {pid: Passage(pid, f"filler {pid}", "Filler") for pid in ranking}
    corpus["p-tr"] = Passage(
        "p-tr",
        "İİİİ İstanbul, then Ankara is the capital.\nSecond line: a banana and an apple.",
        "İİİ Türkiye",
    )
    corpus["p-long"] = Passage("p-long", "x" * 3000 + " Ankara", "\u202eevil title")
    write_job(tmp_path / "sweep", table)
    report = build_report([tmp_path / "sweep"], tmp_path / "report", n_resamples=20, only=["robustness"])
    site = build_site(report, corpus_loader=lambda job_dir: corpus).out_dir
    goto(page, site, "example.html#e=0")
    page.locator("button.cell[aria-label^='bm25, k = 5, original:']").first.click()
    page.wait_for_selector("#panel-a h3:has-text('k = 5, original')")
    tr = page.locator("#panel-a li.doc[data-id='p-tr'] p.text")
    assert tr.evaluate("p => [...p.querySelectorAll('mark.gold')].map(m => m.textContent)") == [
        "Ankara",
        "an",
    ]
    assert "capital.\nSecond line" in tr.inner_text()  # the line break is kept
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    title = page.locator("#panel-a li.doc[data-id='p-long'] .title")
    assert title.evaluate("e => getComputedStyle(e).unicodeBidi") == "isolate"
    evil = page.locator("#panel-a li.doc .id", has_text="id-evil")
    assert evil.evaluate("e => [e.tagName, getComputedStyle(e).unicodeBidi]") == ["BDI", "isolate"]
    seconds = page.evaluate(
        "() => { const t = 'a '.repeat(20000), t0 = performance.now(); const h = RR.highlight(t, ['a']);"
        " return [(performance.now() - t0) / 1000, h.split('<mark').length - 1]; }"
    )
    assert seconds[1] == 20000 and seconds[0] < 0.5, seconds
    page.click("#panel-a details.prompt summary")  # rows without a prompt column (older jobs)
    page.wait_for_selector("#panel-a details.prompt[data-loaded='1'] .no-prompt")
