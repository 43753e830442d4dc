"""Modules that moved keep their old name for one release, with a warning (CHANGELOG.md lists them).

A user's plugin or script that imports a name from where it used to be (``rr.judges.normalize``,
``rr.power``, ...) or runs an entry point that moved (``python -m rr.perturbations.generate``)
still works, and says once, on stderr, where the name is now. The old module is a small file at
its old place that imports its new home(s) (so the layer test sees the edge) and sets its
module-level ``__getattr__`` / ``__dir__`` from :func:`moved_module`; an old ``python -m`` entry
point that lives on in a module that stays (``rr.data.wiki_dump``) calls :func:`run_moved_main`.

The aliases go in the release after the one that lists them in CHANGELOG.md.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any, NoReturn


class MovedWarning(FutureWarning):
    """An rr name was imported or run from where it used to be; the message names where it is now.

    A :class:`FutureWarning` (shown by default, unlike :class:`DeprecationWarning` outside
    ``__main__``), so the user of a plugin that imports an old name sees it too.
    """


def moved_module(old: str, *homes: ModuleType) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Warn that ``old`` moved, and give its module ``__getattr__`` and ``__dir__`` resolving there.

    Args:
        old: The module's old dotted name (pass the literal name: run with ``python -m``, the
            module's ``__name__`` is ``"__main__"``).
        homes: Where its names are now, looked up in this order (a module split in two names both).

    Returns:
        ``(__getattr__, __dir__)`` for the old module: an attribute is the first home's that has
        it (the same object, so ``isinstance`` and identity checks keep holding).
    """
    where = " and ".join(h.__name__ for h in homes)
    # stacklevel 3: past this function and the old module's body, to the line that imported it
    # (warnings skips the importlib frames in between)
    warnings.warn(
        f"{old} moved to {where}; import from there ({old} goes in the next release, see CHANGELOG.md)",
        MovedWarning,
        stacklevel=3,
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
