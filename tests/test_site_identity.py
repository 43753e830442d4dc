"""The result site keeps examples apart by what they are, and says what the report left out
(issue 36, parts 1 and 2): two JSONL files whose ids overlap are never merged on one example, a
perturbed query is diffed against its own original only, and the overview names every job below
the report's folders that is not finished. Checked in the data files and in Chromium."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest

from rr.data.synthetic import SyntheticDataset
from tests.test_example_identity import _job, _write_questions
from tests.test_site import chromium, goto, page, site_data, site_payload  # noqa: F401 (fixtures)

pytestmark = pytest.mark.timeout(300)


def _examples(site: Path) -> list[dict[str, Any]]:
    return [item for f in sorted((site / "data" / "ex").glob("*.js")) for item in site_payload(f)["examples"]]


def _report(folder: Path, out: Path) -> Path:
    from rr.commands.report import main as report_main

    report_main([str(folder), "--out", str(out), "--resamples", "50"])
    assert (out / "site" / "index.html").exists()
    return out / "site"


@pytest.fixture(scope="module")
def two_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """File a's q0..q5 and file b's q0..q5 (q4, q5 other questions); a's q4 has a perturbed variant
    that reads b's q4 question."""
    root = tmp_path_factory.mktemp("site-identity")
    world = SyntheticDataset(n=12)
    a = _write_questions(root / "a.jsonl", {f"q{i}": i for i in range(6)})
    b = _write_questions(root / "b.jsonl", {**{f"q{i}": i for i in range(4)}, "q4": 10, "q5": 11})
    variants = root / "variants.jsonl"
    variants.write_text(
        json.dumps({"id": "q4", "variant": "swap#1", "question": world.example(10).question}) + "\n"
    )
    file_query = [
        "perturbation/query=file",
        f"perturbation.query.path={variants}",
        "perturbation.query.on_missing=skip",
    ]
    runs = root / "runs"
    _job(root, runs / "a", a, *file_query)
    _job(root, runs / "b", b)
    return {
        "site": _report(runs, root / "report"),
        "a4": world.example(4).question,
        "b4": world.example(10).question,
    }


def test_ids_of_two_files_are_two_examples_and_a_perturbed_query_diffs_its_own(
    two_files: dict[str, Any],
) -> None:
    site = two_files["site"]
    assert site_data(site, "index")["n_examples"] == 8  # before: 6, file b's q4 under file a's
    items = {item["q"]: item for item in _examples(site)}
    a4, b4 = items[two_files["a4"]], items[two_files["b4"]]
    assert a4["id"] != b4["id"] and a4["id"].startswith("q4~") and b4["id"].startswith("q4~")
    # b's q4 is its own example: no "perturbed query" (before: b's question diffed against a's)
    assert all("q" not in sysd for sysd in b4["sys"])
    (perturbed,) = [sysd for sysd in a4["sys"] if "q" in sysd]
    assert perturbed["q"] == two_files["b4"]
    before = "".join(text for op, text in perturbed["diff"] if op != "+")
    assert before == two_files["a4"]  # the variant against its own original


def test_the_examples_list_shows_both_questions(page: Any, two_files: dict[str, Any]) -> None:  # noqa: F811
    goto(page, two_files["site"], "examples.html")
    text = page.inner_text("#rows")
    assert two_files["a4"] in text and two_files["b4"] in text


def test_the_overview_names_the_jobs_the_report_left_out(
    page: Any,  # noqa: F811
    tmp_path: Path,
) -> None:
    from .test_report_unfinished import SIM
    from .test_resume import rr_cli

    sweep = ["-m", *SIM, "seed=0,1,2", f"paths.output_root={tmp_path / 'out'}"]
    assert rr_cli(sweep, cwd=tmp_path).returncode == 0
    root = tmp_path / "out" / "multirun" / "cao2025_mini"
    jobs = sorted(p for p in root.iterdir() if (p / "summary.json").exists())
    for done in ("summary.json", "scores.parquet"):
        (jobs[1] / done).unlink()
    shutil.rmtree(jobs[2])
    site = _report(root, tmp_path / "report")
    left = site_data(site, "overview")["left_out"]
    assert [j["state"] for j in left] == ["partial", "missing"]
    # the partial job: the command it recorded (that job alone); the missing one: its sweep's
    own = json.loads((jobs[1] / "command.json").read_text())["argv"]
    finish = "rr -m " + " ".join(shlex.quote(o) for o in sweep[1:])
    assert [j["command"] for j in left] == [
        " ".join(shlex.quote(a) if i else a for i, a in enumerate(own)),
        finish,
    ]
    goto(page, site, "index.html")
    shown = page.inner_text("#left-out")
    assert "2 of 3 jobs" in shown and finish in shown and left[0]["command"] in shown
    for j in left:
        assert j["job_id"] in shown


def test_a_perturbed_query_whose_original_no_job_holds_is_diffed_against_nothing(
    page: Any,  # noqa: F811
    tmp_path: Path,
) -> None:
    from rr.reporting.site.index import UNKNOWN_ORIGINAL

    world = SyntheticDataset(n=12)
    a = _write_questions(tmp_path / "a.jsonl", {f"q{i}": i for i in range(6)})
    b = _write_questions(tmp_path / "b.jsonl", {**{f"q{i}": i for i in range(4)}, "q4": 10, "q5": 11})
    b4 = world.example(10).question
    variants = tmp_path / "variants.jsonl"
    variants.write_text(json.dumps({"id": "q4", "variant": "swap#1", "question": b4}) + "\n")
    only_variant = [
        "perturbation/query=file",
        f"perturbation.query.path={variants}",
        "perturbation.query.on_missing=skip",
        "perturbation.query.include_original=false",
    ]
    _job(tmp_path, tmp_path / "runs" / "a", a, *only_variant)
    _job(tmp_path, tmp_path / "runs" / "b", b)
    site = _report(tmp_path / "runs", tmp_path / "report")
    items = _examples(site)
    # before: a's variant sat under b's q4 as if it were that question, unperturbed
    (unknown,) = [item for item in items if item["q"] == UNKNOWN_ORIGINAL]
    (sysd,) = unknown["sys"]
    assert sysd["q"] == b4 and "diff" not in sysd
    assert [item["q"] for item in items if item["id"].startswith("q4")].count(b4) == 1  # b's own q4
    goto(page, site, f"example.html#e={unknown['e']}")
    assert page.inner_text(".qdiff") == f"Query: {b4}" and page.locator(".diff").count() == 0
