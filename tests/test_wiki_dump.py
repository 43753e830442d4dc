"""The Wikipedia-dump corpus on the real shortened enwiki dump shipped by gensim."""

from __future__ import annotations

import hashlib
import json
import logging
import multiprocessing
import time
from pathlib import Path
from xml.sax.saxutils import escape

import pytest

from rr.commands.chunk_wiki import main
from rr.data import wiki_dump
from rr.data.base import DataError
from rr.data.wiki_dump import (
    WikiDumpCorpus,
    manifest_path,
    read_shards,
    split_chunks,
    wikitext_to_text,
    write_chunks,
    write_shards,
)

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


# --- sharded, parallel, resumable chunking -------------------------------------------------------

#: 4 blocks of one article each: Anarchism, Autism, Albedo, A (~2 s of parsing; the next
#: articles, Alabama and Abraham Lincoln, would add ~5 s each time). Blocks of several articles
#: and a shorter last block: test_several_dumps_one_job_or_separate_jobs.
PAGES = 4
SHARD_KW = {"max_pages": PAGES, "block_pages": 1}


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The shards of the first 4 articles in blocks of 1, written by one process."""
    out = tmp_path_factory.mktemp("ref")
    summary = write_shards(DUMP, out, workers=1, **SHARD_KW)
    assert (summary.shards, summary.parsed, summary.reused) == (4, 4, 0)
    return _files(out)


def _manifest(files: dict[str, bytes]) -> dict:
    return json.loads(files[manifest_path(".", DUMP).name])


def test_shards_layout_and_manifest(reference: dict[str, bytes]) -> None:
    stem = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened"
    assert sorted(reference) == [f"{stem}-{i:05d}.jsonl" for i in range(4)] + [f"{stem}.manifest.json"]
    m = _manifest(reference)
    assert {
        k: m[k] for k in ("dump", "dump_bytes", "min_chars", "max_pages", "block_pages", "complete", "pages")
    } == {
        "dump": DUMP.name,
        "dump_bytes": DUMP.stat().st_size,
        "min_chars": 1,
        "max_pages": 4,
        "block_pages": 1,
        "complete": True,
        "pages": 4,
    }
    assert [(s["block"], s["first_page"], s["last_page"], s["pages"]) for s in m["shards"]] == [
        (0, "12", "12", 1),  # Anarchism
        (1, "25", "25", 1),  # Autism
        (2, "39", "39", 1),  # Albedo
        (3, "290", "290", 1),  # A
    ]
    assert [s["passages"] for s in m["shards"][:2]] == [108, 80]
    for s in m["shards"]:
        data = reference[s["file"]]
        assert hashlib.sha256(data).hexdigest() == s["sha256"] and data.count(b"\n") == s["passages"]
    assert m["passages"] == sum(s["passages"] for s in m["shards"])


def test_shards_identical_for_1_and_3_workers(tmp_path: Path, reference: dict[str, bytes]) -> None:
    summary = write_shards(DUMP, tmp_path, workers=3, **SHARD_KW)
    assert (summary.shards, summary.parsed) == (4, 4)
    assert _files(tmp_path) == reference  # every shard and the manifest, byte for byte
    # the single JSONL file is the shards' concatenation, whatever the worker count
    jsonl = tmp_path / "all.jsonl"
    assert write_chunks(DUMP, jsonl, max_pages=PAGES, workers=2) == _manifest(reference)["passages"]
    shards = [reference[s["file"]] for s in _manifest(reference)["shards"]]
    assert jsonl.read_bytes() == b"".join(shards)


def test_killed_run_resumes_at_missing_blocks(
    tmp_path: Path, reference: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = wiki_dump._write_shard
    calls: list[int] = []

    def dies_after_two(job: wiki_dump._ShardJob) -> dict:
        if len(calls) == 2:
            raise KeyboardInterrupt  # the job is killed while parsing its third block
        calls.append(job.block)
        return real(job)

    monkeypatch.setattr(wiki_dump, "_write_shard", dies_after_two)
    with pytest.raises(KeyboardInterrupt):
        write_shards(DUMP, tmp_path, workers=1, **SHARD_KW)
    m = json.loads(manifest_path(tmp_path, DUMP).read_text())
    assert m["complete"] is False and [s["block"] for s in m["shards"]] == [0, 1]
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())  # no temporary left behind
    with pytest.raises(DataError, match="incomplete; re-run"):
        read_shards(tmp_path, DUMP, max_pages=PAGES)
    with pytest.raises(DataError, match="dump not found"):  # the corpus would finish it, but needs the dump
        WikiDumpCorpus("/elsewhere/" + DUMP.name, chunks_path=str(tmp_path), max_pages=PAGES).load()

    monkeypatch.setattr(wiki_dump, "_write_shard", real)
    summary = write_shards(DUMP, tmp_path, workers=2, **SHARD_KW)  # resumed with another worker count
    assert (summary.parsed, summary.reused, summary.shards) == (2, 2, 4)
    assert _files(tmp_path) == reference

    # a finished folder is a no-op that does not even open the dump
    def no_streaming(*args: object, **kwargs: object) -> None:
        raise AssertionError("the dump was streamed")

    monkeypatch.setattr(wiki_dump, "iter_articles", no_streaming)
    assert write_shards(DUMP, tmp_path, workers=2, **SHARD_KW).parsed == 0
    assert _files(tmp_path) == reference


def test_deleted_and_corrupt_shards_are_redone(
    tmp_path: Path, reference: dict[str, bytes], caplog: pytest.LogCaptureFixture
) -> None:
    for name, data in reference.items():
        (tmp_path / name).write_bytes(data)
    shards = _manifest(reference)["shards"]
    # shard 1 deleted with its manifest entry (a run killed before recording it)
    m = _manifest(reference)
    m["shards"] = [s for s in shards if s["block"] != 1]
    m["complete"] = False
    manifest_path(tmp_path, DUMP).write_text(json.dumps(m))
    (tmp_path / shards[1]["file"]).unlink()
    # shard 2 truncated, shard 3 deleted but still listed
    (tmp_path / shards[2]["file"]).write_bytes(reference[shards[2]["file"]][:100])
    (tmp_path / shards[3]["file"]).unlink()
    with pytest.raises(DataError, match="incomplete"):
        read_shards(tmp_path, DUMP, max_pages=PAGES)
    with caplog.at_level(logging.WARNING, logger="rr.data.wiki_dump"):
        summary = write_shards(DUMP, tmp_path, workers=1, **SHARD_KW)
    assert (summary.parsed, summary.reused) == (3, 1)
    assert "-00002.jsonl is corrupt (sha256 mismatch); redoing it" in caplog.text
    assert "-00003.jsonl is missing; redoing it" in caplog.text
    assert _files(tmp_path) == reference

    # a complete manifest with a corrupt shard: reading refuses it, re-running redoes only that shard
    (tmp_path / shards[0]["file"]).write_bytes(b"{}\n")
    with pytest.raises(DataError, match=r"-00000\.jsonl: shard corrupt"):
        read_shards(tmp_path, DUMP, max_pages=PAGES)
    assert write_shards(DUMP, tmp_path, workers=1, **SHARD_KW).parsed == 1
    assert _files(tmp_path) == reference


def test_other_settings_refused(tmp_path: Path, reference: dict[str, bytes]) -> None:
    for name, data in reference.items():
        (tmp_path / name).write_bytes(data)
    with pytest.raises(DataError, match=r"other settings: block_pages=1 \(now 3\)"):
        write_shards(DUMP, tmp_path, max_pages=PAGES, block_pages=3)
    with pytest.raises(DataError, match=r"min_chars=1 \(now 40\)"):
        WikiDumpCorpus(
            str(DUMP), chunks_path=str(tmp_path), max_pages=PAGES, min_chars=40, block_pages=1
        ).load()


def test_sharded_corpus_equals_jsonl_corpus(tmp_path: Path, reference: dict[str, bytes]) -> None:
    jsonl = WikiDumpCorpus(str(DUMP), chunks_path=str(tmp_path / "c.jsonl"), max_pages=PAGES).load()
    folder = tmp_path / "shards"
    sharded = WikiDumpCorpus(
        str(DUMP), chunks_path=str(folder), max_pages=PAGES, workers=2, block_pages=1
    ).load()
    assert sharded.passages == jsonl.passages and sharded.fingerprint() == jsonl.fingerprint()
    assert _files(folder) == reference
    # read back without the dump (only its name is used), and the first passages only (all 108
    # of the first shard, 2 of the second)
    again = WikiDumpCorpus(
        "/elsewhere/" + DUMP.name, chunks_path=str(folder), max_pages=PAGES, max_passages=110
    ).load()
    assert again.passages == jsonl.passages[:110]
    # a malformed line is named by shard file and line
    shard = folder / _manifest(reference)["shards"][1]["file"]
    lines = shard.read_bytes().splitlines(keepends=True)
    lines[2] = b'{"id": "25-2", "text": "x"}\n'
    shard.write_bytes(b"".join(lines))
    m = json.loads(manifest_path(folder, DUMP).read_text())
    m["shards"][1]["sha256"] = hashlib.sha256(shard.read_bytes()).hexdigest()
    manifest_path(folder, DUMP).write_text(json.dumps(m))
    with pytest.raises(DataError, match=rf"{shard.name}:3: not a chunk line"):
        WikiDumpCorpus(str(DUMP), chunks_path=str(folder), max_pages=PAGES).load()


def _tiny_dump(path: Path) -> Path:
    """A plain-XML dump with two articles (ids 900001, 900003), a redirect and a talk page."""
    pages = [
        ("Alpha", 0, 900001, "'''Alpha''' is the first letter.\n\nIt comes before [[Beta]]."),
        ("Talk:Alpha", 1, 900002, "Discussion."),
        ("Beta", 0, 900003, "'''Beta''' is the second letter."),
        ("B", 0, 900004, "#REDIRECT [[Beta]]"),
    ]
    body = "".join(
        f"<page><title>{t}</title><ns>{ns}</ns><id>{i}</id><revision><text>{escape(x)}</text></revision></page>"
        for t, ns, i, x in pages
    )
    path.write_text(f'<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/">{body}</mediawiki>')
    return path


def test_several_dumps_one_job_or_separate_jobs(tmp_path: Path) -> None:
    tiny = _tiny_dump(tmp_path / "xxwiki-pages-articles2.xml")
    together, separate = tmp_path / "together", tmp_path / "separate"
    assert write_shards([DUMP, tiny], together, max_pages=3, block_pages=2, workers=2).shards == 3
    for dump in (tiny, DUMP):  # two jobs, in any order, into the same folder
        write_shards(dump, separate, max_pages=3, block_pages=2)
    assert _files(together) == _files(separate)
    assert "xxwiki-pages-articles2-00000.jsonl" in _files(together)
    # blocks of several articles, the last one shorter: Anarchism + Autism, then Albedo
    m = json.loads(manifest_path(together, DUMP).read_text())
    assert (m["pages"], m["complete"]) == (3, True)
    assert [
        (s["block"], s["first_page"], s["last_page"], s["pages"], s["passages"]) for s in m["shards"]
    ] == [
        (0, "12", "25", 2, 188),
        (1, "39", "39", 1, 44),
    ]
    corpus = WikiDumpCorpus([str(DUMP), str(tiny)], chunks_path=str(together), max_pages=3).load()
    ids = [p.id for p in corpus.passages]
    assert ids[-3:] == ["900001-0", "900001-1", "900003-0"] and ids[0] == "12-0"
    jsonl = tmp_path / "all.jsonl"
    write_chunks([DUMP, tiny], jsonl, max_pages=3)
    assert [json.loads(line)["id"] for line in jsonl.read_text().splitlines()] == ids
    with pytest.raises(DataError, match="same name stem"):
        write_shards([tiny, tmp_path / "xxwiki-pages-articles2.xml.bz2"], together)


def test_cli_sharded_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], reference: dict[str, bytes]
) -> None:
    out = tmp_path / "shards"
    args = [str(DUMP), str(out), "--max-pages", str(PAGES), "--block-pages", "1", "--no-progress"]
    assert main([*args, "--processes", "2"]) == 0
    assert "in 4 shards (4 parsed now, 0 kept)" in capsys.readouterr().out
    assert _files(out) == reference
    assert main([*args, "--workers", "3"]) == 0
    assert "(0 parsed now, 4 kept)" in capsys.readouterr().out
    assert main([str(tmp_path / "nope.xml.bz2"), str(DUMP), str(out)]) == 2
    err = capsys.readouterr().err
    assert err == f"rr: Wikipedia dump not found: {tmp_path / 'nope.xml.bz2'}\n"


@pytest.mark.skipif(multiprocessing.get_start_method() != "fork", reason="the patch reaches workers by fork")
def test_failed_block_keeps_shards_other_workers_finished(
    tmp_path: Path, reference: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = wiki_dump._render
    later = [tmp_path / f"{wiki_dump.dump_stem(DUMP)}-{i:05d}.jsonl" for i in (2, 3)]

    def fails_on_block_1(pages: list, min_chars: int) -> tuple[bytes, int]:
        if pages[0][2] == "25":  # block 1 fails once the other worker has written blocks 2 and 3
            deadline = time.monotonic() + 60
            while not all(p.exists() for p in later) and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(1)  # their results reach the parent
            raise RuntimeError("mwparserfromhell choked")
        return real(pages, min_chars)

    monkeypatch.setattr(wiki_dump, "_render", fails_on_block_1)
    # the workers must inherit the patch: fork them from this process (rr starts them from a fork server)
    monkeypatch.setattr(wiki_dump, "START_METHOD", "fork")
    with pytest.raises(RuntimeError, match="choked"):
        write_shards(DUMP, tmp_path, workers=2, **SHARD_KW)
    m = json.loads(manifest_path(tmp_path, DUMP).read_text())
    assert [s["block"] for s in m["shards"]] == [0, 2, 3] and m["complete"] is False
    monkeypatch.setattr(wiki_dump, "_render", real)
    assert write_shards(DUMP, tmp_path, workers=2, **SHARD_KW).parsed == 1
    assert _files(tmp_path) == reference


def test_rr_chunk_wiki_subcommand(tmp_path: Path) -> None:
    from .test_resume import rr_cli

    out = tmp_path / "chunks"
    ok = rr_cli(["chunk-wiki", str(DUMP), str(out), "--max-pages", "1", "--no-progress"], tmp_path)
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert "wrote 108 chunks" in ok.stdout  # Anarchism's 108 chunks (see test_real_dump_chunks_and_cache)
    missing = rr_cli(["chunk-wiki", str(tmp_path / "nope.xml.bz2"), str(out)], tmp_path)
    assert missing.returncode == 2 and missing.stderr.strip().endswith("nope.xml.bz2")
    assert "Traceback" not in missing.stderr


def test_line_separators_in_a_page_keep_the_chunks_readable(tmp_path: Path) -> None:
    """U+2028, U+2029 and U+0085 (which ``str.splitlines`` splits at) inside a page's title and text:
    the shards and the single JSONL file hold them escaped, read back as they were; a shard written
    before (the characters raw) still reads."""
    odd = "a\u2028b\u2029c\x85d"
    dump = tmp_path / "xxwiki-pages-articles3.xml"
    body = "".join(
        f"<page><title>{t}</title><ns>0</ns><id>{i}</id><revision><text>{escape(x)}</text></revision></page>"
        for t, i, x in [(f"T{odd}", 1, f"First {odd} line.\n\nSecond."), ("Plain", 2, "Plain text.")]
    )
    dump.write_text(
        f'<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/">{body}</mediawiki>', "utf-8"
    )
    want = [
        ("1-0", f"T{odd}", f"First {odd} line."),
        ("1-1", f"T{odd}", "Second."),
        ("2-0", "Plain", "Plain text."),
    ]
    shards, jsonl = tmp_path / "shards", tmp_path / "all.jsonl"
    for chunks in (shards, jsonl):  # written and read
        corpus = WikiDumpCorpus(str(dump), chunks_path=str(chunks)).load()
        assert [(p.id, p.title, p.text) for p in corpus.passages] == want
    dump.rename(tmp_path / "gone.xml")
    for chunks in (shards, jsonl):  # read back alone
        assert [
            (p.id, p.title, p.text)
            for p in WikiDumpCorpus(str(dump), chunks_path=str(chunks)).load().passages
        ] == want
    for f in [jsonl, *shards.glob("*-00000.jsonl")]:
        data = f.read_bytes()
        assert not any(c.encode() in data for c in "\u2028\u2029\x85") and data.count(b"\n") == 3
    # a shard written raw (before the escaping) reads too
    shard = next(shards.glob("*-00000.jsonl"))
    raw = "".join(json.dumps({"id": i, "title": t, "text": x}, ensure_ascii=False) + "\n" for i, t, x in want)
    shard.write_bytes(raw.encode())
    m = json.loads(manifest_path(shards, dump).read_text())
    m["shards"][0]["sha256"] = hashlib.sha256(raw.encode()).hexdigest()
    manifest_path(shards, dump).write_text(json.dumps(m))
    assert [(p.id, p.title, p.text) for p in read_shards(shards, dump)] == want
