"""Coverage of rr's reported intervals, on score tables drawn from the simulated reader's population.

The simulated reader (:mod:`rr.generation.simulated`) fixes how a prompt is answered; this module adds
a *retrieval model* (where the answer passage and a near-miss distractor land in the ranking), so
that a whole score table -- closed-book and every (k, order) cell of ``n`` questions -- can be drawn
directly in numpy, without the pipeline, thousands of times a second. Each draw's per-example NDR,
RSR, ROR, accuracy and closed-book accuracy (exactly the decomposition rr's intervals bootstrap,
:func:`rr.analysis.intervals.per_example_robustness`; a test checks they agree) go through
:func:`rr.stats.bootstrap_cluster_means`, and :func:`coverage` counts how often each reported 95%
interval holds the planted value (:func:`planted_population`: the same model at ``10**6`` questions).

Retrieval model (:class:`Design`): the answer passage is at rank 1 with probability ``p_top``, else
uniform on ranks ``2 .. max_rank`` (beyond ``k`` it is not in the prompt); with probability
``p_distractor`` one distractor sits at a uniform rank ``1 .. max_rank`` other than the answer's.
``original`` shows ranks in order, ``reversed`` backwards, ``shuffled`` in a uniform permutation.
Every cell's prompt is distinct, so given the question's knowledge draw its cells are independent,
as the simulated reader's are (one seeded draw per prompt).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rr.analysis.intervals import BASE_METRICS
from rr.generation.simulated import ReaderParams
from rr.stats import BootstrapMethod

ORDERS = ("original", "reversed", "shuffled")


@dataclass(frozen=True)
class Design:
    """The grid and the retrieval model of the drawn tables (see the module docstring)."""

    ks: tuple[int, ...] = (5, 10, 20)
    orders: tuple[str, ...] = ORDERS
    p_top: float = 0.5
    max_rank: int = 25
    p_distractor: float = 0.7


def _positions(rank: np.ndarray, k: int, order: str, rng: np.random.Generator) -> np.ndarray:
    """0-based prompt position of a 1-based rank in the top-``k`` shown in ``order`` (-1: not shown)."""
    shown = rank <= k
    if order == "original":
        pos = rank - 1
    elif order == "reversed":
        pos = k - rank
    else:  # a uniform permutation: a uniform position
        pos = rng.integers(0, k, size=rank.shape)
    return np.where(shown, pos, -1)


def draw_scores(
    params: ReaderParams, design: Design, n: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """One score table of ``n`` questions: ``(scores[n, len(ks), len(orders)], closed[n])``, 0/1 floats.

    A shuffled context places the answer and the distractor at two distinct uniform positions.
    """
    known = rng.random(n) < params.knowledge
    top = rng.random(n) < design.p_top
    gold = np.where(top, 1, rng.integers(2, design.max_rank + 1, size=n))
    has_d = rng.random(n) < design.p_distractor
    d = rng.integers(1, design.max_rank, size=n)  # uniform over ranks other than the answer's
    d = np.where(d >= gold, d + 1, d)
    dist = np.where(has_d, d, design.max_rank + 1)
    win_earlier = (1.0 + params.order) / 2.0
    scores = np.empty((n, len(design.ks), len(design.orders)))
    for i, k in enumerate(design.ks):
        w = params.curve(k)
        for j, order in enumerate(design.orders):
            pg_pos = _positions(gold, k, order, rng)
            if order == "shuffled":  # the distractor at another uniform position
                other = rng.integers(0, k - 1, size=n)
                pd_pos = np.where(other >= pg_pos, other + 1, other)
                pd_pos = np.where(pg_pos < 0, rng.integers(0, k, size=n), pd_pos)
                pd_pos = np.where(dist <= k, pd_pos, -1)
            else:
                pd_pos = _positions(dist, k, order, rng)
            pg = np.where(pg_pos >= 0, w[np.clip(pg_pos, 0, k - 1)], 0.0)
            pdn = np.where(pd_pos >= 0, params.distractor * w[np.clip(pd_pos, 0, k - 1)], 0.0)
            c = np.where(pg_pos < pd_pos, win_earlier, 1.0 - win_earlier)
            p = pg * (1 - pdn) + pg * pdn * c + (1 - pg) * (1 - pdn) * known
            scores[:, i, j] = rng.random(n) < p
    return scores, known.astype(float)


def per_example(scores: np.ndarray, closed: np.ndarray) -> pd.DataFrame:
    """Per-example NDR, RSR, ROR, accuracy and closed-book accuracy of drawn tables (the means of
    these columns are the metrics of Cao et al. §3 as :mod:`rr.metrics.robustness` computes them)."""
    ndr = (scores >= closed[:, None, None]).mean(axis=(1, 2))
    best = np.maximum.accumulate(scores, axis=1)[:, :-1, :]
    rsr = (scores[:, 1:, :] >= best).mean(axis=(1, 2))
    ror = (1.0 - 2.0 * scores.std(axis=2)).mean(axis=1)
    return pd.DataFrame(
        {
            "ndr": ndr,
            "rsr": rsr,
            "ror": ror,
            "accuracy": scores.mean(axis=(1, 2)),
            "closed_book_accuracy": closed,
        }
    )


def score_table(scores: np.ndarray, closed: np.ndarray, design: Design) -> pd.DataFrame:
    """The drawn table as rr score rows (``example_id``, ``k``, ``order``, ``score``, ``retriever``)."""
    n = len(closed)
    rows = [
        pd.DataFrame(
            {"example_id": np.arange(n), "k": 0, "order": "none", "score": closed, "retriever": "none"}
        )
    ]
    for i, k in enumerate(design.ks):
        for j, order in enumerate(design.orders):
            rows.append(
                pd.DataFrame(
                    {
                        "example_id": np.arange(n),
                        "k": k,
                        "order": order,
                        "score": scores[:, i, j],
                        "retriever": "sim",
                    }
                )
            )
    return pd.concat(rows, ignore_index=True).assign(generator="simulated", strategy="vanilla")


def planted_population(
    params: ReaderParams, design: Design, n: int = 1_000_000, seed: int = 12345, chunk: int = 100_000
) -> dict[str, float]:
    """The planted value of each metric: its mean over ``n`` drawn questions (Monte Carlo; the
    standard error is below 0.0005 for every metric at the default ``n``)."""
    rng = np.random.default_rng(seed)
    sums = dict.fromkeys(BASE_METRICS, 0.0)
    done = 0
    while done < n:
        m = min(chunk, n - done)
        values = per_example(*draw_scores(params, design, m, rng))
        for c in BASE_METRICS:
            sums[c] += float(values[c].sum())
        done += m
    return {c: s / n for c, s in sums.items()}


def coverage(
    params: ReaderParams,
    design: Design,
    n: int,
    reps: int,
    planted: dict[str, float],
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    method: BootstrapMethod = "BCa",
    small_sample: bool = True,
) -> pd.DataFrame:
    """How often rr's interval (:func:`rr.stats.bootstrap_cluster_means` with ``method`` and
    ``small_sample``, as ``rr report`` computes it: BCa with the small-sample expansion) holds the
    planted value, over ``reps`` drawn tables of ``n`` questions. The geometric mean of NDR, RSR and
    ROR (``robustness``, planted: that of the planted values) is checked too.

    Returns:
        One row per metric: ``metric``, ``n``, ``reps``, ``coverage``, ``mean_halfwidth``,
        ``below`` / ``above`` (share of intervals entirely below / above the planted value).
    """
    from rr.stats import bootstrap_cluster_means

    metrics = (*BASE_METRICS, "robustness")
    planted = {**planted, "robustness": float(np.cbrt(planted["ndr"] * planted["rsr"] * planted["ror"]))}
    rng = np.random.default_rng(seed)
    hits: dict[str, list[bool]] = {c: [] for c in metrics}
    width: dict[str, list[float]] = {c: [] for c in metrics}
    below = {c: 0 for c in metrics}
    above = {c: 0 for c in metrics}
    for r in range(reps):
        values = per_example(*draw_scores(params, design, n, rng))
        res = bootstrap_cluster_means(
            values,
            {"robustness": lambda m: np.cbrt(m["ndr"] * m["rsr"] * m["ror"])},
            n_resamples=n_resamples,
            confidence=confidence,
            seed=seed + r,
            method=method,
            small_sample=small_sample,
        )
        for c in metrics:
            lo, hi, truth = res[c].ci_low, res[c].ci_high, planted[c]
            hits[c].append(lo <= truth <= hi)
            width[c].append((hi - lo) / 2)
            below[c] += hi < truth
            above[c] += lo > truth
    return pd.DataFrame(
        [
            {
                "metric": c,
                "n": n,
                "reps": reps,
                "coverage": float(np.mean(hits[c])),
                "mean_halfwidth": float(np.mean(width[c])),
                "below": below[c] / reps,
                "above": above[c] / reps,
            }
            for c in metrics
        ]
    )


def binomial_band(reps: int, nominal: float = 0.95, level: float = 0.99) -> tuple[float, float]:
    """The ``level`` binomial band of a coverage rate over ``reps`` replications around ``nominal``
    (normal approximation: 93.2-96.8% at 1,000 replications)."""
    from scipy.stats import norm

    z = float(norm.ppf(0.5 + level / 2))
    half = z * (nominal * (1 - nominal) / reps) ** 0.5
    return nominal - half, nominal + half
