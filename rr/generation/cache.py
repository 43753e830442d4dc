"""The generation cache: append-only JSONL shards, one per writing job, safe on shared filesystems.

Layout: ``<cache_dir>/generations/<model hash>/<writer>.jsonl``; each line is
``{"key", "text", "prompt_tokens", "completion_tokens"}``. A job only ever appends to its
own shard and flushes after every batch, so any number of jobs can run at once, and a
job killed mid-write leaves at most one torn last line, which readers skip (and count); a
writer that reopens a shard ending in a torn line (a recycled pid) starts on a fresh line, so
the torn line never swallows a good entry. Shards are read as bytes and every line that is
not a valid entry (cut inside a multi-byte character, random bytes, fields of the wrong type)
is skipped, counted (:attr:`GenerationCache.torn_lines`, ``cache_torn_lines`` in
``summary.json``) and reported in a warning naming the shard; a damaged shard never stops a job.
Entries are namespaced by the model identity twice over: the folder and the key itself.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path

from rr.atomic import atomic_write
from rr.generation.base import Completion
from rr.hashing import content_hash

log = logging.getLogger(__name__)


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
        #: Lines skipped while reading the shards (torn, not UTF-8, not JSON, wrong field types).
        self.torn_lines = 0
        #: Shard -> lines skipped in it (only shards with skips).
        self.skipped_by_shard: dict[Path, int] = {}
        self._shard_checked = False
        self._entries: dict[str, Completion] = {}
        for path in sorted(self.dir.glob("*.jsonl")):
            self._read(path)
        for path, n in self.skipped_by_shard.items():
            log.warning(
                "generation cache: skipped %d unreadable line(s) in shard %s (torn by a killed "
                "writer or damaged); those requests are simply redone",
                n,
                path,
            )

    def _read(self, path: Path) -> None:
        """Load one shard; skip and count every line that is not a valid entry (never raise)."""
        skipped = 0
        for raw in path.read_bytes().split(b"\n"):
            if not raw.strip():
                continue
            entry = parse_entry(raw)
            if entry is None:
                skipped += 1  # a line cut by a killed writer: that request is simply redone
            else:
                self._entries[entry[0]] = entry[1]
        if skipped:
            self.torn_lines += skipped
            self.skipped_by_shard[path] = skipped

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> Completion | None:
        return self._entries.get(key)

    def put_many(self, items: Iterable[tuple[str, Completion]]) -> None:
        """Append entries to this writer's shard and flush them to disk before returning."""
        lines = []
        for key, c in items:
            self._entries[key] = c
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
