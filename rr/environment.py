"""The Python environment a job ran in (issues 38, 45): which lock, and whether it is what is installed.

``make install`` installs exactly the hashed pins of ``locks/rr.txt`` and ``locks/rr-data.txt``
(tools/lock.py writes them); ``make install GPU=1``, on a GPU node, those of ``locks/rr-gpu.txt``
(``CUDA=12``: ``locks/rr-gpu-cu12.txt``) and ``locks/rr-data.txt`` (:data:`LOCK_SETS`). A job's ``summary.json`` records :func:`environment`,
against the set the installed distributions differ least from (the CPU one on a tie):

* ``lock``: the first 12 hex digits of the sha256 of that set's files' bytes (``None`` where rr is
  not run from its source tree, so that no lock lies beside it);
* ``lock_files``: that set's files (``locks/rr-gpu.txt`` first on a GPU node installed from it);
* ``matches_lock``: whether every installed distribution (rr itself aside) is a locked one at its
  locked version, and every locked one is installed (``None`` without a lock);
* ``differences``: the first few that are not (``name: installed X, locked Y``), sorted, and each
  locked package whose top-level module the import system finds *outside* the environment first
  (``name: imports /path/name (no metadata there), locked Y``: a folder on ``PYTHONPATH`` or in the
  current folder shadows the installed one, with or without a ``dist-info`` of its own).

Two jobs with equal ``lock`` and both ``matches_lock`` ran on the same package versions; ``rr
report`` (and its site) says when the jobs it compares did not, and per job what differed. The record is computed once per process (one pass
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
#: The lock files of ``.venv``, in the order they are hashed: ``make install``'s (CPU).
LOCK_FILES = ("locks/rr.txt", "locks/rr-data.txt")
#: The lock files of ``.venv`` on a GPU node (``make install GPU=1``).
GPU_LOCK_FILES = ("locks/rr-gpu.txt", "locks/rr-data.txt")
#: The lock files of ``.venv`` on a GPU node whose driver is CUDA 12 (``make install GPU=1 CUDA=12``).
GPU_CU12_LOCK_FILES = ("locks/rr-gpu-cu12.txt", "locks/rr-data.txt")
#: Every set a ``.venv`` may be installed from, in order of preference on a tie.
LOCK_SETS = (LOCK_FILES, GPU_LOCK_FILES, GPU_CU12_LOCK_FILES)
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


#: Suffixes of importable module files (the name before the first dot is the module's).
_MODULE_SUFFIXES = (".py", ".pyc", ".so", ".pyd")


def _is_site(entry: str) -> bool:
    return Path(entry or ".").name in ("site-packages", "dist-packages")


def _modules(entry: str, regular_only: bool) -> dict[str, Path]:
    """``{top-level module name: its file or folder}`` importable from one ``sys.path`` entry.
    ``regular_only``: folders only with an ``__init__`` (a namespace folder earlier on the path
    does not hide a regular package later on it; the import system keeps looking)."""
    try:
        names = os.listdir(entry or ".")
    except OSError:
        return {}
    out: dict[str, Path] = {}
    for name in names:
        full = Path(entry or ".") / name
        if name.endswith(_MODULE_SUFFIXES) and full.is_file():
            out.setdefault(name.split(".", 1)[0], full)
        elif name.isidentifier() and full.is_dir() and (not regular_only or any(full.glob("__init__.*"))):
            out.setdefault(name, full)
    return out


def _outside(entry: str, root: Path) -> bool:
    """A ``sys.path`` entry outside the environment: not a site-packages folder, not the
    interpreter's standard library, not rr's own source tree (e.g. ``PYTHONPATH``, the current folder)."""
    if _is_site(entry) or _inside_installation(entry):
        return False
    where = Path(entry or ".").resolve()
    if where == root.resolve():
        return False
    prefixes = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}
    return not any(where == p or p in where.parents for p in prefixes)


def shadows(pins: dict[str, str], path: list[str] | None = None, root: Path = ROOT) -> list[str]:
    """Locked distributions whose top-level module the import system would find *outside* the
    environment, before the installed one (a folder on ``PYTHONPATH`` or in the current folder,
    with or without a ``dist-info`` of its own): ``name: imports <path> (version V there | no
    metadata there), locked W``. Reads folder listings only; the module is never imported."""
    entries = sys.path if path is None else path
    sites = [e for e in entries if _is_site(e)]
    if not sites:
        return []
    installed: dict[str, Path] = {}
    for site_entry in sites:
        for name, where in _modules(site_entry, regular_only=False).items():
            installed.setdefault(name, where)
    found: list[tuple[str, str, Path]] = []  # (module, entry, its path there)
    seen: set[str] = set()
    for entry in entries:
        if _is_site(entry):
            break  # later entries cannot hide what site-packages holds
        if not _outside(entry, root):
            continue
        for name, where in sorted(_modules(entry, regular_only=True).items()):
            if name in installed and name not in seen:
                seen.add(name)
                found.append((name, entry, where))
    if not found:
        return []
    owners = importlib.metadata.packages_distributions()  # only when something collides
    out = []
    for module, entry, where in found:
        for dist in sorted({normalize(d) for d in owners.get(module, [])}):
            if dist not in pins:
                continue
            here = installed_versions([entry]).get(dist)
            there = f"version {here} there" if here else "no metadata there"
            out.append(f"{dist}: imports {where} ({there}), locked {pins[dist]}")
    return out


def _inside_installation(entry: str) -> bool:
    """Whether a ``sys.path`` entry is a folder *inside* a site-packages folder (e.g. setuptools'
    ``_vendor``, which ``pkg_resources`` puts on ``sys.path`` when something imports it): what lies
    there is vendored, not installed, so the record does not depend on what was imported first."""
    parts = Path(entry or ".").parts
    return any(part in ("site-packages", "dist-packages") for part in parts[:-1])


def record(root: Path = ROOT, path: list[str] | None = None) -> dict[str, Any]:
    """The environment record of the distributions on ``path`` (default ``sys.path``: the
    interpreter running now) against the lock set under ``root`` (:data:`LOCK_SETS`, those whose
    files all exist) that they differ least from."""
    installed: dict[str, str] | None = None
    best: dict[str, Any] | None = None
    for names in LOCK_SETS:
        locks = [root / name for name in names]
        if not all(lock.is_file() for lock in locks):
            continue
        digest = hashlib.sha256()
        pins: dict[str, str] = {}
        for lock in locks:
            data = lock.read_bytes()
            digest.update(data)
            pins.update(locked_pins(data.decode("utf-8")))
        if installed is None:
            installed = installed_versions(path)
        diffs = sorted(differences(pins, installed) + shadows(pins, path, root))
        if best is None or len(diffs) < best["n_differences"]:
            best = {
                "lock": digest.hexdigest()[:12],
                "lock_files": list(names),
                "matches_lock": not diffs,
                "differences": diffs[:MAX_LISTED],
                "n_differences": len(diffs),
            }
    if best is None:
        return {
            "lock": None,
            "lock_files": [],
            "matches_lock": None,
            "differences": [],
            "n_differences": None,
        }
    return best


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
    note = f"the jobs ran in different environments ({parts}); a difference may come from package versions"
    return note + "".join(f"; {line}" for line in what_differs(envs))


def what_differs(envs: dict[str, EnvironmentRecord | None]) -> list[str]:
    """Per job whose installed set differed from its lock: ``<job>: <difference>, ...`` (its
    record's listed differences: versions, and packages imported from outside the environment)."""
    lines = []
    for jid, env in sorted(envs.items()):
        if not env or not env.lock or env.matches_lock:
            continue
        listed = list(env.differences)
        more = (env.n_differences or len(listed)) - len(listed)
        shown = ", ".join(listed) if listed else "not listed in its summary.json"
        lines.append(f"{jid} differs: {shown}" + (f" and {more} more" if more > 0 else ""))
    return lines
