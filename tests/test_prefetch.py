"""``rr prefetch`` (issue 50, item 5): what a job or a sweep needs on nodes without network, listed
offline (``--dry-run``) with the config key naming each; downloading refused in one line where the
hub is off. The download itself (``huggingface_hub.snapshot_download``, pyserini's
``download_prebuilt_index``) needs the network and is not run here."""

from __future__ import annotations

import pytest

from .test_cli_errors import rr_main


def rows(out: str) -> dict[str, tuple[str, str, str]]:
    """``{name: (kind, named by, here)}`` of the prefetch table."""
    found = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) == 6 and cells[0] in ("model", "dataset", "index", "file", "api"):
            found[cells[1]] = (cells[0], cells[3], cells[5])
    return found


def test_a_paper_job_lists_its_models_dataset_and_corpus_offline(monkeypatch, capsys) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, out, err = rr_main(["prefetch", "--dry-run", "experiment=cao2025"], monkeypatch, capsys)
    assert code == 0, err
    assert rows(out) == {
        "google-research-datasets/nq_open": ("dataset", "dataset.path", "missing"),
        "enwiki-20240601-pages-articles.xml.bz2": ("file", "corpus.path", "missing"),
        "BAAI/bge-large-en-v1.5": ("model", "retriever.bge_large.model", "missing"),
        "meta-llama/Llama-3.3-70B-Instruct": ("model", "judge.generator.model", "missing"),
    }, out
    assert "4 needed, 3 to download (--dry-run: nothing downloaded)" in out


@pytest.mark.slow
def test_the_paper_sweep_lists_every_model_and_dataset_once(monkeypatch, capsys) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    args = ["prefetch", "-m", "--dry-run", "experiment=cao2025", "sweep=cao2025"]
    code, out, err = rr_main(args, monkeypatch, capsys)
    assert code == 0, err
    found = rows(out)
    models = {n for n, (kind, key, _) in found.items() if kind == "model" and key == "generator.model"}
    assert len(models) == 8 and "mistralai/Mistral-Large-Instruct-2407" in models
    assert {n for n, (kind, *_) in found.items() if kind == "dataset"} == {
        "google-research-datasets/nq_open",
        "hotpotqa/hotpot_qa",
        "din0s/asqa",
    }
    assert "what 24 job(s) need" in out and "14 needed, 13 to download" in out


def test_a_prebuilt_index_and_its_query_encoder_are_listed(monkeypatch, capsys, tmp_path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("PYSERINI_CACHE", str(tmp_path))
    args = ["prefetch", "--dry-run", "retriever=[pyserini_faiss_bge_nq]", "dataset.n=2"]
    code, out, err = rr_main(args, monkeypatch, capsys)
    assert code == 0, err
    found = rows(out)
    assert found["beir-v1.0.0-nq.bge-base-en-v1.5"] == (
        "index",
        "retriever.pyserini_faiss_bge_nq.prebuilt_index",
        "missing",
    )
    assert found["BAAI/bge-base-en-v1.5"][:2] == ("model", "retriever.pyserini_faiss_bge_nq.query_encoder")


def test_downloading_with_the_hub_off_is_one_line(monkeypatch, capsys) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "0")
    code, out, err = rr_main(["prefetch", "experiment=cao2025"], monkeypatch, capsys)
    lines = err.splitlines()
    assert code == 2 and out == "" and len(lines) == 1, err
    assert lines[0].startswith("rr: rr prefetch downloads, and HF_HUB_OFFLINE is set here")
    assert "`HF_HUB_OFFLINE=0 rr prefetch ...`" in lines[0] and lines[0].endswith(
        "add --dry-run to list only"
    )
