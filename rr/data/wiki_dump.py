"""A Wikipedia XML dump split into passages by double newlines (Cao et al. 2025, §4.1).

"We processed the wikidump from June 2024, which contains 6 million articles. We split each
article into chunks by double newlines, resulting in 20 million chunks. Each chunk is treated
as an independent 'document' for retrieval."

Pipeline, with real libraries only:

1. :func:`gensim.corpora.wikicorpus.extract_pages` streams ``<page>`` elements from the
   (``.bz2`` or plain) ``pages-articles`` XML dump; only namespace 0 (articles) is kept and
   redirects are skipped.
2. :mod:`mwparserfromhell` parses the wikitext; ``<ref>`` footnotes and ``File:`` / ``Image:`` /
   ``Category:`` links are removed (their text is not article prose), then ``strip_code``
   turns the rest into plain text (templates dropped, links replaced by their text).
3. The plain text is split on blank lines (``\\n\\n``); each non-empty chunk of at least
   ``min_chars`` characters is one :class:`~rr.records.Passage` with id ``<page id>-<i>`` and
   the article title. The paper does not say whether short chunks (section headings) were
   kept; ``min_chars=1`` (default) keeps every non-empty chunk.

A full English dump takes hours to parse: write the chunks once (``chunks_path``, or
``python -m rr.data.wiki_dump DUMP OUT.jsonl --processes 16``) and reuse them
(``corpus=wiki_dump corpus.chunks_path=OUT.jsonl``, or ``corpus=jsonl corpus.path=OUT.jsonl``).
pyserini's prebuilt Wikipedia indexes are the ready-made alternative (see docs/cao2025.md).
"""

from __future__ import annotations

import argparse
import bz2
import contextlib
import json
import logging
from collections.abc import Iterator, Sequence
from multiprocessing import Pool
from pathlib import Path
from typing import IO

from rr.atomic import atomic_write
from rr.data.base import Corpus, DataError
from rr.errors import require_positive
from rr.records import Passage
from rr.registry import component

log = logging.getLogger(__name__)

_DROP_LINK_PREFIXES = ("file:", "image:", "category:", "media:")


def wikitext_to_text(wikitext: str) -> str:
    """Plain text of one article's wikitext (refs, files and categories removed)."""
    import mwparserfromhell

    code = mwparserfromhell.parse(wikitext)
    for tag in code.filter_tags(recursive=True):
        if str(tag.tag).strip().lower() == "ref":
            with contextlib.suppress(ValueError):  # already removed with an enclosing node
                code.remove(tag)
    for link in code.filter_wikilinks(recursive=True):
        if str(link.title).strip().lower().startswith(_DROP_LINK_PREFIXES):
            with contextlib.suppress(ValueError):
                code.remove(link)
    return code.strip_code(normalize=True, collapse=True)


def split_chunks(text: str, min_chars: int = 1) -> list[str]:
    """Chunks of ``text`` separated by double newlines, stripped, at least ``min_chars`` long."""
    chunks = (c.strip() for c in text.replace("\r\n", "\n").split("\n\n"))
    return [c for c in chunks if c and len(c) >= min_chars]


def _page_passages(args: tuple[str, str, str, int]) -> list[Passage]:
    title, wikitext, page_id, min_chars = args
    return [
        Passage(id=f"{page_id}-{i}", text=chunk, title=title)
        for i, chunk in enumerate(split_chunks(wikitext_to_text(wikitext), min_chars))
    ]


def _open(path: Path) -> IO[bytes]:
    return bz2.open(path, "rb") if path.suffix == ".bz2" else path.open("rb")  # type: ignore[return-value]


def iter_articles(path: str | Path, max_pages: int | None = None) -> Iterator[tuple[str, str, str]]:
    """``(title, wikitext, page id)`` of the dump's articles (namespace 0, redirects skipped)."""
    from gensim.corpora.wikicorpus import extract_pages

    p = Path(path)
    if not p.is_file():
        raise DataError(f"Wikipedia dump not found: {p}")
    n = 0
    with _open(p) as fh:
        for title, text, page_id in extract_pages(fh, filter_namespaces=("0",)):
            if max_pages is not None and n >= max_pages:
                return
            if not text or text.lstrip().lower().startswith("#redirect"):
                continue
            n += 1
            yield title, text, str(page_id)


def iter_passages(
    path: str | Path, max_pages: int | None = None, min_chars: int = 1, processes: int = 1
) -> Iterator[Passage]:
    """The dump's passages in page order (parallel parsing with ``processes > 1``)."""
    jobs = ((t, w, pid, min_chars) for t, w, pid in iter_articles(path, max_pages))
    if processes <= 1:
        for job in jobs:
            yield from _page_passages(job)
        return
    with Pool(processes) as pool:
        for passages in pool.imap(_page_passages, jobs, chunksize=16):
            yield from passages


def write_chunks(
    dump: str | Path, out: str | Path, max_pages: int | None = None, min_chars: int = 1, processes: int = 1
) -> int:
    """Write the dump's passages as JSONL (``{"id", "title", "text"}`` per line); return the count.

    The file is written with :func:`rr.atomic.atomic_write`, so a killed run leaves no
    half-written corpus behind.
    """
    n = 0
    with atomic_write(out) as fh:
        for p in iter_passages(dump, max_pages, min_chars, processes):
            fh.write(json.dumps({"id": p.id, "title": p.title, "text": p.text}, ensure_ascii=False) + "\n")
            n += 1
    return n


@component("corpus", "wiki_dump")
class WikiDumpCorpus:
    """Passages of a Wikipedia XML dump, split by double newlines (Cao et al. §4.1).

    Args:
        path: The ``*-pages-articles*.xml[.bz2]`` dump.
        chunks_path: Optional JSONL of the chunks: read when it exists, else written after
            parsing (parse once, reuse in every job).
        max_pages: Parse only the first this many articles (``None`` = all).
        min_chars: Drop chunks shorter than this (1 = keep every non-empty chunk).
        processes: Worker processes for parsing.
        max_passages: Keep only the first this many chunks (``None`` = all), as
            ``corpus=jsonl`` does; applied after ``chunks_path`` is written, so the cached
            chunks file stays complete.
        name: Corpus name used in cache keys and file names.
    """

    def __init__(
        self,
        path: str,
        chunks_path: str | None = None,
        max_pages: int | None = None,
        min_chars: int = 1,
        processes: int = 1,
        max_passages: int | None = None,
        name: str = "wiki_dump",
    ) -> None:
        require_positive("max_passages", max_passages, optional=True)
        self.max_passages = max_passages
        self.path = path
        self.chunks_path = chunks_path
        self.max_pages = max_pages
        self.min_chars = min_chars
        self.processes = processes
        self.name = name

    def load(self) -> Corpus:
        """The passages (read from ``chunks_path`` when it exists)."""
        source = (
            f"{Path(self.path).name}:max_pages={self.max_pages}:min_chars={self.min_chars}"
            f":max_passages={self.max_passages}"
        )
        chunks = Path(self.chunks_path) if self.chunks_path else None
        if chunks is not None and not chunks.exists():
            n = write_chunks(self.path, chunks, self.max_pages, self.min_chars, self.processes)
            log.info("wiki_dump: wrote %d chunks to %s", n, chunks)
        if chunks is not None:
            passages: list[Passage] = []
            with chunks.open(encoding="utf-8") as fh:
                for i, line in enumerate(fh, 1):
                    if self.max_passages is not None and len(passages) >= self.max_passages:
                        break
                    try:
                        row = json.loads(line)
                        passages.append(Passage(id=row["id"], text=row["text"], title=row["title"]))
                    except (json.JSONDecodeError, KeyError, TypeError) as err:
                        raise DataError(f"{chunks}:{i}: not a chunk line ({err})") from err
            return Corpus(passages, name=self.name, source=source)
        return Corpus(
            iter_passages(self.path, self.max_pages, self.min_chars, self.processes),
            name=self.name,
            source=source,
        )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m rr.data.wiki_dump DUMP OUT.jsonl``: write the dump's chunks as JSONL."""
    p = argparse.ArgumentParser(prog="python -m rr.data.wiki_dump", description=__doc__.split("\n\n")[0])
    p.add_argument("dump")
    p.add_argument("out")
    p.add_argument("--max-pages", type=int, default=None)
    p.add_argument("--min-chars", type=int, default=1)
    p.add_argument("--processes", type=int, default=1)
    a = p.parse_args(argv)
    n = write_chunks(a.dump, a.out, a.max_pages, a.min_chars, a.processes)
    print(f"wrote {n} chunks to {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
