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
