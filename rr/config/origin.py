"""Where the running job's settings come from (the command line, the experiment, a group's default),
for the lines a person reads when a job starts; outside a Hydra run (``rr.config.compose``) every
answer is ``None``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from omegaconf import DictConfig, OmegaConf

#: Keys an experiment sets that are not settings of the job (its label, its defaults list).
_EXPERIMENT_LABELS = ("defaults", "name", "experiment")


def _hydra_job() -> Any:
    """Hydra's config of the running job (``hydra.*``), or ``None`` outside a Hydra run (``compose``)."""
    from hydra.core.hydra_config import HydraConfig

    return HydraConfig.get() if HydraConfig.initialized() else None


def _command_line_keys(hc: Any) -> set[str]:
    """The keys the command line (or the sweep's values) set for this job: ``dataset.n``, ``dataset``."""
    return {str(o).split("=", 1)[0].lstrip("+~") for o in hc.overrides.task}


def _experiment_files(hc: Any, group: str | None = None) -> list[tuple[DictConfig, str]]:
    """The experiment's own config and, for ``group`` (``dataset``, ``corpus``), the experiment-data
    file it applied to it: ``(raw config, key prefix)`` pairs, prefix ``""`` for the experiment's
    global keys and ``"dataset."`` for a data file's. Files that cannot be read are left out."""
    from hydra.core.global_hydra import GlobalHydra

    choices = hc.runtime.choices
    paths = [(f"experiment/{choices.get('experiment')}", "")]
    if group is not None and (data := choices.get(f"experiment_data@{group}")):
        paths.append((f"experiment_data/{data}", f"{group}."))
    out = []
    repository = GlobalHydra.instance().config_loader().repository  # type: ignore[attr-defined]
    for path, prefix in paths:
        result = repository.load_config(path)
        if result is not None and isinstance(result.config, DictConfig):
            out.append((result.config, prefix))
    return out


def _leaf_keys(node: DictConfig, prefix: str = "") -> Iterator[str]:
    """The dotted keys of ``node``'s leaves (a list is a leaf): ``grid.k``, ``generator.max_new_tokens``."""
    for k, v in node.items():
        if isinstance(v, DictConfig):
            yield from _leaf_keys(v, f"{prefix}{k!s}.")
        else:
            yield f"{prefix}{k!s}"


def setting_origin(key: str) -> str | None:
    """Where the running job's value of ``key`` (``dataset.n``) comes from, for a line a person reads.

    Returns:
        ``"on the command line"`` (a sweep's values included), ``"from experiment=<name>"`` (the
        experiment or the data file it applied, ``conf/experiment_data``), ``"the default of
        dataset=<option>"``, or ``None`` outside a Hydra run (``rr.config.compose``) or when unknown.
    """
    try:
        hc = _hydra_job()
        if hc is None:
            return None
        if key in _command_line_keys(hc):
            return "on the command line"
        group, _, _ = key.partition(".")
        experiment = hc.runtime.choices.get("experiment")
        if experiment:
            for config, prefix in _experiment_files(hc, group):
                if key.startswith(prefix) and OmegaConf.select(config, key[len(prefix) :]) is not None:
                    return f"from experiment={experiment}"
        option = hc.runtime.choices.get(group)
        return f"the default of {group}={option}" if option else None
    except Exception:  # noqa: BLE001 - a note for the console; never fail a job over it
        return None


def experiment_settings(cfg: DictConfig) -> tuple[str, dict[str, Any]] | None:
    """The applied experiment's name and the settings it gives this job that the command line does
    not (``{"grid.k": [1, 2, 3], "generator.max_new_tokens": 24, ...}``, values as the job runs them;
    its data sizes are in the data lines), or ``None`` outside a Hydra run or without an experiment."""
    try:
        hc = _hydra_job()
        experiment = hc.runtime.choices.get("experiment") if hc is not None else None
        if not experiment:
            return None
        given = _command_line_keys(hc)
        out: dict[str, Any] = {}
        for config, _ in _experiment_files(hc)[:1]:  # the experiment's own file, not its data files
            for key in _leaf_keys(config):
                if key.split(".")[0] in _EXPERIMENT_LABELS or key in given:
                    continue
                value = OmegaConf.select(cfg, key, throw_on_missing=False)
                out[key] = OmegaConf.to_container(value) if OmegaConf.is_config(value) else value
        return experiment, out
    except Exception:  # noqa: BLE001 - a note for the console; never fail a job over it
        return None
