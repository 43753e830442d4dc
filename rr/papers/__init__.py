"""The seed papers' published numbers and headline claims, shipped as data (``rr/papers/``).

``values/<paper>.csv``: one row per number a paper prints, as printed, with where it is printed and
the setting it was measured in:

=============  ===============================================================================
column         meaning
=============  ===============================================================================
paper          the paper's key (``rgb2024``, ``cao2025``, ...; the ``conf/experiment`` name)
location       table / figure / section, e.g. ``Table 1``
model          the model as the paper names it
model_ids      the model's hub id or API name (what a run asks for); the ids a run's recorded model
               may have and still be it are :func:`model_identities` (``aliases.yaml``: the one
               alias list, shared with the claims); ``*``: any model (a value that does not depend
               on the generator, a retriever's recall)
dataset        the dataset as the paper names it
rr_datasets    the ``dataset`` value(s) of rr's score table that are this dataset, as the paper's
               experiment config writes them (``rgb_zh``: ``dataset=rgb_zh``; ``nq``:
               ``dataset.name=nq``); ``a+b+c``: the paper pools these datasets, and so must the run
metric         the registered metric (:data:`rr.metrics.SPECS`: what rr computes for it)
setting        ``;``-separated ``key=value`` conditions on the job's recorded score rows, in the
               names the paper's experiment config writes: a score-table column
               (``strategy=rgb``, ``retriever=bm25+bge_large``, ``n_docs_given=5``),
               ``noise_ratio=0.2`` (the ``doc_perturbation`` tag's ratio), ``counterfactual=true``,
               ``doc_perturbation=counterfactual`` (the tag itself: RGB's Table 7, no noise or
               correct documents, ``fact_evalue.py``'s defaults), ``instruction=zh`` (the
               language of ``strategy=rgb``'s instruction);
               the metric's parameters (``perturbation``, ``subset``, ``module``, ``query_kind``:
               a ``query_perturbation`` kind such as ``typo@0.1``); ``a+b`` after ``=``: the run's
               values of that column must be exactly these
printed        the value exactly as printed (``96.33``, ``higher than 80%``)
value          the printed value as a fraction (``0.9633``; a percentage divided by 100)
relation       ``=`` the value; ``~`` approximately the value (as printed: within
               :data:`APPROX_TOLERANCE` of it); ``>`` / ``<``: the paper states only a bound
note           what the paper says about it, or where rr's column differs in name
run            the overrides, after ``experiment=<paper>``, its dataset (``dataset=<rr_datasets>``
               unless ``run`` sets it: ``dataset.name=nq``) and model, of the run(s) that reach the
               value (Hydra syntax; ``a,b``: a sweep of both, e.g. SURE's unperturbed and perturbed
               jobs): :func:`run_overrides`
out_of_reach   empty, or why no run of rr reaches the value (e.g. no loader for its dataset);
               the report prints it
=============  ===============================================================================

``aliases.yaml``: the one list of the other ids a paper's model may be recorded as (a hub repository's
older names; an API model's dated snapshots that the paper's dates support, each with its reason; never
the API alias itself): :func:`model_identities`, :func:`canonical_model`.

``claims/<paper>.yaml``: the paper's headline claims, each quoted with its location and written as a
comparison rr can test on a run, with the scope the paper states it in (see :class:`Claim`).

``excerpts/<paper>.txt``: the passages of the paper the claims quote, as printed (whitespace and the line
breaks' hyphenation normalised; ``[…]`` where the text extraction put a table or figure inside a
sentence), one passage per paragraph: every quote occurs in one of them (:func:`quote_in`), and each
passage in the paper's text (``tests/test_paper_claims.py``).

This module only reads the data; :mod:`rr.reporting.paper_beside` matches it to a run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parent
VALUES_DIR = ROOT / "values"
ALIASES_FILE = ROOT / "aliases.yaml"
CLAIMS_DIR = ROOT / "claims"
#: The columns of every ``values/*.csv`` file, in order.
VALUE_COLUMNS = (
    "paper",
    "location",
    "model",
    "model_ids",
    "dataset",
    "rr_datasets",
    "metric",
    "setting",
    "printed",
    "value",
    "relation",
    "note",
    "run",
    "out_of_reach",
)
RELATIONS = ("=", "~", ">", "<")
#: What ``~`` ("approximately 14%") allows either side of the printed value: two percentage points (the papers
#: print such values to the whole percent and call them approximate, or read them off a figure).
APPROX_TOLERANCE = 0.02
EXCERPTS_DIR = ROOT / "excerpts"
#: Marks an omission in a quote or excerpt (the text extraction's tables and figures inside a sentence).
ELLIPSIS = "[…]"


def parse_setting(text: str) -> dict[str, str]:
    """``"strategy=rgb;noise_ratio=0.2"`` -> ``{"strategy": "rgb", "noise_ratio": "0.2"}`` ("" -> {})."""
    out: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in str(text).split(";"))):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"setting {text!r}: {part!r} is not key=value")
        out[key.strip()] = value.strip()
    return out


@cache
def _values() -> pd.DataFrame:
    frames = []
    for path in sorted(VALUES_DIR.glob("*.csv")):
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
        if tuple(df.columns) != VALUE_COLUMNS:
            raise ValueError(f"{path}: columns {list(df.columns)} are not {list(VALUE_COLUMNS)}")
        frames.append(df)
    out = pd.concat(frames, ignore_index=True)
    bad = sorted(set(out["relation"]) - set(RELATIONS))
    if bad:
        raise ValueError(f"rr/papers/values: unknown relation(s) {bad}")
    out["value"] = out["value"].astype(float)
    return out


def paper_values() -> pd.DataFrame:
    """Every shipped paper value (a copy; columns :data:`VALUE_COLUMNS`, ``value`` a float)."""
    return _values().copy()


@cache
def model_aliases() -> dict[str, dict[str, str]]:
    """``aliases.yaml``: model id (a hub id or API name, as the values and claims write it) -> {another id
    it may be recorded as: why}."""
    doc = yaml.safe_load(ALIASES_FILE.read_text()) or {}
    return {str(m): {str(a): str(why) for a, why in (ids or {}).items()} for m, ids in doc.items()}


def is_api_name(model_id: str) -> bool:
    """Whether ``model_id`` is an API model's name (``gpt-4o``: no ``/``), not a hub id."""
    return "/" not in model_id and model_id != "*"


@cache
def model_identities(model_id: str) -> frozenset[str]:
    """The ids a run's recorded model may have and be ``model_id``: a hub id and its listed renames; an
    API alias's listed snapshots only (the alias itself serves whatever its provider points it at); any
    other id (a dated API id, ``rr-simulated-reader``) is itself."""
    listed = frozenset(model_aliases().get(model_id, {}))
    return listed if is_api_name(model_id) and listed else listed | {model_id}


@cache
def canonical_model(recorded: str) -> str:
    """The model id the values and claims write for a run's recorded model (``gpt-4.1-2025-04-14`` ->
    ``gpt-4.1``; a renamed hub id -> its current one); an id no model lists is itself, and a bare API
    alias (no snapshot reported) is marked so that it is no paper's model."""
    for model_id in model_aliases():
        if recorded in model_identities(model_id):
            return model_id
    if recorded in model_aliases() and is_api_name(recorded):
        return f"{recorded} (an alias: no snapshot reported)"
    return recorded


def model_overrides(model_id: str) -> list[str]:
    """The overrides that run ``model_id`` (a value's first ``model_ids``): an API name (no ``/``,
    ``gpt-4o``) through ``generator=openai``, a hub id through the experiment's own generator."""
    if model_id == "*":
        return []
    return (["generator=openai"] if "/" not in model_id else []) + [f"generator.model={model_id}"]


def dataset_overrides(dataset: str, run: str) -> list[str]:
    """The override that gives a run the score-table dataset name ``dataset``: ``dataset=<it>`` (a
    ``conf/dataset`` option: ``rgb_zh``, ``nq_open``), unless the value's ``run`` sets the dataset itself
    (the query-level study's BEIR sets: ``dataset.name=nq`` through the experiment's ``dataset=jsonl``)."""
    return [] if any(o.startswith(("dataset=", "dataset.")) for o in run.split()) else [f"dataset={dataset}"]


def run_overrides(value: Any) -> list[list[str]]:
    """The ``rr -m`` command lines (one per dataset the value pools) whose jobs together reach a
    paper value (a row of :func:`paper_values`): ``experiment=<paper>``, the dataset, the model
    (:func:`model_overrides` of its first id) and its ``run`` column (a sweep where it has ``a,b``)."""
    model = str(value.model_ids).split(";")[0]
    return [
        [
            f"experiment={value.paper}",
            *dataset_overrides(d, str(value.run)),
            *model_overrides(model),
            *str(value.run).split(),
        ]
        for d in str(value.rr_datasets).split("+")
    ]


@dataclass(frozen=True)
class Claim:
    """A paper's headline claim as a testable comparison.

    Attributes:
        id: Unique key, ``<paper>.<name>``.
        paper: The paper's key.
        location: Where the text says it.
        quote: The text, verbatim.
        kind: ``direction`` (``a`` above ``b``: holds when a paired test finds a > b,
            contradicted when it finds a < b), ``no_gain`` (``a`` not above ``b``: contradicted
            when a paired test finds a > b, holds when its interval of a - b lies at or below 0),
            ``bound`` (the metric is ``relation`` ``threshold``: holds when the interval lies on
            that side, contradicted when it lies on the other).
        metric: What rr computes (a name in :data:`rr.metrics.SPECS`, computed by :func:`rr.reporting.paper_match.estimator`).
        scope: Setting every compared row has (``key=value`` as in the values' ``setting``).
        a: For ``direction`` / ``no_gain``: the setting of side a (added to ``scope``).
        b: Side b's.
        metric_a: Side a's metric where it is not ``metric`` (e.g. closed-book accuracy).
        metric_b: Side b's.
        relation: For ``bound``: ``>`` or ``<`` (strict: the paper says "higher than"), ``<=`` or ``>=`` (the
            paper's own extreme: "the highest ... only 45%", which a faithful replication reaches; decided
            with ``tolerance``).
        threshold: For ``bound``.
        reading: How rr reads the quote into this comparison (where it is an interpretation).
        scope_text: The paper's scope of the claim in words (which models, setting, what is pooled).
        scope_models: Model ids the paper states it of (empty: LLMs in general).
        scope_datasets: rr dataset names it is stated on (empty: any).
        scope_pooled: The paper pools ``scope_datasets``: rr judges the claim on them together (a run lacking
            one of them is outside the paper's scope).
        scope_setting: Setting the paper measured it in (beyond ``scope``, which rr needs to test at all):
            a run without it is outside the paper's scope, not a counterexample.
        scope_condition: A condition on the model's own measurement (``rgb_closed_book_accuracy>0.7``:
            RGB Table 7 keeps models with closed-book accuracy above 70%).
        tolerance: For ``approx``: how far from ``threshold`` still counts as the printed value; for a ``<=`` /
            ``>=`` bound: how far past ``threshold`` still counts as reaching it.
        evaluable: Whether rr's score tables can test it; ``why_not`` says why not.
        why_not: Where ``evaluable`` is false: the reason, printed by the report.
    """

    id: str
    paper: str
    location: str
    quote: str
    kind: str
    metric: str
    scope: dict[str, str] = field(default_factory=dict)
    a: dict[str, str] = field(default_factory=dict)
    b: dict[str, str] = field(default_factory=dict)
    metric_a: str = ""
    metric_b: str = ""
    relation: str = ""
    threshold: float = float("nan")
    reading: str = ""
    scope_text: str = ""
    scope_models: tuple[str, ...] = ()
    scope_datasets: tuple[str, ...] = ()
    scope_pooled: bool = False
    scope_setting: dict[str, str] = field(default_factory=dict)
    scope_condition: str = ""
    tolerance: float = APPROX_TOLERANCE
    evaluable: bool = True
    why_not: str = ""

    @classmethod
    def from_dict(cls, paper: str, d: dict[str, Any]) -> Claim:
        kind = d["kind"]
        if kind not in ("direction", "no_gain", "bound", "approx"):
            raise ValueError(f"claim {d.get('id')}: unknown kind {kind!r}")
        if kind == "approx" and "threshold" not in d:
            raise ValueError(f"claim {d.get('id')}: an approx claim needs the printed value as threshold")
        if d.get("evaluable", True) is False and not d.get("why_not"):
            raise ValueError(f"claim {d.get('id')}: a claim rr cannot evaluate says why (why_not)")
        if kind == "bound" and d.get("relation") not in (">", "<", ">=", "<="):
            raise ValueError(f"claim {d.get('id')}: a bound needs relation '>', '<', '>=' or '<='")
        if kind in ("direction", "no_gain") and not (d.get("a") and d.get("b")):
            raise ValueError(f"claim {d.get('id')}: a {kind} claim needs settings a and b")
        return cls(
            id=f"{paper}.{d['id']}",
            paper=paper,
            location=str(d["location"]),
            quote=str(d["quote"]).strip(),
            kind=kind,
            metric=str(d["metric"]),
            scope=parse_setting(d.get("scope", "")),
            a=parse_setting(d.get("a", "")),
            b=parse_setting(d.get("b", "")),
            metric_a=str(d.get("metric_a", "")),
            metric_b=str(d.get("metric_b", "")),
            relation=str(d.get("relation", "")),
            threshold=float(d.get("threshold", float("nan"))),
            reading=str(d.get("reading", "")).strip(),
            **_scope_fields(d.get("paper_scope") or {}),
            tolerance=float(d.get("tolerance", APPROX_TOLERANCE)),
            evaluable=bool(d.get("evaluable", True)),
            why_not=str(d.get("why_not", "")).strip(),
        )


def _scope_fields(scope: dict[str, Any]) -> dict[str, Any]:
    """A claim's ``paper_scope`` mapping (``text``, ``models``, ``datasets``, ``pooled``, ``setting``,
    ``condition``) as :class:`Claim`'s ``scope_*`` fields."""
    unknown = set(scope) - {"text", "models", "datasets", "pooled", "setting", "condition"}
    if unknown:
        raise ValueError(f"paper_scope: unknown key(s) {sorted(unknown)}")
    return {
        "scope_text": " ".join(str(scope.get("text", "")).split()),
        "scope_models": tuple(str(m) for m in scope.get("models") or ()),
        "scope_datasets": tuple(str(m) for m in scope.get("datasets") or ()),
        "scope_pooled": bool(scope.get("pooled", False)),
        "scope_setting": parse_setting(scope.get("setting", "")),
        "scope_condition": str(scope.get("condition", "")),
    }


def normalise_text(text: str) -> str:
    r"""``text`` with the line breaks' hyphenation joined and whitespace collapsed (what a quote and the
    paper's extracted text are compared on): ``"re-\ntrieval"`` -> ``"retrieval"``."""
    joined = re.sub(r"(?<=[a-z])-\s*\n\s*(?=[a-z])", "", text)  # re-\ntrieval: one word broken
    return " ".join(re.sub(r"-\s*\n\s*", "-", joined).split())  # GPT-\n4o: a hyphen at a line break


def quote_in(quote: str, text: str, spaces: bool = True) -> bool:
    """Whether ``quote`` occurs verbatim in ``text`` (both :func:`normalise_text`-ed); an :data:`ELLIPSIS` in
    the quote marks omitted text: its parts must occur in order. ``spaces=False`` compares without any
    whitespace or hyphen (an excerpt against the paper's extracted text, which drops spaces around bold
    words: ``"thatplacing"``, adds some: ``"LLMs ."``, and cannot tell ``"task-\\nrelevant"`` from a word
    broken at the line end)."""

    def norm(t: str) -> str:
        return normalise_text(t) if spaces else re.sub(r"[\s-]", "", normalise_text(t))

    hay = norm(text)
    at = 0
    for part in (norm(p) for p in quote.split(ELLIPSIS)):
        if not part:
            continue
        i = hay.find(part, at)
        if i < 0:
            return False
        at = i + len(part)
    return True


@cache
def paper_excerpts(paper: str) -> tuple[str, ...]:
    """The shipped excerpts of ``paper``'s text (``excerpts/<paper>.txt``, one per paragraph)."""
    path = EXCERPTS_DIR / f"{paper}.txt"
    if not path.exists():
        return ()
    return tuple(p.strip() for p in re.split(r"\n\s*\n", path.read_text()) if p.strip())


@cache
def paper_claims() -> tuple[Claim, ...]:
    """Every shipped claim, paper by paper (``claims/<paper>.yaml``, a list under ``claims``)."""
    out: list[Claim] = []
    for path in sorted(CLAIMS_DIR.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        out += [Claim.from_dict(path.stem, d) for d in doc["claims"]]
    ids = [c.id for c in out]
    if len(set(ids)) != len(ids):
        raise ValueError(f"rr/papers/claims: duplicate claim ids in {ids}")
    return tuple(out)
