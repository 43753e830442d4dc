"""User errors: what the ``rr`` command prints as one line, and how it tells them from bugs.

A *user error* is a problem in what the user gave ``rr``: a config value, a data file, a
path, a model name. The command prints it as one line ``rr: <what is wrong, where, how to
fix>`` on stderr and exits with status 2, without a traceback (``rr --verbose ...`` or
``HYDRA_FULL_ERROR=1`` shows it). Anything else is a bug and keeps its traceback.

Raise :class:`ConfigError` for a bad config value and :class:`~rr.data.base.DataError` for a
bad data row; both are :class:`UserError` (and :class:`ValueError`, so older callers that
catch ``ValueError`` still do). The commands turn them (and Hydra's and the operating
system's errors) into their one line with :func:`rr.commands.errors.user_message`.
"""

from __future__ import annotations

from typing import Any


class UserError(Exception):
    """A problem in what the user gave rr; its message is printed as one line (no traceback), or one
    line per item where ``lines`` is true (a sweep's failed jobs)."""

    lines = False


class ConfigError(UserError, ValueError):
    """A config value is invalid.

    Args:
        key: The offending key relative to the component's config node (``"max_new_tokens"``);
            :func:`rr.config.instantiation.instantiate` prefixes the node's path (``"generator.max_new_tokens"``).
        message: What is wrong and how to fix it, e.g. ``"must be a positive integer, got -5"``.
    """

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key
        self.message = message

    def under(self, prefix: str) -> ConfigError:
        """The same error with ``key`` placed under the config node ``prefix`` (if not already)."""
        if not prefix or self.key == prefix or self.key.startswith(prefix + "."):
            return self
        return ConfigError(f"{prefix}.{self.key}", self.message)


def require_positive(key: str, value: Any, *, optional: bool = False) -> None:
    """Raise :class:`ConfigError` unless ``value`` is an integer > 0 (or ``None`` when ``optional``)."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        allowed = "a positive integer or null" if optional else "a positive integer"
        raise ConfigError(key, f"must be {allowed}, got {value!r}")


def require_non_negative(key: str, value: Any) -> None:
    """Raise :class:`ConfigError` unless ``value`` is a number >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ConfigError(key, f"must be a number >= 0, got {value!r}")
