"""Coverage of rr's 95% intervals, and `rr plan`'s predicted half-widths, against the simulated reader.

1. Coverage (score-table level, no pipeline; rr.analysis.calibration): ``--reps`` tables of ``n``
   questions drawn from the simulated reader's population at each ``--sizes`` (12 and 24: the
   demo's and most first experiments' sizes); each table's intervals are
   rr.stats.bootstrap_cluster_means as rr report computes them (BCa with the small-sample rules;
   ``--plain``: without them); the share holding the planted value (the population mean, 10^6
   questions) per metric (the geometric mean ``robustness`` too) and size, with the 99% binomial band.
2. Plan check (the whole pipeline): a pilot simulated job of ``--pilot`` questions, then simulated
   jobs at ``--plan-sizes``; rr plan's pilot projection (rr.analysis.power.power_from_pilot, what
   ``rr plan --pilot`` prints), averaged over ``--pilots`` pilots (with their relative spread), vs
   the bootstrap half-width each job's rr report gives (rr.analysis.intervals.robustness_ci),
   averaged over ``--plan-seeds`` jobs per size.

    .venv/bin/python benchmarks/calibration.py                    # 1,000 reps at n = 12, 24, 50 and 500
    .venv/bin/python benchmarks/calibration.py --reps 200 --skip-plan
    .venv/bin/python benchmarks/calibration.py --quick           # seconds: 20 reps at n = 50, one small plan check
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _startup import start

start(env=())

from rr.analysis.calibration import Design, binomial_band, coverage, planted_population  # noqa: E402
from rr.generation.simulated import ReaderParams  # noqa: E402

#: What ``--quick`` prints (tests/test_benchmarks.py checks each regex matches a line).
QUICK_FIGURES = [
    r"^planted: \{'",
    r"^99% binomial band at \d+ replications: [\d.]+-[\d.]+$",
    r"^ *metric +n +reps +coverage",
    r"^plan check n=\d+ done$",
    r"^ *metric +pilot_n +n +predicted +pilot_rel_sd +observed +ratio +within_20pct$",
]


def coverage_table(sizes: list[int], reps: int, method: str, small_sample: bool = True) -> pd.DataFrame:
    params, design = ReaderParams(), Design()
    planted = planted_population(params, design)
    planted["robustness"] = float(np.cbrt(planted["ndr"] * planted["rsr"] * planted["ror"]))
    print("planted:", {k: round(v, 4) for k, v in planted.items()})
    out = []
    for n in sizes:
        t0 = time.perf_counter()
        cov = coverage(params, design, n, reps, planted, method=method, small_sample=small_sample)
        cov["planted"] = cov["metric"].map(planted)
        out.append(cov)
        print(f"n={n}: {time.perf_counter() - t0:.1f}s")
    table = pd.concat(out, ignore_index=True)
    lo, hi = binomial_band(reps)
    table["in_band"] = table["coverage"].between(lo, hi)
    print(f"99% binomial band at {reps} replications: {lo:.3f}-{hi:.3f}")
    return table


def plan_check(pilot: int, sizes: list[int], seeds: int, n_pilots: int) -> pd.DataFrame:
    from rr.analysis.intervals import robustness_ci
    from rr.analysis.power import power_from_pilot
    from rr.pipeline import run_job
    from tests.conftest import compose_config

    base = [
        "generator=simulated",
        "dataset=synthetic",
        "corpus=synthetic",
        "retriever=[bm25]",
        "grid.k=[5,10,20]",
        "corpus.max_passages=null",
        "generator.planted_reps=1",
    ]
    tmp = Path(tempfile.mkdtemp(prefix="rr-plan-check-"))
    metrics = ("accuracy", "ndr", "rsr", "ror")

    def job(n: int, seed: int) -> pd.DataFrame:
        cfg = compose_config([*base, f"dataset.n={n}", f"seed={seed}"], tmp)
        return run_job(cfg, tmp / f"n{n}-s{seed}").scores

    pilots = [job(pilot, 100 + i) for i in range(n_pilots)]
    rows = []
    for n in sizes:
        per_pilot: dict[str, list[float]] = {m: [] for m in metrics}
        for p in pilots:
            for r in power_from_pilot(p, n)[0]:
                per_pilot[r.metric].append(r.halfwidth)
        predicted = {m: float(np.mean(v)) for m, v in per_pilot.items()}
        observed: dict[str, list[float]] = {m: [] for m in metrics}
        for seed in range(seeds):
            ci = robustness_ci(job(n, seed), ["generator", "strategy"]).iloc[0]
            for m in metrics:
                observed[m].append((ci[m + "_ci_high"] - ci[m + "_ci_low"]) / 2)
        for m in metrics:
            obs = float(np.mean(observed[m]))
            rows.append(
                {
                    "metric": m,
                    "pilot_n": pilot,
                    "n": n,
                    "predicted": predicted[m],
                    "pilot_rel_sd": float(np.std(per_pilot[m]) / np.mean(per_pilot[m])),
                    "observed": obs,
                    "ratio": predicted[m] / obs,
                    "within_20pct": abs(predicted[m] / obs - 1) <= 0.2,
                }
            )
        print(f"plan check n={n} done")
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="20 reps at n = 50, one 20-question plan check")
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--sizes", type=int, nargs="+", default=[12, 24, 50, 500])
    ap.add_argument("--method", default="BCa", choices=["percentile", "basic", "BCa"])
    ap.add_argument(
        "--plain",
        action="store_true",
        help="intervals without the small-sample rules (rr's before issue 30: no expanded level, no Wilson)",
    )
    ap.add_argument("--skip-coverage", action="store_true")
    ap.add_argument("--skip-plan", action="store_true")
    ap.add_argument("--pilot", type=int, default=100)
    ap.add_argument("--plan-sizes", type=int, nargs="+", default=[200, 400, 800])
    ap.add_argument(
        "--plan-seeds", type=int, default=3, help="jobs per size (observed half-width: their mean)"
    )
    ap.add_argument("--pilots", type=int, default=3, help="pilot jobs (predicted half-width: their mean)")
    a = ap.parse_args(argv)
    if a.quick:
        a.reps, a.sizes, a.pilot, a.plan_sizes, a.plan_seeds, a.pilots = 20, [50], 10, [20], 1, 1
    pd.set_option("display.width", 160)
    if not a.skip_coverage:
        print(coverage_table(a.sizes, a.reps, a.method, not a.plain).round(4).to_string(index=False))
    if not a.skip_plan:
        print(plan_check(a.pilot, a.plan_sizes, a.plan_seeds, a.pilots).round(4).to_string(index=False))


if __name__ == "__main__":
    main()
