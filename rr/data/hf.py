"""Benchmark datasets loaded through Hugging Face ``datasets``: NQ-open, HotpotQA, ASQA.

Each loader reads one split, either from the Hub (``path`` = dataset id, optionally pinned
with ``revision``) or from local copies (``data_files`` = a JSON/JSON-lines or parquet file
or glob, read with ``load_dataset("json"|"parquet", ...)``; that is how the tests run
offline). Rows are converted to :class:`~rr.records.Example` and validated one by one: a
malformed row raises :class:`~rr.data.base.DataError` naming the source, the 0-based row
index in the split and the problem; rows are never dropped. Then ``n`` examples are sampled
with ``seed`` (:func:`~rr.data.base.sample_examples`; the papers sample 500).

``datasets`` is imported inside :meth:`HFDataset.load`, so importing this module is cheap.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from typing import Any

from rr.data.base import DataError, sample_examples
from rr.data.jsonl import file_sha256, parse_answer_groups, parse_answers, parse_id, parse_question
from rr.records import Example, MetaKey
from rr.registry import component

#: Bump when the row -> Example conversion changes, so fingerprints (and caches) change too.
LOADER_VERSION = 1

_JSON_SUFFIXES = (".json", ".jsonl", ".ndjson", ".json.gz", ".jsonl.gz")


def data_files_format(data_files: str) -> str:
    """The ``datasets`` builder for local files: ``"parquet"`` or ``"json"``, from the suffix.

    Raises:
        DataError: If the suffix is neither parquet nor JSON / JSON lines.
    """
    lower = data_files.lower()
    if lower.endswith(".parquet"):
        return "parquet"
    if lower.endswith(_JSON_SUFFIXES):
        return "json"
    raise DataError(
        f"data_files {data_files!r}: cannot tell the format; use a .parquet, .json or .jsonl file (or glob)"
    )


def _records(value: Any, what: str, where: str) -> list[dict[str, Any]]:
    """A list of records from either Arrow layout of a list of structs.

    ``datasets`` stores ``Sequence({...})`` features as a dict of equal-length lists and
    ``[{...}]`` features as a list of dicts; both become a list of dicts here.
    """
    if isinstance(value, dict):
        lists = list(value.values())
        if not all(isinstance(v, list) for v in lists) or len({len(v) for v in lists}) > 1:
            raise DataError(f"{where}: {what} must be a list of records or a dict of equal-length lists")
        keys = list(value)
        return [dict(zip(keys, vals, strict=True)) for vals in zip(*lists, strict=True)]
    if isinstance(value, list) and all(isinstance(v, dict) for v in value):
        return value
    raise DataError(f"{where}: {what} must be a list of records, got {type(value).__name__}")


def _unique(items: Sequence[str]) -> list[str]:
    """Items without repeats, in order of first appearance."""
    return list(dict.fromkeys(items))


class HFDataset:
    """Shared loading, validation and fingerprinting of the Hugging Face loaders.

    Subclasses set :attr:`name`, :attr:`required_columns` (checked once for the whole split),
    :attr:`optional_columns`, and implement :meth:`convert`.

    Args:
        path: Hub dataset id (or a local dataset folder) passed to ``load_dataset``.
        split: Split to read. With ``data_files`` it only names the split (and NQ ids).
        n: Number of examples to sample (``None`` = the whole split).
        seed: Sampling seed.
        data_files: Local file or glob (``.parquet``, ``.json``, ``.jsonl``); when set,
            ``path`` and ``revision`` are not used for loading.
        revision: Hub git revision (tag, branch or commit) to pin the data; ``None`` = latest.
        cache_dir: ``datasets`` cache folder (``None`` = ``HF_DATASETS_CACHE``); does not
            change the output.
    """

    name: str = "hf"
    #: Columns every row must have (alternatives separated by ``|``: the first present is used).
    required_columns: tuple[str, ...] = ()
    optional_columns: tuple[str, ...] = ()

    def __init__(
        self,
        path: str,
        split: str,
        n: int | None = 500,
        seed: int = 0,
        data_files: str | None = None,
        revision: str | None = None,
        cache_dir: str | None = None,
    ) -> None:
        self.path = path
        self.split = split
        self.n = n
        self.seed = seed
        self.available: int | None = None  # after load: examples there were to sample n from
        #: Hub config name (``None``: the dataset's default); a loader that takes one sets it.
        self.subset: str | None = None
        self.data_files = data_files
        self.revision = revision
        self.cache_dir = cache_dir
        if data_files is not None:
            data_files_format(data_files)  # fail at instantiation, not at load time

    # -- subclass hooks -------------------------------------------------------------------

    def convert(self, row: dict[str, Any], index: int, where: str) -> Example:
        """Turn one validated-columns row into an Example; raise DataError naming ``where``."""
        raise NotImplementedError

    # -- shared machinery -----------------------------------------------------------------

    @property
    def source(self) -> str:
        """Human-readable origin used in error messages, e.g. ``hotpotqa/hotpot_qa[distractor]:validation``."""
        if self.data_files is not None:
            return f"{self.data_files} (split {self.split!r})"
        subset = f"[{self.subset}]" if self.subset else ""
        return f"{self.path}{subset}:{self.split}"

    def _load_split(self) -> Any:
        """The split as a ``datasets.Dataset`` (Hub or local files)."""
        import datasets

        try:
            if self.data_files is not None:
                return datasets.load_dataset(
                    data_files_format(self.data_files),
                    data_files={self.split: self.data_files},
                    split=self.split,
                    cache_dir=self.cache_dir,
                )
            return datasets.load_dataset(
                self.path, self.subset, split=self.split, revision=self.revision, cache_dir=self.cache_dir
            )
        except datasets.exceptions.DatasetGenerationError as e:
            cause = e.__cause__ or e
            raise DataError(f"{self.source}: datasets could not read the data: {cause}") from e
        except ConnectionError as e:
            raise ConnectionError(
                f"{self.source}: {e}. Without network access, point dataset.data_files at a local "
                "copy (parquet or JSON lines) of the split."
            ) from e

    def _columns(self, present: Sequence[str]) -> dict[str, str | None]:
        """Map each logical column to the present column name; DataError if a required one is absent."""
        chosen: dict[str, str | None] = {}
        for spec in self.required_columns:
            options = spec.split("|")
            col = next((c for c in options if c in present), None)
            if col is None:
                raise DataError(
                    f"{self.source}: every row lacks column {spec!r} (columns: {sorted(present)}); "
                    "is this the right dataset?"
                )
            chosen[options[0]] = col
        for col in self.optional_columns:
            chosen[col] = col if col in present else None
        return chosen

    def read_all(self) -> list[Example]:
        """Every row of the split as an Example, in source order, before sampling.

        Raises:
            DataError: On a missing column, a malformed row or a repeated id.
        """
        ds = self._load_split()
        columns = self._columns(list(ds.column_names))
        ds = ds.select_columns([c for c in columns.values() if c is not None])
        examples: list[Example] = []
        first_row: dict[str, int] = {}
        for i, raw in enumerate(ds):
            where = f"{self.source}: row {i}"
            row = {logical: (raw[col] if col is not None else None) for logical, col in columns.items()}
            ex = self.convert(row, i, where)
            if ex.id in first_row:
                raise DataError(f"{where}: duplicate id {ex.id!r} (first at row {first_row[ex.id]})")
            first_row[ex.id] = i
            examples.append(ex)
        if not examples:
            raise DataError(f"{self.source}: the split is empty")
        return examples

    def load(self) -> list[Example]:
        """The sampled examples: ``n`` rows chosen with ``seed``, kept in source order.

        Raises:
            DataError: On a malformed row (message names the source and row index).
            ConnectionError: If the Hub cannot be reached and no local copy is cached.
        """
        population = self.read_all()
        self.available = len(population)
        return sample_examples(population, self.n, self.seed)

    def fingerprint(self) -> dict:
        """Everything that determines :meth:`load`'s output.

        With ``data_files`` the files' content hashes stand in for the Hub id and revision
        (local paths are not part of it). Without a ``revision`` the Hub data is whatever is
        latest, which the fingerprint cannot see.
        """
        fp: dict[str, Any] = {
            "dataset": self.name,
            "loader_version": LOADER_VERSION,
            "path": self.path,
            "subset": self.subset,
            "split": self.split,
            "revision": self.revision,
            "n": self.n,
            "seed": self.seed,
            "data_files": None,
        }
        if self.data_files is not None:
            files = sorted(glob.glob(os.path.expanduser(self.data_files), recursive=True))
            fp["data_files"] = {
                "format": data_files_format(self.data_files),
                "sha256": [file_sha256(f) for f in files],
            }
        return fp


@component("dataset", "nq_open")
class NQOpen(HFDataset):
    """Natural Questions open (Kwiatkowski et al. 2019; Lee et al. 2019 open split).

    Rows: ``{"question": str, "answer": [str, ...]}``. The split has no id column, so ids
    are built from the 0-based row index in the split: ``nq_open-<split>-<index:05d>``
    (e.g. ``nq_open-validation-00042``). They are stable as long as the split's row order
    is (the Hub data is fixed; pin ``revision`` to be sure; a local copy must keep the
    original order). ``meta = {"source": ...}``.

    Args:
        path: Hub id (default ``google-research-datasets/nq_open``, formerly ``nq_open``).
        split: ``validation`` (3,610 questions) or ``train``.
        n: Sample size (``None`` = all).
        seed: Sampling seed.
        data_files: Local copy of the split (parquet / JSON lines), see :class:`HFDataset`.
        revision: Hub revision to pin.
        cache_dir: ``datasets`` cache folder.
    """

    name = "nq_open"
    required_columns = ("question", "answer")

    def __init__(
        self, path: str = "google-research-datasets/nq_open", split: str = "validation", **kwargs: Any
    ) -> None:
        super().__init__(path=path, split=split, **kwargs)

    def convert(self, row: dict[str, Any], index: int, where: str) -> Example:
        if isinstance(row["answer"], str):  # NQ answers are always a list; a bare string is a broken copy
            raise DataError(f"{where}: answer must be a list of strings, got str ({row['answer']!r})")
        return Example(
            id=f"{self.name}-{self.split}-{index:05d}",
            question=parse_question(row["question"], where),
            answers=parse_answers(row["answer"], where),
            answer_groups=None,
            meta={MetaKey.SOURCE: f"{self.name}:{self.split}"},
        )


@component("dataset", "hotpot_qa")
class HotpotQA(HFDataset):
    """HotpotQA (Yang et al. 2018), multi-hop questions over Wikipedia.

    Rows (Hub layout): ``id``, ``question``, ``answer`` (str), ``type`` (``bridge`` /
    ``comparison``), ``level`` (``easy`` / ``medium`` / ``hard``), ``supporting_facts =
    {"title": [...], "sent_id": [...]}``. The original JSON release (``_id``, and
    ``supporting_facts`` as ``[[title, sent_id], ...]``) is accepted too, so
    ``hotpot_dev_distractor_v1.json`` works as ``data_files``.

    Produces ``Example(id=row id, answers=[answer], answer_groups=None, meta={"gold_titles":
    unique supporting-fact titles in order of appearance, "type", "level", "source"})``
    (``type`` / ``level`` only when the columns exist).

    Args:
        path: Hub id (default ``hotpotqa/hotpot_qa``, formerly ``hotpot_qa``).
        subset: ``distractor`` or ``fullwiki`` (same validation questions; they differ in the
            bundled ``context``, which this loader does not use).
        split: ``validation`` (7,405 questions) or ``train``.
        n: Sample size (``None`` = all).
        seed: Sampling seed.
        data_files: Local copy of the split, see :class:`HFDataset`.
        revision: Hub revision to pin.
        cache_dir: ``datasets`` cache folder.
    """

    name = "hotpot_qa"
    required_columns = ("id|_id", "question", "answer", "supporting_facts")
    optional_columns = ("type", "level")
    SUBSETS = ("distractor", "fullwiki")

    def __init__(
        self,
        path: str = "hotpotqa/hotpot_qa",
        subset: str = "distractor",
        split: str = "validation",
        **kwargs: Any,
    ) -> None:
        if subset not in self.SUBSETS:
            raise ValueError(f"hotpot_qa subset must be one of {self.SUBSETS}, got {subset!r}")
        super().__init__(path=path, split=split, **kwargs)
        self.subset = subset

    @staticmethod
    def _gold_titles(facts: Any, where: str) -> list[str]:
        titles: list[Any]
        if isinstance(facts, list) and all(isinstance(f, list) for f in facts):
            titles = [f[0] if f else None for f in facts]  # original release: [[title, sent_id], ...]
        else:
            titles = [r.get("title") for r in _records(facts, "supporting_facts", where)]
        if not titles:
            raise DataError(f"{where}: supporting_facts is empty")
        for t in titles:
            if not isinstance(t, str) or not t:
                raise DataError(f"{where}: supporting_facts title must be a non-empty string, got {t!r}")
        return _unique([str(t) for t in titles])

    def convert(self, row: dict[str, Any], index: int, where: str) -> Example:
        answer = row["answer"]
        if not isinstance(answer, str):
            raise DataError(f"{where}: answer must be a string, got {type(answer).__name__} ({answer!r})")
        meta: dict[str, Any] = {MetaKey.GOLD_TITLES: self._gold_titles(row["supporting_facts"], where)}
        for key in self.optional_columns:
            if row.get(key) is not None:
                meta[key] = row[key]
        meta[MetaKey.SOURCE] = f"{self.name}/{self.subset}:{self.split}"
        return Example(
            id=parse_id(row["id"], where),
            question=parse_question(row["question"], where),
            answers=parse_answers(answer, where),
            answer_groups=None,
            meta=meta,
        )


@component("dataset", "asqa")
class ASQA(HFDataset):
    """ASQA (Stelmakh et al. 2022): ambiguous questions with one answer group per reading.

    Rows (``din0s/asqa``): ``sample_id`` (int), ``ambiguous_question``, ``qa_pairs = [{"question",
    "short_answers": [str], "context", "wikipage"}, ...]``, ``wikipages = [{"title", "url"}]``,
    ``annotations``. ALCE's ``asqa_eval_*.json`` (``question`` instead of
    ``ambiguous_question``) loads too.

    Produces ``Example(id=str(sample_id), question=ambiguous_question,
    answer_groups=[qa["short_answers"] for qa in qa_pairs], answers=the short answers
    flattened without repeats, meta={"gold_titles": unique wikipage titles, "sub_questions":
    the disambiguated questions, "source"})``. Wikipage entries whose title is null are
    skipped; every other malformation raises.

    Args:
        path: Hub id (default ``din0s/asqa``).
        split: ``dev`` (948 questions) or ``train``.
        n: Sample size (``None`` = all).
        seed: Sampling seed.
        data_files: Local copy of the split, see :class:`HFDataset`.
        revision: Hub revision to pin.
        cache_dir: ``datasets`` cache folder.
    """

    name = "asqa"
    required_columns = ("sample_id", "ambiguous_question|question", "qa_pairs", "wikipages")

    def __init__(self, path: str = "din0s/asqa", split: str = "dev", **kwargs: Any) -> None:
        super().__init__(path=path, split=split, **kwargs)

    def convert(self, row: dict[str, Any], index: int, where: str) -> Example:
        pairs = _records(row["qa_pairs"], "qa_pairs", where)
        if not pairs:
            raise DataError(f"{where}: qa_pairs is empty")
        raw_groups = []
        for j, qa in enumerate(pairs):
            if "short_answers" not in qa:
                raise DataError(f"{where}: qa_pairs[{j}] has no short_answers")
            raw_groups.append(qa["short_answers"])
        groups = parse_answer_groups(raw_groups, where)
        titles = []
        for page in _records(row["wikipages"] or [], "wikipages", where):
            title = page.get("title")
            if title is None:
                continue
            if not isinstance(title, str):
                raise DataError(f"{where}: wikipages title must be a string, got {title!r}")
            titles.append(title)
        return Example(
            id=parse_id(row["sample_id"], where),
            question=parse_question(row["ambiguous_question"], where),
            answers=_unique([a for g in groups for a in g]),
            answer_groups=groups,
            meta={
                MetaKey.GOLD_TITLES: _unique(titles),
                "sub_questions": [qa.get("question") for qa in pairs],
                MetaKey.SOURCE: f"{self.name}:{self.split}",
            },
        )
