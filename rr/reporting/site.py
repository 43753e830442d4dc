"""The report's result browser: a static, self-contained, offline site under ``<report>/site/``.

:func:`build_site` turns a built :class:`~rr.reporting.core.Report` (its score table, jobs and
sections) into HTML pages, one stylesheet and a few scripts (``rr/reporting/site_assets/``,
written for rr: no library, no CDN, no network) plus data files::

    index.html                 overview: jobs and their config differences, sweep states, the
                               McNemar pairs and those not compared, every report table with
                               its intervals, the figures
    examples.html              one row per (example, system), paged, with filters and flip filters
    example.html#e=<i>         one example: the cell grid of each system, a chosen cell's
                               documents in prompt order, output, prediction, verdict; two cells
                               side by side; a perturbed query as a character-level diff
    data/overview.js           the overview's data
    data/index.js              systems, cells, datasets, flip kinds, McNemar pairs, shard bounds
    data/pairs.js              each McNemar pair's discordant examples and cells (the examples list)
    data/rows-NNN.js           the examples list, in chunks of whole examples
    data/ex/e-NNN.js           example shards: every row of a few examples, column by column
                               (loaded by example.html)
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
job's corpus (its ``config.yaml`` names it; one read per distinct corpus config, of the passages
shown only: a JSONL corpus in one streaming pass, :meth:`rr.data.jsonl.JsonlCorpus.texts_of`,
in a thread while the rest is built). A passage missing from the corpus (one a document
perturbation made) or a corpus that cannot be loaded any more is shown by its id, saying so. A
rank is the passage's position in the longest ``original``-order list of the same job, example,
retriever and perturbations (the retriever's ranking as the prompts show it).

**Speed.** The site adds a fraction of ``rr report``'s own time (``benchmarks/site_scale.py``):
whole columns, not rows, are turned into JSON (pyarrow joins each column's JSON literals a shard
at a time), documents are compared with their ranking as id lists and stored as a prefix of it,
its reverse, or positions in it, and the McNemar pairs are read from the report's paired tests.
"""

from __future__ import annotations

import array
import concurrent.futures
import difflib
import gc
import json
import logging
import math
import shutil
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

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
        corpus_loader: ``job folder -> Corpus`` (``id in corpus``, ``corpus[id]``); default:
            the corpus the job's ``config.yaml`` names, read for the passages shown only
            (``texts_of`` where the corpus has it, else loaded); raising means the texts are not
            readable.

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
    passages = _Passages(ctx, corpus_loader)
    model.number_documents(passages)
    clock("documents")
    # the passages' texts are read (pyarrow's JSON reader, off the GIL) while the rest is built
    passages.read_texts_in_background()
    model.compute_flips()
    clock("flips")
    model.compute_pairs(report if scores is None else None)
    clock("mcnemar")
    info.notes += model.notes
    _write(out / "data" / "overview.js", "overview", None, _overview(report, ctx, model))
    clock("overview")
    model.write_rows(out / "data")
    clock("rows")
    model.write_examples(out / "data" / "ex")
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
    info.passages, info.passages_unreadable = len(passages.ids), passages.unreadable
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
    return _ENCODER.encode(obj)


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


#: The data files' JSON: compact, UTF-8, no NaN; the payloads are trees (no cycle check).
_ENCODER = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False, default=_plain
)


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

    def compute_flips(self) -> None:
        """Mark each row's flips (:data:`FLIP_BITS`) in :attr:`flip_buf`."""
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
                hits = sub.merge(flips[cell].astype(str).assign(kind=flips["kind"]), on=cell, how="inner")
                for kind, rows in hits.groupby("kind")["_row"]:  # one merge for the three kinds
                    self._mark(rows.to_numpy(), str(kind))
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

    def compute_pairs(self, report: Report | None = None) -> None:
        """The McNemar pairs: exactly the pairs ``rr report``'s paired tests compare, each with the
        cells of each example where one system is right and the other wrong; the pairs left out go
        to :attr:`pairs_apart` with the reason (the overview lists them).

        The pairs come from the one pairing rule (:func:`rr.reporting.comparisons.system_pairs`:
        same dataset, one grouping column apart, the same examples and (retriever, k, order) cells;
        two examples at least, as :func:`~rr.reporting.comparisons.paired_comparisons` asks): read
        from ``report``'s ``paired_comparisons`` and ``not_comparable`` tables when it ran that
        section on this table (the rule's output, not computed twice), else from the rule itself.
        """
        df = self.df
        needed = {"example_id", "k", "order", "score", "retriever"}
        if not needed <= set(df.columns) or not self.sys_cols:
            return
        ds = df["dataset"].astype(str).to_numpy() if "dataset" in df.columns else np.full(len(df), "")
        found = self._pairs_of_report(report, ds) if report is not None else None
        if found is None:
            found = self._pairs_of_rule(ds)
        # example and cell as numbers: the wide columns stay out of the merges
        numbered = pd.DataFrame({"example_id": self.ex, "_c": self.cell, "score": self.score})
        for pair in found:
            if pair.get("reason"):
                self.pairs_apart.append(pair)
                continue
            d, sa, sb = pair["dataset"], pair["a"], pair["b"]
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

    def _pairs_of_rule(self, ds: np.ndarray) -> list[dict[str, Any]]:
        """The pairs as :func:`~rr.reporting.comparisons.system_pairs` gives them: ``a``, ``b``
        (system numbers), ``dataset``, ``differs_in``, ``label``, ``reason`` (empty: compared)."""
        # the columns the rule reads: the wide ones (doc_ids, outputs) stay out of its groupby
        slim = self.df[list(dict.fromkeys([*self.by, "example_id", *CELL_KEYS, "score"]))]
        try:
            found = list(system_pairs(slim, list(self.by)))
        except (ValueError, KeyError) as err:  # not a valid table for the metrics
            self.notes.append(f"McNemar pairs not offered: {err}")
            return []
        number = {
            (d, tuple(sysd["cols"][c] for c in self.sys_cols)): s
            for s, sysd in enumerate(self.systems)
            for d in np.unique(ds[self.sys == s]).tolist()
        }
        out = []
        for diff, la, lb, a, _b, why in found:
            if not why and len(a.examples) < 2:  # not tested, and not listed apart, by the report
                continue
            d = str(la.get("dataset", ""))
            out.append(
                {
                    "a": number[(d, tuple(str(la[c]) for c in self.sys_cols))],
                    "b": number[(d, tuple(str(lb[c]) for c in self.sys_cols))],
                    "dataset": d,
                    "differs_in": diff[0],
                    "label": f"{system_label(la, diff)} vs {system_label(lb, diff)}",
                    "reason": why,
                }
            )
        return out

    def _pairs_of_report(self, report: Report, ds: np.ndarray) -> list[dict[str, Any]] | None:
        """The pairs of ``report``'s ``paired_comparisons`` section (as :meth:`_pairs_of_rule`),
        or None when it did not run on this table's systems or a row names no single system."""
        outcome = next((o for o in report.outcomes if o.section.name == "paired_comparisons"), None)
        if outcome is None or outcome.error or report.scores is None or len(report.scores) != len(self.df):
            return None
        if outcome.section.skip_reason(report.scores) is not None:
            return None  # the section did not run (a missing column): the rule did not either
        tables = {i.name: i.df for i in outcome.items if isinstance(i, ReportTable)}
        # a system by its dataset, the column a pair differs in, its label there and its other values
        labelled: dict[tuple[Any, ...], list[int]] = {}
        for s, sysd in enumerate(self.systems):
            cols = sysd["cols"]
            for d in np.unique(ds[self.sys == s]).tolist():
                for c in self.sys_cols:
                    rest = tuple(cols[x] for x in self.sys_cols if x != c)
                    labelled.setdefault((d, c, system_label(cols, [c]), rest), []).append(s)
        out: list[dict[str, Any]] = []
        seen: set[tuple[Any, ...]] = set()
        rows = [(r, "") for r in _records(tables.get("paired_comparisons"))]
        rows += [(r, r["reason"]) for r in _records(tables.get("not_comparable")) if r["metric"] == "all"]
        for r, reason in rows:
            c = str(r["differs_in"])
            d = str(r.get("dataset", ""))
            rest = tuple(str(r.get(x, "")) for x in self.sys_cols if x != c)
            sa = labelled.get((d, c, str(r["system_a"]), rest), [])
            sb = labelled.get((d, c, str(r["system_b"]), rest), [])
            if len(sa) != 1 or len(sb) != 1:
                return None
            key = (sa[0], sb[0], d)
            if key in seen:
                continue
            seen.add(key)
            out.append(
                {
                    "a": sa[0],
                    "b": sb[0],
                    "dataset": d,
                    "differs_in": c,
                    "label": f"{r['system_a']} vs {r['system_b']}",
                    "reason": str(reason),
                }
            )
        return out

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

    def number_documents(self, passages: _Passages) -> None:
        """Each row's documents as the example shards store them (:meth:`_documents`), numbering
        the passages they show in ``passages``."""
        self.order = np.lexsort((self.cell, self.sys, self.ex))  # rows by example, system, cell
        self.documents = self._documents(self.order, passages)

    def write_examples(self, folder: Path) -> None:
        """Write the example shards: whole examples, ~:data:`EXAMPLE_SHARD_BYTES` each. A shard
        holds its examples (question, answers, rankings, systems with their row ranges) and
        their rows column by column (``cells``: one list per field, rows by example, system,
        cell): text columns joined by pyarrow from their JSON literals, the others encoded a
        shard's slice at a time."""
        df = self.df
        order = self.order
        n = len(order)
        ex_s, sys_s = self.ex[order], self.sys[order]
        documents = self.documents
        # each column as the JSON literal of each row, joined a shard at a time by pyarrow
        literals = {
            "c": _int_literals(self.cell[order]),
            "sc": _score_literals(self.score[order]),
            "pred": _json_strings(_arrow_strings(df, "prediction", order)),
            "raw": _json_strings(_arrow_strings(df, "raw_output", order)),
            "mk": _flag_literals(df, "marker_found", order),
            "rf": _flag_literals(df, "refused", order),
            "ow": _flag_literals(df, "over_window", order),
            "jd": _json_strings(_arrow_strings(df, "judge", order)),
            "dp": _json_strings(_arrow_strings(df, "doc_perturbation", order, "none")),
            "ref": _int_literals(documents.ref),
            "docs": documents.docs,
        }
        # (example, system) runs of rows, and each system's question where it is not the example's
        starts = np.flatnonzero(np.r_[True, (ex_s[1:] != ex_s[:-1]) | (sys_s[1:] != sys_s[:-1])])
        ends = np.r_[starts[1:], n]
        questions = _str_list(df, "question", order[starts])
        n_ex = len(self.examples)
        ex_first = np.searchsorted(ex_s, np.arange(n_ex), "left")
        # bytes of each example: its rows (their literals and commas), rankings, question, answers
        row_bytes = np.full(n, len(literals), dtype=np.int64)
        for values in literals.values():
            row_bytes += pc.binary_length(values).to_numpy()
        cum = np.r_[0, np.cumsum(row_bytes)]
        ex_bytes = cum[np.r_[ex_first[1:], n]] - cum[ex_first]
        ex_bytes += np.fromiter(map(len, self.questions), dtype=np.int64, count=n_ex)
        ex_bytes += 50 * np.fromiter(map(len, self.answers), dtype=np.int64, count=n_ex)
        ex_bytes += np.fromiter(map(len, documents.ranked), dtype=np.int64, count=n_ex)
        # shards of whole examples: one closes before the example that takes it past the budget
        firsts = [0]
        size = 0
        for e, b in enumerate(ex_bytes.tolist()):
            if size and size + b > EXAMPLE_SHARD_BYTES:
                firsts.append(e)
                size = 0
            size += b
        firsts.append(n_ex)
        row_bounds = [int(ex_first[e]) if e < n_ex else n for e in firsts]
        joined = {k: _runs_json(v, row_bounds) for k, v in literals.items()}
        self.ex_shards: list[int] = firsts[:-1]  # first example of each shard
        run = 0  # the (example, system) run at hand
        for shard, (first, last) in enumerate(zip(firsts[:-1], firsts[1:], strict=True)):
            r0 = row_bounds[shard]
            items = []
            for e in range(first, last):
                systems = []
                while run < len(starts) and ex_s[starts[run]] == e:
                    s0, s1 = int(starts[run]), int(ends[run])
                    sysd: dict[str, Any] = {"s": int(sys_s[s0]), "r": [s0 - r0, s1 - r0]}
                    q = questions[run]
                    if q != self.questions[e]:
                        sysd["q"] = q
                        sysd["diff"] = _char_diff(self.questions[e], q)
                    systems.append(sysd)
                    run += 1
                item = {
                    "e": e,
                    "id": self.examples["id"].iat[e],
                    "ds": self.examples["ds"].iat[e],
                    "q": self.questions[e],
                    "a": self.answers[e],
                    "sys": systems,
                }
                items.append(f'{_json(item)[:-1]},"ranked":{documents.ranked[e]}}}')
            cells = ",".join(f'"{k}":{next(v)}' for k, v in joined.items())
            text = f'RR.load("ex",{shard},{{"first":{first},"examples":[{",".join(items)}],"cells":{{{cells}}}}});\n'
            (folder / f"e-{shard:04d}.js").write_bytes(text.encode("utf-8"))

    def _documents(self, order: np.ndarray, passages: _Passages) -> _Documents:
        """Each row's documents (rows in ``order``), as the example shards store them.

        A ranking is the longest ``original``-order k > 0 list of a (job, example, retriever,
        perturbations); an example's rankings are its ``ranked`` lists of passage numbers, in
        the order of their first such row. A row's documents are ``n`` when they are its
        ranking's first ``n`` (compared as ids), ``-n`` when they are those reversed,
        ``{"r": [positions in the ranking]}`` when they are all in it (a shuffled order), else the
        list of their passage numbers; ``0`` without documents.
        """
        df = self.df
        n = len(order)
        n_ex = len(self.examples)
        none = _Documents(
            np.full(n, -1, dtype=np.int64), _int_literals(np.zeros(n, dtype=np.int64)), ["[]"] * n_ex
        )
        if "doc_ids" not in df.columns or not n:
            return none
        column, lens = _id_lists(df["doc_ids"].to_numpy()[order])
        has = lens > 0
        if not has.any():
            return none
        flat = np.concatenate(list(column[has]))  # every row's ids, one after the other
        ids = flat.tolist()
        start = np.r_[0, np.cumsum(lens)[:-1]]
        job = _codes(df, "job_id", order)
        job_names = _str_list(df, "job_id", order)
        # the (job, example, retriever, perturbations) of each row, as one number
        key = self.ex[order].astype(np.int64)
        for name in ("retriever", "query_perturbation", "doc_perturbation"):
            part = _codes(df, name, order)
            key = key * (int(part.max()) + 1) + part
        key = key * (int(job.max()) + 1) + job
        _, rk = np.unique(key, return_inverse=True)
        original = (
            (df["order"].astype(str) == "original").to_numpy(dtype=bool, na_value=False)[order]
            if "order" in df.columns
            else np.zeros(n, dtype=bool)
        )
        cand = np.flatnonzero(original & (self.k[order] > 0) & has)
        # per key: its first candidate row (the ranking's place) and its longest (the first longest)
        by_first = cand[np.unique(rk[cand], return_index=True)[1]]
        longest = cand[np.lexsort((cand, -lens[cand], rk[cand]))]
        longest = longest[np.r_[True, rk[longest][1:] != rk[longest][:-1]]]
        ranking_of = np.full(int(rk.max()) + 1, -1, dtype=np.int64)  # key -> its ranking's row
        ranking_of[rk[longest]] = longest
        place = np.full(len(ranking_of), -1, dtype=np.int64)  # key -> index among its example's
        first_rows = np.sort(by_first)  # rankings in the order of their first row
        ex_of = self.ex[order][first_rows]
        place[rk[first_rows]] = np.arange(len(first_rows)) - np.searchsorted(ex_of, ex_of, "left")
        # the rankings' passages numbered all at once, in example order (the order pages use them)
        rank_rows = ranking_of[rk[first_rows]]
        rank_lens = lens[rank_rows]
        bounds = np.r_[0, np.cumsum(rank_lens)]
        gather = np.repeat(start[rank_rows] - bounds[:-1], rank_lens) + np.arange(bounds[-1])
        numbers = passages.number_runs([job_names[r] for r in rank_rows.tolist()], rank_lens, flat[gather])
        rankings = _list_literals(numbers, bounds)  # "[n,n,...]" per ranking
        per_ex = np.r_[0, np.cumsum(np.bincount(ex_of, minlength=n_ex))]
        ranked = _list_literals(rankings, per_ex).to_pylist()  # "[[...],[...]]" per example
        # each row against its ranking: as ids, the first id checked first (most rows differ there)
        row_ranking = ranking_of[rk]
        ref = np.where(has & (row_ranking >= 0), place[rk], -1)
        rstart = start[np.maximum(row_ranking, 0)]
        rlen = lens[np.maximum(row_ranking, 0)]
        with_ref = (ref >= 0) & (lens <= rlen)
        head = flat[np.where(has, start, 0)]
        prefix = with_ref & (head == flat[np.where(with_ref, rstart, 0)])
        reverse = with_ref & ~prefix & (head == flat[np.where(with_ref, rstart + lens - 1, 0)])
        count = np.zeros(n, dtype=np.int64)  # n / -n rows (0: none, or a list below)
        listed: list[int] = []  # rows whose documents are a list: positions or passage numbers
        listed_r: list[bool] = []  # positions in the ranking ({"r": [...]}) or passage numbers
        values = array.array("q")  # the lists, one after the other
        # a shuffled row's ids as positions in its ranking: looked up in a small dict (the
        # ranking's), not the corpus-wide one, and written as 1-2 digits each
        positions: dict[int, dict[Any, int]] = {}
        current_ex = -1
        rows = np.flatnonzero(has)
        for i, e, s, m, rs, rrow, pre, rev in zip(
            rows.tolist(),
            self.ex[order][rows].tolist(),
            start[rows].tolist(),
            lens[rows].tolist(),
            rstart[rows].tolist(),
            row_ranking[rows].tolist(),
            prefix[rows].tolist(),
            reverse[rows].tolist(),
            strict=True,
        ):
            mine = ids[s : s + m]
            if pre or rev:
                best = ids[rs : rs + m]
                if pre and mine == best:
                    count[i] = m
                    continue
                if rev and mine == best[::-1]:
                    count[i] = -m
                    continue
            listed.append(i)
            if rrow >= 0:
                if e != current_ex:  # rows come example by example: keep only this one's rankings
                    positions.clear()
                    current_ex = e
                pos = positions.get(rrow)
                if pos is None:
                    r0, rn = int(start[rrow]), int(lens[rrow])
                    pos = positions[rrow] = dict(zip(ids[r0 : r0 + rn], range(rn), strict=True))
                before = len(values)
                try:
                    values.extend(map(pos.__getitem__, mine))
                    listed_r.append(True)
                    continue
                except KeyError:  # a passage outside the ranking: the row's are numbered instead
                    del values[before:]
            listed_r.append(False)
            values.extend(passages.numbers(job_names[i], mine))
        docs = _int_literals(count)
        if listed:
            at = np.asarray(listed, dtype=np.int64)
            lists = _list_literals(np.frombuffer(values, dtype=np.int64), np.r_[0, np.cumsum(lens[at])])
            is_r = pa.array(listed_r, pa.bool_())
            wrapped = pc.binary_join_element_wise(_text('{"r":'), lists, _text("}"), _text(""))
            lists = pc.if_else(is_r, wrapped, lists)
            mask = np.zeros(n, dtype=bool)
            mask[at] = True
            docs = pc.replace_with_mask(docs, pa.array(mask), lists)
        return _Documents(ref, docs, ranked)

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


@dataclass
class _Documents:
    """Each row's documents as the example shards store them (:meth:`_Model._documents`)."""

    ref: np.ndarray  # per row: its ranking's index among its example's (-1: none)
    docs: pa.Array  # per row: the JSON of its documents
    ranked: list[str]  # per example: the JSON of its rankings' passage numbers


def _text(value: str) -> pa.Scalar:
    """A pyarrow large-string scalar (what the JSON-building kernels here take)."""
    return pa.scalar(value, pa.large_string())


def _int_literals(values: np.ndarray) -> pa.Array:
    """Integers as their JSON literals."""
    return pc.cast(pa.array(values, pa.int64()), pa.large_string())


def _list_literals(values: np.ndarray | pa.Array, bounds: np.ndarray) -> pa.Array:
    """``"[v,v,...]"`` for each run ``values[bounds[j]:bounds[j + 1]]``: integers, or strings that
    are already JSON (a list of lists)."""
    if not isinstance(values, pa.Array):
        values = _int_literals(values)
    elif values.type != pa.large_string():
        values = values.cast(pa.large_string())
    runs = pa.LargeListArray.from_arrays(pa.array(bounds, pa.int64()), values)
    joined = pc.binary_join(runs, _text(","))
    return pc.binary_join_element_wise(_text("["), joined, _text("]"), _text(""))


def _runs_json(values: pa.Array, bounds: Sequence[int], per: int = 32) -> Iterator[str]:
    """:func:`_list_literals` of each run ``values[bounds[j]:bounds[j + 1]]``, made ``per`` runs
    at a time (a site's texts are not all copied at once)."""
    for j in range(0, len(bounds) - 1, per):
        b = np.asarray(bounds[j : j + per + 1], dtype=np.int64)
        yield from _list_literals(values.slice(int(b[0]), int(b[-1] - b[0])), b - b[0]).to_pylist()


def _records(df: pd.DataFrame | None) -> list[dict[str, Any]]:
    return [] if df is None else df.to_dict("records")


def _isna(v: Any) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def _str_list(df: pd.DataFrame, name: str, rows: np.ndarray, default: str = "") -> list[str]:
    """Column ``name`` at ``rows`` as Python strings (missing values as ``""``; ``default`` for
    every row when the column is absent)."""
    if name not in df.columns:
        return [default] * len(rows)
    s = df[name]
    if isinstance(s.dtype, pd.StringDtype):
        return s.to_numpy(dtype=object, na_value="")[rows].tolist()
    return ["" if _isna(v) else str(v) for v in s.to_numpy()[rows]]


def _arrow_strings(df: pd.DataFrame, name: str, rows: np.ndarray, default: str = "") -> pa.Array:
    """Column ``name`` at ``rows`` as a pyarrow string array (missing values as ``""``; ``default``
    for every row when the column is absent)."""
    if name not in df.columns:
        return pa.array(np.full(len(rows), default, dtype=object), pa.large_string())
    s = df[name]
    if isinstance(s.dtype, pd.StringDtype) and s.dtype.storage == "pyarrow":
        values = pa.array(s)  # the column's own arrow data
    else:
        values = pa.array(_str_list(df, name, np.arange(len(df))), pa.large_string())
    return pc.fill_null(values.take(pa.array(rows)), "")


def _flag_literals(df: pd.DataFrame, name: str, rows: np.ndarray) -> pa.Array:
    """Column ``name`` at ``rows`` as ``true`` / ``false`` / ``null`` (missing, or the column absent)."""
    if name not in df.columns:
        return pa.array(np.full(len(rows), "null", dtype=object), pa.large_string())
    values = df[name].to_numpy()[rows]
    if values.dtype != bool:
        values = np.array([None if _isna(v) else bool(v) for v in values], dtype=object)
    return pc.fill_null(pc.cast(pa.array(values, pa.bool_()), pa.large_string()), "null")


def _score_literals(scores: np.ndarray) -> pa.Array:
    """Scores as JSON numbers (:func:`_num`: ``null`` for NaN; 0 and 1, most of them, as ``0``
    and ``1``)."""
    literals = np.where(scores == 1.0, "1", "0").astype(object)
    for i in np.flatnonzero(~np.isin(scores, (0.0, 1.0))).tolist():
        literals[i] = _json(_num(float(scores[i])))
    return pa.array(literals, pa.large_string())


def _codes(df: pd.DataFrame, name: str, rows: np.ndarray) -> np.ndarray:
    """Column ``name`` at ``rows`` as numbers from 0 (one per distinct value; 0 when absent)."""
    if name not in df.columns:
        return np.zeros(len(rows), dtype=np.int64)
    return pd.factorize(df[name])[0][rows].astype(np.int64) + 1  # missing: -1 -> 0


def _id_lists(column: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``doc_ids`` values as sequences of ids (arrays and lists as they are; a missing value as no
    ids, one string as one id) and how many ids each holds."""
    if not set(map(type, column)) <= {np.ndarray, list, tuple}:
        lists = np.empty(len(column), dtype=object)
        lists[:] = [_as_list(v) for v in column]
        column = lists
    return column, np.fromiter(map(len, column), dtype=np.int64, count=len(column))


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


def _job_texts(job_dir: Path, ids: list[str]) -> tuple[str, pa.Table]:
    """The titles and texts of passages ``ids`` from the corpus the job's ``config.yaml`` names:
    read only for those ids where the corpus can (``texts_of``: a JSONL corpus, one streaming
    pass), else loaded whole. Returns ``(corpus name, table)``, the table as
    :meth:`rr.data.jsonl.JsonlCorpus.texts_of` gives it (``title``, ``text``: null where the
    corpus does not hold the id); raises when the corpus cannot be read."""
    from omegaconf import OmegaConf

    from rr.config import instantiate

    cfg = OmegaConf.load(job_dir / "config.yaml")
    if "corpus" not in cfg:
        raise ValueError("its config.yaml names no corpus")
    corpus = instantiate(cfg.corpus)
    if callable(getattr(corpus, "texts_of", None)):
        return str(getattr(corpus, "name", "corpus")), corpus.texts_of(ids)
    loaded = corpus.load()
    return str(getattr(loaded, "name", "corpus")), _texts_in(loaded, ids)


def _texts_in(corpus: Any, ids: list[str]) -> pa.Table:
    """Titles and texts of ``ids`` in a loaded corpus (``id in corpus``, ``corpus[id]``)."""
    titles: list[str] = []
    texts: list[str | None] = []
    for pid in ids:
        if pid in corpus:
            p = corpus[pid]
            titles.append(str(getattr(p, "title", "") or ""))
            texts.append(str(p.text))
        else:
            titles.append("")
            texts.append(None)
    return pa.table({"title": pa.array(titles, pa.string()), "text": pa.array(texts, pa.string())})


def _json_strings(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Each string as its JSON literal (null as ``null``), made by pyarrow: quoted as it is unless
    it holds a quote, a backslash or a control character (those few through :data:`_ENCODER`)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    values = values.cast(pa.large_string())  # 64-bit offsets: a site's texts may pass 2 GiB
    special = pc.fill_null(pc.match_substring_regex(values, r'[\x00-\x1f"\\]'), False)
    out = pc.binary_join_element_wise(_text('"'), values, _text('"'), _text(""))
    if pc.any(special).as_py():
        fixed = [_ENCODER.encode(v) for v in values.filter(special).to_pylist()]
        out = pc.replace_with_mask(out, special, pa.array(fixed, pa.large_string()))
    return pc.fill_null(out, "null")


class _Passages:
    """Every passage the rows show, each once: numbered in order of first use, texts from the
    jobs' corpora (one read per distinct corpus config, of the passages shown only)."""

    def __init__(self, ctx: ReportContext, loader: Callable[[Path], Any] | None) -> None:
        self.loader = loader
        self.notes: list[str] = []
        self.corpus_of_job: dict[str, int] = {}
        self.corpora: list[dict[str, Any]] = []
        self.job_dir: dict[str, Path] = {j.job_id: j.path for j in ctx.jobs}
        self.ids: list[str] = []  # passage id by number
        self.corpus: list[int] = []  # its corpus by number
        self.maps: list[dict[Any, int]] = []  # per corpus: passage id -> number
        self.pending: list[list[tuple[np.ndarray, np.ndarray]]] = []  # per corpus: not in maps yet
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
        self.pending.append([])
        self.corpus_of_job[job] = len(self.corpora) - 1
        return len(self.corpora) - 1

    def number_runs(self, jobs: list[str], lengths: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """:meth:`numbers` of many id lists at once: ``ids`` holds them one after the other, the
        ``j``-th ``lengths[j]`` long and of ``jobs[j]``'s corpus. Returns their numbers, aligned
        with ``ids`` (each corpus's new passages numbered in order of first appearance)."""
        corpus = np.repeat(np.array([self._corpus(j) for j in jobs], dtype=np.int64), lengths)
        out = np.empty(len(ids), dtype=np.int64)
        for c in dict.fromkeys(corpus.tolist()):
            mine = corpus == c
            codes, uniques = pd.factorize(ids[mine])
            keys = np.asarray(uniques, dtype=object)
            m = self._map(c)
            known = np.array([m.get(k, -1) for k in keys.tolist()], dtype=np.int64) if m else None
            number = np.full(len(keys), -1, dtype=np.int64) if known is None else known
            new = number < 0
            number[new] = len(self.ids) + np.arange(int(new.sum()))
            self.ids.extend(map(str, keys[new].tolist()))
            self.corpus.extend([c] * int(new.sum()))
            self.pending[c].append((keys[new], number[new]))  # into the map when numbers() needs it
            out[mine] = number[codes]
        return out

    def _map(self, c: int) -> dict[Any, int]:
        """Corpus ``c``'s passage id -> number map, with the runs numbered since it was last asked."""
        m = self.maps[c]
        for keys, number in self.pending[c]:
            m.update(zip(keys.tolist(), number.tolist(), strict=True))
        self.pending[c].clear()
        return m

    def numbers(self, job: str, ids: Sequence[Any]) -> list[int]:
        """The numbers of passages ``ids`` of ``job``'s corpus (new ones numbered in order)."""
        c = self._corpus(job)
        m = self._map(c)
        got: list[Any] = list(map(m.get, ids))
        if None not in got:
            return got
        new = dict.fromkeys(p for p, n in zip(ids, got, strict=True) if n is None)
        base = len(self.ids)
        m.update(zip(new, range(base, base + len(new)), strict=True))
        self.ids.extend(map(str, new))
        self.corpus.extend([c] * len(new))
        return list(map(m.__getitem__, ids))

    def corpora_info(self) -> list[dict[str, Any]]:
        return [{"name": c.get("name", "?"), "status": c.get("status", "")} for c in self.corpora]

    def _texts(self) -> pa.Table:
        """``title`` and ``text`` (null where not readable) of every passage, by number."""
        n = len(self.ids)
        corpus = np.asarray(self.corpus, dtype=np.int64)
        parts: list[tuple[np.ndarray, pa.Table]] = []  # (numbers, their titles and texts)
        for c, info in enumerate(self.corpora):
            numbers = np.flatnonzero(corpus == c)
            if not len(numbers):
                continue
            ids = self.ids if len(numbers) == n else [self.ids[i] for i in numbers.tolist()]
            folder = info.get("folder")
            try:
                if folder is None:
                    raise FileNotFoundError(f"job {info['job']} has no folder with a config.yaml")
                if self.loader is not None:
                    corpus_obj = self.loader(Path(folder))
                    name, table = str(getattr(corpus_obj, "name", "corpus")), _texts_in(corpus_obj, ids)
                else:
                    name, table = _job_texts(Path(folder), ids)
            except Exception as err:
                info["name"] = f"corpus of job {info['job']}"
                info["status"] = f"not readable: {type(err).__name__}: {err}"
                self.notes.append(f"passage texts of job {info['job']}: {info['status']}")
                self.unreadable += len(ids)
                empty = pa.array([""] * len(ids), pa.string())
                table = pa.table({"title": empty, "text": pa.nulls(len(ids), pa.string())})
                parts.append((numbers, table))
                continue
            info["name"] = name
            missing = table.column("text").null_count
            self.unreadable += missing
            info["status"] = (
                "ok"
                if not missing
                else f"{missing} passage(s) not in the corpus (made by a document perturbation)"
            )
            parts.append((numbers, table.select(["title", "text"])))
        if len(parts) == 1:
            return parts[0][1]
        if not parts:
            return pa.table({"title": pa.array([], pa.string()), "text": pa.array([], pa.string())})
        at = np.empty(n, dtype=np.int64)  # number -> row of the tables one after the other
        at[np.concatenate([numbers for numbers, _ in parts])] = np.arange(n)
        return pa.concat_tables([t for _, t in parts]).take(pa.array(at))

    def read_texts_in_background(self) -> None:
        """Start reading every numbered passage's text (:meth:`_texts`) in a thread; :meth:`write`
        waits for it. No passage is numbered after this."""
        self._reading = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="rr-site")
        self._texts_future = self._reading.submit(self._shard_texts)

    def _shard_texts(self) -> tuple[pa.Array, pa.Array]:
        """The titles and texts as JSON literals (:func:`_json_strings`), by number."""
        table = self._texts()
        return _json_strings(table.column("title")), _json_strings(table.column("text"))

    def write(self, data: Path, clock: _Clock) -> None:
        """Write the passage shards, ~:data:`PASSAGE_SHARD_BYTES` each (``corpus``: the wait for
        the texts). A shard's titles and texts are joined by pyarrow from their JSON literals."""
        clock("examples")
        if getattr(self, "_texts_future", None) is None:
            self.read_texts_in_background()
        try:
            titles, texts = self._texts_future.result()
        finally:
            self._reading.shutdown()
        clock("corpus")
        ids, n = self.ids, len(self.ids)
        size = np.fromiter(map(len, ids), dtype=np.int64, count=n) + 8
        size += pc.binary_length(titles).to_numpy() + pc.binary_length(texts).to_numpy()
        cum = np.cumsum(size)
        bounds = [0]
        while bounds[-1] < n:
            # a shard closes with the passage that takes it past PASSAGE_SHARD_BYTES
            start = bounds[-1]
            base = int(cum[start - 1]) if start else 0
            bounds.append(min(int(np.searchsorted(cum, base + PASSAGE_SHARD_BYTES, "right")) + 1, n))
        shard_titles, shard_texts = _runs_json(titles, bounds), _runs_json(texts, bounds)
        for shard, (start, end) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
            text = (
                f'RR.load("p",{shard},{{"first":{start},"id":{_json(ids[start:end])},'
                f'"c":{_json(self.corpus[start:end])},"title":{next(shard_titles)},'
                f'"text":{next(shard_texts)}}});\n'
            )
            (data / "p" / f"p-{shard:04d}.js").write_bytes(text.encode("utf-8"))
            self.shards.append(start)


def iter_flip_kinds() -> Iterable[tuple[str, str, str, str]]:
    """(kind, label, metric, meaning) of each flip filter, in order (for docs and tests)."""
    for kind in KINDS:
        yield (kind, *FLIP_LABELS[kind])


__all__: Sequence[str] = ("FLIP_BITS", "FLIP_LABELS", "SiteInfo", "build_site", "iter_flip_kinds")
