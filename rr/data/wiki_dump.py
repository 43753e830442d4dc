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

A full English dump takes hours to parse, so parse it once into a *sharded folder* and reuse it
(:func:`write_shards`, ``python -m rr.commands.chunk_wiki DUMP [DUMP ...] OUT_DIR --workers 32``,
or ``corpus=wiki_dump corpus.chunks_path=OUT_DIR``, which writes it on first use):

* The parent process streams each dump's XML once; its kept articles are cut, in dump order,
  into blocks of ``block_pages`` articles (block ``i`` = articles ``i*block_pages`` to
  ``(i+1)*block_pages - 1``), so blocks do not depend on the worker count. ``workers``
  processes parse the blocks (the costly part); each block becomes one shard
  ``OUT_DIR/<dump stem>-<i:05d>.jsonl`` (lines ``{"id", "title", "text"}``, split at ``\n``
  only: U+2028, U+2029 and U+0085, which other line readers split at, are written escaped),
  written atomically. Shards are byte-identical whatever the number of workers.
* ``OUT_DIR/<dump stem>.manifest.json`` (one per dump, written atomically after every shard)
  records the dump's file name and size, ``min_chars`` / ``max_pages`` / ``block_pages``,
  ``complete``, and per shard its file, block index, first and last page id, number of
  pages and passages, and sha256. One manifest per dump (not one per folder) lets the
  ~27 part files of enwiki be chunked by separate jobs into the same folder without locks;
  the dump stem is its name without ``.bz2`` / ``.xml``.
* A re-run resumes: shards listed in the manifest whose sha256 matches are kept (their pages
  are streamed past, not parsed); missing or corrupt shards (a warning) are redone; a
  complete, intact folder is a no-op that does not open the dump. A manifest written with
  other ``min_chars`` / ``max_pages`` / ``block_pages``, or for a dump of another size, is a
  :class:`~rr.data.base.DataError` (use another folder).

Read back with :class:`WikiDumpCorpus` (``chunks_path=OUT_DIR``): the dumps' passages in the
order of ``path``, each dump's shards in block order, which is the order of a single JSONL
file written by :func:`write_chunks` (``OUT.jsonl``, the older single-file format, still
written and read). ``max_pages`` counts articles per dump file. pyserini's prebuilt Wikipedia
indexes are the ready-made alternative (see docs/cao2025.md).
"""

from __future__ import annotations

import bz2
import contextlib
import hashlib
import json
import logging
import multiprocessing
import sys
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.pool import AsyncResult
from multiprocessing.pool import Pool as PoolType
from pathlib import Path
from typing import IO, Any, NamedTuple, TypeVar

from rr.atomic import atomic_write, discard
from rr.data.base import Corpus, DataError
from rr.errors import require_positive
from rr.records import Passage
from rr.registry import component

log = logging.getLogger(__name__)

_DROP_LINK_PREFIXES = ("file:", "image:", "category:", "media:")
#: Manifest format version; bump when the shard or manifest layout changes.
MANIFEST_FORMAT = 1
#: Articles per job when passages are streamed (no shards): small, to bound memory.
_STREAM_BLOCK = 64

Page = tuple[str, str, str]  # (title, wikitext, page id)
_J = TypeVar("_J")
_R = TypeVar("_R")


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


def _dump_list(dumps: str | Path | Iterable[str | Path]) -> list[Path]:
    """One path or several as a list of paths; raise :class:`DataError` on repeated stems."""
    paths = [Path(dumps)] if isinstance(dumps, str | Path) else [Path(d) for d in dumps]
    if not paths:
        raise DataError("no Wikipedia dump given")
    seen: dict[str, Path] = {}
    for p in paths:
        if (other := seen.setdefault(dump_stem(p), p)) is not p:
            raise DataError(f"Wikipedia dumps {other} and {p} have the same name stem {dump_stem(p)!r}")
    return paths


def _require_dumps(paths: Sequence[Path]) -> None:
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise DataError(f"Wikipedia dump not found: {', '.join(missing)}")


def dump_stem(dump: str | Path) -> str:
    """The dump's file name without ``.bz2`` and ``.xml``: the prefix of its shard names."""
    name = Path(dump).name
    for suffix in (".bz2", ".xml"):
        name = name.removesuffix(suffix)
    return name


def iter_articles(path: str | Path, max_pages: int | None = None) -> Iterator[Page]:
    """``(title, wikitext, page id)`` of the dump's articles (namespace 0, redirects skipped)."""
    from gensim.corpora.wikicorpus import extract_pages

    p = Path(path)
    _require_dumps([p])
    n = 0
    with _open(p) as fh:
        for title, text, page_id in extract_pages(fh, filter_namespaces=("0",)):
            if max_pages is not None and n >= max_pages:
                return
            if not text or text.lstrip().lower().startswith("#redirect"):
                continue
            n += 1
            yield title, text, str(page_id)


def iter_blocks(
    path: str | Path, block_pages: int, max_pages: int | None = None
) -> Iterator[tuple[int, list[Page]]]:
    """``(block index, articles)``: the dump's articles cut in dump order into ``block_pages``-long blocks.

    Every block but the last holds exactly ``block_pages`` articles.
    """
    block: list[Page] = []
    index = 0
    for page in iter_articles(path, max_pages):
        block.append(page)
        if len(block) == block_pages:
            yield index, block
            index, block = index + 1, []
    if block:
        yield index, block


#: Characters that ``str.splitlines`` (and JavaScript's line readers) split at but JSON keeps raw;
#: a chunk line holds them as ``\uXXXX`` escapes, so a line is one line to every reader.
_LINE_BREAKS = str.maketrans({c: f"\\u{ord(c):04x}" for c in "\x85\u2028\u2029"})


def _chunk_line(p: Passage) -> str:
    """One chunk's JSONL line (newline included): UTF-8 text, the line breaks above escaped."""
    return (
        json.dumps({"id": p.id, "title": p.title, "text": p.text}, ensure_ascii=False).translate(_LINE_BREAKS)
        + "\n"
    )


def _render(pages: Sequence[Page], min_chars: int) -> tuple[bytes, int]:
    """The JSONL bytes of the pages' passages and their number."""
    lines = [
        _chunk_line(p)
        for title, wikitext, page_id in pages
        for p in _page_passages((title, wikitext, page_id, min_chars))
    ]
    return "".join(lines).encode("utf-8"), len(lines)


def _render_block(job: tuple[list[Page], int]) -> bytes:
    return _render(*job)[0]


def _block_passages(job: tuple[list[Page], int]) -> list[Passage]:
    pages, min_chars = job
    return [
        p for title, wikitext, page_id in pages for p in _page_passages((title, wikitext, page_id, min_chars))
    ]


class _ShardJob(NamedTuple):
    out_dir: str
    file: str
    block: int
    pages: list[Page]
    min_chars: int


def _write_shard(job: _ShardJob) -> dict[str, Any]:
    """Parse one block, write its shard atomically, and return its manifest entry (runs in a worker)."""
    data, n = _render(job.pages, job.min_chars)
    with atomic_write(Path(job.out_dir) / job.file, "wb") as fh:
        fh.write(data)
    return {
        "file": job.file,
        "block": job.block,
        "first_page": job.pages[0][2],
        "last_page": job.pages[-1][2],
        "pages": len(job.pages),
        "passages": n,
        "sha256": hashlib.sha256(data).hexdigest(),
    }


#: How worker processes start (``multiprocessing`` start method); see :func:`_pool`.
START_METHOD = "forkserver"


@contextlib.contextmanager
def _pool(workers: int) -> Iterator[PoolType | None]:
    """A process pool of ``workers`` processes, or ``None`` (work in this process) for one.

    The workers come from a fork server (a fresh, single-threaded interpreter), not from forking
    this process: a fork of a process with threads (torch, tokenizers, W&B, tqdm's monitor) can
    inherit a lock another thread held and hang the child forever (it did, in the test suite).
    """
    require_positive("workers", workers)
    if workers == 1:
        yield None
        return
    with multiprocessing.get_context(START_METHOD).Pool(workers) as pool:
        yield pool


def _ordered_map(
    fn: Callable[[_J], _R],
    jobs: Iterable[_J],
    pool: PoolType | None,
    salvage: Callable[[_R], None] | None = None,
) -> Generator[_R, None, None]:
    """``fn`` over ``jobs``, results in job order, at most two jobs per worker in flight.

    Unlike ``Pool.imap`` (whose feeder thread reads ``jobs`` to the end at once) this holds at
    most ``2 * processes`` jobs in memory, so a dump is streamed no faster than it is parsed.
    If the map stops early (an error in a job, Ctrl-C), ``salvage`` receives the results of the
    jobs that already finished but were not yet yielded.
    """
    if pool is None:
        for job in jobs:
            yield fn(job)
        return
    window = 2 * pool._processes  # type: ignore[attr-defined]
    pending: deque[AsyncResult[_R]] = deque()
    try:
        for job in jobs:
            pending.append(pool.apply_async(fn, (job,)))
            while pending and (len(pending) >= window or pending[0].ready()):
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()
    finally:
        if salvage is not None:
            for r in pending:
                if r.ready() and r.successful():
                    salvage(r.get())


def _progress(desc: str, total: int | None) -> Any:
    from tqdm.auto import tqdm

    # in a log file (a SLURM job) one line every 30 s, on a terminal a live bar
    return tqdm(
        desc=desc, total=total, unit="page", mininterval=1 if sys.stderr.isatty() else 30, file=sys.stderr
    )


def iter_passages(
    path: str | Path | Iterable[str | Path],
    max_pages: int | None = None,
    min_chars: int = 1,
    workers: int = 1,
) -> Iterator[Passage]:
    """The dumps' passages in dump and page order (pages parsed in ``workers`` processes)."""
    dumps = _dump_list(path)
    _require_dumps(dumps)
    with _pool(workers) as pool:
        for dump in dumps:
            jobs = ((pages, min_chars) for _, pages in iter_blocks(dump, _STREAM_BLOCK, max_pages))
            for passages in _ordered_map(_block_passages, jobs, pool):
                yield from passages


def write_chunks(
    dump: str | Path | Iterable[str | Path],
    out: str | Path,
    max_pages: int | None = None,
    min_chars: int = 1,
    workers: int = 1,
    progress: bool = False,
) -> int:
    """Write the dumps' passages as one JSONL file (``{"id", "title", "text"}`` per line).

    The single-file format; :func:`write_shards` is its resumable, sharded form (the
    concatenation of a dump's shards is this file, byte for byte). The file is written with
    :func:`rr.atomic.atomic_write`, so a killed run leaves no half-written corpus behind (and
    nothing to resume from).

    Returns:
        The number of passages written.
    """
    dumps = _dump_list(dump)
    _require_dumps(dumps)
    n = 0
    with _pool(workers) as pool, atomic_write(out, "wb") as fh:
        for d in dumps:
            bar = _progress(dump_stem(d), max_pages) if progress else None

            def jobs(d: Path = d, bar: Any = bar) -> Iterator[tuple[list[Page], int]]:
                for _, pages in iter_blocks(d, _STREAM_BLOCK, max_pages):
                    if bar is not None:
                        bar.update(len(pages))
                    yield pages, min_chars

            for data in _ordered_map(_render_block, jobs(), pool):
                fh.write(data)
                n += data.count(b"\n")
            if bar is not None:
                bar.close()
    return n


@dataclass
class ShardSummary:
    """What :func:`write_shards` did.

    Attributes:
        shards: Shards of the dumps now in the folder.
        parsed: Blocks parsed (and shards written) by this call.
        reused: Shards kept from an earlier run.
        passages: Passages in all the dumps' shards.
    """

    shards: int = 0
    parsed: int = 0
    reused: int = 0
    passages: int = 0


def manifest_path(out_dir: str | Path, dump: str | Path) -> Path:
    """The manifest of ``dump``'s shards in ``out_dir``."""
    return Path(out_dir) / f"{dump_stem(dump)}.manifest.json"


def _load_manifest(path: Path) -> dict[str, Any]:
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        if manifest.get("format") != MANIFEST_FORMAT or not isinstance(manifest.get("shards"), list):
            raise ValueError(f"format {manifest.get('format')!r}, expected {MANIFEST_FORMAT}")
    except (ValueError, AttributeError) as err:
        raise DataError(f"{path}: not a wiki_dump shard manifest ({err}); delete it to start over") from err
    return manifest  # type: ignore[no-any-return]


def manifest_complete(out_dir: str | Path, dump: str | Path) -> bool:
    """Whether ``out_dir`` holds a manifest marking all of ``dump``'s shards written (not verified)."""
    path = manifest_path(out_dir, dump)
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("complete") is True
    except (OSError, ValueError, AttributeError):
        return False


def _sha256(path: Path) -> str | None:
    """The file's sha256, or ``None`` if it is missing."""
    try:
        with path.open("rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except FileNotFoundError:
        return None


def _settings_mismatch(manifest: dict[str, Any], wanted: dict[str, Any], keys: Iterable[str]) -> str:
    return ", ".join(
        f"{k}={manifest.get(k)!r} (now {wanted[k]!r})" for k in keys if manifest.get(k) != wanted[k]
    )


def _shard_dump(
    dump: Path,
    out: Path,
    pool: PoolType | None,
    min_chars: int,
    max_pages: int | None,
    block_pages: int,
    progress: bool,
) -> ShardSummary:
    """Write (or complete) one dump's shards and manifest in ``out``."""
    mpath = manifest_path(out, dump)
    header: dict[str, Any] = {
        "format": MANIFEST_FORMAT,
        "dump": dump.name,
        "dump_bytes": dump.stat().st_size,
        "min_chars": min_chars,
        "max_pages": max_pages,
        "block_pages": block_pages,
    }
    done: dict[int, dict[str, Any]] = {}
    if mpath.exists():
        old = _load_manifest(mpath)
        if mismatch := _settings_mismatch(old, header, header):
            raise DataError(
                f"{mpath} was written with other settings: {mismatch}; use another folder or delete "
                f"{out / dump_stem(dump)}-*.jsonl and the manifest to redo them"
            )
        intact = True
        for entry in old["shards"]:
            digest = _sha256(out / entry["file"])
            if digest == entry["sha256"]:
                done[entry["block"]] = entry
                continue
            intact = False
            if digest is None:
                log.warning("wiki_dump: shard %s is missing; redoing it", out / entry["file"])
            else:
                log.warning(
                    "wiki_dump: shard %s is corrupt (sha256 mismatch); redoing it", out / entry["file"]
                )
                discard(out / entry["file"])
        if old.get("complete") is True and intact:
            log.info("wiki_dump: %s is complete (%d shards), nothing to do", mpath, len(done))
            return ShardSummary(len(done), 0, len(done), sum(e["passages"] for e in done.values()))

    summary = ShardSummary(reused=len(done))

    def save(complete: bool) -> None:
        shards = [done[i] for i in sorted(done)]
        manifest = {
            **header,
            "complete": complete,
            "pages": sum(e["pages"] for e in shards),
            "passages": sum(e["passages"] for e in shards),
            "shards": shards,
        }
        with atomic_write(mpath) as fh:
            fh.write(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")

    def record(entry: dict[str, Any]) -> None:
        done[entry["block"]] = entry
        summary.parsed += 1

    bar = _progress(dump_stem(dump), max_pages) if progress else None
    n_blocks = 0

    def jobs() -> Iterator[_ShardJob]:
        nonlocal n_blocks
        stem = dump_stem(dump)
        for index, pages in iter_blocks(dump, block_pages, max_pages):
            n_blocks = index + 1
            if bar is not None:
                bar.update(len(pages))
            entry = done.get(index)
            if entry is not None and (entry["first_page"], entry["pages"]) == (pages[0][2], len(pages)):
                continue
            if entry is not None:
                log.warning("wiki_dump: shard %s does not match the dump; redoing it", out / entry["file"])
                del done[index]
                summary.reused -= 1
            yield _ShardJob(str(out), f"{stem}-{index:05d}.jsonl", index, pages, min_chars)

    results = _ordered_map(_write_shard, jobs(), pool, salvage=record)
    try:
        for entry in results:
            record(entry)
            save(complete=False)
    except BaseException:
        results.close()  # records the shards that workers finished but the map did not yield yet
        save(complete=False)
        raise
    finally:
        if bar is not None:
            bar.close()
    for index in [i for i in done if i >= n_blocks]:  # a dump that shrank (size checked, so unlikely)
        log.warning("wiki_dump: shard %s is past the dump's end; dropping it", out / done[index]["file"])
        discard(out / done.pop(index)["file"])
        summary.reused -= 1
    save(complete=True)
    summary.shards = len(done)
    summary.passages = sum(e["passages"] for e in done.values())
    return summary


def write_shards(
    dumps: str | Path | Iterable[str | Path],
    out_dir: str | Path,
    max_pages: int | None = None,
    min_chars: int = 1,
    workers: int = 1,
    block_pages: int = 10_000,
    progress: bool = False,
) -> ShardSummary:
    """Write (or resume writing) the dumps' passages as a sharded folder; see the module docstring.

    Args:
        dumps: One ``pages-articles`` dump or several (part files); shards are named after
            each dump's stem, so separate jobs may write different dumps into one folder.
        out_dir: The folder (created if missing).
        max_pages: Parse only the first this many articles of each dump (``None`` = all).
        min_chars: Drop chunks shorter than this.
        workers: Processes parsing blocks (the dump is streamed by this process).
        block_pages: Articles per shard. Memory holds up to ``2 * workers`` blocks of
            wikitext (about 150 MB per 10,000 enwiki articles).
        progress: Show a tqdm bar over each dump's articles on stderr.

    Returns:
        Shards and passages now in the folder for these dumps, and how many shards were parsed
        now or kept from an earlier run.

    Raises:
        DataError: A dump is missing, or ``out_dir`` holds a manifest for a dump of another size
            or with other settings.
    """
    require_positive("block_pages", block_pages)
    require_positive("max_pages", max_pages, optional=True)
    paths = _dump_list(dumps)
    _require_dumps(paths)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    total = ShardSummary()
    with _pool(workers) as pool:
        for dump in paths:
            s = _shard_dump(dump, out, pool, min_chars, max_pages, block_pages, progress)
            log.info(
                "wiki_dump: %s: %d shards (%d parsed, %d kept), %d passages",
                dump.name,
                s.shards,
                s.parsed,
                s.reused,
                s.passages,
            )
            total.shards += s.shards
            total.parsed += s.parsed
            total.reused += s.reused
            total.passages += s.passages
    return total


def read_shards(
    out_dir: str | Path,
    dumps: str | Path | Iterable[str | Path],
    min_chars: int | None = None,
    max_pages: int | None = None,
    max_passages: int | None = None,
) -> list[Passage]:
    """The passages of the dumps' shards in ``out_dir``: dumps in the given order, shards in block order.

    The dumps themselves are not opened (only their names are used). ``min_chars`` and
    ``max_pages`` must equal those the shards were written with (``min_chars=None`` skips that
    check); ``max_passages`` stops after that many passages.

    Raises:
        DataError: A dump's manifest is missing or incomplete, was written with other settings,
            a shard's sha256 does not match its manifest, or a line is not a chunk (the message
            names the shard file and line).
    """
    out = Path(out_dir)
    wanted = {"min_chars": min_chars, "max_pages": max_pages}
    keys = ["max_pages"] if min_chars is None else ["min_chars", "max_pages"]
    passages: list[Passage] = []
    for dump in _dump_list(dumps):
        mpath = manifest_path(out, dump)
        if not mpath.is_file():
            raise DataError(
                f"{out} holds no shards of {Path(dump).name} ({mpath.name} missing); write them first"
            )
        manifest = _load_manifest(mpath)
        if manifest.get("complete") is not True:
            raise DataError(f"{mpath}: the shards are incomplete; re-run the same command to finish them")
        if mismatch := _settings_mismatch(manifest, wanted, keys):
            raise DataError(f"{mpath} was written with other settings: {mismatch}")
        for entry in manifest["shards"]:
            shard = out / entry["file"]
            try:
                data = shard.read_bytes()
            except FileNotFoundError as err:
                raise DataError(f"{shard}: shard missing; re-run the chunker to redo it") from err
            if hashlib.sha256(data).hexdigest() != entry["sha256"]:
                raise DataError(f"{shard}: shard corrupt (sha256 mismatch); re-run the chunker to redo it")
            for i, line in enumerate(_chunk_lines(data.decode("utf-8")), 1):
                if max_passages is not None and len(passages) >= max_passages:
                    return passages
                passages.append(_parse_line(line, shard, i))
    return passages


def _chunk_lines(text: str) -> list[str]:
    """A chunk file's lines, split at ``"\\n"`` only: ``splitlines()`` would also split inside a
    chunk written before U+2028 / U+2029 / U+0085 were escaped (raw in a page's text)."""
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def _parse_line(line: str, source: Path, lineno: int) -> Passage:
    try:
        row = json.loads(line)
        return Passage(id=row["id"], text=row["text"], title=row["title"])
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise DataError(f"{source}:{lineno}: not a chunk line ({err})") from err


def is_jsonl(chunks: Path) -> bool:
    """Whether ``chunks`` names the single-file format (``*.jsonl`` or an existing file)."""
    return chunks.suffix == ".jsonl" or chunks.is_file()


@component("corpus", "wiki_dump")
class WikiDumpCorpus:
    """Passages of Wikipedia XML dumps, split by double newlines (Cao et al. §4.1).

    Args:
        path: The ``*-pages-articles*.xml[.bz2]`` dump, or a list of them (enwiki's part
            files); passages come in this order. A dump is opened only when its chunks are not
            yet in ``chunks_path``.
        chunks_path: Optional cache of the chunks (parse once, reuse in every job). A path
            ending in ``.jsonl`` (or an existing file) is one JSONL file: read when it exists,
            else written. Any other path is a sharded folder (see the module docstring):
            dumps whose shards are missing or incomplete are (re)written, resuming where a
            killed run stopped, then the shards are read.
        max_pages: Parse only the first this many articles of each dump (``None`` = all).
        min_chars: Drop chunks shorter than this (1 = keep every non-empty chunk).
        processes: Older name of ``workers``; overrides it when set.
        max_passages: Keep only the first this many chunks (``None`` = all), as
            ``corpus=jsonl`` does; applied after ``chunks_path`` is written, so the cached
            chunks stay complete.
        name: Corpus name used in cache keys and file names.
        workers: Worker processes for parsing.
        block_pages: Articles per shard of a sharded ``chunks_path``.
    """

    def __init__(
        self,
        path: str | list[str],
        chunks_path: str | None = None,
        max_pages: int | None = None,
        min_chars: int = 1,
        processes: int | None = None,
        max_passages: int | None = None,
        name: str = "wiki_dump",
        workers: int = 1,
        block_pages: int = 10_000,
    ) -> None:
        require_positive("max_passages", max_passages, optional=True)
        require_positive("max_pages", max_pages, optional=True)
        require_positive("block_pages", block_pages)
        workers = processes if processes is not None else workers
        require_positive("processes" if processes is not None else "workers", workers)
        self.max_passages = max_passages
        self.path = path
        self.chunks_path = chunks_path
        self.max_pages = max_pages
        self.min_chars = min_chars
        self.workers = workers
        self.block_pages = block_pages
        self.name = name

    def _dumps(self) -> list[str]:
        return [self.path] if isinstance(self.path, str) else [str(p) for p in self.path]

    def load(self) -> Corpus:
        """The passages (read from ``chunks_path`` when it holds them, else parsed)."""
        names = ",".join(Path(d).name for d in self._dumps())
        source = (
            f"{names}:max_pages={self.max_pages}:min_chars={self.min_chars}:max_passages={self.max_passages}"
        )
        chunks = Path(self.chunks_path) if self.chunks_path else None
        if chunks is None:
            return Corpus(
                iter_passages(self._dumps(), self.max_pages, self.min_chars, self.workers),
                name=self.name,
                source=source,
            )
        if not is_jsonl(chunks):
            todo = [d for d in self._dumps() if not manifest_complete(chunks, d)]
            if todo:
                s = write_shards(
                    todo,
                    chunks,
                    self.max_pages,
                    self.min_chars,
                    self.workers,
                    self.block_pages,
                    progress=True,
                )
                log.info("wiki_dump: %d shards in %s (%d parsed now)", s.shards, chunks, s.parsed)
            passages = read_shards(chunks, self._dumps(), self.min_chars, self.max_pages, self.max_passages)
            return Corpus(passages, name=self.name, source=source)
        if not chunks.exists():
            n = write_chunks(
                self._dumps(), chunks, self.max_pages, self.min_chars, self.workers, progress=True
            )
            log.info("wiki_dump: wrote %d chunks to %s", n, chunks)
        passages = []
        with chunks.open(encoding="utf-8", newline="\n") as fh:  # lines end at "\n" only, as _chunk_lines
            for i, line in enumerate(fh, 1):
                if self.max_passages is not None and len(passages) >= self.max_passages:
                    break
                passages.append(_parse_line(line, chunks, i))
        return Corpus(passages, name=self.name, source=source)
