"""SURE document perturbations: verbatim templates, exact outputs on a fixed document, targets,
causal-feature preservation (answer check) and the LLM index-list parser."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from rr.context import RankedDoc
from rr.perturbations.sentences import split_sentences
from rr.perturbations.sure import (
    DocUnit,
    FormatPerturbation,
    LogicPerturbation,
    MetadataPerturbation,
    SourcePerturbation,
    SurePerturbation,
    answer_preserved,
    clean_rewrite,
    nli_label,
    parse_order,
    parse_target,
)
from rr.prompts import template_source
from rr.records import Example, Passage
from rr.runtime import Runtime
from rr.strategies.base import Cell, CellInput

# ------------------------------------------------------------------ templates (Fig. 8-11, verbatim)
# The PDF prints the HTML meta attribute quotes as typographic ’; the templates use the ASCII '
# that the HTML means. Line breaks inside Fig. 8's paragraphs are the figure's line wrapping.
TEMPLATES = {
    "sure_format_json.j2": '{\n"title": "{{ title }}",\n"text": "{{ document }}"\n}\n',
    "sure_format_html.j2": (
        '<html lang="en">\n<head>\n<meta charset="UTF-8">\n{{ title }}\n</head>\n'
        "<body> {{ document }} </body>\n</html>\n"
    ),
    "sure_format_yaml.j2": "Title: {{ title }}\nText: {{ document }}\n",
    "sure_format_markdown.j2": "# {{ title }}\n{{ document }}\n",
    "sure_metadata_timestamp.j2": (
        '<html lang="en">\n<head>\n<meta charset="UTF-8">\n'
        "<meta name='timestamp' content='{{ timestamp }}'>\n{{ title }}\n</head>\n"
        "<body> {{ document }} </body>\n</html>\n"
    ),
    "sure_metadata_datasource.j2": (
        '<html lang="en">\n<head>\n<meta charset="UTF-8">\n'
        "<meta name='datasource' content='{{ datasource }}'>\n{{ title }}\n</head>\n"
        "<body> {{ document }} </body>\n</html>\n"
    ),
    "sure_style_simple.j2": (
        "Please simplify the following text while preserving its original meaning. Use shorter sentences, "
        "basic vocabulary, and clear language. Avoid complex structures, technical terms, or ambiguous "
        "expressions.\nHere is the passage to simplify: {{ document }}\n"
    ),
    "sure_style_complex.j2": (
        "Please complexify the following text while preserving its original meaning. Use longer sentences, "
        "intricate sentence structures, and advanced vocabulary. Avoid contractions, informal language, and "
        "colloquial expressions, ensuring the text maintains a professional and authoritative tone "
        "throughout.\nHere is the passage to complexify: {{ document }}\n"
    ),
    "sure_source_paraphrase.j2": (
        "Please rewrite the following passage. Ensure that the overall meaning, tone, and important details "
        "remain intact. Avoid any significant shifts in style or focus. The aim is to create a fresh version "
        "while faithfully conveying the original content.\nHere is the passage to paraphrase: {{ document }}\n"
    ),
    "sure_logic_llm_rank.j2": (
        "Rearrange the following list of sentences in your preferred logical order and provide only the "
        "indices of the sentences. Please do not include any explanations.\nExample: {{ example }}\n"
        "Sentences List: {{ sentences }}\nThe length of the Sentences List is {{ n }}. Therefore, the "
        "indices must contain {{ n }} elements, and the index values cannot exceed {{ n - 1 }}.\n"
    ),
    "sure_nli.j2": (
        "Consider the two passages below.\nPremise: {{ premise }}\nHypothesis: {{ hypothesis }}\n"
        "Does the premise semantically entail the hypothesis? Answer with 'entailment' if they are "
        "paraphrases,'contradiction' if they have opposing meanings, or 'neutral' if they are neither.\n"
        "Response:\n"
    ),
    "sure_qa.j2": (
        "You are given a question and you MUST respond by EXTRACTING the answer (max 5 tokens) from the "
        "provided document. If the document does not contain the answer, respond with NO-RES.\n\n"
        "{% for c in sources %}Document [{{ loop.index }}] {{ c }}\n{% endfor %}\n"
        "Question: {{ question }}\nAnswer:\n"
    ),
}


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_template_is_verbatim(name: str) -> None:
    assert template_source(name) == TEMPLATES[name]


# ------------------------------------------------------------------ a fixed document

EX = Example("q1", "Where was Marie Curie born?", ["Warsaw"])
GOLD = Passage(
    "p1",
    'Marie Curie was born in Warsaw in 1867. She moved to "Paris" in 1891. She won two Nobel Prizes.',
    "Marie Curie",
)
NOISE = Passage("p2", "Pierre Curie was a French physicist. He was born in Paris.", "Pierre Curie")
INPUT = CellInput(EX, Cell("bm25", 2, "original"), (RankedDoc(GOLD, 1), RankedDoc(NOISE, 2)))
CLOSED = CellInput(EX, Cell("none", 0, "none"))


@pytest.fixture
def rt(tmp_path: Path) -> Runtime:
    return Runtime(None, tmp_path, seed=0)  # type: ignore[arg-type]  # rule-based: no model


def run(p: SurePerturbation, rt: Runtime, inputs: Sequence[CellInput] = (INPUT,)) -> list[CellInput]:
    return p.apply(list(inputs), rt)


HTML_BODY = '<body> Marie Curie was born in Warsaw in 1867. She moved to "Paris" in 1891. She won two Nobel Prizes. </body>\n</html>'

EXPECTED_GOLD = {
    ("format", "json"): '{\n"title": "Marie Curie",\n"text": "Marie Curie was born in Warsaw in 1867. '
    'She moved to \\"Paris\\" in 1891. She won two Nobel Prizes."\n}',
    ("format", "html"): '<html lang="en">\n<head>\n<meta charset="UTF-8">\nMarie Curie\n</head>\n'
    + HTML_BODY,
    ("format", "yaml"): "Title: Marie Curie\nText: " + GOLD.text,
    ("format", "markdown"): "# Marie Curie\n" + GOLD.text,
    ("metadata", "timestamp_pre"): '<html lang="en">\n<head>\n<meta charset="UTF-8">\n'
    "<meta name='timestamp' content='2023-06-11'>\nMarie Curie\n</head>\n" + HTML_BODY,
    ("metadata", "timestamp_post"): '<html lang="en">\n<head>\n<meta charset="UTF-8">\n'
    "<meta name='timestamp' content='2024-07-21'>\nMarie Curie\n</head>\n" + HTML_BODY,
    ("metadata", "wiki"): '<html lang="en">\n<head>\n<meta charset="UTF-8">\n'
    "<meta name='datasource' content='https://en.wikipedia.org/wiki/Marie_Curie'>\nMarie Curie\n</head>\n"
    + HTML_BODY,
    ("metadata", "twitter"): '<html lang="en">\n<head>\n<meta charset="UTF-8">\n'
    "<meta name='datasource' content='https://twitter.com/MarieCurie/status/4972756210921222362'>\n"
    "Marie Curie\n</head>\n" + HTML_BODY,
    (
        "logic",
        "reverse",
    ): 'She won two Nobel Prizes. She moved to "Paris" in 1891. Marie Curie was born in Warsaw in 1867.',
    (
        "logic",
        "random",
    ): 'She moved to "Paris" in 1891. She won two Nobel Prizes. Marie Curie was born in Warsaw in 1867.',
}


def _make(family: str, kind: str, **kw) -> SurePerturbation:
    cls = {"format": FormatPerturbation, "metadata": MetadataPerturbation, "logic": LogicPerturbation}[family]
    return cls(kind, **kw)


@pytest.mark.parametrize(("family", "kind"), sorted(EXPECTED_GOLD), ids=lambda x: str(x))
def test_exact_output_on_a_fixed_document(family: str, kind: str, rt: Runtime) -> None:
    p = _make(family, kind)
    out = run(p, rt, [INPUT, CLOSED])
    assert len(out) == 2
    doc = out[0].docs[0].passage
    assert doc.text == EXPECTED_GOLD[(family, kind)]
    assert doc.id == "p1" and out[0].docs[0].rank == 1
    # template perturbations move the title into the text; sentence reordering keeps it
    assert doc.title == ("Marie Curie" if family == "logic" else "")
    assert out[0].cell.doc_perturbation == f"{family}:{kind}" == p.name
    # the closed-book input passes through untouched, with the job's tag
    assert out[1].docs == () and out[1].cell.doc_perturbation == p.name
    # deterministic: same seed, same output; another seed changes seeded perturbations only
    assert run(_make(family, kind), rt)[0].docs == out[0].docs
    texts = {
        run(_make(family, kind), Runtime(None, rt.cache_dir, seed=s))[0].docs[0].passage.text  # type: ignore[arg-type]
        for s in range(4)
    }
    assert (len(texts) > 1) == (kind in ("random", "timestamp_pre", "timestamp_post", "twitter"))


def test_timestamps_fall_on_the_right_side_of_the_cutoff() -> None:
    pre = MetadataPerturbation("timestamp_pre", cutoff="2020-01-01", span_days=30)
    post = MetadataPerturbation("timestamp_post", cutoff="2020-01-01", span_days=30)
    pres = {pre.timestamp(0, f"q{i}", "p") for i in range(200)}
    posts = {post.timestamp(0, f"q{i}", "p") for i in range(200)}
    assert min(pres) == "2019-12-02" and max(pres) == "2019-12-31"
    assert min(posts) == "2020-01-02" and max(posts) == "2020-01-31"


def test_targets(rt: Runtime) -> None:
    gold_only = run(FormatPerturbation("markdown", target="gold"), rt)[0]
    assert gold_only.docs[0].passage.text.startswith("# Marie Curie") and gold_only.docs[1].passage == NOISE
    assert gold_only.cell.doc_perturbation == "format:markdown@gold"
    rank2 = run(FormatPerturbation("markdown", target="rank:2"), rt)[0]
    assert rank2.docs[0].passage == GOLD and rank2.docs[1].passage.text.startswith("# Pierre Curie")
    assert rank2.cell.doc_perturbation == "format:markdown@rank2"
    # an input without a targeted document is no perturbed instance: dropped and counted
    noise_only = CellInput(EX, INPUT.cell, (RankedDoc(NOISE, 1),))
    assert run(FormatPerturbation("markdown", target="gold"), rt, [noise_only]) == []
    assert rt.counters["format:markdown@gold:dropped_no_target_document"] == 1
    for bad in ("rank:0", "rank", "golden", "rank:x"):
        with pytest.raises(ValueError, match="target must be 'all', 'gold' or 'rank:N'"):
            parse_target(bad)


def test_unchanged_inputs_are_dropped_and_counted(rt: Runtime) -> None:
    one_sentence = Passage("p3", "Warsaw is the capital of Poland.", "Warsaw")
    inp = CellInput(EX, Cell("bm25", 1, "original"), (RankedDoc(one_sentence, 1),))
    assert run(LogicPerturbation("reverse"), rt, [inp, INPUT])[0].docs[0].passage.id == "p1"
    assert rt.counters["logic:reverse:dropped_unchanged"] == 1
    assert rt.counters["logic:reverse:inputs_kept"] == 1


class _Replace(SurePerturbation):
    """Test double: replaces every document's text by a fixed string."""

    family = "test"

    def __init__(self, text: str, **kw) -> None:
        super().__init__(**kw)
        self.variant, self.text = "replace", text

    def perturb(self, units: Sequence[DocUnit], rt: Runtime) -> list[Passage | None]:
        self.seen = list(units)
        return [Passage(u.passage.id, self.text, u.passage.title) if self.text else None for u in units]


def test_answer_check_drops_and_counts(rt: Runtime) -> None:
    # the golden document loses "Warsaw": dropped
    p = _Replace("She was born in Poland.", target="rank:1")
    assert run(p, rt) == []
    assert rt.counters["test:replace@rank1:dropped_answer_check"] == 1
    # the noise document acquires "Warsaw": dropped
    p = _Replace("He visited Warsaw.", target="rank:2")
    assert run(p, rt) == []
    assert rt.counters["test:replace@rank2:dropped_answer_check"] == 1
    # with the check off the pair is kept
    assert len(run(_Replace("He visited Warsaw.", target="rank:2", answer_check=False), rt)) == 1
    # a perturbation that fails to produce a document drops its inputs
    assert run(_Replace(""), rt) == []
    assert rt.counters["test:replace:dropped_perturbation_failed"] == 1


def test_answer_preserved() -> None:
    assert answer_preserved(GOLD, Passage("p1", "born in WARSAW.", "x"), EX)
    assert not answer_preserved(GOLD, Passage("p1", "born in Poland", "x"), EX)
    assert answer_preserved(NOISE, Passage("p2", "born in Paris", "x"), EX)
    assert not answer_preserved(NOISE, Passage("p2", "born in Paris", "Warsaw"), EX)  # title counts


def test_each_document_is_perturbed_once_per_job(rt: Runtime) -> None:
    cells = [Cell("bm25", k, o) for k in (1, 2) for o in ("original", "reversed")]
    inputs = [CellInput(EX, c, INPUT.docs[: c.k]) for c in cells]
    p = _Replace("Born in Warsaw.")
    out = run(p, rt, inputs)
    assert [u.passage.id for u in p.seen] == ["p1", "p2"]  # 6 document slots, 2 unique documents
    assert len(out) == 2  # p2 acquires the answer: the k=2 inputs are dropped
    assert rt.counters["test:replace:dropped_answer_check"] == 2


def test_parse_order() -> None:
    assert parse_order("[2, 0, 1]", 3) == ([2, 0, 1], "ok")
    assert parse_order("Output: 1, 0", 2) == ([1, 0], "ok")
    assert parse_order("[2, 2, 5, 0]", 3) == ([2, 0, 1], "repaired")
    assert parse_order("[0, 1]", 3) == ([0, 1, 2], "repaired")
    assert parse_order("I cannot do that.", 3) == (None, "rejected")
    assert parse_order("[7, 9]", 3) == (None, "rejected")


def test_llm_prompt_renders_the_sentences(rt: Runtime) -> None:
    prompt = LogicPerturbation("llm").prompt(["A b.", 'C "d".'])
    assert 'Sentences List: ["A b.", "C \\"d\\"."]\n' in prompt
    assert prompt.endswith("the indices must contain 2 elements, and the index values cannot exceed 1.")


def test_helpers() -> None:
    assert split_sentences(["Dr. Smith went to Washington, D.C. on Monday. He stayed 2.5 days.", ""]) == [
        ["Dr. Smith went to Washington, D.C. on Monday.", "He stayed 2.5 days."],
        [],
    ]
    assert clean_rewrite("Here is the simplified passage:\n\nIt is short.\n") == ("It is short.", True)
    assert clean_rewrite("  It is short: very.  ") == ("It is short: very.", False)
    assert nli_label("Entailment.") == "entailment" and nli_label("The answer is neutral") == "neutral"
    assert nli_label("yes") is None
    with pytest.raises(ValueError, match="kind=self paraphrases with the model under test"):
        SourcePerturbation("self", generator={"_target_": "x"})
    with pytest.raises(ValueError, match="kind must be one of"):
        FormatPerturbation("xml")


# ------------------------------------------------------------------ model-based perturbations


class ScriptedGenerator:
    """A backend test double: answers each prompt with the first scripted reply whose key occurs
    in it (the perturbations' plumbing is tested without a model; see the real-model test)."""

    name = "scripted"
    context_window = 4096

    def __init__(self, script: dict[str, str]) -> None:
        self.script = script
        self.prompts: list[str] = []

    def identity(self) -> dict:
        return {"model_id": "scripted", "script": self.script}

    def default_params(self):
        from rr.records import GenerationParams

        return GenerationParams(max_new_tokens=32)

    def render(self, request) -> str:
        return request.chat()[-1]["content"]

    def count_tokens(self, prompts: list[str]) -> list[int]:
        return [len(p.split()) for p in prompts]

    def generate(self, prompts, params, progress=None):
        from rr.generation.base import Completion

        self.prompts += prompts
        out = []
        for p in prompts:
            reply = next(v for k, v in self.script.items() if k in p)
            out.append(Completion(reply, len(p.split()), len(reply.split())))
        return out


def scripted_rt(tmp_path: Path, script: dict[str, str]) -> tuple[Runtime, ScriptedGenerator]:
    from rr.generation.cache import GenerationCache
    from rr.generation.client import LLM

    gen = ScriptedGenerator(script)
    llm = LLM(gen, GenerationCache(tmp_path, gen.identity(), writer="t"), show_progress=False)  # type: ignore[arg-type]
    return Runtime(llm, tmp_path, seed=0, show_progress=False), gen


def test_style_and_source_rewrite_each_unique_document_once(tmp_path: Path) -> None:
    from rr.perturbations.sure import StylePerturbation

    rt, gen = scripted_rt(
        tmp_path,
        {
            "simplify: Marie": "Here is the simpler text:\nMarie Curie was born in Warsaw.",
            "simplify: Pierre": "Pierre Curie was a physicist from France.",
            "paraphrase: Pierre": "Pierre Curie, a French physicist, was born in Warsaw.",
            "paraphrase": "In 1867 Marie Curie was born in Warsaw.",
        },
    )
    inputs = [INPUT, CellInput(EX, Cell("bm25", 2, "reversed"), INPUT.docs[::-1])]
    out = StylePerturbation("simple", max_new_tokens=64).apply(inputs, rt)
    assert len(out) == 2 and len(gen.prompts) == 2  # 4 document slots, 2 unique documents
    assert gen.prompts[0].startswith("Please simplify the following text")
    assert gen.prompts[0].endswith("Here is the passage to simplify: " + GOLD.text)
    assert out[0].docs[0].passage == Passage("p1", "Marie Curie was born in Warsaw.", "Marie Curie")
    assert out[1].docs[0].passage == Passage(
        "p2", "Pierre Curie was a physicist from France.", "Pierre Curie"
    )
    assert rt.counters["style:simple:preamble_stripped"] == 1
    # source: the noise document acquires "Warsaw" -> both inputs dropped and counted
    out = SourcePerturbation("self", max_new_tokens=64).apply(inputs, rt)
    assert out == [] and rt.counters["source:self:dropped_answer_check"] == 2
    # a rerun is served by the generation cache: no new model calls
    calls = len(gen.prompts)
    StylePerturbation("simple", max_new_tokens=64).apply(inputs, rt)
    assert len(gen.prompts) == calls


def test_llm_ranked_logic_validates_the_index_list(tmp_path: Path) -> None:
    rt, gen = scripted_rt(tmp_path, {"Marie": "[2, 0, 1]", "Pierre": "I prefer them as they are."})
    out = LogicPerturbation("llm").apply([CellInput(EX, INPUT.cell, INPUT.docs[:1]), INPUT], rt)
    assert len(out) == 1  # the second input holds the rejected document
    assert out[0].docs[0].passage.text == (
        'She won two Nobel Prizes. Marie Curie was born in Warsaw in 1867. She moved to "Paris" in 1891.'
    )
    assert "The length of the Sentences List is 3." in gen.prompts[0]
    assert rt.counters["logic:llm:llm_order_rejected"] == 1
    assert rt.counters["logic:llm:dropped_perturbation_failed"] == 1


def test_bidirectional_entailment_filter(tmp_path: Path) -> None:
    # entailment both ways for the gold document; one direction neutral for the noise document
    rt, gen = scripted_rt(
        tmp_path,
        {
            "Premise: Pierre Curie Pierre": "neutral",
            "Premise: Marie Curie Marie": "Entailment",
            "Premise: # Marie": "entailment.",
            "Premise: # Pierre": "entailment",
        },
    )
    out = FormatPerturbation("markdown", nli=True).apply(
        [CellInput(EX, INPUT.cell, INPUT.docs[:1]), INPUT], rt
    )
    assert len(out) == 1 and out[0].docs[0].passage.text.startswith("# Marie Curie")
    assert len(gen.prompts) == 4 and all(
        p.endswith("or 'neutral' if they are neither.\nResponse:") for p in gen.prompts
    )
    assert rt.counters["format:markdown:nli_equivalent"] == 1
    assert rt.counters["format:markdown:nli_not_equivalent"] == 1
    assert rt.counters["format:markdown:dropped_nli"] == 1


def test_rewrite_with_the_real_small_model(tmp_path: Path) -> None:
    """One real call (SmolLM2-135M, 8 new tokens): a rewrite cut at max_new_tokens is rejected."""
    from rr.generation.cache import GenerationCache
    from rr.generation.client import LLM
    from rr.generation.hf import HFGenerator
    from rr.perturbations.sure import StylePerturbation

    gen = HFGenerator(max_new_tokens=8)
    llm = LLM(gen, GenerationCache(tmp_path, gen.identity(), writer="t"), show_progress=False)
    rt = Runtime(llm, tmp_path, seed=0, show_progress=False)
    inp = CellInput(EX, Cell("bm25", 1, "original"), (RankedDoc(GOLD, 1),))
    assert StylePerturbation("complex", max_new_tokens=8).apply([inp], rt) == []
    assert rt.counters["style:complex:rewrite_truncated"] == 1
    assert llm.stats.model_calls == 1
