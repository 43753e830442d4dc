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


OWNKNOW = (
    "Previously, you answer the question with your own knowledge. Now, based on your own knowledge and additional "
    "retrieved contexts, answer the question in a concise manner without any explanation. Indicate your answer with "
    '"Answer:". For example: "Question: What city is Kowloon a part of? Previous Answer: previous answer. Answer: '
    'Hong Kong." If the answer is not specified or mentioned in the retrieved context, you must ignore the context '
    "and provide an answer by yourself. You must not refrain from answering the question.\n"
    "\n"
    "Retrieved contexts:\n"
    "{% for c in sources %} Context {{ loop.index }}\n"
    "{{c}}\n"
    "{% endfor %}\n"
    "{{ question }} Previous Answer: {{ non_rag_output }}.\n"
)
# "Conetxts" is the paper's own misspelling, kept verbatim.
S2A = (
    "Identify the retrieved context(s) that would be good context for providing an unbiased answer to the question. "
    'Indicate your selected context(s) "Selected Contexts:". For example: "Question: What city is Kowloon a part of? '
    'Selected Conetxts: Context 2, Context 5." If there is no retrieved context, reply with "Selected Conetxts: None".\n'
    "\n"
    "Retrieved contexts:\n"
    "{% for c in sources %} Context {{ loop.index }}\n"
    "{{c}}\n"
    "{% endfor %}\n"
    "{{ question }}\n"
)
EVAL_NQ_HOTPOT = (
    "You will be given a question, a list of gold answers to this question, and a predicted answer. Any one answer "
    "or multiple answers from the gold answer list can correctly answer the question. Your task is to judge whether "
    "the predicted answer can answer the question correctly.\n"
    "Note that predicted answer does not have to exactly match one or multiple gold answers. It can answer the "
    "question correctly as long as its meaning entails one or multiple gold answers and there is no any additional "
    "incorrect information.\n"
    "\n"
    "Question:\n"
    "{{ question }}\n"
    "\n"
    "Gold Answers:\n"
    "{{ gold_answer }}\n"
    "\n"
    "Predicted Answer:\n"
    "{{ pred_answer }}\n"
    "\n"
    "Is the predicted answer a correct answer to the question?\n"
    "\n"
    "IMPORTANT: Please strictly follow the following format in your response:\n"
    "[Start answer]\n"
    "<Your answer. Choose from: Yes, No>\n"
    "[End answer]\n"
)
EVAL_ASQA = (
    "You will be given a question, gold answers to this question, and a predicted answer. Gold answers are composed "
    "of multiple groups. Your task is to judge whether the predicted answer cover each group of the gold answers. "
    "Within one gold answer group, there can be multiple alternative answers. As long as one of the alternative "
    'answers is covered, the group is covered. Note that "cover" means "entail", in other words, you need to judge '
    "the predicted answer entails any answer within each group.\n"
    "\n"
    "Question:\n"
    "{{ question }}\n"
    "\n"
    "Gold Answers:\n"
    "{% for group in short_answer %} Group {{ loop.index }}: {{ group }}\n"
    "{% endfor %}\n"
    "Predicted Answer:\n"
    "{{ pred_answer }}\n"
    "\n"
    "Does the predicted answer cover each group of the gold answers?\n"
    "\n"
    "IMPORTANT: Please strictly follow the following format in your response:\n"
    "[Start answer]\n"
    "{% for group in short_answer %} Group {{ loop.index }}: <Your answer. Choose from: Yes, No>\n"
    "{% endfor %}[End answer]\n"
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


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("ownknow.j2", OWNKNOW),
        ("s2a.j2", S2A),
        ("answer_evaluation_nq_hotpot.j2", EVAL_NQ_HOTPOT),
        ("answer_evaluation_asqa.j2", EVAL_ASQA),
    ],
)
def test_appendix_c_templates_are_verbatim(name: str, text: str) -> None:
    assert template_source(name) == text


def test_ownknow_renders_previous_answer_after_question() -> None:
    out = render("ownknow.j2", sources=["Doc A"], question="Who?", non_rag_output="Bob")
    assert out.endswith("Retrieved contexts:\n Context 1\nDoc A\n\nWho? Previous Answer: Bob.")


def test_asqa_judge_template_lists_one_line_per_group() -> None:
    out = render(
        "answer_evaluation_asqa.j2", question="Q?", short_answer=[["a", "b"], ["c"]], pred_answer="x"
    )
    assert " Group 1: ['a', 'b']\n Group 2: ['c']\n\nPredicted Answer:\nx\n" in out
    assert out.endswith(
        "[Start answer]\n Group 1: <Your answer. Choose from: Yes, No>\n"
        " Group 2: <Your answer. Choose from: Yes, No>\n[End answer]"
    )
