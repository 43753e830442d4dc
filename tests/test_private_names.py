"""No module of rr imports another module's private name (``from rr.x import _name``): what one
module uses of another is that module's public surface (issue 44: 45 such imports, 44 of them
between the result site's modules).

Read from the source with :mod:`ast`, as tests/test_layers.py reads the import graph; names of a
package's own ``__init__`` re-exported to it and dunders (``__version__``) are not private.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "rr"


def private_imports(root: Path) -> list[str]:
    """``file: from module import _name`` for every private name a module under ``root`` imports
    from an ``rr`` module."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or node.level or not (node.module or "").startswith("rr"):
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{path.relative_to(root.parent)}: from {node.module} import {alias.name}")
    return found


def test_no_module_imports_another_modules_private_name() -> None:
    assert private_imports(ROOT) == []


def test_a_private_import_is_found(tmp_path: Path) -> None:
    (tmp_path / "rr" / "sub").mkdir(parents=True)
    (tmp_path / "rr" / "sub" / "a.py").write_text(
        "from rr.x import public, _private\nfrom rr.y import __version__\n\ndef f():\n    from rr.z import _late\n"
    )
    assert private_imports(tmp_path / "rr") == [
        "rr/sub/a.py: from rr.x import _private",
        "rr/sub/a.py: from rr.z import _late",
    ]
