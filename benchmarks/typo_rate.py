"""Typo backends: do they perturb the requested share of words and never a stop word?

For every question of the mini dataset (single-hop, all 509) and each rate, ``--n`` variants are
drawn with each backend. Per variant the words (``WORD_RE`` tokens, stop words included) are
compared position by position with the original; reported per backend and rate:

* ``achieved``: perturbed words / words, averaged over variants;
* ``exact``: share of variants with exactly ``min(max(1, floor(rate * words)), eligible words)``
  perturbed words (the rule of :mod:`rr.perturbations.typo`, TextAttack ``Augmenter``'s count);
* ``stop touched``: variants in which a stop word (NLTK English, case-insensitive) changed;
* ``unchanged``: variants identical to the original.

Backends: ``rr/nlpaug`` (the default: nlpaug's keyboard model, our seeded choice of words),
``nlpaug-raw`` (nlpaug's own ``KeyboardAug(aug_word_p=rate, aug_char_max=1, stopwords=...)``
sampling, for contrast: it counts punctuation as words, skips words shorter than 4 characters and
compares stop words case-sensitively), ``textattack`` (TextAttack 0.3.11's own ``Augmenter`` with
``WordSwapQWERTY``, run in ``.venv-textattack``: ``make textattack``) and ``textattack-rare``
(RARE's ``WordSwapQWERTY`` + ``WordSwapRandomCharacterDeletion``; a deletion is an edit of the
word too). The TextAttack rows are skipped, with a note, when its environment is missing.

    python benchmarks/typo_rate.py [--n 5] [--rates 0.1 0.25]
    python benchmarks/typo_rate.py --quick     # seconds: 20 questions, one variant, rate 0.25, no textattack-rare
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np

from rr.data.mini import MiniDataset
from rr.perturbations.typo import (
    WORD_RE,
    TextAttackUnavailable,
    TypoPerturbation,
    english_stopwords,
    n_words_to_perturb,
    nlpaug_neighbours,
    textattack_python,
)

#: What ``--quick`` prints (tests/test_benchmarks.py checks each regex matches a line).
QUICK_FIGURES = [
    r"^\d+ questions, \d+ variants each$",
    r"^\| rr/nlpaug \| 0\.25 \| [\d.]+ \| [\d.]+ \| [\d.]+% \| [\d.]+% \| [\d.]+% \| [\d.]+ \|$",
    r"^\| nlpaug-raw \| 0\.25 \| [\d.]+ \| [\d.]+ \| [\d.]+% \| [\d.]+% \| [\d.]+% \| [\d.]+ \|$",
]
BACKENDS = ("rr/nlpaug", "nlpaug-raw", "textattack", "textattack-rare")


def measure(original: str, perturbed: str, rate: float) -> dict[str, float] | None:
    stop = english_stopwords()
    nb = nlpaug_neighbours()
    before, after = WORD_RE.findall(original), WORD_RE.findall(perturbed)
    if len(before) != len(after):  # a word merged or split: compare as a failure of the rule
        return {"achieved": float("nan"), "exact": 0.0, "stop": 0.0, "unchanged": 0.0}
    changed = [a for a, b in zip(before, after, strict=True) if a != b]
    eligible = [
        w for w in before if len(w) >= 2 and w.lower() not in stop and any(c.lower() in nb for c in w)
    ]
    expected = min(n_words_to_perturb(len(before), rate), len(eligible))
    return {
        "achieved": len(changed) / len(before),
        "exact": float(len(changed) == expected),
        "stop": float(any(w.lower() in stop for w in changed)),
        "unchanged": float(perturbed == original),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--quick", action="store_true", help="20 questions, 1 variant, rate 0.25, no textattack-rare"
    )
    ap.add_argument("--n", type=int, default=5)
    ap.add_argument("--rates", type=float, nargs="+", default=[0.1, 0.25])
    ap.add_argument("--questions", type=int, default=None, help="the first N questions (default: all)")
    ap.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=BACKENDS)
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.rates, args.questions = 1, [0.25], 20
        args.backends = [b for b in BACKENDS if b != "textattack-rare"]  # textattack's code path, once
    examples = MiniDataset(n=None, answerable_only=False).load()[: args.questions]
    stop = english_stopwords()
    try:
        textattack_python()
        has_textattack = True
    except TextAttackUnavailable as e:
        print(f"(no TextAttack rows: {e})")
        has_textattack = False

    import nlpaug.augmenter.char as nac

    print(f"{len(examples)} questions, {args.n} variants each")
    print(
        "| backend | rate | achieved word rate | target rate (rule) | exact count | stop word touched | unchanged | s |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for rate in args.rates:
        target = np.mean(
            [
                n_words_to_perturb(len(WORD_RE.findall(e.question)), rate) / len(WORD_RE.findall(e.question))
                for e in examples
            ]
        )
        backends = [b for b in args.backends if has_textattack or not b.startswith("textattack")]
        for backend in backends:
            t0 = time.perf_counter()
            rows = []
            if backend == "nlpaug-raw":
                aug = nac.KeyboardAug(
                    aug_word_p=rate,
                    aug_char_min=1,
                    aug_char_max=1,
                    aug_word_max=None,
                    stopwords=sorted(stop),
                    include_special_char=False,
                    include_numeric=False,
                    include_upper_case=False,
                )
                random.seed(0)
                np.random.seed(0)
                for e in examples:
                    for _ in range(args.n):
                        rows.append(measure(e.question, aug.augment(e.question)[0], rate))
            else:
                pert = TypoPerturbation(
                    rate=rate,
                    n=args.n,
                    ops=["qwerty", "delete"] if backend == "textattack-rare" else ["qwerty"],
                    backend="nlpaug" if backend == "rr/nlpaug" else "textattack",
                    include_original=False,
                )
                for e, candidates in zip(examples, pert.candidates_of(examples, 0), strict=True):
                    rows.extend(measure(e.question, t, rate) for t, _, _ in candidates)
            dt = time.perf_counter() - t0
            ok = [r for r in rows if r is not None]
            mean = {k: float(np.nanmean([r[k] for r in ok])) for k in ok[0]}
            print(
                f"| {backend} | {rate:g} | {mean['achieved']:.4f} | {target:.4f} | {mean['exact']:.1%} | "
                f"{mean['stop']:.1%} | {mean['unchanged']:.1%} | {dt:.1f} |"
            )


if __name__ == "__main__":
    main()
