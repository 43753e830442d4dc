"""Every passage the rows show, each once: numbered, its text read from the job's corpus (in a
thread while the rest is built), written in passage shards."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rr.jobfolder import CONFIG_FILE
from rr.reporting.loading import JobInfo
from rr.reporting.site.clock import Clock
from rr.reporting.site.encoding import json_strings, runs_json, to_json
from rr.reporting.site.format import PassageShard as P

#: Byte budget of a passage shard.
PASSAGE_SHARD_BYTES = 600_000


def _job_texts(job: JobInfo, ids: list[str]) -> tuple[str, pa.Table]:
    """The titles and texts of passages ``ids`` from the corpus the job's config names:
    read only for those ids where the corpus can (``texts_of``: a JSONL corpus, one streaming
    pass), else loaded whole. Returns ``(corpus name, table)``, the table as
    :meth:`rr.data.jsonl.JsonlCorpus.texts_of` gives it (``title``, ``text``: null where the
    corpus does not hold the id); raises when the corpus cannot be read."""
    from rr.config import instantiate

    cfg = job.config()
    if cfg is None:
        raise FileNotFoundError(f"job {job.job_id} has no folder with a {CONFIG_FILE}")
    if "corpus" not in cfg:
        raise ValueError(f"its {CONFIG_FILE} names no corpus")
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


@dataclass(frozen=True)
class PassageFiles:
    """What :meth:`Passages.write` wrote: the passage shards and what it could read."""

    shards: list[int]  # first passage number of each p/p-NNNN.js
    corpora: list[dict[str, Any]]  # per corpus: format.Index.corpora's {name, status}
    count: int  # passages written
    unreadable: int  # of them, those without a text
    notes: tuple[str, ...]  # the corpora that could not be read
    titles: list[str] = dataclasses.field(default_factory=list)  # per passage number: its title ('' none)


@dataclass(frozen=True)
class _Texts:
    """The passages' titles and texts by number (as read, or as JSON literals), and per corpus what
    it gave (:meth:`Passages._texts`)."""

    titles: pa.Array | pa.ChunkedArray
    texts: pa.Array | pa.ChunkedArray
    corpora: list[dict[str, Any]]  # per corpus: {name, status}
    unreadable: int
    notes: tuple[str, ...]
    plain_titles: list[str] = dataclasses.field(default_factory=list)  # titles as read ('' for none)


class Passages:
    """Every passage the rows show, each once: numbered in order of first use (by the documents
    stage, :func:`rr.reporting.site.documents.number_documents`), texts from the jobs' corpora
    (one read per distinct corpus config, of the passages shown only), written by :meth:`write`."""

    def __init__(self, jobs: Sequence[JobInfo], loader: Callable[[Path], Any] | None) -> None:
        self.loader = loader
        self.corpus_of_job: dict[str, int] = {}
        self.corpora: list[dict[str, Any]] = []
        self.jobs: dict[str, JobInfo] = {j.job_id: j for j in jobs}
        self.ids: list[str] = []  # passage id by number
        self.corpus: list[int] = []  # its corpus by number
        self.maps: list[dict[Any, int]] = []  # per corpus: passage id -> number
        self.pending: list[list[tuple[np.ndarray, np.ndarray]]] = []  # per corpus: not in maps yet

    def _corpus(self, job: str) -> int:
        c = self.corpus_of_job.get(job)
        if c is not None:
            return c
        info = self.jobs.get(job)
        folder = info.path if info is not None else None
        ident: Any = None
        try:
            from omegaconf import DictConfig, OmegaConf

            cfg = info.config() if info is not None else None
            node = cfg.get("corpus") if isinstance(cfg, DictConfig) else None
            if cfg is not None:
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

    def _texts(self) -> _Texts:
        """``title`` and ``text`` (null where not readable) of every passage, by number, and what
        each corpus gave."""
        n = len(self.ids)
        corpora: list[dict[str, Any]] = [{"name": "?", "status": ""} for _ in self.corpora]
        notes: list[str] = []
        unreadable = 0
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
                    raise FileNotFoundError(f"job {info['job']} has no folder with a {CONFIG_FILE}")
                if self.loader is not None:
                    corpus_obj = self.loader(Path(folder))
                    name, table = str(getattr(corpus_obj, "name", "corpus")), _texts_in(corpus_obj, ids)
                else:
                    name, table = _job_texts(self.jobs[info["job"]], ids)
            except Exception as err:
                status = f"not readable: {type(err).__name__}: {err}"
                corpora[c] = {"name": f"corpus of job {info['job']}", "status": status}
                notes.append(f"passage texts of job {info['job']}: {status}")
                unreadable += len(ids)
                empty = pa.array([""] * len(ids), pa.string())
                table = pa.table({"title": empty, "text": pa.nulls(len(ids), pa.string())})
                parts.append((numbers, table))
                continue
            missing = table.column("text").null_count
            unreadable += missing
            corpora[c] = {
                "name": name,
                "status": "ok"
                if not missing
                else f"{missing} passage(s) not in the corpus (made by a document perturbation)",
            }
            parts.append((numbers, table.select(["title", "text"])))
        if len(parts) == 1:
            texts = parts[0][1]
        elif not parts:
            texts = pa.table({"title": pa.array([], pa.string()), "text": pa.array([], pa.string())})
        else:
            at = np.empty(n, dtype=np.int64)  # number -> row of the tables one after the other
            at[np.concatenate([numbers for numbers, _ in parts])] = np.arange(n)
            texts = pa.concat_tables([t for _, t in parts]).take(pa.array(at))
        return _Texts(texts.column("title"), texts.column("text"), corpora, unreadable, tuple(notes))

    def read_texts_in_background(self) -> None:
        """Start reading every numbered passage's text (:meth:`_texts`) in a thread; :meth:`write`
        waits for it. No passage is numbered after this."""
        self._reading = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="rr-site")
        self._texts_future = self._reading.submit(self._shard_texts)

    def _shard_texts(self) -> _Texts:
        """:meth:`_texts`, the titles and texts as JSON literals (:func:`json_strings`)."""
        got = self._texts()
        plain = [t or "" for t in got.titles.to_pylist()]
        return dataclasses.replace(
            got, titles=json_strings(got.titles), texts=json_strings(got.texts), plain_titles=plain
        )

    def write(self, data: Path, clock: Clock) -> PassageFiles:
        """Write the passage shards, ~:data:`PASSAGE_SHARD_BYTES` each (``corpus``: the wait for
        the texts). A shard's titles and texts are joined by pyarrow from their JSON literals."""
        if getattr(self, "_texts_future", None) is None:
            self.read_texts_in_background()
        try:
            got = self._texts_future.result()
        finally:
            self._reading.shutdown()
        clock("corpus")
        titles, texts = got.titles, got.texts
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
        shard_titles, shard_texts = runs_json(titles, bounds), runs_json(texts, bounds)
        for shard, (start, end) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
            text = (
                f'RR.load("{P.kind}",{shard},{{"{P.first}":{start},"{P.id}":{to_json(ids[start:end])},'
                f'"{P.c}":{to_json(self.corpus[start:end])},"{P.title}":{next(shard_titles)},'
                f'"{P.text}":{next(shard_texts)}}});\n'
            )
            (data / "p" / f"p-{shard:04d}.js").write_bytes(text.encode("utf-8"))
        return PassageFiles(bounds[:-1], got.corpora, n, got.unreadable, got.notes, got.plain_titles)
