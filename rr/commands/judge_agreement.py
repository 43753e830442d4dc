"""``rr judge-agreement A B``: agreement and Cohen's kappa between two judges' scores."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from rr.analysis.agreement import judge_agreement


def main(argv: Sequence[str]) -> int:
    """``rr judge-agreement A B [--by COL ...]``: print agreement and kappa between two judges."""
    from rr.results import load

    p = argparse.ArgumentParser(
        prog="rr judge-agreement",
        description="Agreement and Cohen's kappa between two judges' scores over the same rows "
        "(A and B: job or sweep folders, scores.parquet files or globs).",
    )
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--by", nargs="*", default=[], help="break down by these columns (e.g. dataset)")
    args = p.parse_args(list(argv))
    table = judge_agreement(load(args.a), load(args.b), by=args.by)
    print(table.to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    return 0
