"""The generation cache: append-only JSONL shards, one per writing job, safe on shared filesystems.

Layout: ``<cache_dir>/generations/<model hash>/<writer>.jsonl``; each line is
``{"key", "text", "prompt_tokens", "completion_tokens"}``. A job only ever appends to its
own shard and flushes after every batch, so any number of jobs can run at once, and a
job killed mid-write leaves at most one torn last line, which readers skip (and count); a
writer that reopens a shard ending in a torn line (a recycled pid) starts on a fresh line, so
the torn line never swallows a good entry.
Entries are namespaced by the model identity twice over: the folder and the key itself.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path

from rr.generation.base import Completion
from rr.hashing import content_hash

log = logging.getLogger(__name__)


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
            meta.write_text(json.dumps(identity, indent=1))
        self.shard = self.dir / f"{writer}-{os.getpid()}.jsonl"
        self.torn_lines = 0
        self._shard_checked = False
        self._entries: dict[str, Completion] = {}
        for path in sorted(self.dir.glob("*.jsonl")):
            self._read(path)
        if self.torn_lines:
            log.warning("generation cache %s: skipped %d torn line(s)", self.dir, self.torn_lines)

    def _read(self, path: Path) -> None:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    rec = json.loads(line)
                    self._entries[rec["key"]] = Completion(
                        rec["text"], rec["prompt_tokens"], rec["completion_tokens"]
                    )
                except (json.JSONDecodeError, KeyError, TypeError):
                    self.torn_lines += 1  # a line cut by a killed writer: that request is simply redone

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
