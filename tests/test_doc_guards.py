"""The tests the docs name as guards of a step list (``tests/test_x.py::test_name``) exist, so a
renamed test cannot leave a step pointing at nothing."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NAMED = re.compile(r"(tests/test_\w+\.py)::(\w+)")


def named_tests() -> list[tuple[str, str, str]]:
    """(doc, test file, test name) of every ``tests/x.py::name`` the docs mention."""
    return [
        (doc.relative_to(ROOT).as_posix(), file, name)
        for doc in DOCS
        for file, name in NAMED.findall(doc.read_text(encoding="utf-8"))
    ]


def test_every_test_the_docs_name_exists() -> None:
    found = named_tests()
    assert any(doc == "docs/architecture.md" for doc, _, _ in found)
    missing = [
        f"{doc}: {file}::{name}"
        for doc, file, name in found
        if not (ROOT / file).is_file()
        or not re.search(rf"^def {re.escape(name)}\(", (ROOT / file).read_text(encoding="utf-8"), re.M)
    ]
    assert missing == []
