"""The site's data format, declared once: one record per data file (and per record nested in one),
each field with its JSON name and what it holds.

The writers (:mod:`~rr.reporting.site.rows`, :mod:`~rr.reporting.site.passages`,
:mod:`~rr.reporting.site.pages`) build their payloads from these names; the page scripts
(``assets/*.js``) read them, and ``tests/test_site_format.py`` checks that every field a script
reads off a payload is declared here (and the site's tests that the files hold exactly these
fields). :data:`FORMAT_VERSION` is written into ``index.js`` and ``overview.js``; raise it when a
field changes meaning, is renamed or goes away.

Every data file is a script ``RR.load(kind, key, payload);`` (:func:`~rr.reporting.site.encoding.write_data_file`).
"""

from __future__ import annotations

#: The data format's version (``format_version`` of ``index.js`` and ``overview.js``).
FORMAT_VERSION = 4  # 4: the examples list's predictions, the RAG-helped count, tables' verdicts (issue 52)


class Field(str):
    """A field's JSON name (the string itself) and what it holds (:attr:`means`)."""

    means: str

    def __new__(cls, name: str, means: str) -> Field:
        field = super().__new__(cls, name)
        field.means = means
        return field


class Record:
    """A JSON object of the site's data: its fields are the class's :class:`Field` attributes."""

    #: ``RR.load``'s kind of the data file this record is (empty: a record nested in one).
    kind = ""
    #: The data file(s), under the site folder.
    path = ""

    @classmethod
    def fields(cls) -> dict[str, Field]:
        """Attribute name -> field, in declaration order (the order the writers write them)."""
        return {k: v for k, v in vars(cls).items() if isinstance(v, Field)}


class Index(Record):
    """Systems, cells, datasets, flip kinds, McNemar pairs and shard bounds (every page but the
    overview loads it first)."""

    kind, path = "index", "data/index.js"
    systems = Field("systems", "list of System")
    system_columns = Field("system_columns", "the columns a system is a value of")
    cells = Field("cells", "[k, retriever, order] of each cell number")
    datasets = Field("datasets", "the datasets, sorted")
    n_examples = Field("n_examples", "number of examples")
    n_rows = Field("n_rows", "number of (example, system) list rows")
    row_chunks = Field("row_chunks", "first list row of each rows-NNN.js")
    ex_shards = Field("ex_shards", "first example of each ex/e-NNNN.js")
    p_shards = Field("p_shards", "first passage number of each p/p-NNNN.js")
    corpora = Field("corpora", "list of {name, status} of each corpus read")
    flips = Field("flips", "flip kind -> FlipCount")
    flip_bits = Field("flip_bits", "flip kind -> its bit in a flip character")
    helped = Field("helped", "FlipCount of the RAG-helped rows: wrong closed-book, right at some k > 0 cell")
    pairs = Field("pairs", "list of IndexPair (pairs.js adds their PairExamples)")
    notes = Field("notes", "what the site could not do")
    format_version = Field("format_version", "FORMAT_VERSION")


class System(Record):
    """One system of :class:`Index`: the values of the system columns."""

    label = Field("label", "the system's label")
    cols = Field("cols", "system column -> value")
    cells = Field("cells", "the system's cell numbers, in the order of its score characters")


class FlipCount(Record):
    """One flip kind of :attr:`Index.flips` and of the overview's ``flip_counts``."""

    label = Field("label", "the flip kind's name")
    metric = Field("metric", "the metric it belongs to")
    means = Field("means", "what it means")
    rows = Field("rows", "list rows with such a flip at some cell")
    errors = Field("errors", "groups it could not be computed for, and why")


class IndexPair(Record):
    """One McNemar pair of :attr:`Index.pairs`."""

    a = Field("a", "the first system's number")
    b = Field("b", "the second system's number")
    dataset = Field("dataset", "the dataset both are compared on")
    differs_in = Field("differs_in", "the system column they differ in")
    label = Field("label", "'<a> vs <b>'")


class PairExamples(Record):
    """One McNemar pair's discordant examples: ``data/pairs.js`` is the list of them, in the order
    of :attr:`Index.pairs`."""

    kind, path = "pairs", "data/pairs.js"
    ex = Field("ex", "the examples (numbers) where the two systems disagree at some cell")
    a_right = Field("a_right", "per example: the cells where a is right and b wrong")
    b_right = Field("b_right", "per example: the cells where b is right and a wrong")


class RowsChunk(Record):
    """A chunk of the examples list: whole examples, their (example, system) rows column by column."""

    kind, path = "rows", "data/rows-NNN.js"
    first = Field("first", "list row number of the chunk's first row")
    ex0 = Field("ex0", "number of the chunk's first example (id, ds, q, a start there)")
    id = Field("id", "per example: its id")
    ds = Field("ds", "per example: its dataset")
    q = Field("q", "per example: its original question")
    a = Field("a", "per example: its gold answers")
    dt = Field("dt", "per example: the distinct titles of its rankings' documents, one per line")
    ex = Field("ex", "per row: its example number")
    sys = Field("sys", "per row: its system number")
    sc = Field("sc", "per row: one score character per cell of its system (rr.js RR.score)")
    fl = Field("fl", "per row: one flip-mask character per cell of its system (Index.flip_bits)")
    acc = Field("acc", "per row: mean score over its k > 0 cells (null: none)")
    cb = Field("cb", "per row: mean closed-book (k = 0) score (null: none)")
    pred = Field("pred", "per row: its prediction at each cell of its system, in sc's order ('': missing)")


class ExampleShard(Record):
    """A few whole examples: each example's data and its rows column by column."""

    kind, path = "ex", "data/ex/e-NNNN.js"
    first = Field("first", "number of the shard's first example")
    examples = Field("examples", "list of Example")
    cells = Field("cells", "ExampleCells: the shard's rows by example, system, cell")


class Example(Record):
    """One example of an :class:`ExampleShard`."""

    e = Field("e", "its number")
    id = Field("id", "its id")
    ds = Field("ds", "its dataset")
    q = Field("q", "its original question")
    a = Field("a", "its gold answers")
    sys = Field("sys", "list of ExampleSystem")
    ranked = Field("ranked", "its rankings: lists of passage numbers (ExampleCells.ref indexes them)")


class ExampleSystem(Record):
    """One system's rows of an :class:`Example`."""

    s = Field("s", "the system's number")
    r = Field("r", "[first, end) of its rows in the shard's ExampleCells")
    q = Field("q", "its question, where it is not the example's (a perturbed query); optional")
    diff = Field(
        "diff",
        "[op, text] of q against the example's question (op =, -, +); with q, unless no job holds "
        "the example's original question",
    )


class ExampleCells(Record):
    """An :class:`ExampleShard`'s rows, one list per field."""

    c = Field("c", "the row's cell number")
    sc = Field("sc", "its score (null: missing)")
    pred = Field("pred", "its prediction")
    raw = Field("raw", "the model's raw output")
    mk = Field("mk", "marker found (null: not recorded)")
    rf = Field("rf", "refused (null: not recorded)")
    ow = Field("ow", "prompt over the context window (null: not recorded)")
    jd = Field("jd", "the judge")
    dp = Field("dp", "the document perturbation")
    ref = Field("ref", "its ranking's index in Example.ranked (-1: none)")
    docs = Field("docs", "its documents: n (ranking's first n), -n (reversed), {r: positions}, or numbers")
    fl = Field("fl", "the flips counted at its cell: a flip-mask character (Index.flip_bits)")
    ng = Field(
        "ng", "documents handed to the strategy before window fitting (n_docs_given; null: not recorded)"
    )


class PromptShard(Record):
    """The final prompts of an :class:`ExampleShard`'s rows (same shard number), loaded only when
    a prompt is opened: a prompt holds every document's text, so it would make the example
    shards many times larger."""

    kind, path = "pr", "data/pr/pr-NNNN.js"
    first = Field("first", "number of the example shard's first example")
    pr = Field(
        "pr",
        "per row of the example shard's cells: its final step's prompt exactly as rendered for the model "
        "(the row's prompt in its job's prompts.parquet; '': not recorded)",
    )


class PassageShard(Record):
    """Passages by number, each once."""

    kind, path = "p", "data/p/p-NNNN.js"
    first = Field("first", "number of the shard's first passage")
    id = Field("id", "per passage: its id")
    c = Field("c", "per passage: its corpus (Index.corpora)")
    title = Field("title", "per passage: its title")
    text = Field("text", "per passage: its text (null: not readable)")


class Overview(Record):
    """The overview page's data."""

    kind, path = "overview", "data/overview.js"
    title = Field("title", "the page title")
    rows = Field("rows", "rows of the score table")
    examples = Field("examples", "number of examples")
    systems = Field("systems", "number of systems")
    resamples = Field("resamples", "bootstrap resamples of the intervals")
    confidence = Field("confidence", "their confidence level")
    seed = Field("seed", "their seed")
    jobs = Field("jobs", "list of OverviewJob")
    config_keys = Field("config_keys", "the config keys whose values differ between jobs")
    sweeps = Field("sweeps", "list of Sweep: each sweep folder's job states (rr status)")
    left_out = Field("left_out", "list of LeftOutJob: the jobs below the report's folders it does not hold")
    left_out_headline = Field(
        "left_out_headline", "'2 of 3 jobs below ... are not in this report' ('' if none)"
    )
    sections = Field("sections", "list of Section: each report section with its tables and figures")
    flip_counts = Field("flip_counts", "flip kind -> FlipCount")
    pairs = Field("pairs", "list of OverviewPair")
    pairs_apart = Field("pairs_apart", "list of PairApart")
    notes = Field("notes", "what the site could not do")
    environment_note = Field(
        "environment_note", "rr report's note that the jobs ran in different environments, or null"
    )
    format_version = Field("format_version", "FORMAT_VERSION")


class OverviewJob(Record):
    """A job of the report, as the overview's jobs table shows it (from its ``summary.json``)."""

    job_id = Field("job_id", "its id")
    rows = Field("rows", "its score rows")
    folder = Field("folder", "its folder")
    model_calls = Field("model_calls", "model calls it made (null: not recorded)")
    cache_hits = Field("cache_hits", "generations it read from the cache (null: not recorded)")
    wall_s = Field("wall_s", "its wall time in seconds (null: not recorded)")
    environment = Field("environment", "the lock its packages came from (rr.environment.describe)")
    accuracy = Field("accuracy", "its mean score over k > 0 cells (null: none)")
    closed_book_accuracy = Field("closed_book_accuracy", "its mean closed-book (k = 0) score (null: none)")
    config = Field("config", "Overview.config_keys -> its value")


class Section(Record):
    """A report section on the overview."""

    name = Field("name", "the section's name (rr report --only)")
    title = Field("title", "its title")
    skipped = Field("skipped", "why it did not run; optional (absent: it ran)")
    error = Field("error", "the error it failed with; optional (absent: it did not fail)")
    items = Field("items", "list of Table and Figure, in the report's order")


class Table(Record):
    """A report table of a :class:`Section` (its first rows; the CSV in ``tables/`` has all)."""

    table = Field("table", "the table's name (tables/<table>.csv)")
    title = Field("title", "its title")
    caption = Field("caption", "its caption")
    digits = Field("digits", "decimal places its numbers are shown with")
    columns = Field("columns", "its column names")
    rows = Field("rows", "its first rows, each a list of values in column order")
    total_rows = Field("total_rows", "how many rows it has")
    verdicts = Field(
        "verdicts", "verdict -> how many of all its rows have it, where it has a verdict column (else null)"
    )


class Figure(Record):
    """A report figure of a :class:`Section`."""

    figure = Field("figure", "the figure's name (figures/<figure>.png)")
    title = Field("title", "its title")
    caption = Field("caption", "its caption")
    width = Field("width", "its width in pixels (null: not a readable PNG)")
    height = Field("height", "its height in pixels (null: not a readable PNG)")


class Sweep(Record):
    """A sweep folder the report's jobs lie in, with its jobs' states (``rr status``)."""

    folder = Field("folder", "the sweep folder")
    error = Field("error", "why its states could not be read; optional")
    jobs = Field("jobs", "list of SweepJob")


class SweepJob(Record):
    """A job of a :class:`Sweep`."""

    job_id = Field("job_id", "its id")
    state = Field("state", "done, partial or missing (as rr status)")
    folder = Field("folder", "its folder ('' for a missing job)")
    detail = Field("detail", "what happened (the error, the signal), or its overrides")


class OverviewPair(Record):
    """A McNemar pair as the overview lists it."""

    label = Field("label", "'<a> vs <b>'")
    differs_in = Field("differs_in", "the system column they differ in")
    dataset = Field("dataset", "the dataset")
    examples = Field("examples", "number of discordant examples")


class PairApart(Record):
    """A pair of systems one column apart that the paired tests do not compare."""

    label = Field("label", "'<a> vs <b>'")
    differs_in = Field("differs_in", "the system column they differ in")
    dataset = Field("dataset", "the dataset")
    reason = Field("reason", "why they are not compared")


class LeftOutJob(Record):
    """A job below the report's folders that is not finished, so not in the report
    (:class:`rr.reporting.coverage.LeftOut`)."""

    job_id = Field("job_id", "its id")
    state = Field("state", "partial, failed or missing (as rr status)")
    folder = Field("folder", "its folder ('' for a missing job)")
    detail = Field("detail", "what happened (the error, the signal) or, if missing, its overrides")
    command = Field("command", "the command that finishes it ('' when unknown)")


#: Every record, data files first.
RECORDS: tuple[type[Record], ...] = (
    Index,
    PairExamples,
    RowsChunk,
    ExampleShard,
    PromptShard,
    PassageShard,
    Overview,
    OverviewJob,
    Section,
    Table,
    Figure,
    Sweep,
    SweepJob,
    System,
    FlipCount,
    IndexPair,
    Example,
    ExampleSystem,
    ExampleCells,
    OverviewPair,
    PairApart,
    LeftOutJob,
)
