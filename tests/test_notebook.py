"""notebooks/analysis.ipynb: stripped in git, and executed end to end (nbclient) on a synthetic sweep."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest

from .synthetic import write_synthetic_sweep

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "analysis.ipynb"


def test_notebook_is_committed_without_outputs() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


def test_notebook_runs_on_a_sweep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nbclient import NotebookClient

    sweep = write_synthetic_sweep(tmp_path / "sweep", n_examples=5, noise=False)
    monkeypatch.setenv("RR_SWEEP", str(sweep))
    monkeypatch.setenv("RR_RESAMPLES", "50")
    monkeypatch.setenv("MPLBACKEND", "agg")
    # the kernel imports this checkout's rr, whichever rr the environment has installed
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "notebooks")}}
    ).execute()
    text = "\n".join(
        o.get("text", "") + str(o.get("data", {}).get("text/plain", ""))
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
    )
    assert "4 job(s)" in text and "McNemar" in text and "permutation" in text
    images = [
        o for c in nb.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})
    ]
    assert len(images) >= 4  # scatter, bars, accuracy vs k (2), answer recall
    assert not [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
