"""The report's result browser at the papers' scale (issue 31): site size, generation time beside
``rr report``'s own, and page load times in Debian's chromium.

Each scale is ``QUESTIONSxSYSTEMS``: a sweep of one job per system (generators x the three Cao
strategies) on the Cao grid (closed book + 2 retrievers x k in {5, 10, 25, 50, 75, 100} x 3 orders:
37 cells per question), written directly as score tables with the real writer. Every row has its
``doc_ids``: each (question, retriever) has a ranking of 100 passages (the two retrievers share
half of theirs), a cell's prompt holds its top k in the cell's order (shuffled: a seeded
permutation), so a question has ~150 distinct passages. The passages are a JSONL corpus of made-up
texts (``--text-chars`` long) that every job's ``config.yaml`` names (``corpus=jsonl``), so the site
reads its texts as it does a real job's.

Per scale, in a fresh child process: ``build_report`` (all sections, ``--resamples``) then
``build_site`` (wall time of each, the child's peak RSS); the site's size by part; then chromium
(tests/browser.py) opens the site from ``file://`` in a fresh context per page: the overview until
it is drawn, the examples list until its first page shows and until every row chunk is loaded, the
NDR flip filter on the loaded list, and an example page with a k = 100 cell's documents drawn.

    python benchmarks/site_scale.py                                   # 3610x3 (~4e5 rows) and 3000x9 (~1e6)
    python benchmarks/site_scale.py --scales 900x3 3610x3 --resamples 200
    python benchmarks/site_scale.py --quick                           # 12x3, 50 resamples: the suite's size
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _startup import REPO

STRATEGIES = ("vanilla", "ownknow", "s2a")
#: The model id each generator's jobs record (``summary.json`` ``model.model_id``), so that the
#: report's ``paper_beside`` matches Cao et al.'s values (they name these models) and tests its claims
#: per model and dataset: generator ``model-i`` is ``MODEL_IDS[i % 3]``.
MODEL_IDS = (
    "meta-llama/Llama-3.2-1B-Instruct",
    "meta-llama/Llama-3.2-3B-Instruct",
    "meta-llama/Llama-3.1-8B-Instruct",
)
#: Cao's three datasets (its values pool them): question ``q`` is from ``DATASETS[q % 3]``.
DATASETS = ("nq_open", "hotpot_qa", "asqa")
RETRIEVERS = ("bm25", "bge_large")  # as experiment=cao2025 names them, so the Cao values match
KS = (5, 10, 25, 50, 75, 100)
ORDERS = ("original", "reversed", "shuffled")
DEPTH = 100
MIB = 1024 * 1024


#: The lines ``--quick`` prints (tests/test_benchmarks.py checks they exist, not their values).
QUICK_FIGURES = [r'"site_share_of_report": [0-9.]+', r'"site_mib": [0-9.]+']


def write_corpus(path: Path, n_questions: int, text_chars: int) -> int:
    """``passages.jsonl``: per question 150 passages ``q<i>-p<j>``; returns how many."""
    words = [
        "the",
        "a",
        "river",
        "town",
        "company",
        "founded",
        "novel",
        "first",
        "born",
        "year",
        "north",
        "old",
        "records",
        "family",
        "letters",
    ]
    n = 0
    with path.open("w") as f:
        for q in range(n_questions):
            for j in range(150):
                seed = q * 151 + j
                text = []
                while sum(len(w) + 1 for w in text) < text_chars:
                    text.append(words[(seed + len(text) * 7) % len(words)])
                if j == 0:
                    text[3] = f"Answer{q}"
                f.write(
                    json.dumps({"id": f"q{q}-p{j}", "title": f"Title {q}-{j}", "text": " ".join(text)}) + "\n"
                )
                n += 1
    return n


def job_rows(n_questions: int, generator: str, strategy: str, seed: int):
    """One job's score table: the Cao grid for every question, with doc_ids."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    rankings = {}
    for q in range(n_questions):
        ids = [f"q{q}-p{j}" for j in range(150)]
        order = rng.permutation(150)
        rankings[(q, RETRIEVERS[0])] = [ids[i] for i in order[:DEPTH]]
        rankings[(q, RETRIEVERS[1])] = [ids[i] for i in order[50:150]]
    cells = [("none", 0, "none")] + [(r, k, o) for r in RETRIEVERS for k in KS for o in ORDERS]
    rows: dict[str, list] = {c: [] for c in ("example_id", "retriever", "k", "order", "doc_ids", "score")}
    ability = rng.uniform(-0.25, 0.25, n_questions)
    for q in range(n_questions):
        for r, k, o in cells:
            docs: list[str] = []
            if k:
                docs = rankings[(q, r)][:k]
                if o == "reversed":
                    docs = docs[::-1]
                elif o == "shuffled":
                    docs = [
                        docs[i] for i in np.random.default_rng(seed * 1000003 + q * 101 + k).permutation(k)
                    ]
            p = min(1.0, max(0.0, 0.35 + ability[q] + 0.25 * np.log1p(k) / np.log1p(100)))
            rows["example_id"].append(f"q{q}")
            rows["retriever"].append(r)
            rows["k"].append(k)
            rows["order"].append(o)
            rows["doc_ids"].append(docs)
            rows["score"].append(float(rng.random() < p))
    n = len(rows["k"])
    pred = np.where(
        np.array(rows["score"]) > 0, [f"Answer{int(e[1:])}" for e in rows["example_id"]], "unknown"
    )
    return pd.DataFrame(
        {
            **rows,
            "dataset": [DATASETS[int(e[1:]) % len(DATASETS)] for e in rows["example_id"]],
            "generator": generator,
            "strategy": strategy,
            "query_perturbation": "none",
            "doc_perturbation": "none",
            "n_docs_used": rows["k"],
            "prediction": pred,
            "raw_output": np.char.add("Reasoning about the documents. Answer: ", pred.astype(str)),
            "judge": "match",
            "refused": False,
            "job_id": f"{generator}-{strategy}",
            "seed": 0,
            "question": [
                f"Which company did the person of question {e[1:]} found?" for e in rows["example_id"]
            ],
            "answers": [[f"Answer{int(e[1:])}"] for e in rows["example_id"]],
            "marker_found": np.ones(n, dtype=bool),
            "over_window": np.zeros(n, dtype=bool),
        }
    )


def write_sweep(root: Path, n_questions: int, n_systems: int, text_chars: int) -> dict:
    sys.path.insert(0, str(REPO))
    from rr.jobfolder import CONFIG_FILE, JobSummary, write_summary
    from rr.results import write_scores

    root.mkdir(parents=True, exist_ok=True)
    corpus = root / "passages.jsonl"
    n_passages = write_corpus(corpus, n_questions, text_chars)
    config = {
        "name": "site_scale",
        "corpus": {"_target_": "rr.data.jsonl.JsonlCorpus", "path": str(corpus), "name": "bench"},
    }
    rows = 0
    for i in range(n_systems):
        m = i // len(STRATEGIES)
        gen, strategy = f"model-{m}", STRATEGIES[i % len(STRATEGIES)]
        df = job_rows(n_questions, gen, strategy, seed=i)
        folder = root / "sweep" / f"{gen}-{strategy}"
        folder.mkdir(parents=True)
        write_scores(df, folder)
        (folder / CONFIG_FILE).write_text(json.dumps(config))  # JSON is YAML
        summary = {"job_id": f"{gen}-{strategy}", "name": "cao2025", "model": {"model_id": MODEL_IDS[m % 3]}}
        write_summary(folder, JobSummary.from_dict(summary))
        rows += len(df)
    return {"rows": rows, "corpus_passages": n_passages}


def child(args: dict) -> None:
    """In a fresh process: build the report, then the site; print the times and the peak RSS."""
    import dataclasses

    import matplotlib

    matplotlib.use("Agg")
    from rr.reporting import registry as reporting_registry
    from rr.reporting import report as reporting_report
    from rr.reporting.site import build_site

    # each stage's wall time and CPU time (this process, all threads: what a loaded machine inflates
    # least): reading the jobs, every section (wrapped, as run_sections calls them)
    stages: dict[str, float] = {}
    stages_cpu: dict[str, float] = {}

    profiles: dict[str, list[str]] = {}

    def timed(name: str, fn):
        def wrapper(*a, **kw):
            t, c = time.perf_counter(), time.process_time()
            prof = None
            if name == args.get("profile"):  # cProfile of one stage: its top entries by own time
                import cProfile

                prof = cProfile.Profile()
                prof.enable()
            try:
                out = fn(*a, **kw)
                return list(out) if name != "load" else out  # a section is a generator: drain it here
            finally:
                if prof is not None:
                    import io
                    import pstats

                    prof.disable()
                    text = io.StringIO()
                    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(15)
                    profiles[name] = [ln for ln in text.getvalue().splitlines() if ln.strip()][-16:]
                stages[name] = round(stages.get(name, 0.0) + time.perf_counter() - t, 2)
                stages_cpu[name] = round(stages_cpu.get(name, 0.0) + time.process_time() - c, 2)

        return wrapper

    all_sections = reporting_registry.sections  # run_sections (its module) calls sections()
    reporting_registry.sections = lambda: [
        dataclasses.replace(s, fn=timed(s.name, s.fn)) for s in all_sections()
    ]
    reporting_report.load_jobs = timed("load", reporting_report.load_jobs)  # build_report calls load_jobs
    t0, c0 = time.perf_counter(), time.process_time()
    report = reporting_report.build_report([args["sweep"]], args["report"], n_resamples=args["resamples"])
    t1, c1 = time.perf_counter(), time.process_time()
    info = build_site(report) if args.get("site", True) else None
    t2 = time.perf_counter()
    rest = "tables, figures and index written"
    stages[rest] = round(t1 - t0 - sum(stages.values()), 2)
    stages_cpu[rest] = round(c1 - c0 - sum(stages_cpu.values()), 2)
    ranked = dict(sorted(stages.items(), key=lambda kv: -kv[1]))
    out = {
        "report_s": round(t1 - t0, 1),
        "report_cpu_s": round(c1 - c0, 1),
        "paper_beside_s": stages.get("paper_beside", 0.0),
        "paper_beside_share": round(stages.get("paper_beside", 0.0) / (t1 - t0), 3),
        "paper_beside_cpu_share": round(stages_cpu.get("paper_beside", 0.0) / max(c1 - c0, 1e-9), 3),
        # what paper_beside compared: per table, its verdicts (values matched, claims decided)
        "paper_beside_verdicts": {
            item.name: item.df["verdict"].value_counts().to_dict()
            for o in report.outcomes
            if o.section.name == "paper_beside"
            for item in o.items
            if "verdict" in getattr(item, "df", {})
        },
        "report_stages_s": ranked,
        "report_stages_cpu_s": {k: stages_cpu[k] for k in ranked},
        "profile_top_by_own_time": profiles,
        "site_s": round(t2 - t1, 1),
        "peak_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    if info is not None:
        out.update(
            list_rows=info.list_rows,
            examples=info.examples,
            passages=info.passages,
            files=info.files,
            site_stages_s=info.stage_seconds,
        )
    print("RESULT " + json.dumps(out), flush=True)


def sizes(site: Path) -> dict:
    def mib(paths) -> float:
        return round(sum(p.stat().st_size for p in paths) / MIB, 1)

    data = site / "data"
    return {
        "site_mib": mib(p for p in site.rglob("*") if p.is_file()),
        "overview_kib": round((data / "overview.js").stat().st_size / 1024, 1),
        "index_kib": round((data / "index.js").stat().st_size / 1024, 1),
        "rows_mib": mib(data.glob("rows-*.js")),
        "examples_mib": mib((data / "ex").glob("*.js")),
        "passages_mib": mib((data / "p").glob("*.js")),
        "largest_example_shard_kib": round(
            max(p.stat().st_size for p in (data / "ex").glob("*.js")) / 1024, 1
        ),
    }


def browse(site: Path, example: int) -> dict:
    sys.path.insert(0, str(REPO))
    from playwright.sync_api import sync_playwright

    from tests import browser

    reason, _ = browser.install()
    if reason:
        return {"browser": reason}
    out = {}
    with sync_playwright() as pw:
        b = browser.launch(pw)

        def timed(url: str, selector: str) -> tuple[float, object]:
            ctx = b.new_context(viewport={"width": 1280, "height": 900})
            page = ctx.new_page()
            t = time.perf_counter()
            page.goto(url)
            page.wait_for_selector(selector, timeout=600_000)
            return round(time.perf_counter() - t, 2), (ctx, page)

        out["overview_s"], (ctx, _) = timed((site / "index.html").as_uri(), "body[data-ready='1']")
        ctx.close()
        out["examples_first_page_s"], (ctx, page) = timed(
            (site / "examples.html").as_uri(), "#rows tr[data-ex]"
        )
        page.wait_for_selector("body[data-ready='1']", timeout=600_000)
        t = time.perf_counter()
        out["examples_all_rows_s"] = round(out["examples_first_page_s"] + time.perf_counter() - t, 2)
        t = time.perf_counter()
        page.check("#f-flip-ndr")
        page.wait_for_function("document.getElementById('count').textContent.indexOf(' of ') > 0")
        out["ndr_filter_s"] = round(time.perf_counter() - t, 2)
        out["ndr_rows"] = page.inner_text("#count")
        ctx.close()
        # the largest cell: k = 100 of the first retriever, original order
        url = (site / "example.html").as_uri() + f"#e={example}"
        out["example_s"], (ctx, page) = timed(url, "body[data-ready='1'] #panel-a h3")
        page.click("button.cell[aria-label^='bm25, k = 100, shuffled']")
        page.wait_for_selector("#panel-a h3:has-text('k = 100, shuffled')")
        out["example_docs_shown"] = page.locator("#panel-a li.doc").count()
        ctx.close()
        b.close()
    return out


def machine() -> dict:
    return {
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}",
        "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "load_avg": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scales", nargs="+", default=["3610x3", "3000x9"], help="QUESTIONSxSYSTEMS")
    p.add_argument("--resamples", type=int, default=1000)
    p.add_argument("--text-chars", type=int, default=300, help="length of each made-up passage")
    p.add_argument("--work", type=Path, default=None, help="working folder (default: a temporary one)")
    p.add_argument("--out", type=Path, default=None, help="write the results here (JSON)")
    p.add_argument("--quick", action="store_true", help="12 questions x 3 systems, 50 resamples (seconds)")
    p.add_argument("--no-site", action="store_true", help="rr report's sections only: no site, no browser")
    p.add_argument("--profile", default=None, help="cProfile this report section (e.g. paper_beside)")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.quick:
        args.scales, args.resamples = ["12x3"], 50
    if args.child:
        child(json.loads(args.child))
        return
    work = args.work or Path(tempfile.mkdtemp(prefix="rr-site-scale-"))
    results = {"machine": machine(), "resamples": args.resamples, "text_chars": args.text_chars, "scales": []}
    for scale in args.scales:
        q, s = (int(x) for x in scale.split("x"))
        root = work / scale
        shutil.rmtree(root, ignore_errors=True)
        t = time.perf_counter()
        made = write_sweep(root, q, s, args.text_chars)
        made["write_s"] = round(time.perf_counter() - t, 1)
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        spec = {
            "sweep": str(root / "sweep"),
            "report": str(root / "report"),
            "resamples": args.resamples,
            "site": not args.no_site,
            "profile": args.profile,
        }
        load_before = [round(x, 2) for x in os.getloadavg()]
        proc = subprocess.run(
            [sys.executable, __file__, "--child", json.dumps(spec)], capture_output=True, text=True, env=env
        )
        line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
        if line is None:
            raise RuntimeError(f"child failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
        row = {"scale": scale, "questions": q, "systems": s, **made, **json.loads(line[7:])}
        row["load_avg_before_after"] = [load_before, [round(x, 2) for x in os.getloadavg()]]
        row["site_share_of_report"] = round(row["site_s"] / row["report_s"], 3)
        if not args.no_site:
            row.update(sizes(root / "report" / "site"))
            row.update(browse(root / "report" / "site", example=q // 2))
        results["scales"].append(row)
        print(json.dumps(row), flush=True)
        shutil.rmtree(root / "sweep", ignore_errors=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
