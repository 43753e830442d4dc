"""Matching a paper's values to a run: settings, estimators and verdicts (the values half of the
``paper_beside`` report section, :mod:`rr.reporting.paper_beside`, which lays the tables out; the
claims' verdicts, :mod:`rr.reporting.paper_claims`, use the same estimators and verdict words).

A paper value is matched to a run only on what the run recorded: the model the job verifiably is
(:func:`job_identities`: the server-reported snapshot, the hub id, a local folder's checked claim) must be
one of the ids of the value's ``model_ids`` model (:func:`rr.papers.model_identities`, the one alias list),
the score rows' ``dataset`` one of its ``rr_datasets`` (all of them where the paper pools several), every
condition of its ``setting`` must hold on the rows (strategy, noise ratio, documents given, retrievers, k
grid, orders, ...), and every job-level key of it (corpus, rewriter, judge, decoding, ...:
:mod:`rr.papers.settings`) on the job's recorded config. A folder whose claim its weights do not bear out
gets no verdict (*claimed by config.json, not verified*). Where nothing matches, the verdict
is *no matching setting in this run* and :func:`nearest_values` says what differs; nothing is
matched by a similar name. A matched value gets rr's value on the matched rows, its interval (the
small-sample intervals ``rr report`` prints everywhere) and a verdict: *inside the interval*, *outside* or
*not decided at this n* (:func:`_verdict`; for a bound the paper states, ``> 0.8``: inside only where the
whole interval lies on the bound's side).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import pandas as pd
from omegaconf import OmegaConf

from rr.analysis.intervals import CI_HIGH, CI_LOW
from rr.metrics import SPECS, Estimate
from rr.metrics.query_level import perturbation_kind
from rr.metrics.rgb import noise_ratio_of
from rr.papers import APPROX_TOLERANCE, is_api_name, model_identities, paper_values, parse_setting
from rr.papers.settings import JOB_KEYS
from rr.perturbations.base import PerturbationTag
from rr.reporting.loading import ReportContext
from rr.reporting.run_identity import NOT_VERIFIED, RunIdentity, run_identity

log = logging.getLogger(__name__)

INSIDE, OUTSIDE, NO_MATCH = "inside the interval", "outside", "no matching setting in this run"
NOT_MEASURED = "not measured in this run"
OUT_OF_REACH = "out of reach of rr"
HOLDS, CONTRADICTED, UNDECIDED = "holds", "contradicted", "not decided at this n"
#: The verdicts of a value that was matched and measured (a value's *not decided* reads as a claim's).
MEASURED = (INSIDE, OUTSIDE, UNDECIDED)
#: Significance level of the claims' paired tests (two-sided).
ALPHA = 0.05
#: Setting keys that describe the documents given, so hold on the ``k > 0`` rows only (a job's
#: closed-book rows have none of them).
RAG_KEYS = frozenset(
    {"noise_ratio", "counterfactual", "doc_perturbation", "n_docs_given", "retriever", "order", "k"}
)
#: Setting keys that are the metric's parameters, not conditions on rows (SURE's perturbation and
#: subset: its rates pair each perturbed row with the unperturbed one).
METRIC_PARAMS = frozenset({"perturbation", "subset", "module", "query_kind"})


def split_setting(setting: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(conditions on rows, the metric's parameters) of a setting (:data:`METRIC_PARAMS`); the job keys
    (:data:`rr.papers.settings.JOB_KEYS`: what the job's config states, no row records) are in neither."""
    rows = {k: v for k, v in setting.items() if k not in METRIC_PARAMS and k not in JOB_KEYS}
    return rows, {k: v for k, v in setting.items() if k in METRIC_PARAMS}


def job_conditions(setting: Mapping[str, str]) -> dict[str, str]:
    """The job keys of a setting (:mod:`rr.papers.settings`: corpus, rewriter, judge, decoding, ...)."""
    return {k: v for k, v in setting.items() if k in JOB_KEYS}


#: A job key's value for a job whose config was not recorded (never matched).
UNKNOWN = "unknown (the job recorded no config)"


def job_key_differences(
    setting: Mapping[str, str | None] | None, wanted: Mapping[str, str]
) -> list[tuple[str, str, str]]:
    """(key, the job's value, the paper's) for each job key in which the job's setting (:func:`rr.papers.settings.
    job_setting`; None: not recorded) differs from ``wanted``; a key that does not apply to the job (its
    value None: no rewriter in an unperturbed job) is no difference."""
    out = []
    for key, want in wanted.items():
        have = UNKNOWN if setting is None else setting.get(key)
        if have is not None and not _any_same(have, want.split("+")):
            out.append((key, str(have), want))
    return out


# ----------------------------------------------------------------------------- the job's recorded setting


def _same(a: object, b: str) -> bool:
    """``a`` (a score-table value) equals ``b`` (a setting's text): as numbers where both are, else as text."""
    try:
        return math.isclose(float(a), float(b), abs_tol=1e-9)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(a).lower() == b.lower()


def _any_same(value: object, options: list[str]) -> bool:
    return any(_same(value, w) for w in options)


def _counterfactual(tag: str) -> str:
    t = PerturbationTag.read(tag)
    return str(t is not None and t.name == "counterfactual")


#: Setting keys read off another column: key -> (that column, the function of its value).
DERIVED: dict[str, tuple[str, Callable[[str], object]]] = {
    "noise_ratio": ("doc_perturbation", noise_ratio_of),
    "counterfactual": ("doc_perturbation", _counterfactual),
}


def values_of(rows: pd.DataFrame, key: str) -> dict[object, object] | None:
    """Each distinct value of the column behind ``key`` -> the key's value for it (None: no such column).
    Score tables have millions of rows and few distinct values, so settings are matched on these."""
    column, fn = DERIVED.get(key, (key, lambda v: v))
    if column not in rows.columns:
        return None
    return {v: fn(str(v)) if key in DERIVED else v for v in rows[column].unique()}


def _hit(rows: pd.DataFrame, key: str, options: list[str]) -> pd.Series | None:
    """Whether each row's value of ``key`` is one of ``options`` (None: the rows lack its column)."""
    values = values_of(rows, key)
    if values is None:
        return None
    column = DERIVED[key][0] if key in DERIVED else key
    good = [v for v, kv in values.items() if _any_same(kv, options)]
    return rows[column].isin(good)


def select(rows: pd.DataFrame, setting: Mapping[str, str]) -> pd.DataFrame:
    """The rows of ``rows`` in ``setting`` (empty if the run does not have it).

    Keys in :data:`RAG_KEYS` hold on the ``k > 0`` rows; a job's ``k = 0`` rows are kept with it
    when some of its ``k > 0`` rows are in the setting (``k=0`` itself selects the closed-book rows
    only). Rows need a ``job_id`` column. A value ``a+b+c`` needs exactly these values among the
    selected rows (a pooled grid).
    """
    if rows.empty:
        return rows
    rag = rows["k"].astype(int) > 0
    keep = pd.Series(True, index=rows.index)
    exact: dict[str, list[str]] = {}
    for key, want in setting.items():
        if key == "k" and want == "0":
            keep &= ~rag
            continue
        options = want.split("+")
        hit = _hit(rows, key, options)
        if hit is None:
            return rows.iloc[0:0]
        keep &= (hit | ~rag) if key in RAG_KEYS else hit
        if len(options) > 1:
            exact[key] = options
    out = rows[keep]
    if setting.get("k") == "0":
        return out
    out_rag = out["k"].astype(int) > 0
    if not out_rag.any():
        return out.iloc[0:0]
    out = out[out_rag | out["job_id"].isin(out.loc[out_rag, "job_id"].unique())]
    for key, options in exact.items():
        values = values_of(out[out["k"].astype(int) > 0] if key in RAG_KEYS else out, key)
        assert values is not None
        if not all(any(_same(p, w) for p in values.values()) for w in options):
            return out.iloc[0:0]
    return out


# ----------------------------------------------------------------------------- metrics


def estimator(name: str) -> Callable[..., Estimate | None] | None:
    """How rr estimates the registered metric ``name`` beside a paper: its spec's estimator
    (:meth:`rr.metrics.MetricSpec.estimate`); None where rr does not compute it there (no such metric,
    or one without an estimator)."""
    spec = SPECS.get(name)
    return None if spec is None or spec.estimator is None else spec.estimate


# ----------------------------------------------------------------------------- values


def _verdict(value: float, relation: str, est: Estimate) -> str:
    """The paper's ``value`` (``relation``: ``=`` as printed, ``~`` approximately, ``>`` / ``<`` a bound) against
    rr's interval: *outside* where the interval excludes it (for ``~``: by more than
    :data:`rr.papers.APPROX_TOLERANCE`); *not decided at this n* where the interval is wider than the claims'
    tolerance band (value ± APPROX_TOLERANCE), so it cannot tell a value inside that band from one outside it
    (4 questions, [0, 0.49]); *inside the interval* otherwise. A bound is inside only where the whole interval
    lies on its side (NDR [0.74, 0.81] is not "higher than 80%"), outside where it lies on the other side."""
    lo, hi = est.ci_low, est.ci_high
    if math.isnan(lo) or math.isnan(hi):
        lo = hi = est.value
    if relation in (">", "<"):
        side, other = (lo > value, hi < value) if relation == ">" else (hi < value, lo > value)
        return INSIDE if side else OUTSIDE if other else UNDECIDED
    tol = APPROX_TOLERANCE if relation == "~" else 1e-12  # "approximately 14%": within the stated tolerance
    if not lo - tol <= value <= hi + tol:
        return OUTSIDE
    return UNDECIDED if hi - lo > 2 * APPROX_TOLERANCE + 1e-12 else INSIDE


@cache
def _ids(model_ids: str) -> frozenset[str]:
    """The ids a run's recorded model may have and be the value's model (:func:`rr.papers.model_identities`:
    the one alias list; ``*``: any model)."""
    named = [i.strip() for i in str(model_ids).split(";") if i.strip()]
    return frozenset({"*"}) if named == ["*"] else frozenset().union(*map(model_identities, named))


def _wanted_model(model_ids: str) -> str:
    """The value's model as a run would have to record it (an API model: its snapshots)."""
    first = str(model_ids).split(";")[0]
    return " or ".join(sorted(model_identities(first))) if is_api_name(first) else first


#: :func:`rr.papers.parse_setting`, once per distinct setting (every job is compared with every value).
_parsed = cache(parse_setting)


#: Metric parameters that name what the run must hold (a ``query_perturbation`` kind, a
#: ``doc_perturbation`` tag), checked like a condition but not used to filter the rows.
PRESENT_PARAMS = {"query_kind": "query_perturbation", "perturbation": "doc_perturbation"}


def _key_values(cells: pd.DataFrame, key: str) -> set[object] | None:
    """The values ``key`` takes on ``cells`` (None: the cells lack its column)."""
    if key in PRESENT_PARAMS:
        column = PRESENT_PARAMS[key]
        if column not in cells.columns:
            return None
        if key == "query_kind":
            return {perturbation_kind(str(t)) for t in cells[column].unique()}
        return {str(t) for t in cells[column].unique()}
    values = values_of(cells, key)
    return None if values is None else set(values.values())


@dataclass(frozen=True)
class JobProfile:
    """What one job ran, as the paper values name settings: its public model, the model it loaded,
    its dataset(s), and each setting key's values (on its ``k > 0`` cells for :data:`RAG_KEYS`)."""

    job_id: str
    model: str
    loaded: str
    datasets: frozenset[str]
    values: Mapping[str, set[object] | None]
    setting: Mapping[str, str | None] | None = None

    def differences(self, v: Any) -> list[tuple[str, str, str]]:
        """(key, this job's value, the paper value's) for each key in which job and paper value ``v``
        (a row of :func:`rr.papers.paper_values`) differ; empty: the job has the value's setting."""
        out: list[tuple[str, str, str]] = []
        ids = _ids(v.model_ids)
        if ids != {"*"} and not ({self.model, self.loaded} & ids):
            out.append(("model", self.model or "?", _wanted_model(v.model_ids)))
        datasets = str(v.rr_datasets).split("+")
        if not (self.datasets & set(datasets)):
            out.append(("dataset", "+".join(sorted(self.datasets)), str(v.rr_datasets)))
        parsed = _parsed(v.setting)
        for key, want in parsed.items():
            if key not in self.values or key in METRIC_PARAMS and key not in PRESENT_PARAMS:
                continue
            have = self.values[key]
            options = want.split("+")
            if have is None:
                out.append((key, "none", want))
                continue
            if key == "k" and want == "0":
                ok = any(_same(h, "0") for h in have)
            else:
                ok = (
                    all(any(_same(h, w) for h in have) for w in options)
                    if len(options) > 1
                    else (any(_same(h, options[0]) for h in have))
                )
            if not ok:
                shown = "+".join(sorted(map(_text, have))) or "none"
                out.append((key, shown, want))
        out += job_key_differences(self.setting, job_conditions(parsed))
        if v.out_of_reach:
            out.append(("out of reach", "", str(v.out_of_reach)))
        return out


def _text(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def describe_differences(diffs: list[tuple[str, str, str]]) -> str:
    """``model (simulated vs gpt-3.5-turbo), k (1+2+3 vs 5+10+25+50+75+100), setting differs: corpus
    wiki_offline (paper: enwiki-20240601)``."""
    return ", ".join(
        f"out of reach: {want}"
        if key == "out of reach"
        else f"setting differs: {key} {have} (paper: {want})"
        if key in JOB_KEYS
        else f"{key} ({have} vs {want})"
        for key, have, want in diffs
    )


#: Score-table columns that hold few distinct strings: the index keeps them categorical, which the
#: metrics' groupbys and comparisons over ~10^5 rows run on 2-3x faster than on strings.
CATEGORICAL = (
    "example_id",
    "example_key",
    "dataset",
    "generator",
    "strategy",
    "retriever",
    "order",
    "query_perturbation",
    "doc_perturbation",
    "job_id",
    "judge",
)


def _categorical(scores: pd.DataFrame) -> pd.DataFrame:
    cols = [
        c for c in CATEGORICAL if c in scores.columns and not isinstance(scores[c].dtype, pd.CategoricalDtype)
    ]
    return scores.astype(dict.fromkeys(cols, "category")) if cols else scores


class RunIndex:
    """A run's score rows indexed for matching paper values fast: each row's *cell* (its distinct
    combination of job, dataset and the columns the values' settings read), the cells as a small table,
    and each job's :class:`JobProfile`. A value is matched on the cells (:func:`select`), and only then
    are its rows gathered, so a run of ~10^5-10^6 rows is matched against every value in seconds."""

    def __init__(
        self,
        scores: pd.DataFrame,
        models: Mapping[str, tuple[str, str]],
        keys: set[str],
        settings: Mapping[str, Mapping[str, str | None] | None] | None = None,
    ) -> None:
        """``settings``: job id -> its job keys' values (:func:`rr.papers.settings.job_setting`; a job
        left out, or None, recorded none: a value naming a job key is not matched to it)."""
        columns = ["job_id", "dataset", "k"]
        keys = {key for key in keys if key not in JOB_KEYS}
        for key in sorted(keys):
            column = DERIVED[key][0] if key in DERIVED else PRESENT_PARAMS.get(key, key)
            if column in scores.columns and column not in columns:
                columns.append(column)
        known = scores["job_id"].astype(str).isin(list(models)) if len(scores) else pd.Series(dtype=bool)
        self.scores = _categorical(scores[known] if len(scores) and not known.all() else scores)
        if self.scores.empty:
            self.codes = np.zeros(0, dtype=np.int64)
            self.cells = pd.DataFrame(columns=[*columns, "_cell"])
            self.positions: dict[int, np.ndarray] = {}
        else:
            self.codes = (
                self.scores.groupby(columns, sort=False, observed=True, dropna=False).ngroup().to_numpy()
            )
            first = pd.Series(self.codes).drop_duplicates()
            self.cells = self.scores.iloc[first.index.to_numpy()][columns].assign(_cell=first.to_numpy())
            self.cells = self.cells.reset_index(drop=True)
            self.positions = pd.Series(np.arange(len(self.codes))).groupby(self.codes).indices
        self.keys = frozenset(keys)
        self.models = dict(models)
        self.profiles: dict[str, JobProfile] = {}
        for job, cells in self.cells.groupby(self.cells["job_id"].astype(str), sort=True):
            rag = cells[cells["k"].astype(int) > 0]
            values = {key: _key_values(rag if key in RAG_KEYS else cells, key) for key in keys}
            model, loaded = self.models.get(job, ("", ""))
            self.profiles[job] = JobProfile(
                job, model, loaded, frozenset(cells["dataset"].astype(str)), values, (settings or {}).get(job)
            )
        self._cells_of = dict(tuple(self.cells.groupby(self.cells["job_id"].astype(str), sort=False)))
        self._rows: dict[tuple[int, ...], pd.DataFrame] = {}

    def rows_of(self, cells: pd.DataFrame) -> pd.DataFrame:
        """The score rows of these cells (cached: values of one setting share them)."""
        key = tuple(sorted(int(c) for c in cells["_cell"]))
        if key not in self._rows:
            positions = np.sort(np.concatenate([self.positions[c] for c in key])) if key else np.zeros(0, int)
            self._rows[key] = self.scores.iloc[positions]
        return self._rows[key]

    def match(self, v: Any) -> pd.DataFrame:
        """The cells of the run in value ``v``'s setting (empty: none), as :func:`compare_values` matches:
        a job whose public model (or loaded model) is one of its ids, on its dataset(s) (all of them where
        the paper pools several), every condition of its setting (:func:`select`), and the query kind or
        document perturbation its metric is of. A value marked out of reach is matched all the same where
        a run has its setting (a RARE-Set loaded through ``dataset=jsonl dataset.name=rare_set``)."""
        ids = _ids(v.model_ids)
        datasets = str(v.rr_datasets).split("+")
        wanted = job_conditions(_parsed(v.setting))
        jobs = [
            j
            for j, p in self.profiles.items()
            if (ids == {"*"} or {p.model, p.loaded} & ids)
            and p.datasets & set(datasets)
            and not job_key_differences(p.setting, wanted)
        ]
        if not jobs:  # most values: another model or dataset, decided without touching a table
            return self.cells.iloc[0:0]
        cells = pd.concat([self._cells_of[j] for j in jobs])
        cells = cells[cells["dataset"].astype(str).isin(datasets)]
        conditions, params = split_setting(parse_setting(v.setting))
        cells = select(cells, conditions)
        if cells.empty or set(cells["dataset"].astype(str)) != set(datasets):
            return cells.iloc[0:0]
        for key, want in params.items():
            if key in PRESENT_PARAMS:
                have = _key_values(cells, key)
                if not have or want not in {str(h) for h in have}:
                    return cells.iloc[0:0]
        matched = [self.profiles[j].setting or {} for j in set(cells["job_id"].astype(str))]
        if any(all(s.get(key) is None for s in matched) for key in wanted):
            return cells.iloc[0:0]  # a key no matched job has (no rewriter at all for a rewriter's value)
        return cells

    def nearest(self, v: Any) -> tuple[str, list[tuple[str, str, str]]]:
        """(the job nearest to value ``v``, the keys they differ in): the fewest differences."""
        best: tuple[str, list[tuple[str, str, str]]] = ("", [])
        for job, profile in self.profiles.items():
            d = profile.differences(v)
            if not best[0] or len(d) < len(best[1]):
                best = (job, d)
        return best


def setting_keys(values: pd.DataFrame) -> set[str]:
    keys: set[str] = set()
    for s in values["setting"].unique():
        keys |= set(parse_setting(s))
    return keys


def job_identities(ctx: ReportContext) -> dict[str, RunIdentity]:
    """job id -> what its model verifiably is (:func:`rr.reporting.run_identity.run_identity` of its
    ``summary.json`` ``model`` and ``public_model`` and its config's ``generator.model_name``), computed once
    per report; a label contradicting the recorded model is warned about (the log, ``ctx.notes``)."""

    def compute() -> dict[str, RunIdentity]:
        out = {}
        for job in ctx.jobs:
            try:
                cfg = job.config()
            except Exception:  # noqa: BLE001 (a torn config: no label read)
                cfg = None
            label = OmegaConf.select(cfg, "generator.model_name", default=None) if cfg is not None else None
            loaded = str(job.summary.model_id or "")
            ident = run_identity(job.summary.model, str(job.summary.public_model or loaded), label)
            if ident.warning:
                log.warning("job %s: %s", job.job_id, ident.warning)
                ctx.notes.append(f"job {job.job_id}: {ident.warning}")
            out[job.job_id] = ident
        return out

    return ctx.shared("paper_match.identities", compute)  # type: ignore[no-any-return]


def job_model_ids(ctx: ReportContext) -> dict[str, tuple[str, str]]:
    """job id -> (the model it verifiably is, the same again as the id it loaded):
    :func:`job_identities`' ``model`` (a server-reported snapshot, a hub id, a local folder's claim;
    "" for a contradicted label, which matches nothing); jobs that recorded no model are left out. The id
    a job asked for (an API alias, ``gpt-4o``; a folder's path) is not matched: only what it was."""
    identities = job_identities(ctx)
    return {
        job.job_id: (identities[job.job_id].model,) * 2
        for job in ctx.jobs
        if job.summary.model_id or job.summary.public_model
    }


def job_settings(ctx: ReportContext) -> dict[str, dict[str, str | None] | None]:
    """job id -> its job keys' values (:func:`rr.papers.settings.job_setting` of its recorded
    ``config.yaml``; None where its folder holds no config, or one that cannot be read)."""
    from rr.papers.settings import job_setting

    out: dict[str, dict[str, str | None] | None] = {}
    for job in ctx.jobs:
        try:
            cfg = job.config()
        except Exception:  # noqa: BLE001 (a torn config: the job's setting is unknown, never guessed)
            cfg = None
        out[job.job_id] = None if cfg is None else job_setting(cfg)
    return out


def job_models(ctx: ReportContext) -> dict[str, str]:
    """job id -> the public model it recorded (:func:`job_model_ids`; jobs without one are left out)."""
    return {job: public for job, (public, _) in job_model_ids(ctx).items()}


def compare_values(
    scores: pd.DataFrame,
    ctx: ReportContext,
    values: pd.DataFrame | None = None,
    index: RunIndex | None = None,
) -> pd.DataFrame:
    """One row per paper value (``values``, default every shipped one): the paper's value and
    rr's on the rows matching its setting, with interval and verdict (see the module docstring); for a
    value no part of the run matches, the nearest job and the keys it differs in (``differs``)."""
    values = paper_values() if values is None else values
    index = index or RunIndex(scores, job_model_ids(ctx), setting_keys(values), job_settings(ctx))
    identities = job_identities(ctx)

    def identity(jobs: list[str]) -> str:
        return "; ".join(dict.fromkeys(identities[j].source for j in jobs if j in identities))

    out = []
    for v in values.itertuples(index=False):
        rec: dict[str, object] = {
            "paper": v.paper,
            "location": v.location,
            "model": v.model,
            "run_model": "",
            "dataset": v.dataset,
            "metric": v.metric,
            "setting": v.setting,
            "paper_value": v.printed,
            "paper_fraction": float(v.value),
            "relation": v.relation,
            "rr": math.nan,
            "rr" + CI_LOW: math.nan,
            "rr" + CI_HIGH: math.nan,
            "n_examples": 0,
            "jobs": "",
            "verdict": NO_MATCH,
            "differs": "",
            "identity": "",
        }
        cells = index.match(v)
        if cells.empty:
            job, diffs = index.nearest(v)
            rec["identity"] = identity([job])
            if v.out_of_reach:
                rec["verdict"] = OUT_OF_REACH
            if diffs:
                rec["differs"] = (f"job {job}: " if job else "") + describe_differences(diffs)
            elif job:  # jobs have the setting, but not on every dataset the paper pools
                have = sorted(
                    {d for j, p in index.profiles.items() if not p.differences(v) for d in p.datasets}
                )
                rec["differs"] = (
                    f"dataset ({'+'.join(have)} vs {v.rr_datasets}): the paper pools these datasets, "
                    "and so must the run (a job on each)"
                )
            out.append(rec)
            continue
        jobs = sorted(set(cells["job_id"].astype(str)))
        rec["jobs"] = ",".join(jobs)
        rec["run_model"] = ",".join(sorted({index.models[j][0] for j in jobs}))
        rec["identity"] = identity(jobs)
        if any(j in identities and not identities[j].verified for j in jobs):
            rec["verdict"] = NOT_VERIFIED  # a folder that only claims to be the paper's model: no verdict
            out.append(rec)
            continue
        conditions, params = split_setting(parse_setting(v.setting))
        params = {k: p for k, p in params.items()}
        rows = index.rows_of(cells)
        job_rows = index.rows_of(index.cells[index.cells["job_id"].astype(str).isin(jobs)])
        fn = estimator(v.metric)
        est = None if fn is None else fn(rows, ctx, job_rows, **params)
        if est is None:
            rec["verdict"] = NOT_MEASURED
        else:
            rec.update(
                {
                    "rr": est.value,
                    "rr" + CI_LOW: est.ci_low,
                    "rr" + CI_HIGH: est.ci_high,
                    "n_examples": est.n,
                    "verdict": _verdict(float(v.value), v.relation, est),
                }
            )
        out.append(rec)
    return pd.DataFrame(out)


def nearest_values(
    index: RunIndex, values: pd.DataFrame, job_papers: Mapping[str, set[str]], n: int = 3
) -> pd.DataFrame:
    """For every job of the run: the ``n`` paper values nearest to it (the fewest differing keys) among
    its paper's values (``job_papers``: the papers whose experiment it ran; every paper's for a job
    without one), and how they differ.

    Returns:
        One row per (job, value): ``job_id``, ``run_model``, ``run_dataset``, the value's ``paper``,
        ``location``, ``model``, ``dataset``, ``metric``, ``setting``, ``n_differences``, ``differs``
        (empty: the job has the value's setting) and ``run`` (the ``rr`` command lines that reach it).
    """
    from rr.papers import run_overrides

    rows = []
    for job, profile in index.profiles.items():
        papers = job_papers.get(job, set())
        own = values[values["paper"].isin(papers)] if papers else values
        scored = [
            (len(d), i, d)
            for i, v in enumerate(own.itertuples(index=False))
            for d in [profile.differences(v)]
        ]
        scored.sort(key=lambda t: (t[0], t[1]))
        for count, i, diffs in scored[:n]:
            v = own.iloc[i]
            rows.append(
                {
                    "job_id": job,
                    "run_model": profile.model,
                    "run_dataset": "+".join(sorted(profile.datasets)),
                    "paper": v["paper"],
                    "location": v["location"],
                    "model": v["model"],
                    "dataset": v["dataset"],
                    "metric": v["metric"],
                    "setting": v["setting"],
                    "n_differences": count,
                    "differs": describe_differences(diffs),
                    "run": " ; ".join("rr -m " + " ".join(o) for o in run_overrides(v))
                    if not v["out_of_reach"]
                    else "",
                }
            )
    return pd.DataFrame(rows)
