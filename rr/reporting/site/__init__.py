"""The report's result browser: a static, self-contained, offline site under ``<report>/site/``.

:func:`build_site` turns a built :class:`~rr.reporting.report.Report` (its score table, jobs and
sections) into HTML pages, one stylesheet and a few scripts (``rr/reporting/site/assets/``,
written for rr: no library, no CDN, no network) plus data files::

    index.html                 overview: jobs and their config differences, sweep states, the
                               McNemar pairs and those not compared, every report table with
                               its intervals, the figures
    examples.html              one row per (example, system), paged, with filters and flip filters
    example.html#e=<i>         one example: the cell grid of each system, a chosen cell's
                               documents in prompt order, output, prediction, verdict; two cells
                               side by side; a perturbed query as a character-level diff
    data/overview.js           the overview's data
    data/index.js              systems, cells, datasets, flip kinds, McNemar pairs, shard bounds
    data/pairs.js              each McNemar pair's discordant examples and cells (the examples list)
    data/rows-NNN.js           the examples list, in chunks of whole examples
    data/ex/e-NNNN.js          example shards: every row of a few examples, column by column
                               (loaded by example.html)
    data/pr/pr-NNNN.js         prompt shards: the prompts of example shard NNNN's rows (loaded
                               when a prompt is opened)
    data/p/p-NNNN.js           passage shards: each passage text once (loaded when a page needs it)
    figures/, tables/          the report's PNG figures and CSV tables, copied

Pages open from ``file://``, where Chromium refuses ``fetch()`` of local files, so every data
file is a script that calls ``RR.load(kind, key, payload)`` (JSONP-style) and pages add
``<script>`` tags for what they need: the overview loads one small file, the examples list its
row chunks, an example page one example shard and the passage shards its documents live in.

**Flips** (the examples list's flip filters) are computed here by :mod:`rr.metrics.flips`, from
the metrics' own decompositions, per system (:func:`rr.analysis.intervals.system_by`) and cell; the
pages only read them. Each (example, system) row carries one character per cell of its system
for the score and one for the flip kinds failing at that cell (a bit mask, :data:`FLIP_BITS`).

**Documents.** ``doc_ids`` of each row are the passages in prompt order. Texts come from the
job's corpus (its ``config.yaml`` names it; one read per distinct corpus config, of the passages
shown only: a JSONL corpus in one streaming pass, :meth:`rr.data.jsonl.JsonlCorpus.texts_of`,
in a thread while the rest is built). A passage missing from the corpus (one a document
perturbation made) or a corpus that cannot be loaded any more is shown by its id, saying so. A
rank is the passage's position in the longest ``original``-order list of the same job, example,
retriever and perturbations (the retriever's ranking as the prompts show it).

**Speed.** The site adds a fraction of ``rr report``'s own time (``benchmarks/site_scale.py``):
whole columns, not rows, are turned into JSON (pyarrow joins each column's JSON literals a shard
at a time), documents are compared with their ranking as id lists and stored as a prefix of it,
its reverse, or positions in it, and the McNemar pairs are read from the report's paired tests.

**Stages.** The build runs stages in order (:mod:`~rr.reporting.site.build` lists them); each
takes what it needs and returns a frozen record (:class:`~rr.reporting.site.index.ScoreIndex`,
:class:`~rr.reporting.site.documents.Documents`, :class:`~rr.reporting.site.flips.Flips`,
:class:`~rr.reporting.site.pairs.Pairs`, :class:`~rr.reporting.site.passages.PassageFiles`) that
later stages read and none changes.

**Files.** :mod:`~rr.reporting.site.build` (the entry point and its stage timings,
:mod:`~rr.reporting.site.clock`), :mod:`~rr.reporting.site.index` (the score table indexed:
examples, systems, cells, list rows, questions), :mod:`~rr.reporting.site.flips` and
:mod:`~rr.reporting.site.pairs` (flips, McNemar pairs), :mod:`~rr.reporting.site.documents` and
:mod:`~rr.reporting.site.passages` (each row's documents, the passages and their texts),
:mod:`~rr.reporting.site.rows` (the examples list's, example and prompt shards' and index's data
files), :mod:`~rr.reporting.site.papers` (the paper values' links to their examples),
:mod:`~rr.reporting.site.pages` (the pages, the overview's data, the copied assets and report
files), :mod:`~rr.reporting.site.encoding` (JSON and the pyarrow literal builders),
:mod:`~rr.reporting.site.format` (the data files' fields and :data:`~rr.reporting.site.format.FORMAT_VERSION`).
"""

from __future__ import annotations

from collections.abc import Sequence

from rr.reporting.site.build import SiteInfo, build_site
from rr.reporting.site.flips import FLIP_BITS, FLIP_LABELS

__all__: Sequence[str] = ("FLIP_BITS", "FLIP_LABELS", "SiteInfo", "build_site")
