"""SURE (spurious features in grounding documents) document perturbations.

Each class is one family of the SURE taxonomy (§3.2) with its variants chosen by a
constructor argument; one YAML per variant lives in ``conf/perturbation/doc/``:

* :class:`FormatPerturbation` (``format_json``, ``format_html``, ``format_yaml``,
  ``format_markdown``): the placeholder templates of Fig. 9 (title + text).
* :class:`MetadataPerturbation` (``metadata_timestamp_pre``/``_post``, ``metadata_wiki``,
  ``metadata_twitter``): Fig. 9's HTML templates with a pseudo timestamp before/after a
  knowledge cutoff or a pseudo Wikipedia/Twitter link.
* :class:`LogicPerturbation` (``logic_reverse``, ``logic_random``, ``logic_llm``): sentence
  order reversed, shuffled (seeded by ``(seed, example id, passage id)``) or ranked by an LLM
  with the Fig. 8 prompt.
* :class:`StylePerturbation` (``style_simple``, ``style_complex``) and
  :class:`SourcePerturbation` (``source_llm``, ``source_self``): rewrites by an LLM with the
  Fig. 8 prompts, through any generator config (``generator: null`` = the model under test).

Shared behaviour (:class:`SurePerturbation`):

* **Target**: ``all`` documents of an input (SURE's setup: Table 1 counts perturbed golden
  *and* noise documents), ``gold`` (documents whose title + text contain a gold answer) or
  ``rank:N`` (the document retrieved at rank N).
* **One batched step over unique documents**: a document shown in many cells of an example is
  perturbed once per job (model outputs are also cached across jobs by the generation cache).
* **Causal-feature preservation** (§3.4): a golden document must keep a gold answer string, a
  noise document must not acquire one (normalised substring match over title + text);
  optionally, bidirectional entailment with the Appendix D NLI prompt (Fig. 10). An input
  whose targeted documents fail is dropped, as is one where the perturbation changed nothing
  (a one-sentence document reversed) or could not be produced (an unusable LLM output). Every
  drop is counted under ``<tag>:dropped_<why>`` in ``summary.json`` ``counters``.
* Closed-book inputs (k = 0) pass through untouched (their rows carry the perturbation's tag).

A perturbed document keeps its passage id (so original and perturbed rows pair by
``doc_ids``); template-based perturbations put the title inside the text and leave ``title``
empty, so a ``doc_format`` of ``"{title}\\n{text}"`` shows exactly the Fig. 9 rendering.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

from rr.answers import has_answer
from rr.context import RankedDoc
from rr.hashing import content_hash, rng_for
from rr.perturbations.base import VALUE, PerturbationTag
from rr.perturbations.sentences import split_sentences
from rr.prompts import render
from rr.records import Example, Passage, Request
from rr.registry import component

if TYPE_CHECKING:
    from rr.runtime import Runtime
    from rr.strategies.base import CellInput


@dataclass(frozen=True)
class DocUnit:
    """One document to perturb: the passage and the example it is shown for."""

    example_id: str
    passage: Passage


def parse_target(target: str) -> tuple[str, int | None]:
    """``"all"`` / ``"gold"`` / ``"rank:N"`` -> (kind, N).

    Raises:
        ValueError: anything else (names the bad value).
    """
    if target in ("all", "gold"):
        return target, None
    m = re.fullmatch(r"rank:(\d+)", target)
    if m and int(m.group(1)) >= 1:
        return "rank", int(m.group(1))
    raise ValueError(f"perturbation target must be 'all', 'gold' or 'rank:N' (N >= 1), got {target!r}")


def doc_text(p: Passage) -> str:
    """Title and text of a passage: the string the answer check searches."""
    return f"{p.title} {p.text}".strip()


class SurePerturbation:
    """Base of the SURE document perturbations: targeting, memoised batch step, causal checks.

    Subclasses set ``family``, ``variant`` and implement :meth:`perturb`.

    Args:
        target: ``all``, ``gold`` or ``rank:N`` (see the module docstring).
        answer_check: Drop inputs whose perturbed documents gain or lose a gold answer string.
        nli: Also require bidirectional entailment (Fig. 10 prompt) between each original and
            perturbed document.
        nli_generator: Generator config of the NLI model (``None``: the model under test).
        nli_max_new_tokens: Tokens the NLI model may generate.
    """

    family: ClassVar[str] = "sure"
    #: Whether the perturbation depends on the example (seeded randomness): then a document
    #: is perturbed once per (example, document), else once per document.
    per_example: ClassVar[bool] = False
    variant: str

    def __init__(
        self,
        target: str = "all",
        answer_check: bool = True,
        nli: bool = False,
        nli_generator: Any = None,
        nli_max_new_tokens: int = 8,
    ) -> None:
        self.target = target
        self._target = parse_target(target)
        self.answer_check = answer_check
        self.nli = nli
        self.nli_generator = nli_generator
        self.nli_max_new_tokens = nli_max_new_tokens

    @property
    def name(self) -> str:
        """The ``doc_perturbation`` tag, e.g. ``format:json`` or ``logic:reverse@gold``."""
        kind, rank = self._target
        params: dict[str, str | int] = {}
        if kind == "rank" and rank is not None:
            params["rank"] = rank  # rank:2 -> @rank2
        elif kind != "all":
            params[VALUE] = kind  # @gold
        return PerturbationTag(f"{self.family}:{self.variant}", params).format()

    # -- to implement ---------------------------------------------------------------------------
    def perturb(self, units: Sequence[DocUnit], rt: Runtime) -> list[Passage | None]:
        """The perturbed passage of every unit (``None``: could not be produced; count why)."""
        raise NotImplementedError

    # -- the hook -------------------------------------------------------------------------------
    def targeted(self, inp: CellInput) -> list[int]:
        """Positions (in ``inp.docs``) of the documents this perturbation rewrites."""
        kind, rank = self._target
        if kind == "all":
            return list(range(len(inp.docs)))
        if kind == "rank":
            return [i for i, d in enumerate(inp.docs) if d.rank == rank]
        return [i for i, d in enumerate(inp.docs) if has_answer(doc_text(d.passage), inp.example.answers)]

    def _key(self, example_id: str, p: Passage) -> str:
        return content_hash([example_id if self.per_example else "", p.id, p.title, p.text], 24)

    def apply(self, inputs: Sequence[CellInput], rt: Runtime) -> list[CellInput]:
        """Perturb the targeted documents of every input; drop (and count) failing pairs."""
        tag = self.name
        units: dict[str, DocUnit] = {}
        plan: list[list[int]] = []
        for inp in inputs:
            idx = self.targeted(inp) if inp.cell.k > 0 else []
            plan.append(idx)
            for i in idx:
                p = inp.docs[i].passage
                units.setdefault(self._key(inp.example.id, p), DocUnit(inp.example.id, p))
        keys = list(units)
        perturbed = dict(zip(keys, self.perturb([units[k] for k in keys], rt), strict=True))
        rt.count(f"{tag}:documents_perturbed", sum(v is not None for v in perturbed.values()))
        equivalent = self._entailment(
            [(units[k].passage, v) for k, v in perturbed.items() if v is not None], rt
        )

        out: list[CellInput] = []
        for inp, idx in zip(inputs, plan, strict=True):
            cell = replace(inp.cell, doc_perturbation=tag)
            if inp.cell.k == 0:
                out.append(replace(inp, cell=cell))
                continue
            why = self._check(inp, idx, perturbed, equivalent)
            if why is not None:
                rt.count(f"{tag}:dropped_{why}")
                continue
            docs = list(inp.docs)
            for i in idx:
                new = perturbed[self._key(inp.example.id, docs[i].passage)]
                assert new is not None
                docs[i] = RankedDoc(new, docs[i].rank)
            out.append(replace(inp, cell=cell, docs=tuple(docs)))
        rt.count(f"{tag}:inputs_kept", sum(o.cell.k > 0 for o in out))
        return out

    def _check(
        self,
        inp: CellInput,
        idx: list[int],
        perturbed: dict[str, Passage | None],
        equivalent: dict[tuple[str, str], bool],
    ) -> str | None:
        """Why the input must be dropped, or ``None`` to keep it."""
        if not idx:
            return "no_target_document"
        news = [perturbed[self._key(inp.example.id, inp.docs[i].passage)] for i in idx]
        if any(n is None for n in news):
            return "perturbation_failed"
        olds = [inp.docs[i].passage for i in idx]
        if all(n == o for n, o in zip(news, olds, strict=True)):
            return "unchanged"
        if self.answer_check and not all(
            answer_preserved(o, n, inp.example)  # type: ignore[arg-type]
            for o, n in zip(olds, news, strict=True)
        ):
            return "answer_check"
        if self.nli and not all(
            equivalent[(self._pair_key(o), self._pair_key(n))]  # type: ignore[arg-type]
            for o, n in zip(olds, news, strict=True)
        ):
            return "nli"
        return None

    @staticmethod
    def _pair_key(p: Passage) -> str:
        return content_hash([p.title, p.text], 24)

    def _entailment(self, pairs: list[tuple[Passage, Passage]], rt: Runtime) -> dict[tuple[str, str], bool]:
        """Bidirectional entailment of every (original, perturbed) pair (only when ``nli``)."""
        if not self.nli or not pairs:
            return {}
        unique = {(self._pair_key(o), self._pair_key(n)): (o, n) for o, n in pairs}
        llm = rt.llm_for(self.nli_generator)
        params = replace(llm.generator.default_params(), max_new_tokens=self.nli_max_new_tokens)
        requests = []
        for o, n in unique.values():
            a, b = doc_text(o), doc_text(n)
            requests.append(Request.user(render("sure_nli.j2", premise=a, hypothesis=b), params))
            requests.append(Request.user(render("sure_nli.j2", premise=b, hypothesis=a), params))
        gens = llm.generate(requests, step=f"{self.name}:nli")
        out = {}
        for j, key in enumerate(unique):
            labels = [nli_label(gens[2 * j].text), nli_label(gens[2 * j + 1].text)]
            rt.count(f"{self.name}:nli_unparsed", sum(lab is None for lab in labels))
            out[key] = labels == ["entailment", "entailment"]
            rt.count(f"{self.name}:nli_equivalent" if out[key] else f"{self.name}:nli_not_equivalent")
        return out


def answer_preserved(original: Passage, perturbed: Passage, example: Example) -> bool:
    """SURE §3.4 "Preserve Ground Truths": golden documents keep a gold answer string, noise
    documents do not acquire one (normalised substring match over title + text)."""
    return has_answer(doc_text(original), example.answers) == has_answer(doc_text(perturbed), example.answers)


_NLI_LABEL = re.compile(r"entailment|contradiction|neutral", re.IGNORECASE)


def nli_label(text: str) -> str | None:
    """The first of ``entailment``/``contradiction``/``neutral`` in an NLI output (``None``: none)."""
    m = _NLI_LABEL.search(text)
    return m.group(0).lower() if m else None


# ----------------------------------------------------------------------------- rule-based


FORMATS = ("json", "html", "yaml", "markdown")


@component("perturbation/doc", "format")
class FormatPerturbation(SurePerturbation):
    """SURE format perturbation (Fig. 9): the document in a JSON, HTML, YAML or Markdown template.

    Title and text fill the template verbatim; for JSON they are JSON-string escaped (quotes,
    backslashes, control characters) so the result is valid JSON.

    Args:
        kind: ``json``, ``html``, ``yaml`` or ``markdown``.
        **kwargs: See :class:`SurePerturbation` (``target``, ``answer_check``, ``nli``...).
    """

    family = "format"

    def __init__(
        self,
        kind: str = "json",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if kind not in FORMATS:
            raise ValueError(f"format perturbation: kind must be one of {FORMATS}, got {kind!r}")
        self.kind = self.variant = kind

    def format(self, p: Passage) -> Passage:
        """The formatted passage (title inside the text, ``title`` empty)."""
        title, text = p.title, p.text
        if self.kind == "json":
            title, text = json.dumps(title)[1:-1], json.dumps(text)[1:-1]
        return Passage(p.id, render(f"sure_format_{self.kind}.j2", title=title, document=text), "")

    def perturb(self, units: Sequence[DocUnit], rt: Runtime) -> list[Passage | None]:
        return [self.format(u.passage) for u in units]


METADATA = ("timestamp_pre", "timestamp_post", "wiki", "twitter")


@component("perturbation/doc", "metadata")
class MetadataPerturbation(SurePerturbation):
    """SURE metadata perturbation (Fig. 9): an HTML page with a timestamp or data-source meta tag.

    * ``timestamp_pre`` / ``timestamp_post``: a date drawn uniformly from the ``span_days``
      days before / after ``cutoff`` (the model's knowledge cutoff; the cutoff day itself is
      never drawn), written ``YYYY-MM-DD``.
    * ``wiki``: ``https://en.wikipedia.org/wiki/<Title_with_underscores>`` (percent-free; the
      title as is).
    * ``twitter``: ``https://twitter.com/<handle>/status/<19 digits>``, the handle made from the
      title's letters and digits (at most 15, Twitter's limit; ``user`` if none).

    Dates and status ids are drawn from an RNG seeded by ``(seed, example id, passage id)``.

    Args:
        kind: ``timestamp_pre``, ``timestamp_post``, ``wiki`` or ``twitter``.
        cutoff: Knowledge cutoff date (ISO ``YYYY-MM-DD``).
        span_days: Width of the window before/after the cutoff that dates are drawn from.
        **kwargs: See :class:`SurePerturbation` (``target``, ``answer_check``, ``nli``...).
    """

    family = "metadata"
    per_example = True

    def __init__(
        self,
        kind: str = "timestamp_pre",
        cutoff: str = "2023-12-31",
        span_days: int = 365,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if kind not in METADATA:
            raise ValueError(f"metadata perturbation: kind must be one of {METADATA}, got {kind!r}")
        try:
            self._cutoff = dt.date.fromisoformat(cutoff)
        except ValueError as e:
            raise ValueError(f"metadata perturbation: cutoff must be YYYY-MM-DD, got {cutoff!r}") from e
        if span_days < 1:
            raise ValueError(f"metadata perturbation: span_days must be >= 1, got {span_days}")
        self.kind = self.variant = kind
        self.cutoff = cutoff
        self.span_days = span_days

    def timestamp(self, seed: int, example_id: str, passage_id: str) -> str:
        """The pseudo creation date of a document (see the class docstring)."""
        days = int(
            rng_for(seed, example_id, passage_id, "metadata:timestamp").integers(1, self.span_days + 1)
        )
        sign = -1 if self.kind == "timestamp_pre" else 1
        return (self._cutoff + dt.timedelta(days=sign * days)).isoformat()

    def datasource(self, seed: int, example_id: str, p: Passage) -> str:
        """The pseudo link of a document (see the class docstring)."""
        if self.kind == "wiki":
            return "https://en.wikipedia.org/wiki/" + "_".join(p.title.split())
        handle = "".join(ch for ch in p.title if ch.isascii() and ch.isalnum())[:15] or "user"
        status = int(rng_for(seed, example_id, p.id, "metadata:twitter").integers(10**18, 9 * 10**18))
        return f"https://twitter.com/{handle}/status/{status}"

    def perturb(self, units: Sequence[DocUnit], rt: Runtime) -> list[Passage | None]:
        out: list[Passage | None] = []
        for u in units:
            p = u.passage
            if self.kind.startswith("timestamp"):
                text = render(
                    "sure_metadata_timestamp.j2",
                    timestamp=self.timestamp(rt.seed, u.example_id, p.id),
                    title=p.title,
                    document=p.text,
                )
            else:
                text = render(
                    "sure_metadata_datasource.j2",
                    datasource=self.datasource(rt.seed, u.example_id, p),
                    title=p.title,
                    document=p.text,
                )
            out.append(Passage(p.id, text, ""))
        return out


LOGIC = ("reverse", "random", "llm")

#: The ``{Example}`` of the Fig. 8 LLM-ranked prompt (the paper does not print its example).
LOGIC_EXAMPLE = (
    'Sentences List: ["He moved to Paris in 1920.", "Jean Dupont was born in Lyon in 1901.", '
    '"He died there in 1980."] Output: [1, 0, 2]'
)


@component("perturbation/doc", "logic")
class LogicPerturbation(SurePerturbation):
    """SURE logic perturbation (§3.2, Fig. 8): the document's sentences in another order.

    Sentences come from spaCy's ``en_core_web_sm`` parser (:mod:`rr.perturbations.sentences`)
    and are joined with single spaces.

    * ``reverse``: last sentence first.
    * ``random``: a uniformly drawn permutation other than the original order, seeded by
      ``(seed, example id, passage id)``.
    * ``llm``: the order an LLM returns for the Fig. 8 prompt (sentences as a JSON list). The
      reply must hold a list of indices: the first ``[...]`` (else the whole reply) is read as
      integers; out-of-range and repeated indices are dropped, missing ones appended in
      original order (counted ``<tag>:llm_order_repaired``); a reply with no valid index is
      rejected (``<tag>:llm_order_rejected``) and its inputs dropped.

    A one-sentence document cannot be reordered: inputs where nothing changed are dropped.

    Args:
        kind: ``reverse``, ``random`` or ``llm``.
        generator: Generator config of the ranking LLM (``None``: the model under test).
        example: The prompt's ``{Example}``.
        max_new_tokens: Tokens the ranking LLM may generate.
        **kwargs: See :class:`SurePerturbation` (``target``, ``answer_check``, ``nli``...).
    """

    family = "logic"

    def __init__(
        self,
        kind: str = "reverse",
        generator: Any = None,
        example: str = LOGIC_EXAMPLE,
        max_new_tokens: int = 128,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if kind not in LOGIC:
            raise ValueError(f"logic perturbation: kind must be one of {LOGIC}, got {kind!r}")
        self.kind = self.variant = kind
        self.per_example = kind == "random"  # type: ignore[misc]
        self.generator = generator
        self.example = example
        self.max_new_tokens = max_new_tokens

    def perturb(self, units: Sequence[DocUnit], rt: Runtime) -> list[Passage | None]:
        sentences = split_sentences([u.passage.text for u in units])
        if self.kind == "reverse":
            orders: list[list[int] | None] = [list(range(len(s)))[::-1] for s in sentences]
        elif self.kind == "random":
            orders = [
                shuffled_order(len(s), rt.seed, u.example_id, u.passage.id)
                for u, s in zip(units, sentences, strict=True)
            ]
        else:
            orders = self._llm_orders(sentences, rt)
        out: list[Passage | None] = []
        for u, s, order in zip(units, sentences, orders, strict=True):
            if order is None:
                out.append(None)
            elif len(s) <= 1:
                out.append(u.passage)  # nothing to reorder (dropped as unchanged)
            else:
                out.append(Passage(u.passage.id, " ".join(s[i] for i in order), u.passage.title))
        return out

    def prompt(self, sentences: list[str]) -> str:
        """The Fig. 8 LLM-ranked prompt for one document's sentences."""
        return render(
            "sure_logic_llm_rank.j2",
            example=self.example,
            sentences=json.dumps(sentences, ensure_ascii=False),
            n=len(sentences),
        )

    def _llm_orders(self, sentences: list[list[str]], rt: Runtime) -> list[list[int] | None]:
        llm = rt.llm_for(self.generator)
        params = replace(llm.generator.default_params(), max_new_tokens=self.max_new_tokens)
        ask = [i for i, s in enumerate(sentences) if len(s) > 1]
        gens = llm.generate([Request.user(self.prompt(sentences[i]), params) for i in ask], step=self.name)
        orders: list[list[int] | None] = [list(range(len(s))) for s in sentences]
        for i, g in zip(ask, gens, strict=True):
            order, status = parse_order(g.text, len(sentences[i]))
            if status != "ok":
                rt.count(f"{self.name}:llm_order_{status}")
            orders[i] = order
        return orders


def shuffled_order(n: int, seed: int, example_id: str, passage_id: str) -> list[int]:
    """A uniformly random permutation of ``0..n-1`` other than the identity (when ``n >= 2``),
    seeded by ``(seed, example_id, passage_id)`` (rejection sampling on one RNG stream)."""
    rng = rng_for(seed, example_id, passage_id, "logic:random")
    while True:
        order = rng.permutation(n).tolist()
        if n < 2 or order != list(range(n)):
            return order


def parse_order(text: str, n: int) -> tuple[list[int] | None, str]:
    """Validate an LLM's index list for ``n`` sentences.

    Returns:
        ``(order, status)``: ``status`` is ``ok`` (a permutation of ``0..n-1``), ``repaired``
        (out-of-range and repeated indices dropped, missing ones appended in original order) or
        ``rejected`` (no valid index; ``order`` is ``None``).
    """
    m = re.search(r"\[([^\[\]]*)\]", text)
    numbers = [int(x) for x in re.findall(r"-?\d+", m.group(1) if m else text)]
    seen: list[int] = []
    for x in numbers:
        if 0 <= x < n and x not in seen:
            seen.append(x)
    if not seen:
        return None, "rejected"
    if len(seen) == n and len(numbers) == n:
        return seen, "ok"
    return seen + [i for i in range(n) if i not in seen], "repaired"


# ----------------------------------------------------------------------------- model-based


class RewritePerturbation(SurePerturbation):
    """An LLM rewrites each document with a Fig. 8 prompt (style and source perturbations).

    The rewrite replaces the document's text (the title is kept). Outputs are stripped; a first
    line ending in ``:`` followed by more text (a preamble such as "Here is the simplified
    passage:") is removed and counted (``<tag>:preamble_stripped``). An empty rewrite, or one
    cut off at ``max_new_tokens``, is rejected (``<tag>:rewrite_empty`` /
    ``<tag>:rewrite_truncated``) and its inputs dropped.
    """

    templates: ClassVar[dict[str, str]] = {}

    def __init__(
        self,
        kind: str,
        generator: Any = None,
        max_new_tokens: int = 512,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if kind not in self.templates:
            raise ValueError(
                f"{self.family} perturbation: kind must be one of {tuple(self.templates)}, got {kind!r}"
            )
        self.kind = self.variant = kind
        self.generator = generator
        self.max_new_tokens = max_new_tokens

    def prompt(self, p: Passage) -> str:
        """The Fig. 8 prompt for one document."""
        return render(self.templates[self.kind], document=p.text)

    def perturb(self, units: Sequence[DocUnit], rt: Runtime) -> list[Passage | None]:
        llm = rt.llm_for(self.generator)
        params = replace(llm.generator.default_params(), max_new_tokens=self.max_new_tokens)
        gens = llm.generate([Request.user(self.prompt(u.passage), params) for u in units], step=self.name)
        out: list[Passage | None] = []
        for u, g in zip(units, gens, strict=True):
            text, stripped = clean_rewrite(g.text)
            if stripped:
                rt.count(f"{self.name}:preamble_stripped")
            if not text:
                rt.count(f"{self.name}:rewrite_empty")
                out.append(None)
            elif g.completion_tokens >= self.max_new_tokens:
                rt.count(f"{self.name}:rewrite_truncated")
                out.append(None)
            else:
                out.append(Passage(u.passage.id, text, u.passage.title))
        return out


def clean_rewrite(text: str) -> tuple[str, bool]:
    """Strip a rewrite; drop a first line ending in ``:`` when more text follows.

    Returns:
        ``(text, preamble_removed)``.
    """
    text = text.strip()
    first, sep, rest = text.partition("\n")
    if sep and first.rstrip().endswith(":") and rest.strip():
        return rest.strip(), True
    return text, False


@component("perturbation/doc", "style")
class StylePerturbation(RewritePerturbation):
    """SURE style perturbation (Fig. 8): ``simple`` or ``complex`` rewrite by an LLM.

    Args:
        kind: ``simple`` or ``complex``.
        generator: Generator config of the rewriting LLM (``None``: the model under test; the
            paper uses Llama-3.1-70B-Instruct).
        max_new_tokens: Tokens the rewriting LLM may generate.
        **kwargs: See :class:`SurePerturbation` (``target``, ``answer_check``, ``nli``...).
    """

    family = "style"
    templates: ClassVar[dict[str, str]] = {
        "simple": "sure_style_simple.j2",
        "complex": "sure_style_complex.j2",
    }

    def __init__(self, kind: str = "simple", **kwargs: Any) -> None:
        super().__init__(kind=kind, **kwargs)


@component("perturbation/doc", "source")
class SourcePerturbation(RewritePerturbation):
    """SURE source perturbation (Fig. 8 paraphrase prompt).

    ``kind=llm``: paraphrased by a chosen (powerful) LLM, ``generator``; ``kind=self``: by the
    model under test (``generator`` must then be ``None``).

    Args:
        kind: ``llm`` or ``self``.
        generator: Generator config of the paraphrasing LLM (``None``: the model under test).
        max_new_tokens: Tokens the paraphrasing LLM may generate.
        **kwargs: See :class:`SurePerturbation` (``target``, ``answer_check``, ``nli``...).
    """

    family = "source"
    templates: ClassVar[dict[str, str]] = {
        "llm": "sure_source_paraphrase.j2",
        "self": "sure_source_paraphrase.j2",
    }

    def __init__(self, kind: str = "self", **kwargs: Any) -> None:
        super().__init__(kind=kind, **kwargs)
        if kind == "self" and self.generator is not None:
            raise ValueError(
                "source perturbation kind=self paraphrases with the model under test: set generator: null"
            )
