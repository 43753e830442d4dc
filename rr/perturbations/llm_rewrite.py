"""LLM query rewrites: the query-level paper's Table 3 prompts and RARE's advanced perturbations.

Kinds (``kind`` option; each has a template in ``rr/prompts/templates``):

* ``redundancy``, ``formal``, ``ambiguity``: the query-level paper (arXiv 2507.06956, App. A.2,
  Table 3), verbatim. One prompt per query asks for ``n`` paraphrases separated by newlines;
  the paper keeps all 5. The Table 3 text is a Python triple-quoted string, so its ``\\n``
  escapes are newline characters in the prompt and its line breaks are the PDF's column wraps
  (``be-tween``); ``{output_per_sample}`` is ``{{ n }}``, ``{input_str}`` is ``{{ question }}``.
* ``grammar``, ``irrelevant``: RARE (App. C.1) rephrases "only grammar/punctuation/word order"
  and inserts "one domain-relevant but answer-irrelevant detail", 3 candidates each, keeping
  the candidate most similar to the original. RARE publishes no prompt for these, so the two
  templates are ours, written from those sentences (and pinned by tests like the others).

Model: ``generator: null`` is the model under test (``rt.llm``); any generator config node
(e.g. a larger model, as the papers used GPT-4o / GPT-4.1) goes through ``rt.llm_for``, so
rewrites are cached like every other call. Outputs are parsed by :func:`parse_variants`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from rr.perturbations.base import PerturbationTag, QueryVariant
from rr.prompts import render
from rr.records import Example, GenerationParams, MetaKey, Request
from rr.registry import component

if TYPE_CHECKING:
    from rr.runtime import Runtime

#: kind -> (template, default candidates per query, default variants kept)
KINDS: dict[str, tuple[str, int, int]] = {
    "redundancy": ("query_redundancy.j2", 5, 5),
    "formal": ("query_formal.j2", 5, 5),
    "ambiguity": ("query_ambiguity.j2", 5, 5),
    "grammar": ("query_grammar.j2", 3, 1),
    "irrelevant": ("query_irrelevant.j2", 3, 1),
}

_NUMBERING = re.compile(
    r"^\s*(?:"
    r"(?:\(?\d{1,2}[.):\]]|\d{1,2}\s*[-–]\s)"  # 1.  1)  (1)  1:  1 -
    r"|[-*•·–]+"  # bullets
    r"|(?:paraphrase|variant|version|option|sample|output|rewrite|rephrasing|question|text)\s*#?\d*\s*[:.)-]"
    r")\s*",
    re.IGNORECASE,
)
_CHATTER = re.compile(
    r"^(?:here (?:are|is)|sure\b|certainly|of course|okay\b|ok\b|note\b|i hope|i have|i've|these\b|below\b"
    r"|let me|as requested|input text\s*:|original\b)",
    re.IGNORECASE,
)
_QUOTES = "\"'“”‘’`«»"


def _norm(text: str) -> str:
    """Case-folded alphanumerics only: what 'the same question' means here."""
    return re.sub(r"[\W_]+", " ", text.casefold()).strip()


@dataclass
class ParseResult:
    """Variants parsed from one model output, and why other lines were dropped."""

    variants: list[str]
    dropped: dict[str, int] = field(default_factory=dict)

    def drop(self, reason: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1


def parse_variants(text: str, original: str, max_n: int) -> ParseResult:
    """Variants from a model's newline-separated output.

    Each non-blank line has its numbering (``1.``, ``2)``, ``(3)``, ``Paraphrase 4:``), bullets and
    enclosing quotes removed and ``**`` markup stripped. Dropped, with the reason counted:
    ``chatter`` (preambles such as "Here are 5 paraphrases:", lines ending with ``:``, echoes of
    "Input text:"), ``same_as_original`` (equal to the original up to case and punctuation: never
    emitted as a variant), ``duplicate``, and ``extra`` (beyond ``max_n``).

    Args:
        text: The model's output.
        original: The original question.
        max_n: Variants wanted.
    """
    out = ParseResult([])
    seen: set[str] = set()
    for raw in text.splitlines():
        line = raw.strip().replace("**", "")
        if not line:
            continue
        if _CHATTER.match(line) or line.endswith(":"):
            out.drop("chatter")
            continue
        prev = None
        while prev != line:  # "1. - 'text'" -> text
            prev = line
            line = _NUMBERING.sub("", line, count=1).strip()
            if len(line) >= 2 and line[0] in _QUOTES and line[-1] in _QUOTES:
                line = line[1:-1].strip()
        if not line or not re.search(r"\w", line):
            out.drop("chatter")
            continue
        key = _norm(line)
        if key == _norm(original):
            out.drop("same_as_original")
            continue
        if key in seen:
            out.drop("duplicate")
            continue
        if len(out.variants) >= max_n:
            out.drop("extra")
            continue
        seen.add(key)
        out.variants.append(line)
    return out


@component("perturbation/query", "llm_rewrite")
class LLMRewritePerturbation:
    """Rewrites of every query by an LLM, tagged ``<name>#<i>`` (i = 1..n).

    Args:
        kind: ``redundancy``, ``formal``, ``ambiguity`` (query-level paper, Table 3) or
            ``grammar``, ``irrelevant`` (RARE, App. C.1).
        n: Variants kept per query (``None``: 5 for the Table 3 kinds, 1 for RARE's).
        candidates: Variants asked for in the prompt (``None``: 5, RARE's kinds 3). When more
            than ``n``, the ``n`` most similar to the original under ``embedder`` are kept.
        generator: A generator config for the rewriting model; ``None`` = the model under test.
        max_new_tokens: Output budget of one rewriting call (all candidates of a query).
        temperature: Decoding temperature (0 = greedy; sampled calls are seeded by the job seed).
        template: Override the kind's template (a file in ``rr/prompts/templates``).
        embedder: sentence-transformers model for the selection.
        include_original: Also emit each unperturbed query (tag ``none``).
        name: Tag prefix (``None`` = ``kind``).

    Queries with fewer parsed variants than ``n`` keep what was parsed; the shortfall is counted
    as ``<name>:missing_variants`` and the dropped lines per reason as ``<name>:<reason>``.
    """

    def __init__(
        self,
        kind: str = "redundancy",
        n: int | None = None,
        candidates: int | None = None,
        generator: Any = None,
        max_new_tokens: int = 512,
        temperature: float = 0.0,
        template: str | None = None,
        embedder: str = "packaged:all-MiniLM-L6-v2",
        include_original: bool = True,
        name: str | None = None,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"llm_rewrite: kind must be one of {sorted(KINDS)}, got {kind!r}")
        default_template, default_candidates, default_n = KINDS[kind]
        self.kind = kind
        self.n = int(n if n is not None else default_n)
        self.candidates = int(candidates if candidates is not None else max(default_candidates, self.n))
        if self.n < 1 or self.candidates < self.n:
            raise ValueError(
                f"llm_rewrite: need 1 <= n <= candidates, got n={self.n}, candidates={self.candidates}"
            )
        self.generator = generator
        self.max_new_tokens = int(max_new_tokens)
        self.temperature = float(temperature)
        self.template = template or default_template
        self.embedder = embedder
        self.include_original = include_original
        self.name = name or kind

    def tag(self, i: int) -> str:
        """The ``query_perturbation`` value of the ``i``-th variant (1-based)."""
        return PerturbationTag(self.name, variant=i).format()

    def prompt(self, question: str) -> str:
        """The rewriting prompt for one question."""
        return render(self.template, n=self.candidates, question=question)

    def variants(self, examples: Sequence[Example], rt: Runtime) -> list[QueryVariant]:
        llm = rt.llm_for(self.generator)
        params = GenerationParams(
            max_new_tokens=self.max_new_tokens,
            temperature=self.temperature,
            seed=rt.seed if self.temperature > 0 else None,
        )
        gens = llm.generate(
            [Request.user(self.prompt(ex.question), params) for ex in examples], step=f"rewrite:{self.name}"
        )
        parsed = []
        for ex, g in zip(examples, gens, strict=True):
            res = parse_variants(g.text, ex.question, self.candidates)
            for reason, k in res.dropped.items():
                rt.count(f"{self.name}:{reason}", k)
            parsed.append(res.variants)
        if self.candidates > self.n:
            from rr.perturbations.selection import most_similar

            parsed = most_similar([ex.question for ex in examples], parsed, self.n, self.embedder)
        out = [QueryVariant(ex, "none") for ex in examples] if self.include_original else []
        for ex, texts in zip(examples, parsed, strict=True):
            if len(texts) < self.n:
                rt.count(f"{self.name}:missing_variants", self.n - len(texts))
            meta = {**ex.meta, MetaKey.ORIGINAL_QUESTION: ex.question}
            out += [
                QueryVariant(replace(ex, question=t, meta=meta), self.tag(i)) for i, t in enumerate(texts, 1)
            ]
        return out
