"""The report's result browser: a static, self-contained, offline site under ``<report>/site/``.

:func:`build_site` turns a built :class:`~rr.reporting.core.Report` (its score table, jobs and
sections) into HTML pages, one stylesheet and a few scripts (``rr/reporting/site_assets/``,
written for rr: no library, no CDN, no network) plus data files::

    index.html                 overview: jobs and their config differences, sweep states, every
                               report table with its intervals, the figures
    examples.html              one row per (example, system), paged, with filters and flip filters
    example.html#e=<i>         one example: the cell grid of each system, a chosen cell's
                               documents in prompt order, output, prediction, verdict; two cells
                               side by side; a perturbed query as a character-level diff
    data/overview.js           the overview's data
    data/index.js              systems, cells, datasets, flip kinds, McNemar pairs, shard bounds
    data/pairs.js              each McNemar pair's discordant examples and cells (the examples list)
    data/rows-NNN.js           the examples list, in chunks of whole examples
    data/ex/e-NNN.js           example shards: every row of a few examples (loaded by example.html)
    data/p/p-NNN.js            passage shards: each passage text once (loaded when a page needs it)
    figures/, tables/          the report's PNG figures and CSV tables, copied

Pages open from ``file://``, where Chromium refuses ``fetch()`` of local files, so every data
file is a script that calls ``RR.load(kind, key, payload)`` (JSONP-style) and pages add
``<script>`` tags for what they need: the overview loads one small file, the examples list its
row chunks, an example page one example shard and the passage shards its documents live in.

**Flips** (the examples list's flip filters) are computed here by :mod:`rr.metrics.flips`, from
the metrics' own decompositions, per system (:func:`rr.reporting.core.system_by`) and cell; the
pages only read them. Each (example, system) row carries one character per cell of its system
for the score and one for the flip kinds failing at that cell (a bit mask, :data:`FLIP_BITS`).

**Documents.** ``doc_ids`` of each row are the passages in prompt order. Texts come from the
job's corpus (its ``config.yaml`` names it; loaded once per distinct corpus config). A passage
missing from the corpus (one a document perturbation made) or a corpus that cannot be loaded
any more is shown by its id, saying so. A rank is the passage's position in the longest
``original``-order list of the same job, example, retriever and perturbations (the retriever's
ranking as the prompts show it).
"""

from __future__ import annotations

import difflib
import gc
import json
import logging
import math
import shutil
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rr.metrics.flips import (
    KINDS,
    discordant_cells,
    doc_perturbation_flips,
    query_perturbation_flips,
    robustness_flips,
)
from rr.reporting.comparisons import system_pairs
from rr.reporting.core import Report, ReportContext, ReportTable, system_by, system_label
from rr.results import CELL_KEYS

log = logging.getLogger(__name__)

#: Bit of each flip kind in a row's flip characters.
FLIP_BITS = {kind: 1 << i for i, kind in enumerate(KINDS)}
#: What each flip kind means, and the metric it belongs to (shown on the pages).
FLIP_LABELS = {
    "ndr": ("NDR flip", "NDR", "right closed-book (k = 0), worse at some k > 0 cell"),
    "rsr": ("RSR flip", "RSR", "worse at a larger k than at a smaller k, same retriever and order"),
    "ror": ("ROR flip", "ROR", "different scores across document orders at the same retriever and k"),
    "query": (
        "query-perturbation flip",
        "query-level Match",
        "perturbed query's verdict differs from the original query's, same cell",
    ),
    "doc": (
        "doc-perturbation flip",
        "SURE RR / WR / LR",
        "verdict changes when the documents are perturbed, same cell (LR or WR)",
    ),
}
#: Characters of a flip mask (0..31).
FLIP_CHARS = "0123456789abcdefghijklmnopqrstuv"
#: Score characters: exact 0 and 1, else ``a`` + round(20 * score), ``-`` when the cell is missing.
MISSING = "-"
#: Byte budgets of the data files.
ROWS_PER_CHUNK = 4000
EXAMPLE_SHARD_BYTES = 300_000
PASSAGE_SHARD_BYTES = 600_000
#: Rows of a report table shown on the overview (the CSV in ``tables/`` has all of them).
TABLE_ROWS = 500
ASSETS = ("rr.css", "rr.js", "overview.js", "examples.js", "example.js")
#: file -> (page script, title); the pages are ``site_assets/page.html`` filled in.
PAGES = {
    "index.html": ("overview", "overview"),
    "examples.html": ("examples", "examples"),
    "example.html": ("example", "example"),
}
#: The navigation bar's links: (file, label).
NAV = (("index.html", "Overview"), ("examples.html", "Examples"))


@dataclass
class SiteInfo:
    """What :func:`build_site` wrote: the folder, its size and counts, and what it could not do."""

    out_dir: Path
    bytes: int = 0
    files: int = 0
    examples: int = 0
    list_rows: int = 0
    passages: int = 0
    passages_unreadable: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    stage_seconds: dict[str, float] = field(default_factory=dict)


def build_site(
    report: Report,
    out_dir: str | Path | None = None,
    *,
    scores: pd.DataFrame | None = None,
    context: ReportContext | None = None,
    corpus_loader: Callable[[Path], Any] | None = None,
) -> SiteInfo:
    """Write the result browser of a built report.

    Args:
        report: The report (:func:`rr.reporting.core.build_report`'s result; its ``scores`` and
            ``context`` are what the site shows).
        out_dir: Site folder (default ``<report folder>/site``); its ``data/`` is replaced.
        scores: The score table, when ``report`` does not carry it.
        context: The jobs read, when ``report`` does not carry them.
        corpus_loader: ``job folder -> Corpus`` (default: the corpus the job's ``config.yaml``
            names, instantiated and loaded); raising means the texts are not readable.

    Returns:
        A :class:`SiteInfo`; ``index.html`` in ``out_dir`` is the overview.
    """
    # millions of small objects (passages, cells) and no cycles among them: the cyclic collector
    # would rescan the score table's objects again and again (a third of the time at 4e5 rows)
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _build_site(report, out_dir, scores, context, corpus_loader)
    finally:
        if gc_was_enabled:
            gc.enable()


def _build_site(
    report: Report,
    out_dir: str | Path | None,
    scores: pd.DataFrame | None,
    context: ReportContext | None,
    corpus_loader: Callable[[Path], Any] | None,
) -> SiteInfo:
    t0 = time.perf_counter()
    df = report.scores if scores is None else scores
    ctx = report.context if context is None else context
    if df is None or ctx is None:
        raise ValueError("build_site needs the report's score table and context (build_report sets both)")
    out = Path(out_dir) if out_dir is not None else report.out_dir / "site"
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("data", "figures", "tables"):
        shutil.rmtree(out / stale, ignore_errors=True)
    (out / "data" / "ex").mkdir(parents=True)
    (out / "data" / "p").mkdir(parents=True)
    info = SiteInfo(out)
    _copy_assets(out)
    _copy_report_files(report, out)

    clock = _Clock(info.stage_seconds)
    model = _Model(df.reset_index(drop=True), ctx, clock)
    info.notes += model.notes
    _write(out / "data" / "overview.js", "overview", None, _overview(report, ctx, model))
    clock("overview")
    model.write_rows(out / "data")
    clock("rows")
    passages = _Passages(ctx, corpus_loader or _job_corpus)
    model.write_examples(out / "data" / "ex", passages)
    clock("examples")
    passages.write(out / "data", clock)
    _write(out / "data" / "index.js", "index", None, model.index(passages))
    _write(
        out / "data" / "pairs.js",
        "pairs",
        None,
        [{"ex": p["ex"], "a_right": p["a_right"], "b_right": p["b_right"]} for p in model.pairs],
    )
    clock("passages")
    info.notes += passages.notes
    info.examples, info.list_rows = len(model.examples), model.n_list_rows
    info.passages, info.passages_unreadable = len(passages.items), passages.unreadable
    files = [f for f in out.rglob("*") if f.is_file()]
    info.files, info.bytes = len(files), sum(f.stat().st_size for f in files)
    info.seconds = time.perf_counter() - t0
    return info


class _Clock:
    """Adds the seconds since its last call to ``stages[name]`` (the stages of :class:`SiteInfo`)."""

    def __init__(self, stages: dict[str, float]) -> None:
        self.stages = stages
        self.last = time.perf_counter()

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        self.stages[name] = round(self.stages.get(name, 0.0) + now - self.last, 3)
        self.last = now


# ----------------------------------------------------------------------------- files


def _write(path: Path, kind: str, key: int | None, payload: Any) -> int:
    """Write ``RR.load(kind, key, payload);`` to ``path``; return the bytes written."""
    text = f"RR.load({json.dumps(kind)},{json.dumps(key)},{_json(payload)});\n"
    data = text.encode("utf-8")
    path.write_bytes(data)
    return len(data)


def _json(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_plain)


def _plain(obj: Any) -> Any:
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return _num(float(obj))
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    return str(obj)


def _num(v: Any) -> Any:
    """A JSON-safe number: None for NaN / inf, floats to 10 significant digits."""
    if v is None:
        return None
    if isinstance(v, bool | np.bool_):
        return bool(v)
    if isinstance(v, int | np.integer):
        return int(v)
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    if not math.isfinite(f):
        return None
    return float(f"{f:.10g}")


def _copy_assets(out: Path) -> None:
    assets = resources.files("rr.reporting") / "site_assets"
    (out / "assets").mkdir(exist_ok=True)
    for name in ASSETS:
        (out / "assets" / name).write_bytes((assets / name).read_bytes())
    template = (assets / "page.html").read_text(encoding="utf-8")
    for name, (script, title) in PAGES.items():
        current = ' aria-current="page"'
        nav = "".join(f'<a href="{h}"{current if h == name else ""}>{label}</a>' for h, label in NAV)
        html = template.replace("$TITLE", title).replace("$PAGE", script).replace("$NAV", nav)
        (out / name).write_text(html, encoding="utf-8")


def _copy_report_files(report: Report, out: Path) -> None:
    for sub, ext in (("figures", ".png"), ("tables", ".csv")):
        files = [f for f in report.files if f.suffix == ext and f.parent.name == sub and f.exists()]
        if files:
            (out / sub).mkdir(exist_ok=True)
        for f in files:
            shutil.copyfile(f, out / sub / f.name)


# ----------------------------------------------------------------------------- overview


def _overview(report: Report, ctx: ReportContext, model: _Model) -> dict[str, Any]:
    jobs = []
    configs = {}
    for job in ctx.jobs:
        configs[job.job_id] = _flat_config(job.path / "config.yaml")
        s = job.summary
        jobs.append(
            {
                "job_id": job.job_id,
                "rows": job.rows,
                "folder": str(job.path),
                "model_calls": s.get("model_calls"),
                "cache_hits": s.get("cache_hits"),
                "wall_s": _num(s.get("wall_s")),
                "accuracy": _num(s.get("accuracy")),
                "closed_book_accuracy": _num(s.get("closed_book_accuracy")),
            }
        )
    keys = sorted({k for c in configs.values() for k in c})
    differ = [
        k
        for k in keys
        if not k.startswith(("paths.", "hydra.", "progress", "logger."))
        and len({json.dumps(c.get(k), default=str) for c in configs.values()}) > 1
    ]
    for j in jobs:
        j["config"] = {k: configs[j["job_id"]].get(k) for k in differ}
    sections = []
    for o in report.outcomes:
        sec: dict[str, Any] = {"name": o.section.name, "title": o.section.title}
        if o.skipped:
            sec["skipped"] = o.skipped
        if o.error:
            sec["error"] = o.error
        items = []
        for item in o.items:
            if isinstance(item, ReportTable):
                items.append(_table(item))
            else:
                items.append({"figure": item.name, "title": item.title, "caption": item.caption})
        sec["items"] = items
        sections.append(sec)
    return {
        "title": "rr report",
        "rows": int(len(model.df)),
        "examples": len(model.examples),
        "systems": len(model.systems),
        "resamples": ctx.n_resamples,
        "confidence": ctx.confidence,
        "seed": ctx.seed,
        "jobs": jobs,
        "config_keys": differ,
        "sweeps": _sweeps(ctx),
        "sections": sections,
        "flip_counts": model.flip_counts(),
        "pairs": [
            {
                "label": p["label"],
                "differs_in": p["differs_in"],
                "dataset": p["dataset"],
                "examples": len(p["ex"]),
            }
            for p in model.pairs
        ],
        "pairs_apart": [
            {k: p[k] for k in ("label", "differs_in", "dataset", "reason")} for p in model.pairs_apart
        ],
        "notes": model.notes,
    }


def _table(table: ReportTable) -> dict[str, Any]:
    df = table.df
    cols = [str(c) for c in df.columns]
    rows = [
        [_num(v) if not isinstance(v, str) else v for v in r]
        for r in df.head(TABLE_ROWS).itertuples(index=False)
    ]
    return {
        "table": table.name,
        "title": table.title,
        "caption": table.caption,
        "digits": table.digits,
        "columns": cols,
        "rows": rows,
        "total_rows": int(len(df)),
    }


def _flat_config(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        from omegaconf import OmegaConf

        cfg = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    except Exception as err:  # a torn or foreign config: show the jobs without it
        log.warning("site: %s unreadable: %s", path, err)
        return {}
    flat: dict[str, Any] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, f"{prefix}{k}.")
        else:
            flat[prefix[:-1]] = (
                node if isinstance(node, str | int | float | bool) or node is None else str(node)
            )

    walk(cfg, "")
    return flat


def _sweeps(ctx: ReportContext) -> list[dict[str, Any]]:
    """Done / partial / missing jobs (``rr status``) of every sweep folder the jobs lie in."""
    roots = sorted({j.path.parent for j in ctx.jobs if (j.path.parent / "multirun.yaml").exists()})
    out: list[dict[str, Any]] = []
    for root in roots:
        try:
            from rr.resume import status

            states = status(root)
        except Exception as err:  # the sweep's configs may no longer compose
            out.append({"folder": str(root), "error": f"{type(err).__name__}: {err}", "jobs": []})
            continue
        out.append(
            {
                "folder": str(root),
                "jobs": [
                    {"job_id": s.job_id, "state": s.state, "folder": str(s.path or ""), "detail": s.detail}
                    for s in states
                ],
            }
        )
    return out


# ----------------------------------------------------------------------------- the model


def _score_chars(scores: np.ndarray) -> np.ndarray:
    """One byte per score: ``0``/``1`` exactly, else ``a`` + round(20 * score)."""
    out = (ord("a") + np.rint(np.clip(scores, 0.0, 1.0) * 20)).astype(np.uint8)
    out[scores == 0.0] = ord("0")
    out[scores == 1.0] = ord("1")
    out[np.isnan(scores)] = ord(MISSING)
    return out


class _Model:
    """The score table indexed for the site: examples, systems, cells, list rows and flips."""

    def __init__(self, df: pd.DataFrame, ctx: ReportContext, clock: _Clock) -> None:
        self.notes: list[str] = []
        if "job_id" not in df.columns:
            df = df.assign(job_id="job")
        self.df = df
        self.by = system_by(df)
        self.sys_cols = [c for c in self.by if c != "dataset"]
        ds = df["dataset"].astype(str) if "dataset" in df.columns else pd.Series("", index=df.index)
        ex_frame = pd.DataFrame({"ds": ds, "id": df["example_id"].astype(str)})
        ex_codes = ex_frame.groupby(["ds", "id"], sort=True).ngroup().to_numpy()
        self.examples = ex_frame.drop_duplicates().sort_values(["ds", "id"]).reset_index(drop=True)
        self.ex = ex_codes
        grouped = df.groupby(self.sys_cols, sort=True, dropna=False) if self.sys_cols else None
        self.sys = grouped.ngroup().to_numpy() if grouped is not None else np.zeros(len(df), dtype=int)
        first = df.groupby(self.sys, sort=True).head(1).sort_index()
        first = first.assign(_s=self.sys[first.index]).sort_values("_s")
        self.systems: list[dict[str, Any]] = [
            {
                "label": system_label(r, self.sys_cols) if self.sys_cols else "all",
                "cols": {c: str(r[c]) for c in self.sys_cols},
            }
            for _, r in first.iterrows()
        ]
        k = pd.to_numeric(df["k"]).astype(int).to_numpy()
        retr = df["retriever"].astype(str).to_numpy()
        order = df["order"].astype(str).to_numpy()
        cell_frame = pd.DataFrame({"k": k, "r": retr, "o": order})
        cell_codes = cell_frame.groupby(["k", "r", "o"], sort=True).ngroup().to_numpy()
        self.cells = cell_frame.drop_duplicates().sort_values(["k", "r", "o"]).values.tolist()
        self.cell = cell_codes
        self.k = k
        # each system's cells, and a row's position among them
        pairs = pd.DataFrame({"s": self.sys, "c": self.cell}).drop_duplicates().sort_values(["s", "c"])
        self.sys_cells: list[list[int]] = [[] for _ in self.systems]
        for s, c in zip(pairs["s"], pairs["c"], strict=True):
            self.sys_cells[int(s)].append(int(c))
        pos_map = {(s, c): i for s, cells in enumerate(self.sys_cells) for i, c in enumerate(cells)}
        pos = pairs.assign(p=[pos_map[(int(s), int(c))] for s, c in zip(pairs["s"], pairs["c"], strict=True)])
        self.pos = (
            pd.DataFrame({"s": self.sys, "c": self.cell})
            .merge(pos, on=["s", "c"], how="left")["p"]
            .to_numpy()
        )
        # list rows: (example, system), sorted by example then system
        n_sys = max(len(self.systems), 1)
        key = self.ex.astype(np.int64) * n_sys + self.sys
        uniq, self.row = np.unique(key, return_inverse=True)
        self.list_ex = (uniq // n_sys).astype(int)
        self.list_sys = (uniq % n_sys).astype(int)
        self.n_list_rows = len(uniq)
        widths = np.array([len(self.sys_cells[s]) for s in self.list_sys], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(widths)])
        scores = pd.to_numeric(df["score"], errors="coerce").astype(float).to_numpy()
        self.score = scores
        slot = self.offsets[self.row] + self.pos
        dup = np.bincount(slot, minlength=int(self.offsets[-1])) > 1
        if dup.any():
            self.notes.append(
                f"{int(dup.sum())} (example, system, cell)s have several rows (the grouping does not "
                "separate them); the site shows the first"
            )
        buf = np.full(int(self.offsets[-1]), ord(MISSING), dtype=np.uint8)
        buf[slot[::-1]] = _score_chars(scores)[::-1]  # the first row wins
        self.score_buf = buf
        self.flip_buf = np.zeros(int(self.offsets[-1]), dtype=np.uint8)
        self.flip_errors: dict[str, list[str]] = {kind: [] for kind in KINDS}
        rag = k > 0
        acc_sum = np.bincount(self.row[rag], weights=scores[rag], minlength=self.n_list_rows)
        acc_n = np.bincount(self.row[rag], minlength=self.n_list_rows)
        cb_sum = np.bincount(self.row[~rag], weights=scores[~rag], minlength=self.n_list_rows)
        cb_n = np.bincount(self.row[~rag], minlength=self.n_list_rows)
        with np.errstate(invalid="ignore", divide="ignore"):
            self.acc = np.where(acc_n > 0, acc_sum / np.maximum(acc_n, 1), np.nan)
            self.cb = np.where(cb_n > 0, cb_sum / np.maximum(cb_n, 1), np.nan)
        self.pairs: list[dict[str, Any]] = []
        self.pairs_apart: list[dict[str, Any]] = []
        clock("index")
        self._flips()
        clock("flips")
        self._mcnemar()
        clock("mcnemar")

    # -- flips -----------------------------------------------------------------------

    def _mark(self, rows: np.ndarray, kind: str) -> None:
        if len(rows):
            np.bitwise_or.at(self.flip_buf, self.offsets[self.row[rows]] + self.pos[rows], FLIP_BITS[kind])

    def _rows_of(self, flips: pd.DataFrame, on: list[str]) -> np.ndarray:
        """Row numbers of ``self.df`` matching ``flips`` on ``on`` (values compared as strings)."""
        if flips.empty:
            return np.array([], dtype=int)
        left = self.df[on].astype(str).assign(_row=np.arange(len(self.df)))
        right = flips[on].astype(str).drop_duplicates()
        return left.merge(right, on=on, how="inner")["_row"].to_numpy()

    def _flips(self) -> None:
        df = self.df
        cell = ["example_id", "retriever", "k", "order"]
        needed = {"example_id", "k", "order", "score", "retriever"}
        if needed <= set(df.columns):
            slim = df[list(dict.fromkeys([*needed, *self.by]))]  # not the wide columns (doc_ids, outputs)
            for key, group in slim.groupby(self.by, sort=True, dropna=False) if self.by else [((), slim)]:
                try:
                    flips = robustness_flips(group)
                except ValueError as err:
                    label = ", ".join(f"{c}={v}" for c, v in zip(self.by, np.atleast_1d(key), strict=False))
                    for kind in ("ndr", "rsr", "ror"):
                        self.flip_errors[kind].append(f"{label}: {err}")
                    continue
                sub = group[cell].astype(str).assign(_row=group.index.to_numpy())
                for kind in ("ndr", "rsr", "ror"):
                    mine = flips.loc[flips["kind"] == kind, cell].astype(str)
                    rows = sub.merge(mine, on=cell, how="inner")["_row"].to_numpy()
                    self._mark(rows, kind)
        if "query_perturbation" in df.columns and (df["query_perturbation"].astype(str) != "none").any():
            try:
                qf = query_perturbation_flips(df)
                on = [c for c in qf.columns if c not in ("y_original", "y_perturbed", "C")]
                self._mark(self._rows_of(qf, on), "query")
            except ValueError as err:
                self.flip_errors["query"].append(str(err))
        if "doc_perturbation" in df.columns and (df["doc_perturbation"].astype(str) != "none").any():
            try:
                dfl = doc_perturbation_flips(df)
                on = [c for c in dfl.columns if c not in ("y_original", "y_perturbed", "C")]
                self._mark(self._rows_of(dfl, on), "doc")
            except ValueError as err:
                self.flip_errors["doc"].append(str(err))
        for kind, errs in self.flip_errors.items():
            if errs:
                self.notes.append(f"{FLIP_LABELS[kind][0]}s not computed for {len(errs)} group(s): {errs[0]}")

    def _mcnemar(self) -> None:
        """The McNemar pairs: exactly the pairs ``rr report``'s paired tests compare, taken from the
        one pairing rule (:func:`rr.reporting.comparisons.system_pairs`: same dataset, one grouping
        column apart, the same examples and (retriever, k, order) cells; at least two examples, as
        :func:`~rr.reporting.comparisons.paired_comparisons` asks), each with the cells of each
        example where one system is right and the other wrong. The pairs the rule leaves out go to
        :attr:`pairs_apart` with its reason (the overview lists them)."""
        df = self.df
        needed = {"example_id", "k", "order", "score", "retriever"}
        if not needed <= set(df.columns) or not self.sys_cols:
            return
        # the columns the rule reads: the wide ones (doc_ids, outputs) stay out of its groupby
        slim = df[list(dict.fromkeys([*self.by, "example_id", *CELL_KEYS, "score"]))]
        try:
            found = list(system_pairs(slim, list(self.by)))
        except (ValueError, KeyError) as err:  # not a valid table for the metrics
            self.notes.append(f"McNemar pairs not offered: {err}")
            return
        ds = df["dataset"].astype(str).to_numpy() if "dataset" in df.columns else np.full(len(df), "")
        number = {
            (d, tuple(sysd["cols"][c] for c in self.sys_cols)): s
            for s, sysd in enumerate(self.systems)
            for d in np.unique(ds[self.sys == s]).tolist()
        }
        # example and cell as numbers: the wide columns stay out of the merges
        numbered = pd.DataFrame({"example_id": self.ex, "_c": self.cell, "score": self.score})
        for diff, la, lb, a, _b, why in found:
            d = str(la.get("dataset", ""))
            sa = number[(d, tuple(str(la[c]) for c in self.sys_cols))]
            sb = number[(d, tuple(str(lb[c]) for c in self.sys_cols))]
            pair = {
                "a": sa,
                "b": sb,
                "dataset": d,
                "differs_in": diff[0],
                "label": f"{system_label(la, diff)} vs {system_label(lb, diff)}",
            }
            if why or len(a.examples) < 2:
                self.pairs_apart.append({**pair, "reason": why or "fewer than two examples"})
                continue
            rows_a = numbered.loc[(self.sys == sa) & (ds == d)]
            rows_b = numbered.loc[(self.sys == sb) & (ds == d)]
            disc = discordant_cells(rows_a, rows_b, cell=("_c",)).sort_values(["example_id", "_c"])
            e, c, right = (disc[k].to_numpy() for k in ("example_id", "_c", "a_right"))
            exs = np.unique(e)

            def cells_of(mask: np.ndarray, e=e, c=c, exs=exs) -> list[list[int]]:
                ee, cc = e[mask], c[mask]
                lo, hi = np.searchsorted(ee, exs, "left"), np.searchsorted(ee, exs, "right")
                return [cc[x:y].tolist() for x, y in zip(lo, hi, strict=True)]

            pair["ex"] = exs.tolist()
            pair["a_right"] = cells_of(right.astype(bool))
            pair["b_right"] = cells_of(~right.astype(bool))
            self.pairs.append(pair)

    def flip_counts(self) -> dict[str, Any]:
        out = {}
        for kind, bit in FLIP_BITS.items():
            rows = np.zeros(self.n_list_rows, dtype=bool)
            hit = (self.flip_buf & bit) > 0
            if hit.any():
                owner = np.searchsorted(self.offsets, np.nonzero(hit)[0], side="right") - 1
                rows[owner] = True
            out[kind] = {
                "label": FLIP_LABELS[kind][0],
                "metric": FLIP_LABELS[kind][1],
                "means": FLIP_LABELS[kind][2],
                "rows": int(rows.sum()),
                "errors": self.flip_errors[kind],
            }
        return out

    # -- the examples list -----------------------------------------------------------

    def _questions(self) -> tuple[list[str], list[list[str]]]:
        """Each example's original question (query_perturbation none when present) and answers."""
        df = self.df
        qcol = df["question"].astype(str) if "question" in df.columns else df["example_id"].astype(str)
        orig = (
            (df["query_perturbation"].astype(str) == "none").to_numpy()
            if "query_perturbation" in df.columns
            else np.ones(len(df), dtype=bool)
        )
        order = np.lexsort((~orig, self.ex))  # per example, original-query rows first
        first = order[np.concatenate([[True], self.ex[order][1:] != self.ex[order][:-1]])]
        questions = qcol.to_numpy()[first].tolist()
        if "answers" in df.columns:
            answers = [[str(a) for a in _as_list(v)] for v in df["answers"].to_numpy()[first]]
        else:
            answers = [[] for _ in first]
        return questions, answers

    def write_rows(self, data: Path) -> None:
        self.questions, self.answers = self._questions()
        score_str = self.score_buf.tobytes().decode("ascii")
        flip_str = np.frombuffer(FLIP_CHARS.encode(), dtype=np.uint8)[self.flip_buf].tobytes().decode("ascii")
        self.row_chunks: list[int] = []  # first list row of each chunk
        start = 0
        n = self.n_list_rows
        chunk = 0
        while start < n:
            end = min(start + ROWS_PER_CHUNK, n)
            while end < n and self.list_ex[end] == self.list_ex[end - 1]:
                end += 1  # whole examples per chunk
            ex0, ex1 = int(self.list_ex[start]), int(self.list_ex[end - 1]) + 1
            off = self.offsets
            payload = {
                "first": start,
                "ex0": ex0,
                "id": self.examples["id"].iloc[ex0:ex1].tolist(),
                "ds": self.examples["ds"].iloc[ex0:ex1].tolist(),
                "q": self.questions[ex0:ex1],
                "a": self.answers[ex0:ex1],
                "ex": self.list_ex[start:end].tolist(),
                "sys": self.list_sys[start:end].tolist(),
                "sc": [score_str[off[i] : off[i + 1]] for i in range(start, end)],
                "fl": [flip_str[off[i] : off[i + 1]] for i in range(start, end)],
                "acc": [_num(v) for v in self.acc[start:end]],
                "cb": [_num(v) for v in self.cb[start:end]],
            }
            _write(data / f"rows-{chunk:03d}.js", "rows", chunk, payload)
            self.row_chunks.append(start)
            start, chunk = end, chunk + 1

    # -- example shards --------------------------------------------------------------

    def write_examples(self, folder: Path, passages: _Passages) -> None:
        df = self.df
        order = np.lexsort((self.cell, self.sys, self.ex))
        col = _Columns(df, order)
        ex_sorted = self.ex[order]
        bounds = np.concatenate([[0], np.nonzero(np.diff(ex_sorted))[0] + 1, [len(order)]])
        self.ex_shards: list[int] = []  # first example of each shard
        shard: list[dict[str, Any]] = []
        size = 0
        first_ex = 0
        for b0, b1 in zip(bounds[:-1], bounds[1:], strict=True):
            e = int(ex_sorted[b0])
            item = self._example(e, b0, b1, order, col, passages)
            text = _json(item)
            if shard and size + len(text) > EXAMPLE_SHARD_BYTES:
                self._flush(folder, first_ex, shard)
                shard, size = [], 0
            if not shard:
                first_ex = e
            shard.append(item)
            size += len(text)
        if shard:
            self._flush(folder, first_ex, shard)

    def _flush(self, folder: Path, first_ex: int, shard: list[dict[str, Any]]) -> None:
        n = len(self.ex_shards)
        self.ex_shards.append(first_ex)
        _write(folder / f"e-{n:04d}.js", "ex", n, {"first": first_ex, "examples": shard})

    def _example(
        self, e: int, b0: int, b1: int, order: np.ndarray, col: _Columns, passages: _Passages
    ) -> dict[str, Any]:
        question, answers = self.questions[e], self.answers[e]
        # the ranking of each (job, retriever, perturbations): its longest original-order list;
        # a row's documents are compared with it as ids, and numbered only when they are not a
        # prefix of it or its reverse (most rows are)
        ranked: dict[tuple, list[str]] = {}
        rows = range(b0, b1)
        for i in rows:
            if col.order[i] == "original" and col.k[i] > 0:
                rk = (col.job[i], col.retriever[i], col.qp[i], col.dp[i])
                if len(col.doc_ids[i]) > len(ranked.get(rk, ())):
                    ranked[rk] = col.doc_ids[i]
        rk_index = {rk: j for j, rk in enumerate(ranked)}
        ranked_ids = [passages.numbers(rk[0], ids) for rk, ids in ranked.items()]
        systems: dict[int, dict[str, Any]] = {}
        for i in rows:
            r = int(order[i])
            s = int(self.sys[r])
            sysd = systems.get(s)
            if sysd is None:
                q = col.question[i]
                sysd = {"s": s, "cells": []}
                if q != question:
                    sysd["q"] = q
                    sysd["diff"] = _char_diff(question, q)
                systems[s] = sysd
            docs: Any = []
            ref = -1
            ids = col.doc_ids[i]
            if ids:
                rk = (col.job[i], col.retriever[i], col.qp[i], col.dp[i])
                ranking = ranked.get(rk)
                n = len(ids)
                if ranking:
                    ref = rk_index[rk]
                    if ranking[:n] == ids:
                        docs = n
                    elif ranking[:n][::-1] == ids:
                        docs = -n
                    else:
                        docs = passages.numbers(col.job[i], ids)
                else:
                    docs = passages.numbers(col.job[i], ids)
            sysd["cells"].append(
                [
                    int(self.cell[r]),
                    _num(self.score[r]),
                    col.prediction[i],
                    col.raw_output[i],
                    col.marker[i],
                    col.refused[i],
                    col.over_window[i],
                    col.judge[i],
                    col.dp[i],
                    ref,
                    docs,
                ]
            )
        return {
            "e": e,
            "id": str(self.examples["id"].iloc[e]),
            "ds": str(self.examples["ds"].iloc[e]),
            "q": question,
            "a": answers,
            "ranked": ranked_ids,
            "sys": list(systems.values()),
        }

    def index(self, passages: _Passages) -> dict[str, Any]:
        return {
            "systems": [{**s, "cells": self.sys_cells[i]} for i, s in enumerate(self.systems)],
            "system_columns": self.sys_cols,
            "cells": self.cells,
            "datasets": sorted(set(self.examples["ds"])),
            "n_examples": len(self.examples),
            "n_rows": self.n_list_rows,
            "row_chunks": self.row_chunks,
            "ex_shards": self.ex_shards,
            "p_shards": passages.shards,
            "corpora": passages.corpora_info(),
            "flips": self.flip_counts(),
            "flip_bits": FLIP_BITS,
            "pairs": [
                {k: v for k, v in p.items() if k in ("a", "b", "dataset", "differs_in", "label")}
                for p in self.pairs
            ],
            "notes": self.notes,
        }


class _Columns:
    """The columns an example page shows, as Python lists in ``order``."""

    def __init__(self, df: pd.DataFrame, order: np.ndarray) -> None:
        def get(name: str, default: Any) -> list[Any]:
            if name not in df.columns:
                return [default] * len(order)
            return df[name].to_numpy()[order].tolist()

        self.job = [str(v) for v in get("job_id", "job")]
        self.retriever = [str(v) for v in get("retriever", "none")]
        self.order = [str(v) for v in get("order", "none")]
        self.k = [int(v) for v in get("k", 0)]
        self.qp = [str(v) for v in get("query_perturbation", "none")]
        self.dp = [str(v) for v in get("doc_perturbation", "none")]
        self.question = [str(v) for v in get("question", "")]
        self.prediction = [str(v) for v in get("prediction", "")]
        self.raw_output = [str(v) for v in get("raw_output", "")]
        self.judge = [str(v) for v in get("judge", "")]
        self.marker = [None if _isna(v) else bool(v) for v in get("marker_found", None)]
        self.refused = [None if _isna(v) else bool(v) for v in get("refused", None)]
        self.over_window = [None if _isna(v) else bool(v) for v in get("over_window", None)]
        self.doc_ids = [_as_list(v) for v in get("doc_ids", None)]  # passage ids are strings


def _isna(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _as_list(v: Any) -> list[Any]:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return []
    if isinstance(v, str):
        return [v]
    if isinstance(v, np.ndarray):
        return v.tolist()
    return list(v)


def _char_diff(a: str, b: str) -> list[list[str]]:
    """``b`` against ``a`` character by character: ``[op, text]`` with op ``=``, ``-`` (only in
    ``a``) or ``+`` (only in ``b``)."""
    out: list[list[str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            out.append(["=", a[i1:i2]])
            continue
        if i2 > i1:
            out.append(["-", a[i1:i2]])
        if j2 > j1:
            out.append(["+", b[j1:j2]])
    return out


# ----------------------------------------------------------------------------- passages


def _job_corpus(job_dir: Path) -> Any:
    """The corpus the job's ``config.yaml`` names, loaded (raises when it cannot be)."""
    from omegaconf import OmegaConf

    from rr.config import instantiate

    cfg = OmegaConf.load(job_dir / "config.yaml")
    if "corpus" not in cfg:
        raise ValueError("its config.yaml names no corpus")
    return instantiate(cfg.corpus).load()


class _Passages:
    """Every passage the rows show, each once: numbered in order of first use, texts from the
    jobs' corpora (one load per distinct corpus config)."""

    def __init__(self, ctx: ReportContext, loader: Callable[[Path], Any]) -> None:
        self.loader = loader
        self.notes: list[str] = []
        self.corpus_of_job: dict[str, int] = {}
        self.corpora: list[dict[str, Any]] = []
        self.job_dir: dict[str, Path] = {j.job_id: j.path for j in ctx.jobs}
        self.items: list[tuple[int, str]] = []  # (corpus, passage id) by number
        self.maps: list[dict[str, int]] = []  # per corpus: passage id -> number
        self.shards: list[int] = []
        self.unreadable = 0

    def _corpus(self, job: str) -> int:
        c = self.corpus_of_job.get(job)
        if c is not None:
            return c
        folder = self.job_dir.get(job)
        ident: Any = None
        if folder is not None and (folder / "config.yaml").exists():
            try:
                from omegaconf import DictConfig, OmegaConf

                cfg = OmegaConf.load(folder / "config.yaml")
                node = cfg.get("corpus") if isinstance(cfg, DictConfig) else None
                ident = json.dumps(OmegaConf.to_container(node, resolve=False), sort_keys=True, default=str)
            except Exception:
                ident = None
        for i, corpus in enumerate(self.corpora):
            if ident is not None and corpus["ident"] == ident:
                self.corpus_of_job[job] = i
                return i
        self.corpora.append(
            {"ident": ident if ident is not None else f"job {job}", "job": job, "folder": folder}
        )
        self.maps.append({})
        self.corpus_of_job[job] = len(self.corpora) - 1
        return len(self.corpora) - 1

    def numbers(self, job: str, ids: Sequence[Any]) -> list[int]:
        """The numbers of passages ``ids`` of ``job``'s corpus (new ones numbered in order)."""
        c = self._corpus(job)
        m = self.maps[c]
        out = [m.get(p, -1) for p in ids]
        if -1 in out:
            for j, p in enumerate(ids):
                if out[j] == -1:
                    n = m.get(p)
                    if n is None:
                        n = m[p] = len(self.items)
                        self.items.append((c, str(p)))
                    out[j] = n
        return out

    def corpora_info(self) -> list[dict[str, Any]]:
        return [{"name": c.get("name", "?"), "status": c.get("status", "")} for c in self.corpora]

    def _texts(self) -> list[tuple[str, str | None]]:
        """(title, text or None) of every passage, by number."""
        out: list[tuple[str, str | None]] = [("", None)] * len(self.items)
        by_corpus: dict[int, list[tuple[str, int]]] = {}
        for n, (c, pid) in enumerate(self.items):
            by_corpus.setdefault(c, []).append((pid, n))
        for c, items in by_corpus.items():
            info = self.corpora[c]
            folder = info.get("folder")
            try:
                if folder is None:
                    raise FileNotFoundError(f"job {info['job']} has no folder with a config.yaml")
                corpus = self.loader(Path(folder))
                info["name"] = getattr(corpus, "name", "corpus")
            except Exception as err:
                info["name"] = f"corpus of job {info['job']}"
                info["status"] = f"not readable: {type(err).__name__}: {err}"
                self.notes.append(f"passage texts of job {info['job']}: {info['status']}")
                self.unreadable += len(items)
                continue
            missing = 0
            for pid, n in items:
                if pid in corpus:
                    p = corpus[pid]
                    out[n] = (str(getattr(p, "title", "") or ""), str(p.text))
                else:
                    missing += 1
            self.unreadable += missing
            info["status"] = (
                "ok"
                if not missing
                else f"{missing} passage(s) not in the corpus (made by a document perturbation)"
            )
            del corpus
        return out

    def write(self, data: Path, clock: _Clock) -> None:
        clock("examples")
        texts = self._texts()
        clock("corpus")
        ids = [pid for _, pid in self.items]
        corp = [c for c, _ in self.items]
        start, shard, size = 0, 0, 0
        for n in range(len(ids) + 1):
            if n == len(ids) or (n > start and size > PASSAGE_SHARD_BYTES):
                if n > start:
                    payload = {
                        "first": start,
                        "id": ids[start:n],
                        "c": corp[start:n],
                        "title": [t for t, _ in texts[start:n]],
                        "text": [x for _, x in texts[start:n]],
                    }
                    _write(data / "p" / f"p-{shard:04d}.js", "p", shard, payload)
                    self.shards.append(start)
                    shard += 1
                start, size = n, 0
            if n < len(ids):
                size += len(ids[n]) + len(texts[n][0]) + len(texts[n][1] or "") + 8


def iter_flip_kinds() -> Iterable[tuple[str, str, str, str]]:
    """(kind, label, metric, meaning) of each flip filter, in order (for docs and tests)."""
    for kind in KINDS:
        yield (kind, *FLIP_LABELS[kind])


__all__: Sequence[str] = ("FLIP_BITS", "FLIP_LABELS", "SiteInfo", "build_site", "iter_flip_kinds")
