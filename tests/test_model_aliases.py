"""Aliases only as the papers support them (issue 49, item 3): one list (rr/papers/aliases.yaml) for the
values, the claims' scopes and the claims' sides; an API model is the snapshot its server reports, never the
alias a run asks for; no snapshot the paper's dates do not support, each kept one with its reason."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rr.jobfolder import JobSummary, ModelRecord
from rr.papers import canonical_model, model_aliases, model_identities, paper_claims, paper_values
from rr.reporting.loading import JobInfo, ReportContext
from rr.reporting.paper_claims import _groups, outside_scope
from rr.reporting.paper_match import NO_MATCH, RunIndex, compare_values, job_model_ids


def test_one_alias_list_each_id_with_its_reason():
    values = paper_values()
    assert not values["model_ids"].str.contains(";").any()  # the values name the model; the list, its ids
    named = set(values["model_ids"]) | {m for c in paper_claims() for m in c.scope_models}
    named |= {s.get("model_id") for c in paper_claims() for s in (c.a, c.b) if s.get("model_id")}
    for model, ids in model_aliases().items():
        assert model in named, f"{model}: no value or claim names it"
        assert ids and all(len(why) > 20 for why in ids.values()), model
    # the snapshots no paper's dates support are gone (Cao's runs are after o3-mini's 31 Jan 2025 release)
    assert model_identities("gpt-4o") == {"gpt-4o-2024-08-06"}
    assert model_identities("gpt-3.5-turbo") == {"gpt-3.5-turbo-0301", "gpt-3.5-turbo-0613"}
    assert model_identities("meta-llama/Llama-3.1-8B-Instruct") == {
        "meta-llama/Llama-3.1-8B-Instruct",
        "meta-llama/Meta-Llama-3.1-8B-Instruct",
    }


def _ctx(*jobs: tuple[str, ModelRecord]) -> ReportContext:
    return ReportContext(
        jobs=[JobInfo(j, Path(j), 1, JobSummary(name="cao2025", model=m), None) for j, m in jobs],
        n_resamples=50,
    )


def test_an_api_run_is_matched_on_the_snapshot_its_server_reports():
    gpt4o = paper_values().query("paper == 'cao2025' and model == 'GPT-4o'").head(1)
    rows = pd.DataFrame(
        {"job_id": ["j"], "dataset": ["nq_open"], "k": [5], "example_id": ["e"], "score": [1.0]}
    )
    for reported, matched in [
        ("gpt-4o-2024-08-06", True),  # what gpt-4o served during the paper's runs
        ("gpt-4o-2024-11-20", False),  # a snapshot of the paper's time, never the alias's target
        (None, False),  # no snapshot reported: the alias alone says nothing
    ]:
        extra = {"reported_model": reported} if reported else {}
        ctx = _ctx(("j", ModelRecord("gpt-4o", "unversioned", extra)))
        index = RunIndex(rows, job_model_ids(ctx), {"strategy"})
        diffs = index.profiles["j"].differences(next(gpt4o.itertuples()))
        assert (not any(d[0] == "model" for d in diffs)) is matched, (reported, diffs)
    got = compare_values(rows, _ctx(("j", ModelRecord("gpt-4o", "unversioned"))), gpt4o)
    assert (
        got["verdict"].item() == NO_MATCH and "model (gpt-4o vs gpt-4o-2024-08-06)" in got["differs"].item()
    )


def test_claim_scopes_and_sides_use_the_same_list():
    assert canonical_model("gpt-4o-2024-08-06") == "gpt-4o"
    assert canonical_model("gpt-4.1-2025-04-14") == "gpt-4.1"
    assert canonical_model("meta-llama/Meta-Llama-3.1-8B-Instruct") == "meta-llama/Llama-3.1-8B-Instruct"
    assert canonical_model("gpt-4o") != "gpt-4o"  # a bare alias is no paper's model
    # a claim stated of GPT-4o and o3-mini (Cao, Fig. 7): a run answered by gpt-4o-2024-08-06 is one the
    # paper states it of (it was "not one the paper states it of"); one answered by -11-20 is not
    claim = next(c for c in paper_claims() if "gpt-4o" in c.scope_models)
    rows = pd.DataFrame({"job_id": ["a", "b"], "dataset": "nq_open", "k": 5, "example_id": "e", "score": 1.0})
    ctx = _ctx(
        ("a", ModelRecord("gpt-4o", "unversioned", {"reported_model": "gpt-4o-2024-08-06"})),
        ("b", ModelRecord("gpt-4o", "unversioned", {"reported_model": "gpt-4o-2024-11-20"})),
    )
    index = RunIndex(rows, job_model_ids(ctx), {"strategy"})
    models = {j: m for j, (m, _) in job_model_ids(ctx).items()}
    scoped = {
        mid: outside_scope(claim, mid, d, index.rows_of(cells), ctx)
        for mid, d, cells in _groups(index, models, False)
    }
    assert not any("not one the paper states it of" in o for o in scoped["gpt-4o"])
    assert any("not one the paper states it of" in o for o in scoped["gpt-4o-2024-11-20"])
