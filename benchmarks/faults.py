"""Fault injection: SIGKILL at random points, a same-folder race, and a full disk; every resumed
job must give the reference score table, nothing may crash, and a kill may waste at most the
batch in flight (one model call at ``generator.batch_size=1``, ``flush_every=1``).

Each job is a real ``rr`` run (``python -m rr``'s entry point) on the packaged SmolLM2-135M,
run in a worker process that only adds instrumentation: it appends an event line (with
``os.write`` on an ``O_APPEND`` file, so it survives SIGKILL) when retrieval starts, when the
model starts loading, before every batch of prompts goes to the model (``calls <n>``), and after
``scores.parquet`` is written. The parent reads these events to kill inside a chosen phase and to
count every prompt that reached the model, including the batch a kill threw away.

* kill/resume: for each kill, a fresh output root and cache; the job is started, SIGKILLed a
  random time after entering a phase (retrieval, model load, generation, or right after
  ``scores.parquet``, before ``summary.json``), then re-run to completion. Extra model calls of a
  kill = prompts sent by both attempts - prompts of a clean run.
* race: three processes start the same job in the same folder with the same cache.
* disk-full: the output root and cache on a small tmpfs (``mount -t tmpfs``, needs root), filled
  so that a few KiB are left; the job must fail with ENOSPC without leaving temporaries, and its
  re-run after space is freed must give the reference table. Without permission to mount, the
  worker gets a file-size limit instead (``RLIMIT_FSIZE``: writes past it fail with EFBIG).

    python benchmarks/faults.py [--kills 8] [--seed 0] [--workdir DIR]
    python benchmarks/faults.py --quick     # one kill, a race of 2, one disk-full run, simulated reader

``--reader simulated`` (``--quick``'s) runs the same job on the simulated reader over the synthetic
task (``generator=simulated dataset=synthetic corpus=synthetic``): the same pipeline, cache and
writers, the same events (but no model load), each job ~5x cheaper than loading SmolLM2.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _startup import start

REPO = start(env=())  # this checkout's rr, also for the parent's checks

#: What ``--quick`` prints (tests/test_benchmarks.py checks each regex matches a line).
QUICK_FIGURES = [
    r"^reference: \d+ rows, \d+ model calls",
    r"^  kill kill0: aimed at '[^']+', landed in '[^']+', extra calls -?\d+, identical (True|False), crash (True|False)$",
    r"^kill/resume: kills=\d+ \(of \d+ tries; the rest finished first\), resumed-identical=\d+/\d+",
    r"^race: \d+ processes, same job, same folder and cache: exit codes \[",
    r"^  disk-full \((tmpfs|RLIMIT_FSIZE), \d+ KiB free\): job failed=(True|False)",
    r"^disk-full: runs=\d+, failed=\d+, resumed-identical=\d+/\d+",
    r"^total \d+ s$",
]

#: The job: 2 questions, BM25 over 300 passages, k = 1 in two orders (one prompt) plus
#: closed-book: 4 distinct prompts, one per model call, each flushed to the cache at once.
JOB = [
    "dataset.n=2",
    "retriever=bm25",
    "grid.k=[1]",
    "grid.orders=[original,reversed]",
    "corpus.max_passages=300",
    "generator.max_new_tokens=4",
    "generator.batch_size=1",
    "flush_every=1",
    "progress=false",
]
#: Phase -> (event that opens it, how many of them, longest random delay after it in seconds).
#: Generation opens at the second batch: the first one waits for the model to load.
#: ``--reader simulated``: the same job without a model (no ``load`` event: aim no kill at model load).
SIMULATED = ["generator=simulated", "dataset=synthetic", "corpus=synthetic"]
PHASES = {
    "retrieval": ("retrieve", 1, 0.3),
    "model load": ("load", 1, 1.0),
    "generation": ("calls", 2, 1.5),
    "scores.parquet -> summary.json": ("scores", 1, 0.0),
}


# ------------------------------------------------------------------ worker (the instrumented rr)


def worker(events: str, overrides: list[str]) -> None:
    fd = os.open(events, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def emit(line: str) -> None:
        os.write(fd, f"{line}\n".encode())

    import rr.pipeline
    from rr.generation.hf import HFGenerator
    from rr.generation.simulated import SimulatedGenerator
    from rr.retrieval.runs import RunCache

    retrieve, load, generate_local, simulated, write_scores = (
        RunCache.retrieve,
        HFGenerator.load,
        HFGenerator.generate_local,
        SimulatedGenerator.generate,
        rr.pipeline.write_scores,
    )

    def retrieve_(self, *a, **kw):  # type: ignore[no-untyped-def]
        emit("retrieve")
        return retrieve(self, *a, **kw)

    def load_(self):  # type: ignore[no-untyped-def]
        if self._model is None:
            emit("load")
        return load(self)

    def generate_local_(self, prompts, *a, **kw):  # type: ignore[no-untyped-def]
        emit(f"calls {len(prompts)}")
        return generate_local(self, prompts, *a, **kw)

    def simulated_(self, prompts, *a, **kw):  # type: ignore[no-untyped-def]
        emit(f"calls {len(prompts)}")
        return simulated(self, prompts, *a, **kw)

    def write_scores_(*a, **kw):  # type: ignore[no-untyped-def]
        out = write_scores(*a, **kw)
        emit("scores")
        return out

    RunCache.retrieve, HFGenerator.load, HFGenerator.generate_local = retrieve_, load_, generate_local_
    SimulatedGenerator.generate = simulated_  # type: ignore[method-assign]
    rr.pipeline.write_scores = write_scores_
    if os.environ.get("RR_FAULTS_FSIZE"):  # injected disk-full: writes past the limit fail (EFBIG)
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        limit = int(os.environ["RR_FAULTS_FSIZE"])
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    emit("start")
    from rr.commands.cli import main

    sys.argv = ["rr", *overrides]
    main()


# ------------------------------------------------------------------ parent


#: Extra overrides of every job (``--reader simulated``: :data:`SIMULATED`).
READER: list[str] = []


def job_args(root: Path) -> list[str]:
    return [*JOB, *READER, f"paths.output_root={root}", f"hydra.run.dir={root}/job"]


def start(root: Path, events: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    root.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, __file__, "--worker", str(events), "--", *job_args(root)]
    events.parent.mkdir(parents=True, exist_ok=True)
    log = open(events.with_suffix(".stderr"), "w")  # noqa: SIM115 (closed with the process)
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "OMP_NUM_THREADS": "1",  # several jobs at once on a small machine: no oversubscription
        **(env or {}),
    }
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=log)


def events_of(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def calls_of(path: Path) -> int:
    lines = path.read_text().splitlines() if path.exists() else []
    return sum(int(line.split()[1]) for line in lines if line.startswith("calls "))


def table(root: Path):
    import pandas as pd

    from rr.jobfolder import SCORES_FILE
    from rr.results import CELL_KEYS

    df = pd.read_parquet(root / "job" / SCORES_FILE)
    cols = [c for c in df.columns if c != "job_id"]
    return df[cols].sort_values(["strategy", "example_id", *CELL_KEYS]).reset_index(drop=True)


def same_table(root: Path, ref) -> bool:
    import pandas as pd

    try:
        pd.testing.assert_frame_equal(table(root), ref)
    except (AssertionError, OSError, ValueError):
        return False
    return True


def temporaries(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if ".tmp" in p.name)


def bad_cache_lines(root: Path) -> int:
    from rr.generation.cache import parse_entry

    return sum(
        1
        for shard in (root / "cache").rglob("*.jsonl")
        for raw in shard.read_bytes().split(b"\n")
        if raw.strip() and parse_entry(raw) is None
    )


def run_to_end(root: Path, events: Path, env: dict[str, str] | None = None) -> int:
    return start(root, events, env).wait()


def kill_trial(root: Path, phase: str, rng: random.Random) -> dict:
    from rr.jobfolder import SUMMARY_FILE

    event, count, max_delay = PHASES[phase]
    ev = root / "attempt1.events"
    proc = start(root, ev)
    while proc.poll() is None and events_of(ev).count(event) < count:
        time.sleep(0.002)
    if proc.poll() is None:
        time.sleep(rng.uniform(0, max_delay))
        proc.send_signal(signal.SIGKILL)
    rc = proc.wait()
    seen = events_of(ev)
    landed = "finished first"
    if rc == -signal.SIGKILL:
        last = next((e for e in reversed(seen) if e in {"start", "retrieve", "load", "calls", "scores"}), "")
        landed = {
            "start": "start-up",
            "retrieve": "retrieval",
            "load": "model load",
            "calls": "generation",
        }.get(last, "scores.parquet -> summary.json")
        if last == "scores" and (root / "job" / SUMMARY_FILE).exists():
            landed = "after summary.json"
    rc2 = run_to_end(root, root / "attempt2.events")
    return {
        "phase": phase,
        "landed": landed,
        "killed": rc == -signal.SIGKILL,
        "crash": (rc not in (0, -signal.SIGKILL)) or rc2 != 0,
        "calls": calls_of(ev) + calls_of(root / "attempt2.events"),
        "root": root,
    }


def disk_full_trial(root: Path, free_kib: int, ref) -> dict:
    """The job on a tmpfs with ``free_kib`` KiB left; then space is freed and the job re-run."""
    from rr.jobfolder import read_summary

    root.mkdir(parents=True)
    logs = root.with_name(root.name + "-logs")  # off the full disk: instrumentation must not fail
    mounted = (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(root)], capture_output=True
        ).returncode
        == 0
    )
    env = None
    try:
        if mounted:
            st = os.statvfs(root)
            with open(root / "filler", "wb") as f:
                f.write(b"\0" * (st.f_bavail * st.f_frsize - free_kib * 1024))
        else:
            env = {"RR_FAULTS_FSIZE": str(free_kib * 1024)}
        rc = run_to_end(root, logs / "attempt1.events", env)
        err = (logs / "attempt1.stderr").read_text()
        # numpy's tofile reports a short write as "N requested and M written" (no errno)
        enospc = any(m in err for m in ("No space left on device", "File too large", "requested and"))
        left = temporaries(root)
        bad = bad_cache_lines(root)
        (root / "filler").unlink(missing_ok=True)
        rc2 = run_to_end(root, logs / "attempt2.events")
        summary = read_summary(root / "job") if rc2 == 0 else None
        return {
            "mode": "tmpfs" if mounted else "RLIMIT_FSIZE",
            "free_kib": free_kib,
            "failed": rc != 0,
            "error_is_disk_full": rc == 0 or enospc,
            "temporaries": left,
            "torn_cache_lines": bad,
            "skipped_on_resume": summary.cache_torn_lines if summary is not None else None,
            "identical": rc2 == 0 and same_table(root, ref),
            "crash": rc2 != 0 or (rc != 0 and not enospc),
        }
    finally:
        if mounted:
            subprocess.run(["umount", str(root)], check=False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1 kill, a race of 2, 1 disk-full run")
    ap.add_argument("--kills", type=int, default=8, help="SIGKILLs (phases taken in turn)")
    ap.add_argument("--racers", type=int, default=3, help="processes starting the same job at once")
    ap.add_argument("--reader", choices=["hf", "simulated"], default="hf", help="the jobs' generator")
    ap.add_argument(
        "--disk-full", type=int, nargs="*", default=[8, 64, 248, 264, 280], help="KiB left free per run"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir", type=Path, default=None, help="kept when given (default: a temp dir)")
    args = ap.parse_args(argv)
    if args.quick:
        args.kills, args.racers, args.disk_full, args.reader = 1, 2, [8], "simulated"
    READER[:] = SIMULATED if args.reader == "simulated" else []
    rng = random.Random(args.seed)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="rr-faults-"))
    t0 = time.perf_counter()
    try:
        ref_root = work / "reference"
        rc = run_to_end(ref_root, ref_root / "attempt1.events")
        if rc != 0:
            print((ref_root / "attempt1.stderr").read_text()[-3000:], file=sys.stderr)
            return 1
        ref = table(ref_root)
        clean_calls = calls_of(ref_root / "attempt1.events")
        print(f"reference: {len(ref)} rows, {clean_calls} model calls ({time.perf_counter() - t0:.0f} s)")

        phases = list(PHASES)
        trials = [kill_trial(work / f"kill{i}", phases[i % len(phases)], rng) for i in range(args.kills)]
        for t in trials:
            t["identical"] = same_table(t["root"], ref)
            t["extra"] = t["calls"] - clean_calls
            print(
                f"  kill {t['root'].name}: aimed at {t['phase']!r}, landed in {t['landed']!r}, "
                f"extra calls {t['extra']}, identical {t['identical']}, crash {t['crash']}"
            )
        killed = [t for t in trials if t["killed"]]
        extras = [t["extra"] for t in killed]
        print(
            f"kill/resume: kills={len(killed)} (of {len(trials)} tries; the rest finished first), "
            f"resumed-identical={sum(t['identical'] for t in killed)}/{len(killed)}, "
            f"extra model calls per kill: mean {sum(extras) / max(len(extras), 1):.2f}, "
            f"max {max(extras, default=0)}, crashes={sum(t['crash'] for t in trials)}"
        )

        race_root = work / "race"
        procs = [start(race_root, race_root / f"racer{i}.events") for i in range(args.racers)]
        rcs = [p.wait() for p in procs]
        print(
            f"race: {args.racers} processes, same job, same folder and cache: exit codes {rcs}, "
            f"crashes={sum(rc != 0 for rc in rcs)}, identical={same_table(race_root, ref)}, "
            f"model calls {sum(calls_of(race_root / f'racer{i}.events') for i in range(args.racers))} "
            f"(one clean run: {clean_calls}), leftover temporaries={len(temporaries(race_root))}, "
            f"bad cache lines={bad_cache_lines(race_root)}"
        )

        fulls = [disk_full_trial(work / f"full{kib}", kib, ref) for kib in args.disk_full]
        for f in fulls:
            print(
                f"  disk-full ({f['mode']}, {f['free_kib']} KiB free): job failed={f['failed']}, "
                f"error names disk full={f['error_is_disk_full']}, temporaries left={f['temporaries']}, "
                f"torn cache lines={f['torn_cache_lines']} (skipped and counted on resume: "
                f"{f['skipped_on_resume']}), resumed identical={f['identical']}"
            )
        if fulls:
            print(
                f"disk-full: runs={len(fulls)}, failed={sum(f['failed'] for f in fulls)}, "
                f"resumed-identical={sum(f['identical'] for f in fulls)}/{len(fulls)}, "
                f"temporaries left={sum(len(f['temporaries']) for f in fulls)}, "
                f"crashes={sum(f['crash'] for f in fulls)}"
            )
        print(f"total {time.perf_counter() - t0:.0f} s")
        ok = (
            all(t["identical"] and not t["crash"] for t in trials)
            and max(extras, default=0) <= 1
            and all(rc == 0 for rc in rcs)
            and all(f["identical"] and not f["crash"] and not f["temporaries"] for f in fulls)
        )
        return 0 if ok else 1
    finally:
        if args.workdir is None:
            with contextlib.suppress(OSError):
                shutil.rmtree(work)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[4:])
    else:
        sys.exit(main())
