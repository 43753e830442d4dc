"""``rr sure-prelim``: the SURE paper's preliminary experiment (§2.3) from the command line."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from rr.analysis.sure import preliminary_from_config


def main(argv: Sequence[str] | None = None) -> None:
    """``rr sure-prelim OUTPUT_DIR [--depth N] [rr overrides...]``: the §2.3 experiment."""
    import argparse
    import sys

    from rr.config.composition import compose

    parser = argparse.ArgumentParser(prog="rr sure-prelim", description=main.__doc__)
    parser.add_argument("output_dir")
    parser.add_argument("--depth", type=int, default=100, help="first-stage retrieval depth")
    parser.add_argument("overrides", nargs="*", help="rr config overrides, e.g. experiment=sure2025_mini")
    args = parser.parse_intermixed_args(sys.argv[1:] if argv is None else argv)
    cfg = compose(args.overrides)
    ks = preliminary_from_config(cfg, args.output_dir, depth=args.depth)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(ks)


if __name__ == "__main__":
    main()
