"""Power of a plan (``rr plan``): expected interval half-widths and examples needed.

Closed form: hand-worked Wald half-widths of a proportion. Bootstrap: on a synthetic score
table whose per-example values are 0/1, ``rr report``'s example-level bootstrap agrees with
the Wald formula at the observed rate, and a pilot of 100 examples projected to 400 predicts
the half-width the bootstrap gives on 400.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rr.analysis.intervals import robustness_ci, system_by
from rr.analysis.power import (
    examples_needed,
    parse_rates,
    power_from_pilot,
    power_from_rates,
    project_halfwidth,
    wald_halfwidth,
    z_value,
)

Z95 = 1.959963984540054


def test_wald_halfwidth_hand_worked() -> None:
    assert z_value(0.95) == pytest.approx(Z95, rel=1e-12)
    # 1.96 * sqrt(0.25 / 100) = 1.96 * 0.05
    assert wald_halfwidth(0.5, 100) == pytest.approx(Z95 * 0.05, rel=1e-12)
    # 1.96 * sqrt(0.16 / 400) = 1.96 * 0.02
    assert wald_halfwidth(0.2, 400) == pytest.approx(Z95 * 0.02, rel=1e-12)
    assert wald_halfwidth(0.0, 50) == 0.0
    # 90%: z = 1.6449
    assert wald_halfwidth(0.5, 100, confidence=0.90) == pytest.approx(1.6448536 * 0.05, rel=1e-6)


def test_examples_needed_hand_worked() -> None:
    # p = 0.5, target 0.02: (1.96 / 0.02)^2 * 0.25 = 2400.9 -> 2401
    (acc,) = power_from_rates({"accuracy": 0.5}, n_planned=100, target=0.02)
    assert acc.n_needed == 2401
    assert acc.halfwidth == pytest.approx(Z95 * 0.05)
    # p = 0.2: (1.96 / 0.02)^2 * 0.16 = 1536.6 -> 1537
    assert power_from_rates({"ndr": 0.2}, 100, 0.02)[0].n_needed == 1537
    # an exact square is not rounded up: half-width 0.04 at 100 examples, target 0.02 -> 400
    assert examples_needed(0.04, 100, 0.02) == 400
    assert examples_needed(0.01, 100, 0.02) == 25
    assert examples_needed(0.0, 100, 0.02) is None
    # the examples needed reach the target, one fewer does not
    n = power_from_rates({"accuracy": 0.3}, 100, 0.015)[0].n_needed
    assert wald_halfwidth(0.3, n) <= 0.015 < wald_halfwidth(0.3, n - 1)
    assert project_halfwidth(0.1, 100, 400) == pytest.approx(0.05)


def test_parse_rates() -> None:
    assert parse_rates([]) == {"accuracy": 0.5, "ndr": 0.5, "rsr": 0.5, "ror": 0.5}
    assert parse_rates(["0.3", "ndr=0.9"]) == {"accuracy": 0.3, "ndr": 0.9, "rsr": 0.3, "ror": 0.3}
    with pytest.raises(ValueError, match="unknown metric 'acc'"):
        parse_rates(["acc=0.3"])
    with pytest.raises(ValueError, match=r"must be in \[0, 1\]"):
        parse_rates(["1.5"])
    with pytest.raises(ValueError, match="expected P or METRIC=P"):
        parse_rates(["ndr=high"])
    with pytest.raises(ValueError, match="target-halfwidth must be > 0"):
        examples_needed(0.1, 10, 0)


def synthetic(n: int, flip: float = 0.0, seed: int = 1) -> pd.DataFrame:
    """Closed-book (k = 0) and k in {1, 2} x 2 orders per example; RAG correct with p = 0.6,
    closed-book with 0.5, independently. ``flip``: chance a k = 1 row differs from the
    example's RAG outcome (0: every per-example value is 0 or 1)."""
    rng = np.random.default_rng(seed)
    base = {"generator": "g", "strategy": "vanilla", "dataset": "d"}
    rows = []
    for i in range(n):
        rag, closed = float(rng.random() < 0.6), float(rng.random() < 0.5)
        rows.append(
            {"example_id": f"q{i:04d}", "k": 0, "order": "none", "retriever": "none", "score": closed, **base}
        )
        for k in (1, 2):
            for order in ("original", "reversed"):
                s = 1 - rag if k == 1 and rng.random() < flip else rag
                rows.append(
                    {
                        "example_id": f"q{i:04d}",
                        "k": k,
                        "order": order,
                        "retriever": "bm25",
                        "score": s,
                        **base,
                    }
                )
    return pd.DataFrame(rows)


def test_pilot_bootstrap_matches_the_closed_form_on_binary_examples() -> None:
    df = synthetic(400)
    rows, notes = power_from_pilot(df, n_planned=400)
    got = {r.metric: r for r in rows}
    acc_hat = float(df.loc[df["k"] > 0, "score"].mean())
    # NDR per example is 1 unless RAG is wrong and closed-book right: also 0/1
    ndr_hat = got["ndr"].value
    for metric, p in (("accuracy", acc_hat), ("ndr", ndr_hat)):
        assert got[metric].n_basis == 400
        assert got[metric].halfwidth == pytest.approx(wald_halfwidth(p, 400), rel=0.1), metric
    assert 0.74 < ndr_hat < 0.86  # 1 - 0.4 * 0.5 = 0.8 in expectation
    # RSR and ROR are 1 for every example (k = 2 repeats k = 1; orders agree): no interval to project
    assert got["rsr"].n_needed is None and got["ror"].n_needed is None
    assert any("rsr" in n and "no variation" in n for n in notes)
    # the pilot's half-width is exactly rr report's bootstrap interval, less the small-sample rules
    # (which do not scale as 1 / sqrt(n), so are not projected)
    ci = robustness_ci(df, system_by(df), small_sample=False).iloc[0]
    assert got["ndr"].halfwidth_basis == (ci["ndr_ci_high"] - ci["ndr_ci_low"]) / 2


def test_pilot_projection_predicts_the_bootstrap_at_the_planned_size() -> None:
    full = synthetic(400, flip=0.2, seed=3)
    pilot = full[full["example_id"] < "q0100"]
    assert pilot["example_id"].nunique() == 100
    projected = {r.metric: r for r in power_from_pilot(pilot, n_planned=400)[0]}
    actual = {r.metric: r for r in power_from_pilot(full, n_planned=400)[0]}
    for metric in ("accuracy", "ndr", "rsr", "ror"):
        p, a = projected[metric], actual[metric]
        assert p.n_basis == 100 and p.halfwidth == pytest.approx(p.halfwidth_basis / 2)
        assert p.halfwidth == pytest.approx(a.halfwidth, rel=0.25), metric
        # n_needed brings the projected half-width to the target
        assert project_halfwidth(p.halfwidth_basis, 100, p.n_needed) <= 0.02 + 1e-12
        assert math.isfinite(p.value)


def test_plan_cli_projects_a_pilot_and_rejects_bad_options(tmp_path: Path, capsys) -> None:
    from tests.test_docs import rr_main
    from tests.test_plan import SMALL

    pilot = tmp_path / "pilot" / "scores.parquet"
    pilot.parent.mkdir()
    synthetic(100, flip=0.2).to_parquet(pilot)
    expected = {r.metric: r for r in power_from_pilot(pd.read_parquet(pilot), 2, 0.05)[0]}
    out = tmp_path / "plan.json"
    args = ["plan", "--json", str(out), "--pilot", str(pilot.parent), "--target-halfwidth", "0.05"]
    code, stdout, err = rr_main([*args, *SMALL, f"paths.output_root={tmp_path}"], capsys)  # in-process
    assert code == 0, err[-3000:]
    got = {r["metric"]: r for r in json.loads(out.read_text())["power"]}
    for metric, r in expected.items():
        assert got[metric]["n_basis"] == 100 and got[metric]["n_planned"] == 2
        assert got[metric]["halfwidth"] == pytest.approx(r.halfwidth)
        assert got[metric]["n_needed"] == r.n_needed
    assert "power at 2 examples" in stdout and "g / vanilla" in stdout

    code, _, err = rr_main(["plan", "--assumed-rate", "acc=0.3", *SMALL], capsys)
    assert code == 2 and "unknown metric 'acc'" in err
    code, _, err = rr_main(["plan", "--pilot", str(tmp_path / "nope"), *SMALL], capsys)
    assert code == 2 and "nope" in err
