"""``rr reproduce-docs``: the generated tables of ``docs/reproduction.md``, made by running each paper's
mini experiment and its ``rr report`` sections, so that the page cannot drift from what the code prints.

Each :class:`Block` is one paper's mini experiment: the jobs (``rr [-m] overrides``, run in process in a
temporary folder), the report sections, and which of their tables go on the page. The page holds each
block between two markers::

    <!-- reproduction:rgb begin: made by `rr reproduce-docs`, do not edit by hand -->
    ...
    <!-- reproduction:rgb end -->

``rr reproduce-docs`` rewrites what is between them (the prose around them is the author's);
``rr reproduce-docs --check`` regenerates and exits 1, printing a diff, where the page differs.
``tests/test_reproduction.py`` runs the check in the suite.

The blocks run the *simulated reader* (``generator=simulated``) on the synthetic task, at the size the
page states: a job of it takes seconds, and its answers are a deterministic function of the prompt, so the
tables are exactly reproducible anywhere. SURE's QA prompt and the query-level study's perturbed queries
are not readable by the simulated reader.

A *real-model* block (:data:`REAL_BLOCKS`, ``rr reproduce-docs --only cao_real``) runs the packaged
SmolLM2-135M-Instruct (``generator=hf``) on the bundled mini data instead, at the small size it states: minutes
on a CPU, and its greedy answers may differ in the last digits across machines and library versions, so the
suite does not regenerate it (``--check`` and the default run leave it alone). ``--work DIR`` keeps its jobs
in ``DIR/<key>`` and reuses the finished ones, so the report part can be remade without rerunning the model.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import logging
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

#: The page, relative to the repository root (the default ``--page``).
PAGE = Path("docs/reproduction.md")
#: Questions per job (``dataset.n``) of every block: the size the page states and the check uses.
SIZE = 24
#: The reader every block runs.
READER = ["generator=simulated", "dataset=synthetic", "corpus=synthetic"]
BEGIN = "<!-- reproduction:{key} begin: made by `rr reproduce-docs`, do not edit by hand -->"
END = "<!-- reproduction:{key} end -->"


@dataclass(frozen=True)
class Block:
    """One paper's mini experiment on the page.

    Attributes:
        key: The block's name on the page's markers and in ``--only``.
        overrides: ``rr`` overrides of its jobs (the reader and the size are added).
        multirun: Run them as ``rr -m`` (a sweep: one job per swept value).
        sections: ``rr report --only`` sections.
        tables: The tables shown: name -> the columns kept (empty: all).
        reader: The reader's overrides (default :data:`READER`; ``()``: the packaged real model).
        size: Questions per job where the block fixes its own (a real-model block), else the page's.
    """

    key: str
    overrides: tuple[str, ...]
    multirun: bool
    sections: tuple[str, ...]
    tables: dict[str, tuple[str, ...]]
    reader: tuple[str, ...] = tuple(READER)
    size: int | None = None

    @property
    def real(self) -> bool:
        """Whether the block runs a real model (not the simulated reader)."""
        return "generator=simulated" not in self.reader


CLAIM_COLUMNS = ("claim", "model", "a", "a_ci_low", "a_ci_high", "b", "diff", "p_value", "test", "verdict")
BLOCKS: tuple[Block, ...] = (
    Block(
        "cao",
        ("experiment=cao2025_mini", "strategy=[vanilla,ownknow]"),
        False,
        ("robustness", "paper_beside"),
        {"robustness": (), "paper_claims": CLAIM_COLUMNS},
    ),
    Block(
        "rgb",
        ("sweep=rgb2024",),
        True,
        ("accuracy_vs_noise_ratio", "rgb_rejection", "paper_beside"),
        {"accuracy_by_noise_ratio": (), "rgb_rejection": (), "paper_claims": CLAIM_COLUMNS},
    ),
    Block(
        "rare",
        # back-translation needs a translation model (the model under test by default), and the simulated
        # reader reads rag_qa.j2, not RARE's generator prompt (its refusal is tested in tests/test_refusal.py)
        (
            "sweep=rare2025",
            "perturbation/doc=none,ground_truth,delete_answer",
            "strategy.vanilla.template=rag_qa.j2",
        ),
        True,
        ("rare_robustness", "paper_beside"),
        {"rare_robustness": ()},
    ),
)

#: Blocks that run the packaged real model (not in the default run or ``--check``: ``--only KEY``).
REAL_BLOCKS: tuple[Block, ...] = (
    Block(
        "cao_real",
        ("experiment=cao2025_mini", "strategy=[vanilla,ownknow,s2a]"),
        False,
        ("robustness", "paper_beside"),
        {"robustness": (), "paper_claims": CLAIM_COLUMNS},
        reader=(),
        size=4,
    ),
)


def command_line(block: Block, size: int) -> str:
    """The ``rr`` command that runs the block's jobs."""
    words = ["rr", *(["-m"] if block.multirun else []), *block.overrides, *block.reader, f"dataset.n={size}"]
    return " ".join(f"'{w}'" if "[" in w else w for w in words)


def run_block(block: Block, size: int, work: Path) -> str:
    """Run the block's jobs and report sections under ``work``; return its Markdown (between the markers)."""
    from omegaconf import open_dict

    from rr.cost import compose_jobs
    from rr.pipeline import SUMMARY_FILE, run_job
    from rr.reporting.registry import ReportTable
    from rr.reporting.report import build_report
    from rr.reporting.writers import display_frame, to_markdown

    overrides = [*block.overrides, *block.reader, f"dataset.n={size}"]
    for i, (_, cfg) in enumerate(compose_jobs(overrides, multirun=block.multirun)):
        with open_dict(cfg):
            cfg.paths.output_root = str(work / "outputs")
            cfg.paths.cache_dir = str(work / "cache")
            cfg.progress = False
        job = work / "jobs" / f"job{i}"
        if not (job / SUMMARY_FILE).exists():  # a finished job of an earlier run in the same --work is kept
            run_job(cfg, job)
    report = build_report(work / "jobs", work / "report", n_resamples=1000, seed=0, only=list(block.sections))
    items = {item.name: item for o in report.outcomes for item in o.items}
    who = (
        "the packaged SmolLM2-135M-Instruct (`generator=hf`, fp32, greedy) on the bundled mini data"
        if block.real
        else "the simulated reader on the synthetic task"
    )
    lines = [
        f"Made by `rr reproduce-docs --only {block.key}`: {who}, "
        f"{size} questions per job, seed 0; `rr report` intervals (1000 resamples, seed 0, the small-sample "
        "rules). The same jobs and sections from the command line:",
        "",
        "```bash",
        command_line(block, size) + " paths.output_root=/tmp/repro",
        f"rr report /tmp/repro/{'multirun' if block.multirun else 'runs'}/{_name(block)} "
        f"--only {' '.join(block.sections)}",
        "```",
        "",
    ]
    for name, columns in block.tables.items():
        item = items.get(name)
        if item is None:
            why = [o.skipped or o.error for o in report.outcomes if o.skipped or o.error]
            raise RuntimeError(f"block {block.key}: report table {name!r} was not made ({why})")
        if not isinstance(item, ReportTable):
            raise TypeError(f"block {block.key}: {name!r} is a figure, not a table")
        df = item.df
        if columns:
            df = df[[c for c in df.columns if c in columns or str(c).rsplit("_ci_", 1)[0] in columns]]
        shown = display_frame(dataclasses.replace(item, df=df))
        lines += [f"`{name}`: {item.title}", "", to_markdown(shown).rstrip(), ""]
    return "\n".join(lines).rstrip() + "\n"


def _name(block: Block) -> str:
    exp = next((o.split("=", 1)[1] for o in block.overrides if o.startswith(("experiment=", "sweep="))), "")
    return exp


def generate(
    blocks: tuple[Block, ...] | list[Block], size: int = SIZE, work: Path | None = None
) -> dict[str, str]:
    """key -> Markdown of each block, run in a fresh temporary folder (``work``: in ``work/<key>``, kept, its
    finished jobs reused). A block with its own ``size`` runs at that size."""
    out = {}
    for block in blocks:
        n = block.size or size
        if work is not None:
            out[block.key] = run_block(block, n, work / block.key)
            continue
        with tempfile.TemporaryDirectory(prefix=f"rr-repro-{block.key}-") as tmp:
            out[block.key] = run_block(block, n, Path(tmp))
    return out


def _span(page: str, key: str) -> tuple[int, int]:
    begin, end = BEGIN.format(key=key), END.format(key=key)
    i = page.find(begin)
    j = page.find(end)
    if i < 0 or j < i:
        raise ValueError(f"the page has no markers for block {key!r} ({begin} ... {end})")
    return i + len(begin), j


def fill(page: str, made: dict[str, str]) -> str:
    """``page`` with each block's text between its markers replaced by ``made[key]``."""
    for key, text in made.items():
        i, j = _span(page, key)
        page = page[:i] + "\n" + text + page[j:]
    return page


def blocks_in(page: str) -> list[str]:
    """The block keys whose markers are on the page."""
    return re.findall(r"<!-- reproduction:(\w+) begin", page)


def main(argv: list[str]) -> int:
    """``rr reproduce-docs [--check] [--only KEY ...] [--size N] [--page PATH]``."""
    import matplotlib

    matplotlib.use("Agg")
    p = argparse.ArgumentParser(
        prog="rr reproduce-docs",
        description="Run each paper's mini experiment on the simulated reader and write its report tables "
        "into docs/reproduction.md between the page's markers (--check: compare instead, exit 1 on a difference).",
    )
    p.add_argument("--page", type=Path, default=PAGE, help=f"the page (default {PAGE})")
    p.add_argument(
        "--only",
        nargs="*",
        default=None,
        help=f"blocks ({', '.join(b.key for b in BLOCKS)}; real-model blocks, only when named: "
        f"{', '.join(b.key for b in REAL_BLOCKS)})",
    )
    p.add_argument(
        "--work", type=Path, default=None, help="keep the jobs in WORK/<block> and reuse the finished ones"
    )
    p.add_argument("--size", type=int, default=SIZE, help=f"questions per job (default {SIZE}: the page's)")
    p.add_argument("--check", action="store_true", help="compare with the page; exit 1 where it differs")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    known = {b.key: b for b in (*BLOCKS, *REAL_BLOCKS)}
    unknown = [k for k in args.only or [] if k not in known]
    if unknown:
        p.error(f"unknown block(s) {unknown}; blocks: {', '.join(known)}")
    chosen = [known[k] for k in args.only] if args.only else list(BLOCKS)
    page = args.page.read_text()
    made = generate(chosen, args.size, args.work)
    new = fill(page, made)
    if args.check:
        if new == page:
            print(f"{args.page}: the {len(made)} generated block(s) are what the code prints")
            return 0
        sys.stdout.writelines(
            difflib.unified_diff(
                page.splitlines(keepends=True), new.splitlines(keepends=True), str(args.page), "regenerated"
            )
        )
        print(f"{args.page}: differs from what the code prints; run `rr reproduce-docs` to rewrite it")
        return 1
    args.page.write_text(new)
    print(f"{args.page}: wrote {len(made)} block(s): {', '.join(made)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
