"""The Python environment a job ran in (issue 38): which lock, and whether it is what is installed.

``make install`` installs exactly the hashed pins of ``locks/rr.txt`` and ``locks/rr-data.txt``
(tools/lock.py writes them). A job's ``summary.json`` records :func:`environment`:

* ``lock``: the first 12 hex digits of the sha256 of those two files' bytes (``None`` where rr is
  not run from its source tree, so that no lock lies beside it);
* ``matches_lock``: whether every installed distribution (rr itself aside) is a locked one at its
  locked version, and every locked one is installed (``None`` without a lock);
* ``differences``: the first few that are not (``name: installed X, locked Y``), sorted.

Two jobs with equal ``lock`` and both ``matches_lock`` ran on the same package versions; ``rr
report`` says when the jobs it compares did not. The record is computed once per process (one pass
over the installed distributions' metadata, no import) and never enters a job id.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rr.jobfolder import EnvironmentRecord

#: The source tree rr runs from (an editable install: ``make install``).
ROOT = Path(__file__).resolve().parent.parent
#: The lock files of ``.venv``, in the order they are hashed.
LOCK_FILES = ("locks/rr.txt", "locks/rr-data.txt")
#: Installed distributions that are not in a lock by design: rr itself (``pip install -e .``).
UNLOCKED = frozenset({"rr"})
#: How many differences a record lists (the count is complete).
MAX_LISTED = 10

_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")


def normalize(name: str) -> str:
    """A distribution name as PEP 503 compares them (``Foo_Bar`` and ``foo-bar`` are one)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def locked_pins(text: str) -> dict[str, str]:
    """``{normalized name: version}`` of a requirements lock's ``name==version`` lines."""
    pins = {}
    for line in text.splitlines():
        if match := _PIN.match(line):
            pins[normalize(match.group(1))] = match.group(2)
    return pins


def installed_versions(path: list[str] | None = None) -> dict[str, str]:
    """``{normalized name: version}`` of every distribution on ``path`` (default ``sys.path``; the
    first one wins, as for imports), read from the ``NAME-VERSION.dist-info`` folder names: one
    ``listdir`` per entry (reading 300 METADATA files took 0.66 s on the shared 2-core VM, this
    under 1 ms). An ``.egg-info`` (a legacy install) is read through its metadata."""
    out: dict[str, str] = {}
    for entry in sys.path if path is None else path:
        if _inside_installation(entry):
            continue
        try:
            names = sorted(os.listdir(entry or "."))
        except OSError:
            continue
        for folder in names:
            stem, dot, kind = folder.rpartition(".")
            if kind == "dist-info" and "-" in stem:
                name, _, version = stem.partition("-")
            elif kind == "egg-info":
                dist = importlib.metadata.PathDistribution(Path(entry or ".") / folder)
                name, version = dist.metadata["Name"] or stem.partition("-")[0], dist.version
            else:
                continue
            out.setdefault(normalize(name), version)
    return out


def same_version(a: str | None, b: str | None) -> bool:
    """Equal as PEP 440 versions (``1.0-post1`` is ``1.0.post1``); plain string equality first."""
    if a == b:
        return True
    if a is None or b is None:
        return False
    from packaging.version import InvalidVersion, Version

    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return False


def differences(pins: dict[str, str], installed: dict[str, str]) -> list[str]:
    """What keeps ``installed`` from being exactly ``pins`` (:data:`UNLOCKED` aside), sorted by name."""
    out = []
    for name in sorted(set(pins) | set(installed)):
        if name in UNLOCKED:
            continue
        have, want = installed.get(name), pins.get(name)
        if same_version(have, want):
            continue
        if want is None:
            out.append(f"{name}: installed {have}, not locked")
        elif have is None:
            out.append(f"{name}: not installed, locked {want}")
        else:
            out.append(f"{name}: installed {have}, locked {want}")
    return out


def _inside_installation(entry: str) -> bool:
    """Whether a ``sys.path`` entry is a folder *inside* a site-packages folder (e.g. setuptools'
    ``_vendor``, which ``pkg_resources`` puts on ``sys.path`` when something imports it): what lies
    there is vendored, not installed, so the record does not depend on what was imported first."""
    parts = Path(entry or ".").parts
    return any(part in ("site-packages", "dist-packages") for part in parts[:-1])


def record(root: Path = ROOT, path: list[str] | None = None) -> dict[str, Any]:
    """The environment record of the distributions on ``path`` (default ``sys.path``: the
    interpreter running now) against the locks under ``root``."""
    locks = [root / name for name in LOCK_FILES]
    if not all(lock.is_file() for lock in locks):
        return {"lock": None, "matches_lock": None, "differences": [], "n_differences": None}
    digest = hashlib.sha256()
    pins: dict[str, str] = {}
    for lock in locks:
        data = lock.read_bytes()
        digest.update(data)
        pins.update(locked_pins(data.decode("utf-8")))
    diffs = differences(pins, installed_versions(path))
    return {
        "lock": digest.hexdigest()[:12],
        "matches_lock": not diffs,
        "differences": diffs[:MAX_LISTED],
        "n_differences": len(diffs),
    }


@functools.cache
def environment() -> dict[str, Any]:
    """:func:`record` for rr's own source tree, computed once per process (copy before changing it)."""
    return record()


def describe(env: EnvironmentRecord | None) -> str:
    """A job's environment in a few characters: ``<lock>`` (matches it), ``<lock>*`` (installed set
    differs from it), ``?`` (no record: an older job, or rr outside its source tree)."""
    if env is None or not env.lock:
        return "?"
    return f"{env.lock}{'' if env.matches_lock else '*'}"


def environments_note(envs: dict[str, EnvironmentRecord | None]) -> str | None:
    """One sentence when the jobs ``{job id: summary's environment record}`` did not all run in one
    locked environment (several locks, an installed set that differs from its lock, or jobs
    without a record beside jobs with one); ``None`` when they did, or when none has a record."""
    groups: dict[str, list[str]] = {}
    for jid, env in envs.items():
        groups.setdefault(describe(env), []).append(jid)
    if set(groups) == {"?"} or (len(groups) == 1 and not next(iter(groups)).endswith("*")):
        return None

    def group(tag: str, jobs: list[str]) -> str:
        what = {"?": "no record"}.get(
            tag, f"lock {tag.rstrip('*')}" + (", installed set differs" if tag.endswith("*") else "")
        )
        shown = ", ".join(sorted(jobs)[:3]) + (", ..." if len(jobs) > 3 else "")
        return f"{what}: {len(jobs)} job(s) ({shown})"

    parts = "; ".join(group(tag, jobs) for tag, jobs in sorted(groups.items()))
    return f"the jobs ran in different environments ({parts}); a difference may come from package versions"
