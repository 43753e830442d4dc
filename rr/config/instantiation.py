"""The one place ``rr`` turns a config node into an object (:func:`instantiate`), and the check that
the object implements its protocol (:func:`instantiate_as`)."""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig

from rr.errors import ConfigError, UserError


def protocol_members(protocol: type) -> list[str]:
    """The attributes and methods a ``typing.Protocol`` class declares (its bases' included)."""
    names: dict[str, None] = {}
    for klass in reversed(protocol.__mro__):
        if not getattr(klass, "_is_protocol", False) or klass.__module__ == "typing":
            continue
        for name in [*getattr(klass, "__annotations__", {}), *vars(klass)]:
            if not name.startswith("_"):
                names[name] = None
    return list(names)


def instantiate_as(node: Any, protocol: type, key: str, **kwargs: Any) -> Any:
    """:func:`instantiate`, then check that the object implements ``protocol`` (a runtime-checkable
    ``typing.Protocol``, e.g. :class:`rr.retrieval.base.Retriever`).

    Raises:
        ConfigError: under ``key`` (``retriever.first_passages``), naming the class and what it lacks,
            so a plugin component missing a method fails before any data or model loads.
    """
    obj = instantiate(node, **kwargs)
    if not isinstance(obj, protocol):
        missing = [m for m in protocol_members(protocol) if not hasattr(obj, m)]
        cls = type(obj)
        raise ConfigError(
            key,
            f"{cls.__module__}.{cls.__qualname__} does not implement {protocol.__module__}."
            f"{protocol.__qualname__}: it lacks {', '.join(missing) or '?'}",
        )
    return obj


def instantiate(node: Any, **kwargs: Any) -> Any:
    """The one place ``rr`` turns a config node into an object.

    Every ``_target_`` goes through here, so an allow-list of importable targets is a
    one-line change. ``_convert_="all"`` hands plain lists/dicts to constructors.

    Raises:
        ConfigError: A constructor rejected a value; its key is placed under the node's path
            (``max_new_tokens`` of ``cfg.generator`` becomes ``generator.max_new_tokens``).
        UserError: Any other user error a constructor raised, unwrapped from Hydra's
            ``InstantiationException``.
    """
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate as hydra_instantiate

    try:
        return hydra_instantiate(node, _convert_="all", **kwargs)
    except InstantiationException as e:
        cause = e.__cause__
        if isinstance(cause, ConfigError):
            prefix = node._get_full_key(None) if isinstance(node, DictConfig) else ""
            raise cause.under(str(prefix)) from e
        if isinstance(cause, UserError):
            raise cause from e
        raise
