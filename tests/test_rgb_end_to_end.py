"""One tiny real job of the RGB experiment: noise-ratio contexts, RGB's prompt, RGB's own scorer (judge=rgb).

The packaged SmolLM2 reads 4 prompts: 2 questions closed-book and with 5 documents. Prompt tokens
are the cost: batches of 2 keep the short closed-book prompts from being padded to the long ones.
"""

from __future__ import annotations

import json
from pathlib import Path

from rr.metrics.rgb import rgb_table
from rr.pipeline import run_job

from .conftest import compose_config


def test_rgb_noise_ratio_job(tmp_path: Path) -> None:
    cfg = compose_config(
        [
            "experiment=rgb2024",
            "dataset.n=2",
            "corpus.max_passages=600",
            "grid.k=[0,10]",
            "perturbation.doc.ratio=0.4",
            "generator.max_new_tokens=12",
            "generator.batch_size=2",
        ],
        tmp_path,
    )
    res = run_job(cfg, tmp_path / "job")
    df = res.scores
    assert len(df) == 2 * 2 and set(df["strategy"]) == {"rgb"} and set(df["judge"]) == {"rgb"}
    rag, closed = df[df["k"] > 0], df[df["k"] == 0]
    assert set(rag["doc_perturbation"]) == {"noise_ratio@0.4"} and set(closed["doc_perturbation"]) == {"none"}
    assert set(rag["doc_perturbation_params"]) == {'{"value": 0.4}'} and set(
        closed["doc_perturbation_params"]
    ) == {"{}"}
    assert set(df["query_perturbation_params"]) == {"{}"}
    assert (rag["n_docs_used"] <= 5).all() and (rag["n_docs_used"] > 0).all()
    assert (rag["n_positive_docs"] + rag["n_negative_docs"] >= rag["n_docs_used"]).all()
    for col in ("refused", "rgb_rejected", "error_detected", "rgb_corrected"):
        assert df[col].dtype == bool
    assert (df.loc[df["refused"], "score"] == 0).all()
    assert (df["refused"] == df["rgb_rejected"]).all()  # RGB's scorer: its exact phrase is the refusal rule
    # the prediction is the whole response (RGB scores it so)
    assert (df["prediction"] == df["raw_output"].str.strip()).all()
    summary = json.loads((res.output_dir / "summary.json").read_text())
    assert summary["requests"] == 4
    table = rgb_table(df)
    assert table["noise_ratio"].tolist() == [0.4] and table["n_rows"].tolist() == [2]
