"""Component registry: one class per config option, with its config schema derived from it.

Decorate a component class with ``@component("retriever", "bm25")``. :func:`rr.config.register_configs`
turns each registered class's ``__init__`` signature into a dataclass schema stored in Hydra's
ConfigStore as ``<group>/<name>_schema``; the option's YAML lists that schema first in its
defaults, so a misspelled or unknown key fails when the config is composed, not after a GPU hour.
Adding a component is therefore one class (decorated) plus one YAML.
"""

from __future__ import annotations

import dataclasses
import inspect
import types
import typing
from typing import Any, Optional

from omegaconf import MISSING

#: group -> option name -> class
COMPONENTS: dict[str, dict[str, type]] = {}

#: Modules whose import registers every built-in component (kept light: heavy libraries are
#: imported inside the components' methods).
COMPONENT_MODULES = (
    "rr.data.mini",
    "rr.data.jsonl",
    "rr.data.hf",
    "rr.data.corpus",
    "rr.data.rgb",
    "rr.data.wiki_dump",
    "rr.retrieval.bm25",
    "rr.retrieval.dense",
    "rr.retrieval.pyserini_bm25",
    "rr.retrieval.pyserini_faiss",
    "rr.retrieval.oracle",
    "rr.generation.hf",
    "rr.generation.vllm",
    "rr.generation.openai",
    "rr.generation.llamacpp",
    "rr.strategies.simple",
    "rr.strategies.rgb",
    "rr.judges.refusal",
    "rr.strategies.ownknow",
    "rr.strategies.s2a",
    "rr.judges.match",
    "rr.judges.llm",
    "rr.perturbations.none",
    "rr.perturbations.composition",
    "rr.perturbations.rare",
    "rr.perturbations.typo",
    "rr.perturbations.query_file",
    "rr.perturbations.llm_rewrite",
    "rr.perturbations.sure",
    "rr.tracking",
)


def component(group: str, name: str):
    """Register ``cls`` as option ``name`` of config group ``group`` (e.g. ``"retriever"``)."""

    def wrap(cls: type) -> type:
        COMPONENTS.setdefault(group, {})[name] = cls
        cls.__rr_group__ = group  # type: ignore[attr-defined]
        cls.__rr_option__ = name  # type: ignore[attr-defined]
        return cls

    return wrap


_SIMPLE = (int, float, str, bool)


def _schema_type(tp: Any) -> Any:
    """Map a Python annotation to one OmegaConf can validate; ``Any`` where it cannot."""
    if tp in _SIMPLE:
        return tp
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(rest) < len(args):
            inner = _schema_type(rest[0])
            return Optional[inner] if inner is not Any else Any  # noqa: UP045 (OmegaConf needs typing.Optional)
        return Any
    if (
        origin in (list, tuple)
        and len(args) >= 1
        and args[0] in _SIMPLE
        and (origin is list or args[-1] is Ellipsis)
    ):
        return list[args[0]]  # type: ignore[valid-type]
    return Any


def _copier(value: Any) -> Any:
    """A default factory returning a fresh copy of a mutable default."""
    return lambda: list(value) if isinstance(value, tuple) else value.copy()


def schema_for(cls: type) -> type:
    """A dataclass with ``_target_`` plus one field per ``__init__`` parameter of ``cls``."""
    init = cls.__dict__.get("__init__") or cls.__init__  # type: ignore[misc]
    sig = inspect.signature(init)
    hints = typing.get_type_hints(init)
    fields: list[tuple[str, Any, Any]] = [
        ("_target_", str, dataclasses.field(default=f"{cls.__module__}.{cls.__qualname__}"))
    ]
    for pname, p in list(sig.parameters.items())[1:]:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        tp = _schema_type(hints.get(pname, Any))
        if p.default is inspect.Parameter.empty:
            default: Any = dataclasses.field(default=MISSING)
        elif isinstance(p.default, (list, dict, tuple)):
            default = dataclasses.field(default_factory=_copier(p.default))
        else:
            default = dataclasses.field(default=p.default)
        fields.append((pname, tp, default))
    return dataclasses.make_dataclass(f"{cls.__name__}Schema", fields)
