"""A job's top-level stage settings, read once from its composed config and checked
(:func:`job_settings`); their defaults are :class:`rr.config.schemas.RootSchema`'s."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig

from rr.config.schemas import GridSchema, PathsSchema, RootSchema, ScoringSchema
from rr.errors import ConfigError


@dataclass(frozen=True)
class JobSettings:
    """A job's top-level stage settings, typed, read once from its config by :func:`job_settings`
    (the components' settings stay config nodes: :func:`instantiate` builds them). A key the config
    lacks takes :class:`RootSchema`'s default: defaults are declared there and nowhere else.

    Attributes:
        name, seed: The job's ``name`` label and ``seed``.
        ks: The positive k values of ``grid.k``, sorted and unique.
        closed_book: Whether k = 0 cells are made (``grid.closed_book``, or 0 in ``grid.k``).
        orders: ``grid.orders``.
        cache_dir: ``paths.cache_dir``, resolved.
        scored_text: ``scoring.text`` (:data:`rr.prompts.answer.SCORED_TEXTS`).
        progress, force, flush_every, strict_window, cpu_warn_minutes: As in :class:`RootSchema`.
    """

    name: str | None
    seed: int
    ks: list[int]
    closed_book: bool
    orders: list[str]
    scored_text: str
    cache_dir: str
    progress: bool
    force: bool
    flush_every: int
    strict_window: bool
    cpu_warn_minutes: float | None


def job_settings(cfg: DictConfig) -> JobSettings:
    """The :class:`JobSettings` of a composed job config.

    Raises:
        ConfigError: ``grid.k`` holds a negative value, or ``scoring.text`` is not a known text.
    """
    from rr.prompts.answer import SCORED_TEXTS

    root, grid, paths, scoring = RootSchema(), GridSchema(), PathsSchema(), ScoringSchema()

    def get(node: Any, key: str, schema: Any) -> Any:
        return node.get(key, getattr(schema, key)) if node is not None else getattr(schema, key)

    g, p = cfg.get("grid"), cfg.get("paths")
    ks = [int(k) for k in get(g, "k", grid)]
    if any(k < 0 for k in ks):
        raise ConfigError("grid.k", f"must be >= 0, got {ks}")
    warn = get(cfg, "cpu_warn_minutes", root)
    text = str(get(cfg.get("scoring"), "text", scoring))
    if text not in SCORED_TEXTS:
        raise ConfigError("scoring.text", f"must be one of {', '.join(SCORED_TEXTS)}, got {text!r}")
    return JobSettings(
        name=get(cfg, "name", root),
        seed=int(get(cfg, "seed", root)),
        ks=sorted({k for k in ks if k > 0}),
        closed_book=bool(get(g, "closed_book", grid)) or 0 in ks,
        orders=[str(o) for o in get(g, "orders", grid)],
        scored_text=text,
        cache_dir=str(get(p, "cache_dir", paths)),
        progress=bool(get(cfg, "progress", root)),
        force=bool(get(cfg, "force", root)),
        flush_every=int(get(cfg, "flush_every", root)),
        strict_window=bool(get(cfg, "strict_window", root)),
        cpu_warn_minutes=None if warn is None else float(warn),
    )
