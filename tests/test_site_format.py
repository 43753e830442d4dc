"""The site's page scripts read only the fields :mod:`rr.reporting.site.format` declares.

Each page script names the payloads it reads with fixed variable names (:data:`READS`); every
``name.field`` read off one of them must be a field of the records that variable holds. A field
renamed on one side only (Python's declaration or a script) fails here; that the files hold
exactly the declared fields is tests/test_site.py's
``test_data_files_hold_exactly_the_declared_fields``.
"""

from __future__ import annotations

import re
from importlib import resources

import pytest

from rr.reporting.site import format as fmt

#: script -> {variable: the records whose fields it may read}
READS: dict[str, dict[str, tuple[type[fmt.Record], ...]]] = {
    "examples.js": {
        "idx": (fmt.Index,),
        "chunk": (fmt.RowsChunk,),
        "fc": (fmt.FlipCount,),
        "pair": (fmt.IndexPair, fmt.PairExamples),
        "sys": (fmt.System,),
    },
    "example.js": {
        "idx": (fmt.Index,),
        "exs": (fmt.ExampleShard,),
        "col": (fmt.ExampleCells,),
        "item": (fmt.Example,),
        "sysd": (fmt.ExampleSystem,),
        "ps": (fmt.PassageShard,),
        "prs": (fmt.PromptShard,),
    },
    "overview.js": {
        "d": (fmt.Overview,),
        "j": (fmt.OverviewJob,),
        "sw": (fmt.Sweep,),
        "sj": (fmt.SweepJob,),
        "sec": (fmt.Section,),
        "t": (fmt.Table,),
        "it": (fmt.Table, fmt.Figure),
        "f": (fmt.FlipCount,),
        "p": (fmt.OverviewPair, fmt.PairApart),
        "lo": (fmt.LeftOutJob,),
    },
}
#: Properties a script adds to a payload itself: (script, variable) -> names.
ADDED = {("example.js", "sysd"): {"cells"}}  # unpack(): a system's rows, unpacked


def script(name: str) -> str:
    return (resources.files("rr.reporting.site") / "assets" / name).read_text(encoding="utf-8")


def undeclared(text: str, variable: str, records: tuple[type[fmt.Record], ...], added: set[str]) -> set[str]:
    """The fields ``text`` reads off ``variable`` that none of ``records`` declares."""
    read = set(re.findall(rf"(?<![\w.]){re.escape(variable)}\.(\w+)", text))
    assert read, f"no {variable}.<field> read found: the variable was renamed (update READS)"
    declared = {str(f) for r in records for f in r.fields().values()}
    return read - declared - added


@pytest.mark.parametrize("name", sorted(READS))
def test_page_scripts_read_only_declared_fields(name: str) -> None:
    text = script(name)
    for variable, records in READS[name].items():
        missing = undeclared(text, variable, records, ADDED.get((name, variable), set()))
        assert not missing, f"{name} reads {sorted(missing)} off `{variable}`, not declared in {records}"


def test_a_field_renamed_on_one_side_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    text = script("examples.js")
    assert not undeclared(text, "chunk", (fmt.RowsChunk,), set())
    # the script reads a name Python does not write
    assert undeclared(text.replace("chunk.sc[i]", "chunk.sk[i]"), "chunk", (fmt.RowsChunk,), set()) == {"sk"}
    # Python writes a name the script does not read
    monkeypatch.setattr(fmt.RowsChunk, "sc", fmt.Field("sk", "renamed"))
    assert undeclared(text, "chunk", (fmt.RowsChunk,), set()) == {"sc"}


def test_every_data_file_has_a_record_and_fields_are_unique() -> None:
    files = [r for r in fmt.RECORDS if r.kind]
    assert {r.kind for r in files} == {"index", "pairs", "rows", "ex", "pr", "p", "overview"}
    for record in fmt.RECORDS:
        names = [str(f) for f in record.fields().values()]
        assert len(names) == len(set(names)) and all(f.means for f in record.fields().values())
    assert "format_version" in fmt.Index.fields() and "format_version" in fmt.Overview.fields()


def listed_records(field: fmt.Field) -> set[type[fmt.Record]]:
    """The records a field holds a list of, as its meaning declares it ('list of A' or 'list of A and B')."""
    m = re.match(r"list of (\w+)(?: and (\w+))?", field.means)
    by_name = {r.__name__: r for r in fmt.RECORDS}
    return {by_name[n] for n in (m.groups() if m else ()) if n in by_name}


def iterated(text: str, reads: dict[str, tuple[type[fmt.Record], ...]]) -> list[tuple[str, str, str]]:
    """``(variable, field, element variable)`` of each ``variable.field.forEach(function (element)``
    (or map, filter, some) in ``text`` whose variable is a payload variable of ``reads``."""
    found = re.findall(r"(?<![\w.])(\w+)\.(\w+)\.(?:forEach|map|filter|some)\(function \((\w+)", text)
    return [(v, f, e) for v, f, e in found if v in reads]


@pytest.mark.parametrize("name", sorted(READS))
def test_every_list_of_records_a_script_walks_is_read_through_a_checked_variable(name: str) -> None:
    """A script that walks a list of records (``d.jobs.forEach(function (j) ...``) names the element
    with a variable of :data:`READS` that holds those records, so its field reads are checked too."""
    reads = READS[name]
    walked = 0
    for variable, field_name, element in iterated(script(name), reads):
        fields = {str(f): f for r in reads[variable] for f in r.fields().values()}
        records = listed_records(fields[field_name]) if field_name in fields else set()
        if not records:
            continue  # a list of plain values (config_keys, answers, ...)
        walked += 1
        assert element in reads, f"{name}: {variable}.{field_name} is walked as `{element}`, not in READS"
        assert records <= set(reads[element]), (
            f"{name}: `{element}` holds {records}, READS says {reads[element]}"
        )
    if name == "overview.js":
        assert walked >= 5  # jobs, sweeps and their jobs, sections (twice) and their items


def test_a_list_walked_through_an_unchecked_variable_is_caught() -> None:
    text = script("overview.js").replace("d.jobs.forEach(function (j)", "d.jobs.forEach(function (job)")
    walks = [(f, e) for _v, f, e in iterated(text, READS["overview.js"])]
    assert ("jobs", "job") in walks and "job" not in READS["overview.js"]
    assert listed_records(fmt.Overview.jobs) == {fmt.OverviewJob}
    assert listed_records(fmt.Section.items) == {fmt.Table, fmt.Figure}


def test_the_overviews_sweeps_hold_exactly_the_declared_fields(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``overview.js``'s sweeps (read by the overview as ``sw`` and ``sj``): a sweep whose states
    read, and one whose states do not (its configs no longer compose)."""
    from types import SimpleNamespace

    from rr.reporting.site import pages

    for name in ("ok", "broken"):
        (tmp_path / name / "0").mkdir(parents=True)
        (tmp_path / name / "multirun.yaml").write_text("{}\n")
    job = SimpleNamespace(job_id="j", state="done", path=tmp_path / "ok" / "0", detail="")

    def status(root):
        if root.name == "broken":
            raise ValueError("does not compose")
        return [job]

    monkeypatch.setattr("rr.resume.status", status)
    ctx = SimpleNamespace(jobs=[SimpleNamespace(path=tmp_path / n / "0") for n in ("ok", "broken")])
    broken, ok = pages._sweeps(ctx)  # type: ignore[arg-type]
    names = [str(f) for f in fmt.Sweep.fields().values()]
    assert list(broken) == names and broken["error"] == "ValueError: does not compose"
    assert list(ok) == [n for n in names if n != "error"]
    assert [list(j) for j in ok["jobs"]] == [[str(f) for f in fmt.SweepJob.fields().values()]]
