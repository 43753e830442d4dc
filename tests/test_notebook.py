"""notebooks/analysis.ipynb: stripped in git, and executed end to end on a synthetic sweep by the
command docs/reporting.md gives (``jupyter execute``, nbclient: no Jupyter server, no nbconvert)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import nbformat

from .synthetic import job_rows, write_job, write_synthetic_sweep

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "analysis.ipynb"


def test_notebook_is_committed_without_outputs() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


def _documented_commands() -> list[str]:
    """The shell lines of docs/reporting.md's notebook block (comments stripped)."""
    text = (ROOT / "docs" / "reporting.md").read_text()
    section = text[text.index("## Notebook") :]
    block = re.search(r"^```bash\n(.*?)^```", section, re.S | re.M)
    assert block, "docs/reporting.md's Notebook section gives the commands that run the notebook"
    return [shlex.split(line, comments=True) for line in block.group(1).splitlines() if line.strip()]


def test_what_runs_the_notebook_is_an_extra_the_docs_install() -> None:
    """The notebook's runner comes with ``rr[notebook]`` (and ``dev``), which the docs install; the
    notebook imports nothing that neither the base install nor that extra brings (nbconvert)."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {re.split(r"[<>=\[ ]", req)[0] for req in extras["notebook"]}
    assert {"nbclient", "nbformat", "ipykernel"} <= names
    assert names <= {re.split(r"[<>=\[ ]", req)[0] for req in extras["dev"]}
    pip, run = _documented_commands()
    assert pip[:3] == ["pip", "install", "-e"] and pip[3].endswith("[notebook]")
    assert run[:2] == ["jupyter", "execute"]
    assert "nbconvert" not in NOTEBOOK.read_text()


def _execute(reader: Path) -> str:
    """Run the documented ``jupyter execute`` line in ``reader`` (its demo output folder filled by the
    caller); the text of every code cell's outputs (no cell may end in an error)."""
    (reader / "notebooks").mkdir(parents=True, exist_ok=True)
    shutil.copy(NOTEBOOK, reader / "notebooks")
    env = {
        **os.environ,
        "RR_RESAMPLES": "50",
        "MPLBACKEND": "agg",
        # `jupyter` and the kernel of this environment, importing this checkout's rr
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    env.pop("RR_SWEEP", None)
    run = _documented_commands()[1]
    done = subprocess.run(run, cwd=reader, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    nb = nbformat.read(reader / "outputs" / "analysis.ipynb", as_version=4)
    assert not [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    return "\n".join(
        o.get("text", "")
        + str(o.get("data", {}).get("text/markdown", ""))
        + str(o.get("data", {}).get("text/plain", ""))
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
    )


def test_notebook_runs_on_a_sweep(tmp_path: Path) -> None:
    """The documented ``jupyter execute`` line, run as written in a reader's folder whose demo output
    folder holds a synthetic sweep, writes the executed notebook where the docs say."""
    reader = tmp_path / "reader"
    write_synthetic_sweep(reader / "outputs" / "runs" / "cao2025_mini", n_examples=5, noise=False)
    text = _execute(reader)
    assert "4 job(s)" in text and "McNemar" in text and "permutation" in text
    assert "paired on order: original vs reversed" in text and "Pooling refused" not in text
    nb = nbformat.read(reader / "outputs" / "analysis.ipynb", as_version=4)
    images = [
        o for c in nb.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})
    ]
    assert len(images) >= 4  # scatter, bars, accuracy vs k (2), answer recall


def test_notebook_refuses_to_pool_different_samples_and_pairs_what_varies(tmp_path: Path) -> None:
    """Two jobs of one dataset at 6 and 3 questions (the 3 among the 6) were pooled into one answer
    recall table with a stderr line only, and the paired test was hard-coded to original vs reversed
    (issue 52): the notebook now computes per job, says so in the cell, and pairs the factor the
    data varies (one order only: the retriever within a job, the strategy across two jobs of one sample)."""
    reader = tmp_path / "reader"
    sweep = reader / "outputs" / "runs" / "cao2025_mini"
    for strategy, n in (("vanilla", 6), ("ownknow", 3)):
        rows = job_rows("org/m", strategy, n, base=0.5, gain=0.2)
        write_job(sweep, rows[rows["order"].isin(["none", "original"])])
    text = _execute(reader)
    assert "Pooling refused" in text and "synth: 3 vs 6 examples" in text
    assert text.count("--- job ") == 2 and "paired on" not in text.split("--- job ")[0]
    assert text.count("paired on retriever: bm25 vs dense") == 2  # each job alone: one strategy, one order
    one = reader / "outputs" / "runs" / "one"
    for strategy in ("vanilla", "ownknow"):
        rows = job_rows("org/m", strategy, 4, base=0.5, gain=0.2)
        write_job(one, rows[rows["order"].isin(["none", "original"])])
    (reader / "outputs" / "runs" / "cao2025_mini").rename(reader / "outputs" / "runs" / "mixed")
    one.rename(reader / "outputs" / "runs" / "cao2025_mini")
    text = _execute(reader)
    assert "Pooling refused" not in text and "paired on strategy: vanilla vs ownknow" in text
