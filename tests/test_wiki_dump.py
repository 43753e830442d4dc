"""The Wikipedia-dump corpus on the real shortened enwiki dump shipped by gensim."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rr.data.base import DataError
from rr.data.wiki_dump import WikiDumpCorpus, main, split_chunks, wikitext_to_text

gensim = pytest.importorskip("gensim")
DUMP = (
    Path(gensim.__file__).parent
    / "test"
    / "test_data"
    / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
)


def test_split_on_double_newlines() -> None:
    assert split_chunks("a\nb\n\n\n c \n\n\n\nd", 1) == ["a\nb", "c", "d"]
    assert split_chunks("Heading\n\nA real paragraph.", min_chars=10) == ["A real paragraph."]


def test_wikitext_to_text_drops_refs_files_templates() -> None:
    text = wikitext_to_text(
        "{{Infobox x|a=1}}'''Paris''' is the [[capital city|capital]] of [[France]].<ref>Some book, p. 3</ref>\n\n"
        "[[File:Paris.jpg|thumb|A view]]It has 2 million people.[[Category:Capitals]]"
    )
    assert split_chunks(text) == ["Paris is the capital of France.", "It has 2 million people."]


def test_real_dump_chunks_and_cache(tmp_path: Path) -> None:
    chunks = tmp_path / "chunks.jsonl"
    corpus = WikiDumpCorpus(str(DUMP), chunks_path=str(chunks), max_pages=2).load()
    titles = [p.title for p in corpus.passages]
    # The dump starts with the redirect "AccessibleComputing" (skipped), then Anarchism (id 12), Autism (25).
    assert list(dict.fromkeys(titles)) == ["Anarchism", "Autism"]
    assert (titles.count("Anarchism"), titles.count("Autism")) == (108, 80)
    first = corpus["12-0"]
    assert first.text.startswith(
        "Anarchism is a political philosophy that advocates self-governed societies based on voluntary institutions."
    )
    assert corpus["12-2"].text == "Etymology and terminology"  # a section heading is its own chunk
    assert corpus["25-0"].text.startswith("Autism is a neurodevelopmental disorder")
    assert not any("[[" in p.text or "{{" in p.text for p in corpus.passages)
    # one malformed footnote in the real dump is not parsed as a tag by mwparserfromhell and stays text
    assert [p.id for p in corpus.passages if "<ref" in p.text] == ["12-49"]
    # the chunks file is written once and read back identically
    lines = chunks.read_text().splitlines()
    assert len(lines) == 188 and json.loads(lines[0])["id"] == "12-0"
    again = WikiDumpCorpus("/nonexistent.xml.bz2", chunks_path=str(chunks), max_pages=2).load()
    assert again.passages == corpus.passages
    # the chunks are retrievable: BM25 over them finds the autism paragraph on prevalence
    from rr.retrieval.bm25 import BM25Retriever

    bm25 = BM25Retriever()
    bm25.index(corpus)
    top3 = [h.passage_id for h in bm25.search(["how many people are affected by autism worldwide"], 3)[0]]
    assert "25-3" in top3 and "21.7 million" in corpus["25-3"].text
    first5 = WikiDumpCorpus("/nonexistent.xml.bz2", chunks_path=str(chunks), max_passages=5).load()
    assert first5.passages == corpus.passages[:5]


def test_missing_dump_and_bad_chunks(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="not found"):
        WikiDumpCorpus(str(tmp_path / "nope.xml.bz2")).load()
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "1-0", "text": "x"}\n')
    with pytest.raises(DataError, match="bad.jsonl:1"):
        WikiDumpCorpus("x", chunks_path=str(bad)).load()


def test_cli_writes_chunks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "c.jsonl"
    assert main([str(DUMP), str(out), "--max-pages", "1", "--min-chars", "40"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["title"] for r in rows} == {"Anarchism"} and all(len(r["text"]) >= 40 for r in rows)
    assert f"wrote {len(rows)} chunks" in capsys.readouterr().out
