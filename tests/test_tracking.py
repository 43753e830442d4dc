"""logger=wandb with the real wandb package in offline mode, and a W&B failure that must not cost results."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from rr.config import instantiate
from rr.jobfolder import SUMMARY_VERSION, JobSummary, MetricRow
from rr.pipeline import run_job
from rr.tracking import WandbLogger, flat_summary, scrub_secrets

from .conftest import compose_config

#: A real but tiny job: closed-book only (no retrieval), 2 questions; the simulated reader on the
#: synthetic task (what is checked is the logger's, not a model's answers).
TINY_CB = [
    "logger=wandb",
    "generator=simulated",
    "dataset=synthetic",
    "strategy=[closed_book]",
    "grid.k=[0]",
    "dataset.n=2",
    "generator.max_new_tokens=4",
]


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("wandb")  # one generation cache: the second job makes no model call


def test_scrub_secrets_and_flat_summary() -> None:
    cfg = {"generator": {"model": "m", "api_key": "sk-1", "AuthToken": "t"}, "db_password": "p", "seed": 0}
    assert scrub_secrets(cfg) == {"generator": {"model": "m"}, "seed": 0}
    # words, not substrings: max_new_tokens was dropped from every logged config (issue 52)
    assert scrub_secrets({"max_new_tokens": 4, "HF_TOKEN": "x", "keys": 1}) == {
        "max_new_tokens": 4,
        "keys": 1,
    }
    flat = flat_summary(
        JobSummary(
            requests=4,
            name="x",
            timings_s={"generate:vanilla": 1.5},
            counters={"fallback": 2},
            answer_recall={"bm25": {"1": 0.5}},
            metrics=[
                MetricRow.from_dict(
                    {"strategy": "vanilla", "retriever": "bm25", "ndr": 0.75, "generator": "g"}
                )
            ],
        )
    )
    assert flat == {
        "summary_version": SUMMARY_VERSION,
        "requests": 4,
        "timings_s/generate:vanilla": 1.5,
        "counters/fallback": 2,
        "answer_recall/bm25/k=1": 0.5,
        "metrics/vanilla/bm25/ndr": 0.75,
    }


def test_wandb_offline_run_per_job_resumed_on_rerun(shared: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wandb_dir = shared / "wandb_dir"
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(wandb_dir))
    monkeypatch.setenv("WANDB_SILENT", "true")
    cfg = compose_config(TINY_CB, shared)
    assert isinstance(instantiate(cfg.logger), WandbLogger)
    res = run_job(cfg, shared / "job")
    jid = res.summary.job_id
    assert (shared / "job" / "scores.parquet").exists() and not (shared / "job" / "wandb_error.txt").exists()
    runs = sorted((wandb_dir / "wandb").glob(f"offline-run-*-rr-{jid}"))
    assert len(runs) == 1
    assert list(runs[0].glob(f"run-rr-{jid}.wandb")), sorted(p.name for p in runs[0].iterdir())
    # a re-run of the same job logs to the same run id
    run_job(cfg, shared / "job")
    assert len(sorted((wandb_dir / "wandb").glob(f"offline-run-*-rr-{jid}"))) == 2
    assert len({p.name.rsplit("-", 2)[-1] for p in (wandb_dir / "wandb").glob("offline-run-*")}) == 1


def test_wandb_failure_never_loses_results(
    shared: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import wandb

    def broken_init(*args, **kwargs):
        raise RuntimeError("wandb service unreachable")

    monkeypatch.setattr(wandb, "init", broken_init)
    cfg = compose_config(TINY_CB, shared)
    out = shared / "failing_job"
    with caplog.at_level(logging.ERROR, logger="rr.tracking"):
        res = run_job(cfg, out)
    assert (out / "scores.parquet").exists() and len(res.scores) == 2
    assert json.loads((out / "summary.json").read_text())["rows"] == 2
    assert "RuntimeError: wandb service unreachable" in (out / "wandb_error.txt").read_text()
    assert any("W&B logging failed" in r.getMessage() for r in caplog.records)


def test_degenerate_metric_logged_as_null_with_its_reason() -> None:
    """The console blanks NDR when closed-book accuracy is 0 (1 by construction); W&B logged 1.0 (issue 52)."""
    row = {"strategy": "vanilla", "retriever": "bm25", "generator": "g", "ndr": 1.0, "rsr": 0.8, "ror": 0.9}
    row |= {"robustness": 0.896, "accuracy": 0.5, "closed_book_accuracy": 0.0, "n_orders": 2}
    flat = flat_summary(JobSummary(name="x", metrics=[MetricRow.from_dict(row)]))
    assert flat["metrics/vanilla/bm25/ndr"] is None and "1 by construction" in str(
        flat["metrics/vanilla/bm25/ndr_note"]
    )
    assert flat["metrics/vanilla/bm25/robustness"] is None  # it combines NDR
    assert flat["metrics/vanilla/bm25/rsr"] == 0.8 and "metrics/vanilla/bm25/rsr_note" not in flat


def test_wandb_run_config_is_the_jobs_resolved_config(shared: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's config names the experiment, as the job's config.yaml does (it logged ``experiment: null``).
    The real offline wandb.init runs; the spy only keeps the config it was given (an offline run
    writes its config into the binary run file, not as YAML)."""
    import wandb
    import yaml

    given: list[dict] = []
    real_init = wandb.init
    monkeypatch.setattr(wandb, "init", lambda *a, **kw: (given.append(kw["config"]), real_init(*a, **kw))[1])
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(shared / "wandb_exp"))
    monkeypatch.setenv("WANDB_SILENT", "true")
    cfg = compose_config(["experiment=cao2025_mini", *TINY_CB, "retriever=[bm25]"], shared)
    out = shared / "exp_job"
    run_job(cfg, out)
    on_disk = yaml.safe_load((out / "config.yaml").read_text())
    (config,) = given
    assert on_disk["experiment"] == config["experiment"] == "cao2025_mini"
    assert config["grid"] == on_disk["grid"] and config["generator"] == on_disk["generator"]
