"""Which shipped paper values a run of their paper's experiment config reaches (issue 42, part 1).

For each value (:func:`rr.papers.paper_values`), the jobs that reach it are composed exactly as
``rr -m`` composes them (:func:`rr.cost.compose_jobs` of :func:`rr.papers.run_overrides`: the paper's
experiment, the value's dataset(s) and model, its ``run`` column), their cells planned
(:func:`rr.pipeline.planned_cells`) into a score table of two examples per cell, and the value is
matched against those jobs as the report matches a real run (:meth:`rr.reporting.paper_match.RunIndex.match`).
Each distinct (paper, dataset, run) is composed once, and each distinct model once (a model override
changes only the job's recorded model: its public model, :func:`rr.generation.base.public_model`).
``tests/test_paper_reach.py`` asserts every value is reached or marked ``out_of_reach`` with its reason;
``python -m rr.reporting.paper_reach`` prints the counts per paper.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from rr.papers import (
    dataset_overrides,
    is_api_name,
    model_identities,
    model_overrides,
    paper_values,
    parse_setting,
)
from rr.reporting.paper_match import (
    RunIndex,
    describe_differences,
    job_conditions,
    job_key_differences,
    setting_keys,
)


def _jobs_of(line: list[str]) -> list[tuple[str, ...]]:
    """The jobs of one ``rr -m`` command line: Hydra's sweep of its ``key=a,b`` overrides (the product
    of their values, parsed by Hydra's own override parser)."""
    import itertools

    from hydra.core.override_parser.overrides_parser import OverridesParser

    choices = []
    for o in OverridesParser.create().parse_overrides(line):
        if o.is_sweep_override():
            choices.append([f"{o.get_key_element()}={v}" for v in o.sweep_string_iterator()])
        else:
            choices.append([str(o.input_line)])
    return [tuple(job) for job in itertools.product(*choices)]


#: A planned job: its cells (:func:`rr.pipeline.planned_cells`) and its job keys' values
#: (:func:`rr.papers.settings.job_setting`).
Planned = tuple[pd.DataFrame, dict[str, str | None]]


def _planned(cfg: Any) -> Planned:
    from rr.papers.settings import job_setting
    from rr.pipeline import planned_cells

    return planned_cells(cfg), job_setting(cfg)


def _compose_all(lines: list[list[str]], config_dir: str | None = None) -> list[list[Planned] | str]:
    """The planned cells and setting of each job of each ``rr -m`` command line, or the error that
    composing it raised (its first line). Each distinct job is composed once, all in one Hydra session."""
    from rr.cost import compose_many_jobs

    jobs = sorted({job for line in lines for job in _jobs_of(line)})
    cells: dict[tuple[str, ...], Planned | str] = {}
    try:
        composed = compose_many_jobs([list(j) for j in jobs], multirun=False, config_dir=config_dir)
        cells = {j: _planned(c[0][1]) for j, c in zip(jobs, composed, strict=True)}
    except Exception:  # noqa: BLE001 (a job fails: compose them one by one to say which)
        for j in jobs:
            try:
                cells[j] = _planned(
                    compose_many_jobs([list(j)], multirun=False, config_dir=config_dir)[0][0][1]
                )
            except Exception as e:  # noqa: BLE001 (a dataset no config gives, a bad override: not reached)
                cells[j] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    out: list[list[Planned] | str] = []
    for line in lines:
        got = [cells[j] for j in _jobs_of(line)]
        errors = [g for g in got if isinstance(g, str)]
        out.append(errors[0] if errors else [g for g in got if not isinstance(g, str)])
    return out


def _public_models(models: list[str]) -> dict[str, str]:
    """Each model id -> the public model a job run with its overrides records (``*`` stays)."""
    from rr.config import instantiate
    from rr.cost import compose_many_jobs
    from rr.generation.base import public_model

    real = [m for m in models if m != "*"]
    composed = compose_many_jobs([model_overrides(m) for m in real], multirun=False)
    out = {m: public_model(instantiate(jobs[0][1].generator)) for m, jobs in zip(real, composed, strict=True)}
    # An API model is matched on the snapshot its server reports answering with, never on the alias a run
    # asks for: a run of the paper's config is taken to be answered by a snapshot the paper's dates support
    # (the first rr/papers/aliases.yaml keeps; whether the provider still serves it is the provider's).
    out |= {m: min(model_identities(m)) for m in real if is_api_name(m) and model_identities(m)}
    return {**out, **({"*": "*"} if "*" in models else {})}


def reach(values: pd.DataFrame | None = None, config_dir: str | None = None) -> pd.DataFrame:
    """One row per value: its ``paper``, ``location``, ``model``, ``dataset``, ``metric``, ``setting``,
    whether a run of its paper's config reaches it (``reached``), ``out_of_reach`` (the data's reason)
    and, where not reached, what differs between the planned jobs and the value (``differs``), or the
    composition's error. ``config_dir``: another ``conf`` folder to compose from (default rr's own)."""
    values = paper_values() if values is None else values
    keys = setting_keys(values)
    firsts = values["model_ids"].astype(str).str.split(";").str[0]
    reachable = values[~values["out_of_reach"].astype(bool)]
    runs = sorted(
        {
            (str(p), d, str(r))
            for p, ds, r in zip(reachable["paper"], reachable["rr_datasets"], reachable["run"], strict=True)
            for d in str(ds).split("+")
        }
    )
    composed = dict(
        zip(
            runs,
            _compose_all(
                [[f"experiment={p}", *dataset_overrides(d, r), *r.split()] for p, d, r in runs], config_dir
            ),
            strict=True,
        )
    )
    models = _public_models(sorted(set(firsts[~values["out_of_reach"].astype(bool)])))
    indexes: dict[tuple[str, str, str, str], RunIndex | str] = {}
    planned_settings: dict[tuple[str, str, str, str], list[dict[str, str | None]]] = {}
    out = []
    for v, first in zip(values.itertuples(index=False), firsts, strict=True):
        group = (str(v.paper), str(v.rr_datasets), str(v.run), first)
        if v.out_of_reach:
            indexes[group] = f"out of reach: {v.out_of_reach}"
        if group not in indexes:
            frames, errors = [], []
            settings: dict[str, dict[str, str | None]] = {}
            for d in str(v.rr_datasets).split("+"):
                got = composed[(str(v.paper), d, str(v.run))]
                if isinstance(got, str):
                    errors.append(
                        f"rr -m experiment={v.paper} {' '.join(dataset_overrides(d, str(v.run)))} {v.run}: {got}"
                    )
                else:
                    frames += [f.assign(job_id=f"{d}#{i}") for i, (f, _) in enumerate(got)]
                    settings |= {f"{d}#{i}": setting for i, (_, setting) in enumerate(got)}
            planned_settings[group] = list(settings.values())
            if errors or not frames:
                indexes[group] = "; ".join(errors) or "no jobs"
            else:
                rows = pd.concat(frames, ignore_index=True)
                rows = pd.concat(
                    [rows.assign(example_id="e1"), rows.assign(example_id="e2")], ignore_index=True
                )
                public = models[first]
                indexes[group] = RunIndex(
                    rows.assign(score=1.0),
                    {j: (public, public) for j in rows["job_id"].unique()},
                    keys,
                    settings,
                )
        index = indexes[group]
        reached = not isinstance(index, str) and not index.match(v).empty
        differs = (
            index if isinstance(index, str) else "" if reached else describe_differences(index.nearest(v)[1])
        )
        wanted = job_conditions(parse_setting(v.setting))
        on_key = [
            key
            for key, want in wanted.items()
            if any(
                s.get(key) is not None and not job_key_differences(s, {key: want})
                for s in planned_settings.get(group, [])
            )
        ]
        out.append(
            {
                "paper": v.paper,
                "location": v.location,
                "model": v.model,
                "dataset": v.dataset,
                "metric": v.metric,
                "setting": v.setting,
                "reached": reached,
                "out_of_reach": v.out_of_reach,
                "differs": differs,
                "keys": ";".join(wanted),
                "keys_reached": ";".join(on_key),
            }
        )
    return pd.DataFrame(out)


def key_counts(table: pd.DataFrame) -> pd.DataFrame:
    """Per (paper, job key): the values that state the key (those not marked out of reach: their jobs
    are not composed), and how many of them a run of the paper's config reaches on it (one of the
    value's planned jobs has the paper's value of the key)."""
    rows = []
    for r in table[~table["out_of_reach"].astype(bool)].itertuples(index=False):
        reached = set(str(r.keys_reached).split(";"))
        for key in filter(None, str(r.keys).split(";")):
            rows.append({"paper": r.paper, "key": key, "on_key": key in reached})
    if not rows:
        return pd.DataFrame(columns=["values", "reached_on_key", "differs"])
    t = pd.DataFrame(rows)
    return (
        t.groupby(["paper", "key"])
        .agg(values=("on_key", "size"), reached_on_key=("on_key", "sum"))
        .assign(differs=lambda d: d["values"] - d["reached_on_key"])
    )


def counts(table: pd.DataFrame, groups: Iterable[str] = ("paper",)) -> pd.DataFrame:
    """Per group: values, reached, marked out of reach, neither (the last must be 0)."""
    t = table.assign(
        marked=~table["reached"] & table["out_of_reach"].astype(bool),
        neither=~table["reached"] & ~table["out_of_reach"].astype(bool),
    )
    return t.groupby(list(groups)).agg(
        values=("reached", "size"),
        reached=("reached", "sum"),
        out_of_reach=("marked", "sum"),
        neither=("neither", "sum"),
    )


if __name__ == "__main__":  # python -m rr.reporting.paper_reach
    table = reach()
    print(counts(table).to_string())
    print(key_counts(table).to_string())
    zh = table[table["paper"].eq("rgb2024") & table["dataset"].eq("RGB Chinese")]
    print(f"RGB Chinese: {int(zh['reached'].sum())} of {len(zh)} reached")
    for r in table[~table["reached"] & ~table["out_of_reach"].astype(bool)].head(20).itertuples():
        print(f"  not reached: {r.paper} {r.location} {r.model} {r.metric} [{r.setting}]: {r.differs}")
