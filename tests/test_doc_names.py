"""The rr names README.md, docs/*.md and notebooks/README.md import exist where the docs say."""

from __future__ import annotations

import fnmatch
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "notebooks" / "README.md"]

#: Dotted names in the docs that are entry-point groups of a plugin's pyproject, not modules.
ENTRY_POINT_GROUPS = {"rr.components", "rr.configs"}


def _doc_names() -> dict[str, set[str]]:
    """Every rr name README.md, docs/*.md and notebooks/README.md use, with the files using it:
    ``from rr.x import a, b`` (``rr.x.a``, ``rr.x.b``), ``import rr.x``, ``python -m rr.x`` and the
    dotted names in backticks (``rr.stats.wilson_interval``; ``*`` a wildcard)."""
    found: dict[str, set[str]] = {}
    for path in DOCS:
        text = path.read_text()
        names: set[str] = set()
        for module, what in re.findall(r"from (rr(?:\.\w+)*) import \(?([\w\s,]+?)\)?(?:$|`|;)", text, re.M):
            names |= {f"{module}.{n.split(' as ')[0].strip()}" for n in what.split(",") if n.strip()}
        names |= set(re.findall(r"(?:^|[\s`;(])import (rr(?:\.\w+)*)", text, re.M))
        names |= set(re.findall(r"python -m (rr(?:\.\w+)*)", text))
        names |= set(re.findall(r"`(rr(?:\.[\w*]+)+)", text)) - ENTRY_POINT_GROUPS
        for n in names:
            found.setdefault(n, set()).add(path.relative_to(ROOT).as_posix())
    return found


def _resolve(name: str) -> bool:
    """Whether ``name`` is a module, or a module's attribute path (a ``*`` part matches any name)."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError as e:
            if e.name and ".".join(parts[:cut]).startswith(e.name) and cut > 1:
                continue
            raise
        for part in parts[cut:]:
            if "*" in part:
                return any(fnmatch.fnmatch(n, part) for n in dir(obj))
            obj = getattr(obj, part)
        return True
    return False


def test_every_name_the_docs_import_exists() -> None:
    names = _doc_names()
    assert {"rr.results.load", "rr.registry.component", "rr.commands.chunk_wiki", "rr.stats"} <= set(names)
    missing = []
    for name, files in sorted(names.items()):
        try:
            _resolve(name)
        except (ImportError, AttributeError) as e:
            missing.append(f"{name} ({', '.join(sorted(files))}): {e}")
    assert missing == []


def test_the_docs_name_finder_sees_a_missing_name() -> None:
    with pytest.raises(AttributeError):
        _resolve("rr.stats.no_such_function")
    with pytest.raises(AttributeError, match="no attribute 'no_such_module'"):
        _resolve("rr.no_such_module.f")
    assert _resolve("rr.analysis.cao.perfect_*_curve") and not _resolve("rr.analysis.cao.perfect_*_nope")
