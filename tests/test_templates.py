"""The prompt templates are verbatim copies of Cao et al. (2025), Appendix C."""

from __future__ import annotations

import jinja2
import pytest

from rr.prompts import render, template_source

RAG_QA = (
    "Based on your own knowledge and retrieved contexts, answer the question in a concise manner without any "
    'explanation. Indicate your answer with "Answer:". For example: "Question: What city is Kowloon a part of? '
    'Answer: Hong Kong." If the answer is not specified or mentioned in the retrieved context, you must ignore the '
    "context and provide an answer by yourself. You must not refrain from answering the question.\n"
    "\n"
    "Retrieved contexts:\n"
    "{% for c in sources %} Context {{ loop.index }}\n"
    "{{c}}\n"
    "{% endfor %}\n"
    "{{ question }}\n"
)
NON_RAG_QA = (
    'Answer the following question in a concise manner without explanation. Indicate your answer with "Answer:" '
    'and only include the answer words or phrases. For example: "Question: What city is Kowloon a part of? '
    'Answer: Hong Kong."\n'
    "\n"
    "{{ question }}\n"
)


def test_rag_qa_is_verbatim() -> None:
    assert template_source("rag_qa.j2") == RAG_QA


def test_non_rag_qa_is_verbatim() -> None:
    assert template_source("non_rag_qa.j2") == NON_RAG_QA


def test_rag_qa_renders_numbered_contexts() -> None:
    out = render("rag_qa.j2", sources=["Doc A", "Doc B"], question="Who?")
    assert out.endswith("Retrieved contexts:\n Context 1\nDoc A\n Context 2\nDoc B\n\nWho?")


def test_missing_variable_is_an_error() -> None:
    with pytest.raises(jinja2.UndefinedError):
        render("rag_qa.j2", question="Who?")
