"""``rr chunk-wiki DUMP [DUMP ...] OUT``: chunk Wikipedia XML dumps into passages (``corpus=wiki_dump``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from rr.data.wiki_dump import is_jsonl, write_chunks, write_shards
from rr.errors import UserError


def main(argv: Sequence[str] | None = None) -> int:
    """``rr chunk-wiki DUMP [DUMP ...] OUT`` (or ``python -m rr.commands.chunk_wiki``): chunk the dumps into ``OUT``.

    ``OUT`` ending in ``.jsonl`` is one JSONL file (not resumable); anything else a sharded,
    resumable folder. A user error (a missing dump, a manifest with other settings) is printed
    as one line ``rr: ...`` on stderr, with exit status 2.
    """
    p = argparse.ArgumentParser(prog="rr chunk-wiki", description=__doc__.split("\n\n")[0])
    p.add_argument("dump", nargs="+", help="pages-articles XML dump(s), .xml or .xml.bz2")
    p.add_argument("out", help="output folder (sharded, resumable) or OUT.jsonl (one file)")
    p.add_argument("--workers", "--processes", type=int, default=1, dest="workers", help="parsing processes")
    p.add_argument("--block-pages", type=int, default=10_000, help="articles per shard (folder output)")
    p.add_argument("--max-pages", type=int, default=None, help="first this many articles of each dump")
    p.add_argument("--min-chars", type=int, default=1, help="drop chunks shorter than this")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    a = p.parse_args(argv)
    progress = not a.no_progress
    try:
        if is_jsonl(Path(a.out)):
            n = write_chunks(a.dump, a.out, a.max_pages, a.min_chars, a.workers, progress=progress)
            print(f"wrote {n} chunks to {a.out}")
        else:
            s = write_shards(
                a.dump, a.out, a.max_pages, a.min_chars, a.workers, a.block_pages, progress=progress
            )
            print(
                f"wrote {s.passages} chunks to {a.out} in {s.shards} shards ({s.parsed} parsed now, {s.reused} kept)"
            )
    except UserError as e:
        print(f"rr: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
