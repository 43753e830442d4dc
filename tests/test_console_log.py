"""Third-party log lines that read like failures stay off a job's console (rr.console_log)."""

from __future__ import annotations

import io
import logging
import logging.config

import pytest
from omegaconf import OmegaConf

from rr.config import compose
from rr.console_log import QuietThirdParty


def _record(name: str, level: int) -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, "msg", None, None)


def test_filter_drops_named_loggers_below_their_level_and_passes_others() -> None:
    f = QuietThirdParty({"faiss.loader": "WARNING", "bm25s": "INFO"})
    assert not f.filter(_record("faiss.loader", logging.INFO))
    assert f.filter(_record("faiss.loader", logging.WARNING))
    assert not f.filter(_record("bm25s", logging.DEBUG))
    assert not f.filter(_record("bm25s.tokenization", logging.DEBUG))  # children are covered
    assert f.filter(_record("bm25s", logging.INFO))
    assert f.filter(_record("faiss", logging.INFO))  # the parent is not
    assert f.filter(_record("rr.pipeline", logging.DEBUG))
    assert QuietThirdParty({}).filter(_record("faiss.loader", logging.INFO))


def test_unknown_level_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown level 'LOUD' for 'bm25s'"):
        QuietThirdParty({"bm25s": "LOUD"})


def test_job_logging_config_keeps_faiss_loader_and_bm25s_debug_off_the_console(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hydra's job logging as rr composes it: the console drops the lines, the file keeps them."""
    cfg = compose(["hydra.run.dir=" + str(tmp_path), "hydra.job.name=job"], return_hydra_config=True)
    spec = OmegaConf.to_container(cfg.hydra.job_logging, resolve=False)
    spec["handlers"]["file"]["filename"] = str(tmp_path / "job.log")
    console = io.StringIO()
    spec["handlers"]["console"]["stream"] = console
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    loggers = {name: logging.getLogger(name) for name in ("faiss.loader", "bm25s", "rr.test")}
    saved_levels = {n: lg.level for n, lg in loggers.items()}
    try:
        logging.config.dictConfig(spec)
        loggers["bm25s"].setLevel(logging.DEBUG)  # what `import bm25s` does
        loggers["faiss.loader"].info("Could not load library with AVX512 support due to:")
        loggers["bm25s"].debug("Building index from IDs objects")
        loggers["rr.test"].info("dense: loading model")
        loggers["faiss.loader"].warning("a real faiss warning")
        for h in logging.getLogger().handlers:
            h.flush()
    finally:
        for h in root.handlers:
            if h not in saved[0]:
                h.close()
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        for n, lg in loggers.items():
            lg.setLevel(saved_levels[n])
    shown = console.getvalue()
    assert "AVX512" not in shown and "Building index" not in shown
    assert "dense: loading model" in shown and "a real faiss warning" in shown
    kept = (tmp_path / "job.log").read_text()
    assert "AVX512" in kept and "Building index" in kept
