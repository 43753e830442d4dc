"""Run TextAttack's ``Augmenter`` recipes in TextAttack's own environment (a child of rr's job).

rr never imports TextAttack: ``textattack==0.3.11`` needs ``flair``, which needs ``transformers<5``,
while rr needs transformers 5. :func:`rr.perturbations.typo.textattack_typos` starts this script
with the TextAttack environment's Python (``.venv-textattack/bin/python`` from ``make textattack``),
writes one JSON request to its stdin and reads one JSON answer from its stdout. The script uses
only the standard library until it imports TextAttack, and imports nothing from rr.

Request: ``{"nltk_data": DIR, "stopwords": [...], "items": [{"text", "rate", "ops", "seed"}, ...]}``
(``ops``: ``qwerty``, ``delete``, ``embedding``). Answer: ``{"outputs": [str | null, ...],
"textattack": VERSION, "nltk_download_attempts": N}``; a failure is one line on stderr and exit 1.

What TextAttack does at import stays in this process, and is neutralised here:

* it calls ``nltk.download`` six times unless ``<TA cache>/post_install_check_3`` exists: the
  marker is created first (an empty file, as TextAttack itself writes after its downloads) and
  ``nltk.download`` is replaced by a function that only counts (reported as
  ``nltk_download_attempts``), so nothing is fetched;
* its ``http_get`` (embeddings and models from its own storage) is replaced by one that raises,
  so a missing resource is an error, never a download;
* ``TOKENIZERS_PARALLELISM``, ``HF_HOME`` and ``XDG_CACHE_HOME`` rewrites happen in this child's
  environment only, never in the job's.

Reproducibility: each item seeds Python's ``random`` *and* numpy's global RNG with its seed
(``WordSwapRandomCharacterDeletion`` draws from numpy's) and restores both afterwards.
"""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path
from typing import Any

#: TextAttack's marker of a finished post-install (``textattack/shared/utils/install.py``).
POST_INSTALL_MARKER = "post_install_check_3"
#: RARE's word-level recipe: ``WordSwapEmbedding(max_candidates=50)``.
EMBEDDING_MAX_CANDIDATES = 50


def ta_cache_dir() -> Path:
    """TextAttack's cache folder: ``$TA_CACHE_DIR``, else its default ``~/.cache/textattack``."""
    return Path(os.environ.get("TA_CACHE_DIR") or Path.home() / ".cache" / "textattack")


def _block_downloads() -> dict[str, int]:
    """Create TextAttack's post-install marker and make ``nltk.download`` a counter."""
    cache = ta_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    (cache / POST_INSTALL_MARKER).touch(exist_ok=True)
    import nltk

    attempts = {"n": 0}

    def no_download(*args: Any, **kwargs: Any) -> bool:
        attempts["n"] += 1
        return False

    nltk.download = no_download
    return attempts


def _refuse_http(url: str, *args: Any, **kwargs: Any) -> None:
    raise RuntimeError(
        f"TextAttack tried to download {url}; rr's TextAttack worker never reaches the network"
    )


def build_augmenter(rate: float, ops: tuple[str, ...], stopwords: set[str]) -> Any:
    """TextAttack's ``Augmenter`` for one recipe (the constraints of the query-level paper and RARE)."""
    from textattack.augmentation import Augmenter
    from textattack.constraints.pre_transformation import RepeatModification, StopwordModification
    from textattack.transformations import (
        CompositeTransformation,
        WordSwapEmbedding,
        WordSwapQWERTY,
        WordSwapRandomCharacterDeletion,
    )

    make = {
        "qwerty": WordSwapQWERTY,
        "delete": WordSwapRandomCharacterDeletion,
        "embedding": lambda: WordSwapEmbedding(max_candidates=EMBEDDING_MAX_CANDIDATES),
    }
    parts = [make[op]() for op in ops]
    transformation = parts[0] if len(parts) == 1 else CompositeTransformation(parts)
    return Augmenter(
        transformation=transformation,
        constraints=[RepeatModification(), StopwordModification(stopwords=stopwords)],
        pct_words_to_swap=rate,
        transformations_per_example=1,
    )


def augment(augmenter: Any, text: str, seed: int) -> str | None:
    """One augmentation of ``text`` with both global RNGs seeded by ``seed`` and then restored."""
    import numpy as np

    py_state, np_state = random.getstate(), np.random.get_state()
    try:
        random.seed(seed)
        np.random.seed(seed % 2**32)
        out = augmenter.augment(text)
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)
    return out[0] if out else None


def run(request: dict[str, Any]) -> dict[str, Any]:
    """Answer one request (see the module docstring)."""
    os.environ["NLTK_DATA"] = request["nltk_data"]
    attempts = _block_downloads()
    import textattack
    import textattack.shared.utils.install as ta_install

    ta_install.http_get = _refuse_http
    stop = set(request["stopwords"])
    augmenters: dict[tuple[float, tuple[str, ...]], Any] = {}
    outputs = []
    for item in request["items"]:
        key = (float(item["rate"]), tuple(item["ops"]))
        if key not in augmenters:
            augmenters[key] = build_augmenter(key[0], key[1], stop)
        outputs.append(augment(augmenters[key], item["text"], int(item["seed"])))
    version = getattr(textattack, "__version__", None)
    if version is None:
        from importlib.metadata import version as dist_version

        version = dist_version("textattack")
    return {"outputs": outputs, "textattack": version, "nltk_download_attempts": attempts["n"]}


def main() -> None:
    request = json.load(sys.stdin)
    answer_to, sys.stdout = sys.stdout, sys.stderr  # whatever the libraries print stays off the answer
    try:
        answer = run(request)
    except Exception as e:  # one line for the parent's error message
        print(f"{type(e).__name__}: {e}".replace("\n", " "), file=sys.stderr)
        sys.exit(1)
    json.dump(answer, answer_to)


if __name__ == "__main__":
    main()
