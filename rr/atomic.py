"""Atomic file and folder writes: the only way ``rr`` replaces a file other jobs may read.

Every write goes to a temporary name next to the target that is unique per process *and*
thread (``.<name>.tmp-<pid>-<thread id>-<random>``), is flushed and fsynced, and is then
moved into place with :func:`os.replace`. So a reader sees the old file or the new one,
never half of either; any number of processes and threads may write the same path at once
(the last rename wins, each rename installs a complete file); and a writer that fails (a
full disk, an exception in the caller, Ctrl-C) removes its temporary and leaves the old
file untouched. Only SIGKILL can leave a temporary behind; its name starts with a dot and
carries ``.tmp-`` so it is recognisable and never mistaken for the target.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any


def temp_name(path: str | Path) -> Path:
    """A sibling of ``path`` that no other process or thread will pick."""
    path = Path(path)
    tag = f"{os.getpid()}-{threading.get_ident()}-{uuid.uuid4().hex[:8]}"
    return path.with_name(f".{path.name}.tmp-{tag}")


def _fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (best effort: not every platform opens folders)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _fsync_file(path: Path) -> None:
    with open(path, "rb+") as f:
        os.fsync(f.fileno())


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str | None = "w", encoding: str = "utf-8") -> Iterator[Any]:
    """Write ``path`` atomically.

    Args:
        path: The target file; its folder is created if missing.
        mode: ``"w"`` (text, yields an open text file), ``"wb"`` (yields an open binary file),
            or ``None`` for writers that take a path (``df.to_parquet(tmp)``, ``np.save``,
            ``faiss.write_index``): the temporary :class:`~pathlib.Path` is yielded and the
            caller writes it.
        encoding: Text encoding for ``mode="w"``.

    On normal exit the temporary is fsynced and renamed over ``path``; on any exception
    (including ``OSError(ENOSPC)`` from a full disk) it is removed, ``path`` is left as it
    was, and the exception propagates.

    Example::

        with atomic_write(out / "counts.json") as f:
            json.dump(counts, f)
    """
    if mode not in ("w", "wb", None):
        raise ValueError(f"atomic_write: mode must be 'w', 'wb' or None, got {mode!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(path)
    try:
        if mode is None:
            yield tmp
            _fsync_file(tmp)
        else:
            f: IO[Any]
            with open(tmp, mode, encoding=encoding if mode == "w" else None) as f:
                yield f
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise
    _fsync_dir(path.parent)


@contextlib.contextmanager
def atomic_dir(path: str | Path) -> Iterator[Path]:
    """Build a folder under a temporary name and rename it into place as a whole.

    Yields the (not yet existing) temporary folder path; the caller creates and fills it
    (index writers such as ``bm25s`` and Lucene create it themselves). On normal exit it is
    renamed to ``path``. If ``path`` already exists (another job won the race), the copy
    just built is discarded and the existing folder kept: builders of the same content
    agree, so either copy is right. On an exception the temporary is removed.

    A folder found to be corrupt must be moved aside first with :func:`discard`.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(path)
    try:
        yield tmp
        for f in tmp.rglob("*") if tmp.is_dir() else ():
            if f.is_file():
                _fsync_file(f)
        try:
            os.replace(tmp, path)
        except OSError:
            if not path.exists():
                raise
            _remove(tmp)  # another job renamed its copy into place first: keep theirs
    except BaseException:
        _remove(tmp)
        raise
    _fsync_dir(path.parent)


def discard(path: str | Path) -> None:
    """Remove a corrupt file or folder safely under concurrency.

    The entry is first renamed to a unique temporary name (atomic, so no other job ever
    sees it half deleted) and then deleted; a path that is already gone is fine.
    """
    path = Path(path)
    trash = temp_name(path)
    try:
        os.replace(path, trash)
    except FileNotFoundError:
        return
    _remove(trash)
