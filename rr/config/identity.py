"""A job's identity: its semantic config (the resolved config minus what does not change results,
with what each model is beside its name) and the job id hashed from it.

Job ids are pinned (tests/test_identity_pins.py): a change here that moves an id moves every job's
output folder, so a key left out of :data:`NON_SEMANTIC_KEYS` / :data:`NON_SEMANTIC_LEAVES`, the
model identities and the ``scoring.text`` rule keep the ids jobs had before each existed.
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf

from rr.hashing import content_hash
from rr.model_identity import (
    API_TARGET,
    CONTENT_KEYS,
    HUB_TARGETS,
    api_reported_model,
    content_identities,
    model_identity,
)

#: Top-level keys that do not change results and so are left out of the job id.
NON_SEMANTIC_KEYS = (
    "hydra",
    "paths",
    "logger",
    "progress",
    "name",
    "force",
    "flush_every",
    "strict_window",
    "cpu_warn_minutes",
    "resources",
    "shards",
    "shard",
    "shard_gpus",
)
#: Keys left out of the job id wherever they occur (throughput settings, not semantics).
NON_SEMANTIC_LEAVES = (
    "batch_size",
    "n_threads",
    "n_batch",
    "device",
    "num_workers",
    "cache_dir",
    "model_cache_dir",
    "show_progress",
    "data_parallel",
    "dp_timeout_s",
    # hf / llamacpp: a shared prefix computed once; the same tokens up to float rounding, as batch_size
    "prefix_cache",
    "block_size",  # dense: exact search over blocks ranks as one in-memory index does
    "gpu_search",
    "download_timeout_s",
    # dense, approximate index: the recall check on the job's queries reports, it changes no result
    "query_recall_sample",
    "query_recall_seed",
    "recall_warn_below",
    # generator: the model's public name, a label (summary.json public_model); what the model is, is its id
    "model_name",
)


def resolved_config(cfg: DictConfig) -> dict[str, Any]:
    """The job's resolved config as its ``config.yaml`` holds it, without the ``hydra`` node."""
    container = OmegaConf.to_container(
        OmegaConf.masked_copy(cfg, [str(k) for k in cfg if k != "hydra"]), resolve=True
    )
    assert isinstance(container, dict)
    return {str(k): v for k, v in container.items()}


#: Keys left out of the job id wherever they occur with the value that renders what every job rendered
#: before the key existed, so those jobs keep their ids (a set value is in the id).
UNSET_LEAVES: dict[str, tuple[Any, ...]] = {
    # hf / vllm: extra chat-template arguments ({enable_thinking: false}); none = the template's defaults
    "chat_template_kwargs": (None, {}),
}


def semantic_config(cfg: DictConfig) -> dict[str, Any]:
    """The resolved config minus everything that does not change results (see module constants)."""

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: strip(v)
                for k, v in node.items()
                if k not in NON_SEMANTIC_LEAVES and not (k in UNSET_LEAVES and v in UNSET_LEAVES[k])
            }
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    # Resolve first (semantic keys may interpolate non-semantic ones), then drop; never touch
    # the hydra node, whose run dir interpolates the job id itself.
    container = resolved_config(cfg)
    if "experiment" in container:
        # The experiment's name is a label (its settings are in the config itself); null, as it was
        # before experiments named themselves, so that every job keeps its id.
        container["experiment"] = None
    if _scores_the_strategies_answer(container):
        container.pop("scoring", None)  # what every job scored before scoring.text existed: ids kept
    return with_model_identities(strip({k: v for k, v in container.items() if k not in NON_SEMANTIC_KEYS}))


def with_model_identities(node: Any) -> Any:
    """``node`` with ``model_identity`` beside the ``model`` of every component that has one and whose
    model is not pinned by its name alone (see :func:`rr.model_identity.model_identity`): a local
    folder's content digest, a hub id's commit, an API model's reported id (``reported:<id>``,
    after a local path's digest where the name is also one); and ``<key>_identity`` beside the
    tokenizer, query encoder or local index a component reads
    (:data:`rr.model_identity.CONTENT_KEYS`). A changed weight, tokenizer or index file, or an API
    alias that moved to another snapshot, is a new job."""
    if isinstance(node, list):
        return [with_model_identities(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: with_model_identities(v) for k, v in node.items()}
    model, target = out.get("model"), out.get("_target_")
    if isinstance(model, str) and isinstance(target, str):
        revision = out.get("revision")
        ident = model_identity(
            model, revision if isinstance(revision, str) else None, hub=target in HUB_TARGETS
        )
        if target == API_TARGET:
            reported = _api_reported(out, model)
            if reported is not None:
                ident = " ".join(p for p in (ident, f"reported:{reported}") if p)
        if ident is not None:
            out["model_identity"] = ident
    if isinstance(target, str):
        read = {k: v for k, v in out.items() if k in CONTENT_KEYS and target in CONTENT_KEYS[k].targets}
        out.update(content_identities(read))
    return out


def _api_reported(node: dict[str, Any], model: str) -> str | None:
    """:func:`rr.model_identity.api_reported_model` of an ``openai`` generator's config node (its
    schema, from the constructor, gives the node every setting)."""
    if not isinstance(node.get("base_url"), str):
        return None
    settings = ("endpoint", "api_key_env", "max_tokens_field", "extra_body")
    return api_reported_model(node["base_url"], model, **{k: node[k] for k in settings if k in node})


#: The strategy whose answer is its whole stripped response (it asks for no ``Answer:`` marker).
WHOLE_RESPONSE_STRATEGY = "rr.strategies.rgb.RGBPrompt"


def _scores_the_strategies_answer(container: dict[Any, Any]) -> bool:
    """Whether ``scoring.text`` has the judge score each strategy's own answer, the one text scored
    before the key existed: ``extracted`` (or no ``scoring``), or ``whole`` when every strategy is
    ``strategy=rgb``, whose answer is its whole stripped response. Such a job's id leaves ``scoring``
    out, so that it keeps the id it had."""
    scoring = container.get("scoring")
    text = scoring.get("text", "extracted") if isinstance(scoring, dict) else "extracted"
    if text == "extracted":
        return True
    strategies = container.get("strategy")
    return (
        text == "whole"
        and isinstance(strategies, dict)
        and bool(strategies)
        and all(
            isinstance(s, dict) and s.get("_target_") == WHOLE_RESPONSE_STRATEGY for s in strategies.values()
        )
    )


def job_id(cfg: DictConfig) -> str:
    """A job's identity: 12 hex digits of the hash of its semantic config (seed included)."""
    return content_hash(semantic_config(cfg), 12)


def job_id_resolver(*, _root_: DictConfig) -> str:
    """``${rr_job_id:}``: the job id of the config being composed (its run folder's name)."""
    return job_id(_root_)
