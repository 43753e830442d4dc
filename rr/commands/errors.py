"""Turning exceptions into the one line ``rr: <what, where, how to fix>`` that the commands print.

:func:`user_message` gives that line for a :class:`rr.errors.UserError` and for a few exceptions
that rr did not raise itself: Hydra's compose-time errors (an unknown key, a missing option) and
operating-system errors on a named path (permission denied, read-only file system, disk full, no
such file). ``None`` means a bug: the command keeps its traceback.
"""

from __future__ import annotations

import difflib
import errno
import re

from rr.config.composition import hydra_context
from rr.errors import UserError

#: OS errors on a named path that come from the user's environment, with how to fix them.
_OS_HINTS = {
    errno.EACCES: "choose a folder you can write (paths.output_root, paths.cache_dir) or fix its permissions",
    errno.EPERM: "choose a folder you can write (paths.output_root, paths.cache_dir) or fix its permissions",
    errno.EROFS: "the file system is read-only: point paths.output_root / paths.cache_dir elsewhere",
    errno.ENOSPC: "the disk is full: free space or point paths.output_root / paths.cache_dir elsewhere",
    errno.EDQUOT: "the disk quota is exceeded: free space or point paths.* elsewhere",
    errno.ENOENT: "check the path in your config",
    errno.ENOTDIR: "a part of the path is a file, not a folder: check the path in your config",
    errno.EISDIR: "the path is a folder where a file is expected: check the path in your config",
}


def _one_line(text: str) -> str:
    """Hydra's multi-line messages joined into one line (its config search path dropped)."""
    lines: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("Config search path"):
            break
        if line:
            lines.append(line)
    return " ".join(lines)


def _group_options(group: str) -> list[str]:
    """The options of a config group on rr's search path (rr's configs and plugins'), for a hint."""
    from hydra.core.global_hydra import GlobalHydra

    try:
        with hydra_context():
            options = GlobalHydra.instance().config_loader().get_group_options(group)
    except Exception:  # only a hint: never let it hide the error itself
        return []
    return [o for o in options if not o.endswith("_schema")]


def _hydra_message(ex: Exception) -> str | None:
    from hydra.errors import CompactHydraException
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException

    if not isinstance(ex, CompactHydraException):
        return None
    cause = ex.__cause__
    full_key = getattr(cause, "full_key", None)
    if isinstance(cause, ConfigKeyError | ConfigAttributeError) and " not in " in str(cause) and full_key:
        schema = getattr(cause, "object_type_str", None)
        where = f" (not in {schema})" if schema and schema != "None" else ""
        return (
            f"unknown config key {full_key!r}{where}; check its spelling "
            "(`rr --cfg job` prints every key, `rr --help` every group and option)"
        )
    # "Available options in 'generator': hf hf_schema ...": the generated *_schema nodes are no options
    message = re.sub(r"\s\w+_schema\b", "", _one_line(str(ex)))
    if missing := re.search(r"Could not (?:load|find) '([\w/]+)/([^'/]+)'", message):
        group, option = missing.groups()
        options = _group_options(group)
        if options and "Available" not in message:  # a list-valued group (retriever=[bm2]) names none
            message += f" Available options in '{group}': {' '.join(options)}"
        if close := difflib.get_close_matches(option, options, n=1, cutoff=0.6):
            message = message.replace(missing.group(0), f"{missing.group(0)} (did you mean {close[0]}?)", 1)
    if isinstance(cause, OmegaConfBaseException):
        message += " " + _one_line(str(cause).split("full_key:")[0])
    if listed := re.match(
        r"Error merging override ([\w.]+)=(\S+) Invalid value assigned: \w+ is not a ListConfig", message
    ):
        key, value = listed.groups()  # grid.k=5: the key holds a list
        return f"{key} takes a list: write '{key}=[{value}]' (with the quotes, for the shell)"
    return message


def _log_file_message(err: OSError) -> str | None:
    """The line for a job whose log file (Hydra's ``<job folder>/<task>.log``) cannot be opened."""
    from pathlib import Path

    from rr.jobfolder import SUMMARY_FILE

    if err.filename is None or err.errno not in _OS_HINTS:
        return None
    log_file = Path(err.filename)
    folder = log_file.parent
    if (
        folder / SUMMARY_FILE
    ).is_file():  # a finished job, run again to see it: it needs no writing but the log
        return (
            f"job {folder} is finished, but its folder cannot be written ({err.strerror}: {log_file}), "
            f"where rr logs even a finished job it shows again: read its results where they are "
            f"(`rr status {folder}`, `rr report {folder} --out DIR`), or run it again under another "
            "folder (paths.output_root=DIR)"
        )
    return f"cannot open the job's log file ({err.strerror}: {log_file}): {_OS_HINTS[err.errno]}"


def _example_value(key: str) -> str | None:
    """An example value of a mandatory ``key`` (``dataset.path``): the ``key=VALUE`` that the YAML
    of the option chosen for its group shows in its usage comment (``# Usage: dataset=rgb_en
    dataset.path=/path/to/RGB/data/en.json``), else one that any option of the group shows."""
    from pathlib import Path

    from rr.config.composition import config_dir

    parts = key.split(".")
    pattern = re.compile(rf"(?<![\w.]){re.escape(key)}=([^\s`]+)")
    for n in range(len(parts) - 1, 0, -1):
        group = "/".join(parts[:n])
        folder = Path(config_dir(), group)
        if not folder.is_dir():
            continue
        chosen = _chosen_option(group)
        for f in sorted(folder.glob("*.yaml"), key=lambda f: f.stem != chosen):
            if m := pattern.search(f.read_text(encoding="utf-8")):
                return m.group(1).rstrip(".,;)")
    return None


def _chosen_option(group: str) -> str | None:
    """The option of ``group`` the running job chose (``None`` outside a job)."""
    try:
        from hydra.core.hydra_config import HydraConfig

        return str(HydraConfig.get().runtime.choices.get(group)) if HydraConfig.initialized() else None
    except Exception:  # only a hint: never let it hide the error itself
        return None


def _omegaconf_message(ex: BaseException) -> str | None:
    """The line for a config value the user left out (``???``) or an interpolation that does not
    resolve (``${paths.output_rot}`` in an override); ``None`` for any other error."""
    import sys

    from omegaconf.errors import GrammarParseError, InterpolationResolutionError, MissingMandatoryValue

    full_key = getattr(ex, "full_key", None) or "?"
    if isinstance(ex, MissingMandatoryValue):
        example = _example_value(full_key)
        return f"{full_key} is not set: the config leaves it for you to give (???); add {full_key}=" + (
            example if example else "VALUE to the command (`rr --cfg job` shows the config)"
        )
    if isinstance(ex, InterpolationResolutionError | GrammarParseError):
        what = _one_line(str(ex).split("full_key:")[0])
        named = re.search(r"'([^']+)'", what)
        given = next((a for a in sys.argv[1:] if "${" in a and named and named.group(1) in a), None)
        where = f"the override {given}" if given else full_key
        return (
            f"{where} does not resolve ({what}, in {full_key}): an interpolation ${{key}} names a config "
            "key as `rr --cfg job` prints it (e.g. ${paths.output_root}); check its spelling"
        )
    return None


def user_message(ex: BaseException) -> str | None:
    """The one-line message for a user error, or ``None`` if ``ex`` is a bug (keep its traceback).

    Hydra's ``InstantiationException`` around a :class:`UserError` raised in a constructor
    is unwrapped to that error; so is the ``ValueError`` of :mod:`logging.config` around an
    :class:`OSError` opening the job's log file (a folder that cannot be written).
    """
    if isinstance(ex, UserError):  # one line; a list of lines (one per failed job) keeps them
        return "\n".join(_one_line(line) for line in str(ex).splitlines()) if ex.lines else _one_line(str(ex))
    for err in (ex, ex.__cause__):  # a value left out, an interpolation that does not resolve
        if err is not None and (msg := _omegaconf_message(err)) is not None:
            return msg
    if (
        isinstance(ex, ValueError)
        and str(ex).startswith("Unable to configure handler")
        and isinstance(ex.__cause__, OSError)
    ):
        return _log_file_message(ex.__cause__)
    if isinstance(ex, OSError) and ex.filename is not None and ex.errno in _OS_HINTS:
        return f"{ex.strerror}: {ex.filename} ({_OS_HINTS[ex.errno]})"
    if isinstance(ex, Exception):
        cause = ex.__cause__
        if isinstance(cause, UserError | OSError) and (msg := user_message(cause)) is not None:
            from hydra.errors import InstantiationException

            if isinstance(ex, InstantiationException):
                return msg
        return _hydra_message(ex)
    return None
