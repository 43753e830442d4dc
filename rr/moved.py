"""Modules that moved keep their old name for one release, with a warning (CHANGELOG.md lists them).

A user's plugin or script that imports a name from where it used to be (``rr.judges.normalize``,
``rr.power``, ...) or runs an entry point that moved (``python -m rr.perturbations.generate``)
still works, and says once, on stderr, where the name is now.

The old names are one table, :data:`MOVED` (old module -> its new home(s)), not files: rr's
package imports this module, which puts :class:`MovedFinder` last on ``sys.meta_path``; an import
of an old name (that no file answers) gets a module made here, whose attributes resolve in its
new homes (:func:`moved_module`). The homes are imported by name when the old module is, so no
file of rr imports a command module from below it. An old ``python -m`` entry point (:data:`ENTRY_POINTS`)
runs its new command (:func:`run_moved_main`); one that lives on in a module that stays
(``rr.data.wiki_dump``) calls :func:`run_moved_main` itself.

The aliases go in the release after the one that lists them in CHANGELOG.md.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Callable, Sequence
from types import CodeType, ModuleType
from typing import Any, NoReturn

#: Old module name -> where its names are now, looked up in this order (a module split in several
#: names each). CHANGELOG.md's "Moved" table lists the same (``tests/test_moved_names.py``).
MOVED: dict[str, tuple[str, ...]] = {
    "rr.judges.normalize": ("rr.answers",),
    "rr.power": ("rr.analysis.power",),
    "rr.report": ("rr.reporting.job",),
    "rr.cli": ("rr.commands.cli",),
    "rr.encode": ("rr.commands.encode",),
    "rr.plan": ("rr.commands.plan", "rr.cost", "rr.pipeline"),
    "rr.reporting.command": ("rr.commands.report",),
    "rr.slurm": ("rr.commands.slurm",),
    "rr.sweep_report": ("rr.commands.status",),
    "rr.perturbations.generate": ("rr.commands.perturb_queries",),
    "rr.reporting.core": (
        "rr.reporting.registry",
        "rr.reporting.loading",
        "rr.reporting.writers",
        "rr.reporting.report",
        "rr.analysis.intervals",
        "rr.results",
    ),
}

#: Old module run with ``python -m`` -> (the module whose ``main()`` runs now, the ``rr`` subcommand to use).
ENTRY_POINTS: dict[str, tuple[str, str]] = {
    "rr.perturbations.generate": ("rr.commands.perturb_queries", "rr perturb-queries"),
}


class MovedWarning(FutureWarning):
    """An rr name was imported or run from where it used to be; the message names where it is now.

    A :class:`FutureWarning` (shown by default, unlike :class:`DeprecationWarning` outside
    ``__main__``), so the user of a plugin that imports an old name sees it too.
    """


def moved_module(
    old: str, *homes: ModuleType, stacklevel: int = 3
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Warn that ``old`` moved, and give its module ``__getattr__`` and ``__dir__`` resolving there.

    Args:
        old: The module's old dotted name.
        homes: Where its names are now, looked up in this order (a module split in two names both).
        stacklevel: Passed to :func:`warnings.warn`: the default points past this function and its
            caller to the line that imported the old name (warnings skips importlib's own frames).

    Returns:
        ``(__getattr__, __dir__)`` for the old module: an attribute is the first home's that has
        it (the same object, so ``isinstance`` and identity checks keep holding).
    """
    where = " and ".join(h.__name__ for h in homes)
    warnings.warn(
        f"{old} moved to {where}; import from there ({old} goes in the next release, see CHANGELOG.md)",
        MovedWarning,
        stacklevel=stacklevel,
    )

    def __getattr__(name: str) -> Any:
        for home in homes:
            if hasattr(home, name):
                return getattr(home, name)
        raise AttributeError(f"module {old!r} has no attribute {name!r} (it moved to {where})")

    def __dir__() -> list[str]:
        return sorted({n for home in homes for n in dir(home)})

    return __getattr__, __dir__


def run_moved_main(old: str, new: str, command: str) -> NoReturn:
    """``python -m old``: warn, then run ``new``'s ``main()`` (it reads the command line) and exit with its status.

    ``new`` is named, not imported, by the caller: it is a command module (``rr.commands``), which
    the caller's layer may not import; only the old ``python -m`` path, never an import, reaches it.

    Args:
        old: The old entry point's module name.
        new: The module whose ``main`` runs now.
        command: The ``rr`` subcommand to use instead (e.g. ``"rr chunk-wiki"``).
    """
    warnings.warn(
        f"python -m {old} moved: use `{command}` (or python -m {new}); "
        f"the old name goes in the next release, see CHANGELOG.md",
        MovedWarning,
        stacklevel=2,
    )
    main = importlib.import_module(new).main
    sys.exit(main())


def run_moved(old: str) -> None:
    """What ``python -m old`` runs for an old name of :data:`MOVED`: its new command
    (:data:`ENTRY_POINTS`), or, for a module that never was one, only the warning of its import."""
    if old in ENTRY_POINTS:
        run_moved_main(old, *ENTRY_POINTS[old])
    moved_module(old, *_homes(old), stacklevel=2)


def _homes(old: str) -> list[ModuleType]:
    return [importlib.import_module(home) for home in MOVED[old]]


class MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.InspectLoader):
    """Finds and loads the old names of :data:`MOVED` (last on ``sys.meta_path``: a file wins)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, origin="rr.moved")

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # the default module

    def exec_module(self, module: ModuleType) -> None:
        old = module.__name__
        module.__doc__ = f"Moved to {', '.join(MOVED[old])} (see CHANGELOG.md): this alias warns and goes in the next release."
        module.__getattr__, module.__dir__ = moved_module(old, *_homes(old))  # type: ignore[method-assign]

    def get_source(self, fullname: str) -> str:
        """``python -m old`` (runpy) runs this: :func:`run_moved`."""
        return f"from rr.moved import run_moved\nrun_moved({fullname!r})\n"

    def get_code(self, fullname: str) -> CodeType:
        return compile(self.get_source(fullname), f"<rr.moved: {fullname}>", "exec")


def install() -> None:
    """Put one :class:`MovedFinder` last on ``sys.meta_path`` (again: nothing more)."""
    if not any(isinstance(f, MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedFinder())
