"""Render the Jinja2 prompt templates in ``rr/prompts/templates`` with ``StrictUndefined``.

Templates are data: each is a verbatim copy of a paper's template (Cao et al. 2025,
Appendix C, for ``rag_qa.j2`` / ``non_rag_qa.j2``), and a test pins its text. A missing
variable is an error, never an empty string.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

TEMPLATE_DIR = Path(__file__).parent / "templates"


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
    )


def render(template: str, **variables: Any) -> str:
    """Render ``template`` (a file name in the template folder, e.g. ``"rag_qa.j2"``).

    Raises:
        jinja2.UndefinedError: a variable the template uses was not given.
        jinja2.TemplateNotFound: no such template.
    """
    return _env().get_template(template).render(**variables)


def template_source(template: str) -> str:
    """The raw text of a template file (for tests that pin it and for the docs)."""
    return (TEMPLATE_DIR / template).read_text(encoding="utf-8")
