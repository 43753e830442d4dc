"""The overview's paper-beside table linked to the examples behind each matched value: a column
``examples`` holding ``examples.html#ds=...&sys=...&k=...`` (the examples list's own URL filters) for each
paper value the run matched (:mod:`rr.reporting.paper_beside`), null for the others."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import numpy as np

from rr.reporting.site.format import Section, Table
from rr.reporting.site.index import ScoreIndex

#: The report table whose rows get the link, and the column its matched jobs are in.
TABLE, JOBS, LINK = "paper_values", "jobs", "examples"


def examples_link(idx: ScoreIndex, jobs: str) -> str | None:
    """The examples list filtered to the rows of ``jobs`` (comma-separated job ids): their dataset where
    there is one, the system of their k > 0 rows (of all rows if none) and their k > 0 where there is one of
    each; None for no rows."""
    ids = [j for j in str(jobs or "").split(",") if j]
    if not ids:
        return None
    mask = idx.df["job_id"].astype(str).isin(ids).to_numpy()
    if not mask.any():
        return None
    params: dict[str, Any] = {}
    datasets = idx.df.loc[mask, "dataset"].astype(str).unique() if "dataset" in idx.df else []
    if len(datasets) == 1:
        params["ds"] = datasets[0]
    rag = mask & (idx.k > 0)  # the rows a value reads (a job's closed-book rows may be another system)
    systems = np.unique(idx.sys[rag if rag.any() else mask])
    if len(systems) == 1:
        params["sys"] = int(systems[0])
    ks = np.unique(idx.k[rag])
    if len(ks) == 1:
        params["k"] = int(ks[0])
    return "examples.html#" + "&".join(f"{key}={quote(str(v), safe='')}" for key, v in params.items())


def link_paper_values(sections: list[dict[str, Any]], idx: ScoreIndex) -> None:
    """Add the ``examples`` column to the overview's ``paper_values`` table (in place)."""
    for sec in sections:
        for item in sec.get(Section.items, []):
            if item.get(Table.table) != TABLE or JOBS not in item[Table.columns]:
                continue
            at = item[Table.columns].index(JOBS)
            item[Table.columns] = [*item[Table.columns], LINK]
            item[Table.rows] = [[*row, examples_link(idx, row[at])] for row in item[Table.rows]]
