"""The generation cache: append-only JSONL shards, one per writing job, safe on shared filesystems.

Layout: ``<cache_dir>/generations/<model hash>/<writer>.jsonl``; each line is
``{"key", "text", "prompt_tokens", "completion_tokens"}``. A job only ever appends to its
own shard and flushes after every :meth:`GenerationCache.put_many` (one chunk of ``flush_every``
prompts: :class:`~rr.generation.client.LLM`), so any number of jobs can run at once, and a
job killed mid-write leaves at most one torn last line, which readers skip (and count); a
writer that reopens a shard ending in a torn line (a recycled pid) starts on a fresh line, so
the torn line never swallows a good entry. Shards are read as bytes and every line that is
not a valid entry (cut inside a multi-byte character, random bytes, fields of the wrong type)
is skipped, counted (:attr:`GenerationCache.torn_lines`, ``cache_torn_lines`` in
``summary.json``) and reported in a warning naming the shard; a damaged shard never stops a job.
Entries are namespaced by the model identity twice over: the folder and the key itself.

**Shard indexes.** A job does not read every shard into memory: each shard has a key index,
``<model hash>/index/<shard>.arrow`` (an Arrow IPC file: the sorted 64-bit BLAKE2b hashes of
its keys and the byte offset of each key's last line, and in its metadata the number of bytes
it covers, a fingerprint of their last bytes and the lines it skipped). A job holds the
indexes (16 bytes per entry) and looks the keys of each step up in bulk
(:meth:`GenerationCache.prefetch`); only the lines it needs are read and parsed. An index is
built by the first job that finds its shard without one (or finds it corrupt, or covering a
prefix that no longer matches the shard), extended when the shard has grown (only the new
bytes are parsed), and written by a writer for its own shard when its job ends
(:meth:`GenerationCache.close`). Indexes are replaced only by atomic renames and every line an
index points at is parsed and its key compared, so a stale, foreign or damaged index can cost
time but never change an answer: lookups give exactly what reading every shard whole gives
(the last line of a key in the last shard, in name order, that holds it; shards as they were
when the cache was opened, plus this job's own writes). A folder the job cannot write to is
read all the same (indexes are then built in memory only).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from rr.atomic import atomic_write, temp_name
from rr.generation.base import Completion
from rr.hashing import content_hash

log = logging.getLogger(__name__)

#: Version of the shard index format; an index of another version is rebuilt.
INDEX_VERSION = "1"
#: Bytes before an index's end whose hash it keeps (shows a shard replaced under its index).
FINGERPRINT_BYTES = 256


def parse_entry(raw: bytes) -> tuple[str, Completion] | None:
    """One shard line as ``(key, completion)``, or ``None`` when it is not a valid entry.

    Valid means: UTF-8, a JSON object with a string ``key`` and ``text`` (both encodable,
    so no lone surrogates) and non-negative integer ``prompt_tokens`` and
    ``completion_tokens``. Anything else (a line cut inside a multi-byte character by a
    kill or a full disk, random bytes, ``"text": 123``) gives ``None``; nothing raises.
    """
    try:
        rec = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return None
    if not isinstance(rec, dict):
        return None
    key, text = rec.get("key"), rec.get("text")
    n_prompt, n_out = rec.get("prompt_tokens"), rec.get("completion_tokens")
    if not isinstance(key, str) or not isinstance(text, str):
        return None
    if not isinstance(n_prompt, int) or not isinstance(n_out, int) or min(n_prompt, n_out) < 0:
        return None
    if isinstance(n_prompt, bool) or isinstance(n_out, bool):  # JSON true/false are not counts
        return None
    try:
        key.encode("utf-8")
        text.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return key, Completion(text, n_prompt, n_out)


def key_hashes(keys: Iterable[str]) -> np.ndarray:
    """The 64-bit BLAKE2b hash of each key (UTF-8; ``surrogatepass`` so no key raises), as uint64."""
    digests = b"".join(
        hashlib.blake2b(k.encode("utf-8", "surrogatepass"), digest_size=8).digest() for k in keys
    )
    return np.frombuffer(digests, dtype="<u8")


def _parse_lines(data: bytes, base: int) -> tuple[list[str], list[int], dict[str, Completion], int]:
    """Parse the complete lines of ``data`` (which starts at byte ``base`` of its shard).

    Returns each valid line's key and offset (in order), the entries themselves (last line of
    a key wins) and the number of non-blank lines that are not valid entries.
    """
    keys: list[str] = []
    offsets: list[int] = []
    entries: dict[str, Completion] = {}
    skipped = 0
    pos = 0
    for raw in data.split(b"\n"):
        if raw.strip():
            entry = parse_entry(raw)
            if entry is None:
                skipped += 1  # a line cut by a killed writer: that request is simply redone
            else:
                keys.append(entry[0])
                offsets.append(base + pos)
                entries[entry[0]] = entry[1]
        pos += len(raw) + 1
    return keys, offsets, entries, skipped


def _last_per_hash(hashes: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sort by hash and keep, for each hash, its largest offset (the key's last line)."""
    order = np.lexsort((offsets, hashes))
    h, o = hashes[order], offsets[order]
    last = np.ones(len(h), dtype=bool)
    last[:-1] = h[1:] != h[:-1]
    return h[last], o[last]


@dataclass
class _Shard:
    """One shard as this cache sees it: the index of its complete lines up to :attr:`indexed`
    bytes and the entry of its unterminated last line (if valid)."""

    path: Path
    indexed: int
    hashes: np.ndarray
    offsets: np.ndarray
    skipped: int
    fragment: dict[str, Completion] = field(default_factory=dict)


class GenerationCache:
    """Key -> :class:`Completion` store for one model identity.

    Args:
        cache_dir: The job's cache root (``paths.cache_dir``).
        identity: The generator's :meth:`~rr.generation.base.Generator.identity`.
        writer: Name of this process's shard (the job id; the pid is appended).
        namespace: Sub-folder (``generations``; judges use their own).
    """

    def __init__(
        self, cache_dir: str | Path, identity: dict, writer: str, namespace: str = "generations"
    ) -> None:
        self.dir = Path(cache_dir) / namespace / content_hash(identity, 16)
        self.dir.mkdir(parents=True, exist_ok=True)
        meta = self.dir / "model.json"
        if not meta.exists():
            with atomic_write(meta) as f:
                f.write(json.dumps(identity, indent=1))
        self.shard = self.dir / f"{writer}-{os.getpid()}.jsonl"
        self.index_dir = self.dir / "index"
        #: Lines skipped while reading the shards (torn, not UTF-8, not JSON, wrong field types).
        self.torn_lines = 0
        #: Shard -> lines skipped in it (only shards with skips).
        self.skipped_by_shard: dict[Path, int] = {}
        #: Shard indexes built or extended by this cache (not found up to date on disk).
        self.indexes_built = 0
        self._shard_checked = False
        self._index_writable = True
        self._entries: dict[str, Completion] = {}  # this job's writes and every entry looked up
        self._absent: set[str] = set()  # keys looked up and not found
        self._shards: list[_Shard] = []
        for path in sorted(self.dir.glob("*.jsonl")):
            shard = self._open_shard(path)
            self._shards.append(shard)
            if shard.skipped:
                self.torn_lines += shard.skipped
                self.skipped_by_shard[path] = shard.skipped
        for path, n in self.skipped_by_shard.items():
            log.warning(
                "generation cache: skipped %d unreadable line(s) in shard %s (torn by a killed "
                "writer or damaged); those requests are simply redone",
                n,
                path,
            )

    # ------------------------------------------------------------------ shard indexes

    def _index_path(self, shard: Path) -> Path:
        return self.index_dir / f"{shard.name}.arrow"

    @staticmethod
    def _fingerprint(f, end: int) -> str:  # type: ignore[no-untyped-def]
        start = max(0, end - FINGERPRINT_BYTES)
        f.seek(start)
        return hashlib.blake2b(f.read(end - start), digest_size=16).hexdigest()

    def _load_index(self, shard: Path, f, size: int) -> _Shard | None:  # type: ignore[no-untyped-def]
        """The shard's index from disk if it is readable and matches the shard, else ``None``."""
        path = self._index_path(shard)
        try:
            with pa.OSFile(str(path), "rb") as src:
                table = pa.ipc.open_file(src).read_all()
            meta = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
            indexed, skipped = int(meta["indexed_bytes"]), int(meta["skipped"])
            hashes = table.column("hash").to_numpy()
            offsets = table.column("offset").to_numpy()
        except FileNotFoundError:
            return None
        except (pa.ArrowException, OSError, KeyError, ValueError, TypeError) as e:
            log.warning("generation cache: index %s is unreadable (%s); rebuilding it", path, e)
            return None
        ok = (
            meta.get("version") == INDEX_VERSION
            and meta.get("shard") == shard.name
            and 0 <= indexed <= size
            and hashes.dtype == np.uint64
            and offsets.dtype == np.uint64
            and len(hashes) == len(offsets)
            and (len(offsets) == 0 or int(offsets.max()) < indexed)
            and meta.get("fingerprint") == self._fingerprint(f, indexed)
        )
        if not ok:
            log.warning("generation cache: index %s does not match its shard; rebuilding it", path)
            return None
        return _Shard(shard, indexed, hashes, offsets, skipped)

    def _write_index(self, s: _Shard, fingerprint: str) -> None:
        """Store ``s``'s index atomically (best effort: a read-only folder keeps it in memory)."""
        if not self._index_writable:
            return
        meta = {
            "version": INDEX_VERSION,
            "shard": s.path.name,
            "indexed_bytes": str(s.indexed),
            "skipped": str(s.skipped),
            "fingerprint": fingerprint,
        }
        table = pa.table({"hash": s.hashes, "offset": s.offsets}).replace_schema_metadata(meta)
        path = self._index_path(s.path)
        tmp = temp_name(path)
        try:
            # An index is derived data: no fsync (a thousand shards would cost seconds). A crash
            # can leave it empty or torn, which the next reader finds unreadable and rebuilds.
            path.parent.mkdir(exist_ok=True)
            with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
                w.write_table(table)
            os.replace(tmp, path)
        except OSError as e:
            tmp.unlink(missing_ok=True)
            self._index_writable = False
            log.warning(
                "generation cache: cannot write shard indexes in %s (%s); keeping them in memory",
                self.index_dir,
                e,
            )

    def _open_shard(self, path: Path) -> _Shard:
        """Index ``path`` as it is now: load its index, extend it over new complete lines (or build
        it), and parse the unterminated last line, if any."""
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            s = self._load_index(path, f, size)
            if s is None:
                s = _Shard(path, 0, np.zeros(0, np.uint64), np.zeros(0, np.uint64), 0)
            f.seek(s.indexed)
            rest = f.read(size - s.indexed)
            end = rest.rfind(b"\n") + 1  # new complete lines: rest[:end]
            if end:
                keys, offsets, _, skipped = _parse_lines(rest[: end - 1], s.indexed)
                s.hashes, s.offsets = _last_per_hash(
                    np.concatenate([s.hashes, key_hashes(keys)]),
                    np.concatenate([s.offsets, np.asarray(offsets, dtype=np.uint64)]),
                )
                s.indexed += end
                s.skipped += skipped
                self.indexes_built += 1
                self._write_index(s, self._fingerprint(f, s.indexed))
            if rest[end:].strip():  # a line still being written, or torn by a killed writer
                _, _, s.fragment, skipped = _parse_lines(rest[end:], s.indexed)
                s.skipped += skipped
        return s

    # ------------------------------------------------------------------ lookups

    def prefetch(self, keys: Iterable[str]) -> None:
        """Look ``keys`` up in every shard at once, so that :meth:`get` answers them from memory.

        One pass over the shard indexes for all the keys (a sorted search per shard), then one
        read per hit of the line it points at; the key on that line is compared, so a hash
        collision or a damaged index only sends that key down a slower exact path.
        """
        todo = list(dict.fromkeys(k for k in keys if k not in self._entries and k not in self._absent))
        if not todo:
            return
        hashes = key_hashes(todo)
        order = np.argsort(hashes, kind="stable")
        sorted_h = hashes[order]
        where = np.full(len(todo), -1, dtype=np.int64)  # last shard whose index holds the key
        offset = np.zeros(len(todo), dtype=np.uint64)  # ... and the offset of its line there
        in_fragment = np.full(len(todo), -1, dtype=np.int64)  # last shard whose unterminated line it is
        position = {k: i for i, k in enumerate(todo)} if any(s.fragment for s in self._shards) else {}
        distinct = not (sorted_h[1:] == sorted_h[:-1]).any()
        for si, s in enumerate(self._shards):
            if len(s.hashes) and (len(s.hashes) >= len(todo) or not distinct):
                pos = np.minimum(np.searchsorted(s.hashes, sorted_h), len(s.hashes) - 1)
                hit = s.hashes[pos] == sorted_h
                where[order[hit]] = si
                offset[order[hit]] = s.offsets[pos[hit]]
            elif len(s.hashes):  # a small shard: search its hashes among the keys' instead
                pos = np.minimum(np.searchsorted(sorted_h, s.hashes), len(sorted_h) - 1)
                hit = sorted_h[pos] == s.hashes
                where[order[pos[hit]]] = si
                offset[order[pos[hit]]] = s.offsets[hit]
            for k in s.fragment:
                if k in position:
                    in_fragment[position[k]] = si
        # a shard's unterminated last line comes after its indexed lines, before the next shard
        from_fragment = (in_fragment >= 0) & (in_fragment >= where)
        for i in np.flatnonzero(from_fragment):
            self._entries[todo[i]] = self._shards[in_fragment[i]].fragment[todo[i]]
        where[from_fragment] = -2
        suspects: list[int] = []
        for si in np.unique(where[where >= 0]):
            idx = np.flatnonzero(where == si)
            idx = idx[np.argsort(offset[idx], kind="stable")]
            with open(self._shards[si].path, "rb") as f:
                for i in idx:
                    f.seek(int(offset[i]))
                    entry = parse_entry(f.readline().rstrip(b"\n"))
                    if entry is not None and entry[0] == todo[i]:
                        self._entries[todo[i]] = entry[1]
                    else:
                        suspects.append(int(i))
        for i in suspects:
            self._exact_lookup(todo[i], hashes[i])
        self._absent.update(todo[i] for i in np.flatnonzero(where == -1))

    def _exact_lookup(self, key: str, h: np.uint64) -> None:
        """Find ``key`` by parsing the shards whose index holds its hash (a hash collision, or an
        index that no longer matches its shard): slow, exact, rare."""
        found: Completion | None = None
        for s in self._shards:
            pos = int(np.searchsorted(s.hashes, h))
            if pos < len(s.hashes) and s.hashes[pos] == h:
                with open(s.path, "rb") as f:
                    data = f.read(s.indexed)
                entries = _parse_lines(data[:-1] if data.endswith(b"\n") else data, 0)[2]
                if key in entries:
                    found = entries[key]
                else:
                    log.debug("generation cache: shard %s holds another key of %s's hash", s.path, key)
            if key in s.fragment:
                found = s.fragment[key]
        if found is None:
            self._absent.add(key)
        else:
            self._entries[key] = found

    def __len__(self) -> int:
        """Distinct keys in the shards (as opened) and this job's writes: distinct 64-bit key
        hashes, so keys whose hashes collide count once (for 10^7 keys, a chance of ~3e-6)."""
        parts = [s.hashes for s in self._shards]
        parts += [key_hashes(s.fragment) for s in self._shards if s.fragment]
        parts.append(key_hashes(self._entries))
        return len(np.unique(np.concatenate(parts)))

    def get(self, key: str) -> Completion | None:
        """The completion cached under ``key``, or ``None`` (call :meth:`prefetch` first for many keys)."""
        if key not in self._entries and key not in self._absent:
            self.prefetch([key])
        return self._entries.get(key)

    def put_many(self, items: Iterable[tuple[str, Completion]]) -> None:
        """Append entries to this writer's shard and flush them to disk before returning."""
        lines = []
        for key, c in items:
            self._entries[key] = c
            self._absent.discard(key)
            lines.append(
                json.dumps(
                    {
                        "key": key,
                        "text": c.text,
                        "prompt_tokens": c.prompt_tokens,
                        "completion_tokens": c.completion_tokens,
                    },
                    ensure_ascii=False,
                )
            )
        if not lines:
            return
        prefix = ""
        if not self._shard_checked:
            self._shard_checked = True
            if self.shard.exists() and self.shard.stat().st_size:
                with open(self.shard, "rb") as fb:
                    fb.seek(-1, os.SEEK_END)
                    if fb.read(1) != b"\n":
                        prefix = "\n"  # end the torn line left by a killed writer of this name
        with open(self.shard, "a", encoding="utf-8") as f:
            f.write(prefix + "\n".join(lines) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def close(self) -> None:
        """Index this writer's shard, so the next job need not parse it (a killed job skips this:
        the next job to open the cache builds the index instead)."""
        if self.shard.exists():
            self._open_shard(self.shard)
