"""A job's setting as the paper values name it: the keys a paper states about a whole job (its corpus,
retriever parameters, rewriter / NLI / judge models, filters, instance set, decoding), read off the
job's composed config.

The values' ``setting`` (``rr/papers/values/*.csv``) holds two kinds of keys: conditions on the score
rows (``strategy``, ``k``, ``noise_ratio``, ...; :mod:`rr.reporting.paper_match`) and the job keys
here (:data:`JOB_KEYS`), which no score row records. :func:`job_setting` gives a job's value of each
job key from its config (``config.yaml`` of its folder, or the config ``rr -m`` composes:
:mod:`rr.reporting.paper_reach`), ``None`` where the key does not apply to the job (a rewriter for a
job without a model-based perturbation). A value is matched only to jobs whose every applicable job
key is the value's, and at least one of the matched jobs must have each of its keys.

=================  =====================================================================================
key                the job's value
=================  =====================================================================================
corpus             a Wikipedia XML dump: ``<wiki>-<date>`` read off its file name
                   (``enwiki-20240601``, ``corpus=wiki_dump``); else the corpus's name (``wiki_offline``)
bm25_k1, bm25_b    the BM25 retrievers' parameters (``+``-joined where several differ)
dense_model        the dense retrievers' encoders (``facebook/contriever-msmarco``)
rewriter           a model-based perturbation's model (``meta-llama/Llama-3.1-70B-Instruct``);
                   ``model_under_test`` where it rewrites with the model under test
nli                a SURE perturbation's bidirectional-entailment filter: ``true`` / ``false``
nli_model          its NLI model (as ``rewriter``)
typo               a typo perturbation's backend (``textattack``, ``nlpaug``)
judge              the judge: an LLM judge's model, else the judge's name (``rgb``, ``match``)
llm_judge          the model of a rule-based judge's LLM checks (RGB's Rej* / ED* / CR), where on
pick               how RGB's noise-ratio documents are taken from the pools (``first``: ``evalue.py``'s
                   ``positive[:pos_num]``; ``sample``)
max_new_tokens     the model under test's limit
decoding           ``greedy`` (temperature 0), else ``temperature <t>``
instances          the dataset's ``n`` (``all``: the whole file)
=================  =====================================================================================
"""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import Any

JOB_KEYS = (
    "corpus",
    "bm25_k1",
    "bm25_b",
    "dense_model",
    "rewriter",
    "nli",
    "nli_model",
    "typo",
    "judge",
    "llm_judge",
    "pick",
    "max_new_tokens",
    "decoding",
    "instances",
)
#: A rewriting or judging model that is the model under test (its config's ``generator: null``).
UNDER_TEST = "model_under_test"
_DUMP = re.compile(r"([a-z]+wiki)-(\d{8})")


def _target(node: Any) -> str:
    return str(node.get("_target_", "")) if isinstance(node, dict) else ""


def _class(node: Any) -> str:
    return _target(node).rsplit(".", 1)[-1]


def _model(generator: Any) -> str:
    """A generator config's model (the model under test where there is none)."""
    if not isinstance(generator, dict) or not generator.get("model"):
        return UNDER_TEST
    return str(generator["model"])


def _joined(values: list[Any]) -> str | None:
    got = sorted({_text(v) for v in values if v is not None})
    return "+".join(got) if got else None


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def corpus_name(corpus: Any) -> str | None:
    """``enwiki-20240601`` for a Wikipedia dump named by its date, else the corpus's name."""
    if not isinstance(corpus, dict) or not corpus:
        return None
    if _class(corpus) == "WikiDumpCorpus":
        paths = corpus.get("path")
        first = (paths[0] if isinstance(paths, list) and paths else paths) or ""
        m = _DUMP.search(PurePath(str(first)).name)
        return f"{m[1]}-{m[2]}" if m else "wiki_dump"
    if corpus.get("name"):
        return str(corpus["name"])
    return re.sub(r"(?<!^)(?=[A-Z])", "_", _class(corpus).removesuffix("Corpus")).lower() or None


def _resolved(cfg: Any, key: str) -> Any:
    """``cfg[key]`` as plain containers, interpolations resolved where they can be."""
    from omegaconf import DictConfig, OmegaConf

    node = cfg.get(key) if isinstance(cfg, (dict, DictConfig)) else None
    if not isinstance(node, DictConfig):
        return node
    try:
        return OmegaConf.to_container(node, resolve=True, throw_on_missing=False)
    except Exception:  # noqa: BLE001 (an interpolation that needs Hydra's runtime: read it unresolved)
        return OmegaConf.to_container(node, resolve=False)


def job_setting(cfg: Any) -> dict[str, str | None]:
    """Each of :data:`JOB_KEYS` -> the job's value (``None``: the key does not apply to it).

    Args:
        cfg: The job's composed config (a ``DictConfig`` or its container).
    """
    cfg = {
        key: _resolved(cfg, key)
        for key in ("corpus", "retriever", "perturbation", "judge", "generator", "dataset")
    }
    perturbation: dict[str, Any] = cfg.get("perturbation") or {}
    retrievers = [r for r in (cfg.get("retriever") or {}).values() if isinstance(r, dict)]
    bm25 = [r for r in retrievers if _class(r) in ("BM25Retriever", "PyseriniBM25Retriever")]
    dense = [r for r in retrievers if _class(r) == "DenseRetriever"]
    perturbations: list[dict[str, Any]] = [
        p for p in (perturbation.get("doc"), perturbation.get("query")) if isinstance(p, dict) and _target(p)
    ]
    rewriting = [p for p in perturbations if "generator" in p]
    filtered = [p for p in perturbations if "nli" in p]
    typo = [p for p in perturbations if _class(p) == "TypoPerturbation"]
    noise = [p for p in perturbations if "pick" in p]
    judge: dict[str, Any] = cfg.get("judge") or {}
    llm_checks = any(judge.get(k) for k in ("llm_rejection", "llm_error_detection"))
    generator: dict[str, Any] = cfg.get("generator") or {}
    temperature = generator.get("temperature")
    dataset: dict[str, Any] = cfg.get("dataset") or {}
    return {
        "corpus": corpus_name(cfg.get("corpus")),
        "bm25_k1": _joined([r.get("k1") for r in bm25]),
        "bm25_b": _joined([r.get("b") for r in bm25]),
        "dense_model": _joined([r.get("model") for r in dense]),
        "rewriter": _joined([_model(p["generator"]) for p in rewriting]),
        "nli": _joined([bool(p["nli"]) for p in filtered]),
        "nli_model": _joined([_model(p.get("nli_generator")) for p in filtered if p["nli"]]),
        "typo": _joined([p.get("backend") for p in typo]),
        "judge": _model(judge.get("generator"))
        if _class(judge) == "LLMJudge"
        else (str(judge.get("name") or _class(judge)) or None),
        "llm_judge": _model(judge.get("generator")) if llm_checks else None,
        "pick": _joined([p["pick"] for p in noise]),
        "max_new_tokens": _text(generator["max_new_tokens"]) if "max_new_tokens" in generator else None,
        "decoding": None
        if temperature is None
        else ("greedy" if float(temperature) == 0 else f"temperature {_text(temperature)}"),
        "instances": "all" if dataset.get("n") is None else _text(dataset["n"]),
    }


def stand_in_of(experiment: str | None) -> str | None:
    """The paper whose offline stand-in ``experiment`` is (``cao2025_mini`` -> ``cao2025``), else None.

    A ``_mini`` experiment runs its paper's design on the bundled data with the small packaged model; its
    corpus, models and sizes are not the paper's, and a job on it is told so (the console, ``rr report``)."""
    name = str(experiment or "")
    return name.removesuffix("_mini") if name.endswith("_mini") else None


def stand_in_line(experiment: str | None) -> str | None:
    """The line a job of a stand-in experiment prints (None: not a stand-in)."""
    paper = stand_in_of(experiment)
    if paper is None:
        return None
    return (
        f"experiment={experiment} is the offline stand-in of experiment={paper}: the bundled data and the small "
        f"packaged model in place of the paper's corpus and models, so beside {paper}'s values it is told "
        "which settings differ (rr report), never matched"
    )
