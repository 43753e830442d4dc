"""Refusal and error detection (judge=refusal_match) and RGB's prompt templates, pinned verbatim."""

from __future__ import annotations

from pathlib import Path

import pytest

from rr.answers import RGB_REFUSAL
from rr.judges.base import JudgeItem
from rr.judges.refusal import RefusalMatchJudge, is_refusal, rgb_error_detected, rgb_rejected
from rr.prompts import render, template_source
from rr.records import Generation
from rr.runtime import Runtime

# Chen et al. (2024), Fig. 3, English system instruction, as printed (RGB's config/instruction.yaml
# has an extra "." after the closing quote of the refusal sentence; we follow the paper).
RGB_SYSTEM = (
    "You are an accurate and reliable AI assistant that can answer questions with the help of external "
    "documents. Please note that external documents may contain noisy or factually incorrect information. "
    "If the information in the document contains the correct answer, you will give an accurate answer. If "
    "the information in the document does not contain the answer, you will generate \u2019I can not answer "
    "the question because of the insufficient information in documents.\u2018 If there are inconsistencies "
    "with the facts in some of the documents, please generate the response 'There are factual errors in "
    "the provided documents.' and provide the correct answer.\n"
)
# Fig. 3 user input instruction ("Document:\n{DOCS} \n\nQuestion:\n{QUERY}", spacing as in RGB's code).
RGB_USER = 'Document:\n{{ sources | join("\\n") }} \n\nQuestion:\n{{ question }}\n'


def test_rgb_templates_are_verbatim() -> None:
    assert template_source("rgb_system.j2") == RGB_SYSTEM
    assert template_source("rgb_user.j2") == RGB_USER
    assert RGB_REFUSAL in RGB_SYSTEM.replace("\u2019", "").replace("\u2018", "")
    out = render("rgb_user.j2", sources=["Doc A", "Doc B"], question="Who?")
    assert out == "Document:\nDoc A\nDoc B \n\nQuestion:\nWho?"


def test_rgb_eval_prompts_are_verbatim_from_rgb_code() -> None:
    reject = render("rgb_reject_eval.j2", question="Q?", answer="A.")
    assert reject.startswith(
        "I will give you a question and an answer generated through document retrieval. Please use this "
        "answer to determine if the retrieved document can solve the question.\nDemonstrations:\n"
    )
    assert reject.endswith(
        "No, the question is not addressed by the documents.\n\nBegin to generate:\nQuestion: Q?\nAnswer: A.\n    "
    )
    fact = render("rgb_fact_eval.j2", answer="A.")
    assert (
        "Response:  There are factual errors in the provided documents. The correct answer is 2023.\n" in fact
    )
    assert fact.endswith("Begin to generate:\nAnswer: A.\n    ")


@pytest.mark.parametrize(
    ("text", "refused"),
    [
        (RGB_REFUSAL, True),
        ("I cannot answer the question because of the insufficient information in documents.", True),
        ("I can't answer that.", True),
        ("no such info", True),  # RARE's refusal
        ("There is not enough information in the documents.", True),
        ("I don\u2019t know.", True),
        ("The documents do not contain the answer.", True),
        ("The winner is not mentioned in the provided documents.", True),
        ("文档信息不足，因此我无法基于提供的文档回答该问题。", True),
        ("Annie Ernaux", False),
        ("There are factual errors in the provided documents. The answer should be Athens.", False),
        ("The film is known for its answer to critics.", False),
    ],
)
def test_refusal_rules(text: str, refused: bool) -> None:
    assert is_refusal(text) is refused


def test_rgb_exact_rules() -> None:
    assert rgb_rejected(RGB_REFUSAL) and not rgb_rejected("I can't answer.")
    assert rgb_error_detected("There are factual errors in the provided documents.")
    assert not rgb_error_detected("The documents are wrong.")


def test_refusal_scores_zero_even_with_the_answer_string() -> None:
    items = [
        JudgeItem(
            "Who won?",
            "I can not answer whether Annie Ernaux won: insufficient information.",
            ["Annie Ernaux"],
        ),
        JudgeItem("Who won?", "Annie Ernaux won the prize.", ["Annie Ernaux"]),
        JudgeItem("Where?", "There are factual errors in the provided documents. It is Athens.", ["Athens"]),
        JudgeItem("Both?", "May 18 and March 1.", ["May 18", "March 1"], [["May 18"], ["March 1"], ["x"]]),
    ]
    out = RefusalMatchJudge().judge(items)
    assert [j.score for j in out] == pytest.approx([0.0, 1.0, 1.0, 2 / 3])
    assert [j.refused for j in out] == [True, False, False, False]
    assert [j.extra["rgb_rejected"] for j in out] == [True, False, False, False]
    assert [j.extra["error_detected"] for j in out] == [False, False, True, False]
    assert all(j.judge == "refusal_match" for j in out)


class _FakeLLM:
    """Answers RGB's judge prompts by a fixed rule (tests the wiring, not a model)."""

    identity = {"model": "fake"}

    def __init__(self) -> None:
        self.steps: list[str] = []

    def generate(self, requests, step):  # noqa: ANN001
        self.steps.append(step)
        out = []
        for r in requests:
            answer = r.messages[0][1].rsplit("Answer: ", 1)[1]
            if "question is addressed" in r.messages[0][1]:
                text = (
                    "No, the question is not addressed by the documents." if "can" in answer else "Yes, ..."
                )
            else:
                text = (
                    "Yes, the model has identified the factual errors." if "errors" in answer else "NO, ..."
                )
            out.append(Generation(text, "k"))
        return out


def test_llm_checks_rej_star_and_ed_star() -> None:
    llm = _FakeLLM()
    r = Runtime(llm, Path("."))  # type: ignore[arg-type]
    items = [
        JudgeItem("Q1", "Sorry, I can only guess.", ["x"]),
        JudgeItem("Q2", "There are factual errors here. x", ["x"]),
    ]
    out = RefusalMatchJudge(llm_rejection=True, llm_error_detection=True).judge(items, r)
    assert [j.extra["rgb_rejected_llm"] for j in out] == [True, False]
    assert [j.extra["error_detected_llm"] for j in out] == [False, True]
    assert llm.steps == ["refusal_match:rejection", "refusal_match:error_detection"]
    assert r.counters == {
        "refusal_match:llm_rejection_checks": 2,
        "refusal_match:llm_error_detection_checks": 2,
    }
    with pytest.raises(ValueError, match="need the job's Runtime"):
        RefusalMatchJudge(llm_rejection=True).judge(items)


def test_rare_generator_prompt_is_the_papers() -> None:
    # RARE Appendix F, "RAG Simulation Prompt: RAG Generator" (PDF line wraps rejoined); {domain}
    # defaults to "general knowledge"; the question/context lines follow the prompt's own examples.
    src = template_source("rare_generator.j2")
    assert src.startswith(
        'You are a {{ domain | default("general knowledge") }} expert. You are given a '
        '{{ domain | default("general knowledge") }} question and one or multiple contexts.\n'
        "Your task is to answer the question strictly based on the these contexts.\n"
    )
    assert (
        '- If the question is not related to the context, strictly return "no such info" for answer part. '
        "Do not return any other text in such case.\n" in src
    )
    assert (
        "Output Format:\n- cot_answer: detailed reasoning process\n- answer: concise answer to the question\n"
        in src
    )
    out = render("rare_generator.j2", question="Q?", sources=["A", "B"])
    assert out.startswith("You are a general knowledge expert.")
    assert out.endswith("Question: Q?\nContext: [Doc] A\n[Doc] B\n")


# RGB's config/instruction.yaml['zh'], as its evalue.py sends it (Fig. 3 prints the same text without
# the "。" after the closing quote of the refusal sentence).
RGB_SYSTEM_ZH = (
    "你是一个准确和可靠的人工智能助手，能够借助外部文档回答问题，请注意外部文档可能存在噪声事实性错误。"
    "如果文档中的信息包含了正确答案，你将进行准确的回答。如果文档中的信息不包含答案，你将生成“文档信息不足，"
    "因此我无法基于提供的文档回答该问题。”。如果部分文档中存在与事实不一致的错误，请先生成“提供文档的文档存在"
    "事实性错误。”，并生成正确答案。\n"
)


def test_rgb_chinese_templates_are_verbatim_from_rgb_code() -> None:
    assert template_source("rgb_system_zh.j2") == RGB_SYSTEM_ZH
    out = render("rgb_user_zh.j2", sources=["文档甲", "文档乙"], question="谁？")
    assert out == "文档：\n文档甲\n文档乙 \n\n问题：\n谁？"  # "文档：\n{DOCS} \n\n问题：\n{QUERY}"


def test_rgb_prompt_follows_the_examples_language(tmp_path: Path) -> None:
    """A Chinese example (RGB's zh*.json) gets RGB's Chinese instruction, an English one the English;
    the ``instruction`` column says which."""
    from rr.context import RankedDoc
    from rr.records import Example, Passage
    from rr.strategies.base import Cell, CellInput
    from rr.strategies.rgb import RGBPrompt

    from .scripted import ScriptedGenerator, scripted_runtime

    gen = ScriptedGenerator(default="悉尼")
    rt = scripted_runtime(gen, tmp_path)
    docs = (RankedDoc(Passage("p1", "举办地：澳大利亚悉尼", ""), 1),)
    zh = Example("13", "2000年奥运会在哪举办", ["悉尼"], meta={"language": "zh"})
    en = Example("1", "Where were the 2000 Olympics held?", ["Sydney"], meta={"language": "en"})
    inputs = [CellInput(ex, Cell("bm25", 1, "original"), docs) for ex in (zh, en)]
    inputs.append(CellInput(zh, Cell("none", 0, "none"), ()))
    outs = RGBPrompt(doc_format="{text}").run(inputs, rt)
    assert [o.extra["instruction"] for o in outs] == ["zh", "en", "zh"]
    sent = set(gen.sent)
    assert len(sent) == 3
    zh_rag = (
        RGB_SYSTEM_ZH.rstrip("\n") + "\n" + "文档：\n举办地：澳大利亚悉尼 \n\n问题：\n2000年奥运会在哪举办"
    )
    zh_closed = "文档：\n \n\n问题：\n2000年奥运会在哪举办"  # passage_num = 0: no system message
    assert zh_rag in sent and zh_closed in sent
    (en_rag,) = sent - {zh_rag, zh_closed}
    assert en_rag.startswith("You are an accurate") and "Question:\nWhere were" in en_rag
