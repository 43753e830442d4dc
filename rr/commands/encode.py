"""``rr encode``: embed a corpus for the dense retrievers of a config, one shard at a time.

A Hydra app over ``conf/encode.yaml`` (the job config plus ``shards`` / ``shard`` /
``shard_gpus``), so one shard is one Hydra job and a multirun over ``shard=range(N)`` runs
the shards on any Hydra launcher: several GPUs of one node (``hydra/launcher=parallel`` with
``shard_gpus``) or a SLURM job array (``hydra/launcher=slurm``, one GPU per task). Each shard
writes its blocks of the corpus's :class:`~rr.retrieval.dense_store.EmbeddingStore` under
``paths.cache_dir``; a killed or preempted shard resumes at its first missing block, and a
finished one is skipped. A later ``rr`` job with the same corpus and retriever overrides finds
the blocks and only searches.

Each shard's Hydra folder gets ``encode.json``: blocks encoded, skipped and rebuilt, passages,
seconds and passages/s per retriever.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from rr.atomic import atomic_write
from rr.errors import ConfigError, require_non_negative, require_positive
from rr.retrieval.base import CorpusEncoder

log = logging.getLogger(__name__)

#: Summary file written into each shard's Hydra output folder.
ENCODE_SUMMARY = "encode.json"


def shard_device(shard: int, shard_gpus: int) -> str | None:
    """The device of shard ``shard`` when shards are spread over ``shard_gpus`` GPUs (else ``None``)."""
    return f"cuda:{shard % shard_gpus}" if shard_gpus > 0 else None


def run_encode(cfg: DictConfig, output_dir: str | Path | None = None) -> dict[str, Any]:
    """Encode shard ``cfg.shard`` of ``cfg.shards`` (every shard when ``cfg.shard`` is null).

    Returns:
        The summary also written to ``<output_dir>/encode.json``: per dense retriever, its
        store folder, block counts (``blocks``, ``encoded``, ``skipped``, ``rebuilt``),
        passages encoded, seconds and passages per second.

    Raises:
        ConfigError: bad ``shards`` / ``shard`` / ``shard_gpus``, or no dense retriever selected.
    """
    from rr.config.instantiation import instantiate
    from rr.preflight import check_resources

    shards = cfg.shards
    require_positive("shards", shards)
    require_non_negative("shard_gpus", cfg.shard_gpus)
    if cfg.shard is not None and not 0 <= cfg.shard < shards:
        raise ConfigError("shard", f"must be in [0, shards={shards}) or null (all), got {cfg.shard}")
    which = range(shards) if cfg.shard is None else [int(cfg.shard)]
    check_resources(cfg, roots=("retriever", "corpus"))  # before the corpus loads
    retrievers = {key: instantiate(node) for key, node in (cfg.retriever or {}).items()}
    dense = {key: r for key, r in retrievers.items() if isinstance(r, CorpusEncoder)}
    if not dense:
        raise ConfigError(
            "retriever", f"no dense retriever selected ({sorted(retrievers)}); e.g. retriever=bge_large"
        )
    corpus = instantiate(cfg.corpus).load()
    record: dict[str, Any] = {
        "corpus": corpus.name,
        "passages": len(corpus),
        "shards": shards,
        "retrievers": {},
    }
    for key, retriever in dense.items():
        for shard in which:
            if (device := shard_device(shard, int(cfg.shard_gpus))) is not None:
                retriever.set_device(device)
            retriever.load_model()  # not part of the throughput
            t0 = time.perf_counter()
            report = retriever.encode_corpus(
                corpus, str(cfg.paths.cache_dir), shard, shards, bool(cfg.progress)
            )
            seconds = time.perf_counter() - t0
            store = retriever.store(corpus, str(cfg.paths.cache_dir))
            rows = report.passages
            entry = {
                "store": str(store.root),
                "shard": shard,
                "blocks": report.blocks,
                "encoded": report.encoded,
                "skipped": report.skipped,
                "rebuilt": report.rebuilt,
                "passages_encoded": rows,
                "seconds": round(seconds, 3),
                "passages_per_s": round(rows / seconds, 1) if rows and seconds > 0 else None,
                "store_complete": not store.missing(),
            }
            record["retrievers"].setdefault(key, []).append(entry)
            print(
                f"rr encode: {key} shard {shard}/{shards}: {report.encoded} blocks encoded, "
                f"{report.skipped} already done, {report.rebuilt} rebuilt ({rows} passages, {seconds:.1f} s); "
                f"store {'complete' if entry['store_complete'] else 'incomplete'}: {store.root}"
            )
    if output_dir is not None:
        with atomic_write(Path(output_dir) / ENCODE_SUMMARY) as f:
            json.dump(record, f, indent=2)
    return record


def encode_main(argv: list[str]) -> int:
    """``rr encode [-m] OVERRIDES``: the Hydra app over ``conf/encode.yaml``."""
    import hydra
    from hydra.core.hydra_config import HydraConfig

    from rr.config.composition import config_dir, register_configs

    register_configs()

    def app(cfg: DictConfig) -> None:
        from rr.job_env import prepare_job

        prepare_job(bool(cfg.progress))
        run_encode(cfg, HydraConfig.get().runtime.output_dir)

    from rr.commands.cli import single_run_one_line

    sys.argv = [f"{sys.argv[0]} encode", *argv]
    hydra.main(config_path=config_dir(), config_name="encode", version_base="1.3")(single_run_one_line(app))()
    return 0
