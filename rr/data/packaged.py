"""Locate data files shipped inside installed packages (the embedded, offline default)."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def package_file(package: str, relative: str, install_hint: str) -> Path:
    """Path of ``relative`` inside the installed ``package``, found without importing it.

    Raises:
        FileNotFoundError: the package is not installed or lacks the file; says how to install it.
    """
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise FileNotFoundError(f"package {package!r} is not installed; {install_hint}")
    path = Path(spec.origin).parent / relative
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing from package {package!r}; {install_hint}")
    return path
