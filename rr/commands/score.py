"""``rr score FILE [FILE ...] [--out DIR] [--map COLUMN=FIELD] [--set COLUMN=VALUE] [overrides]``:
predictions made elsewhere, scored into a job folder (:mod:`rr.predictions`).

Overrides are rr's own (``judge=rgb``, ``scoring.text=whole``, ``logger=wandb``, ``name=...``,
``corpus=jsonl corpus.path=...`` for the documents' texts); ``--map`` and ``--set`` say where each
column comes from. Bad records print one line each (``file:line: what is wrong``) and nothing is
written; an existing folder is never written into.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rr.errors import ConfigError


def _pairs(items: list[str], flag: str) -> dict[str, str]:
    out = {}
    for item in items:
        column, sep, value = item.partition("=")
        if not sep or not column:
            raise ConfigError(flag, f"expected COLUMN=VALUE, got {item!r} (e.g. {flag} model=Llama-3.1-8B)")
        out[column.strip()] = value
    return out


def main(argv: list[str]) -> int:
    from rr.predictions import COLUMNS, OPTIONAL, REQUIRED

    p = argparse.ArgumentParser(
        prog="rr score",
        description="Score predictions made elsewhere into a job folder that rr report, the site, "
        "rr status, W&B and rr.results.load read as any job's. One record per (question, cell): JSON "
        f"lines, a JSON array, CSV or parquet, with {', '.join(REQUIRED)} and prediction (scored as "
        f"given) or output (the raw generation, through scoring.text); optional: {', '.join(OPTIONAL)}. "
        "Closed-book records: k=0, retriever and order empty.",
    )
    p.add_argument("items", nargs="+", metavar="FILE | OVERRIDE", help="predictions files, then rr overrides")
    p.add_argument(
        "--out", type=Path, help="the job folder (default: <paths.output_root>/scored/<file name>)"
    )
    p.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="COLUMN=FIELD",
        help="read COLUMN from FIELD (a dotted path reads a nested field: output.pred)",
    )
    p.add_argument(
        "--set", action="append", default=[], metavar="COLUMN=VALUE", help="COLUMN is VALUE in every record"
    )
    args = p.parse_intermixed_args(argv)
    files = [i for i in args.items if "=" not in i or Path(i).is_file()]
    overrides = [i for i in args.items if i not in files]
    if not files:
        raise ConfigError("FILE", "no predictions file given: rr score FILE [--out DIR] [overrides]")
    from rr.config.composition import compose
    from rr.predictions import BadPredictions, Columns, log_job, score_predictions, write_job
    from rr.reporting.job import print_summary

    columns = Columns(_pairs(args.map, "--map"), _pairs(args.set, "--set"))
    assert set(columns.fields) | set(columns.values) <= set(COLUMNS)
    if not any(o.startswith("name=") for o in overrides):  # the job's name: the file's, not the demo's
        overrides = [*overrides, f"name={Path(files[0]).name.split('.')[0]}"]
    base = compose(overrides)
    out = args.out or Path(str(base.paths.output_root), "scored", Path(files[0]).name.split(".")[0])
    corpus_chosen = any(o.lstrip("+~").split("=")[0].split(".")[0] == "corpus" for o in overrides)
    try:
        jobs = score_predictions(base, files, columns, out, corpus_overridden=corpus_chosen)
    except BadPredictions as e:
        for line in e.bad:
            print(line, file=sys.stderr)
        raise
    for job in jobs:
        if job.already:
            print(f"already scored (the same files and settings): {job.folder}; nothing written")
            continue
        write_job(job)
        log_job(job)
        print_summary(job.summary, job.folder)
    where = out if len(jobs) > 1 or jobs[0].folder == out else jobs[0].folder
    print(f"report and result site: rr report {where}")
    return 0
