"""Names that moved keep working for a release, with a warning (CHANGELOG.md, rr.moved); the names the
docs import exist where the docs say."""

from __future__ import annotations

import fnmatch
import importlib
import importlib.util
import re
import subprocess
import sys
import types
import warnings
from pathlib import Path

import pytest

from rr.moved import ENTRY_POINTS as ENTRY_POINTS_MOVED
from rr.moved import MOVED, MovedWarning

ROOT = Path(__file__).resolve().parent.parent
CHANGELOG = ROOT / "CHANGELOG.md"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "notebooks" / "README.md"]


def _moved_rows() -> list[tuple[str, list[str]]]:
    """(old, [new, ...]) of the CHANGELOG's table of moved names, backticks removed."""
    section = CHANGELOG.read_text().split("### Moved", 1)[1].split("\n### ", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \| (.+) \|$", section, re.M)
    assert len(rows) >= 13, "the Moved table of CHANGELOG.md"
    return [(old, re.findall(r"`([^`]+)`", new)) for old, new in rows]


MODULES = [(old, new) for old, new in _moved_rows() if not old.startswith("python -m ")]
ENTRY_POINTS = [
    (old.removeprefix("python -m "), new) for old, new in _moved_rows() if old.startswith("python -m ")
]


def _fresh_import(name: str) -> types.ModuleType:
    """Import ``name`` anew (its body runs again, so it warns again)."""
    sys.modules.pop(name, None)
    return importlib.import_module(name)


@pytest.mark.parametrize(("old", "new"), MODULES, ids=[m[0] for m in MODULES])
def test_a_moved_module_imports_warns_and_gives_the_new_objects(old: str, new: list[str]) -> None:
    with pytest.warns(MovedWarning, match=rf"^{re.escape(old)} moved to {re.escape(' and '.join(new))}; "):
        alias = _fresh_import(old)
    homes = [importlib.import_module(n) for n in new]
    for home in reversed(homes):  # the first home that has a name gives it
        for name in (n for n in vars(home) if not n.startswith("_")):
            got = getattr(alias, name)
            assert got is next(getattr(h, name) for h in homes if hasattr(h, name)), f"{old}.{name}"
    assert set(dir(homes[0])) <= set(dir(alias))
    with pytest.raises(AttributeError, match=rf"module '{re.escape(old)}' has no attribute 'nope'"):
        _ = alias.nope


def test_the_old_names_are_one_table_and_no_file() -> None:
    """rr.moved.MOVED is CHANGELOG.md's table, and no module file stands at an old name (the top of
    the import graph holds rr/__main__.py and the commands alone)."""
    assert {old: list(new) for old, new in MOVED.items()} == dict(MODULES)
    runs = {old: [command, f"python -m {new}"] for old, (new, command) in ENTRY_POINTS_MOVED.items()}
    assert runs == {old: new for old, new in ENTRY_POINTS if old in MOVED}
    for old in MOVED:
        spec = importlib.util.find_spec(old)
        assert spec is not None and spec.origin == "rr.moved", old
        assert not (ROOT / (old.replace(".", "/") + ".py")).exists(), old


def test_names_a_plugin_imported_before_the_moves_still_import(tmp_path: Path) -> None:
    """A plugin's own file, run as a script: the old imports work and the warning names its line."""
    script = tmp_path / "plugin.py"
    script.write_text(
        "from rr.judges.normalize import normalize_answer, substring_match\n"
        "from rr.plan import RetrievalPlan, plan_job, plan_retrieval\n"
        "from rr.power import power_from_pilot\n"
        "print(normalize_answer('The  Eiffel Tower!'), substring_match('in Paris', ['paris']))\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == "eiffel tower 1.0\n"
    assert (
        f"{script}:1: MovedWarning: rr.judges.normalize moved to rr.answers; import from there" in done.stderr
    )
    assert (
        f"{script}:2: MovedWarning: rr.plan moved to rr.commands.plan and rr.cost and rr.pipeline"
        in done.stderr
    )


@pytest.mark.parametrize(("old", "new"), ENTRY_POINTS, ids=[e[0] for e in ENTRY_POINTS])
def test_a_moved_entry_point_runs_the_new_command_and_warns(old: str, new: list[str]) -> None:
    command, module = new
    done = subprocess.run(
        [sys.executable, "-m", old, "--help"], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(f"usage: {command} ")
    assert f"MovedWarning: python -m {old} moved: use `{command}`" in done.stderr
    assert module.startswith("python -m ") and importlib.util.find_spec(module.removeprefix("python -m "))


# -- what the docs import exists -------------------------------------------------------------

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


def test_every_name_the_docs_import_exists_without_a_moved_warning() -> None:
    names = _doc_names()
    assert {"rr.results.load", "rr.registry.component", "rr.commands.chunk_wiki", "rr.stats"} <= set(names)
    missing = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for name, files in sorted(names.items()):
            try:
                _resolve(name)
            except (ImportError, AttributeError) as e:
                missing.append(f"{name} ({', '.join(sorted(files))}): {e}")
    assert missing == []
    assert not [w for w in caught if issubclass(w.category, MovedWarning)], "the docs use a moved name"


def test_the_docs_name_finder_sees_a_missing_and_a_moved_name() -> None:
    with pytest.raises(AttributeError):
        _resolve("rr.stats.no_such_function")
    with pytest.raises(AttributeError, match="no attribute 'no_such_module'"):
        _resolve("rr.no_such_module.f")
    assert _resolve("rr.analysis.cao.perfect_*_curve") and not _resolve("rr.analysis.cao.perfect_*_nope")
