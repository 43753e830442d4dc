"""The generation cache's shard indexes: lookups equal reading every shard whole, whatever the indexes.

The reference is the cache's former reader (every shard, in name order, read into one dict; the
last line of a key wins; every non-blank line that is not an entry counted), written out here.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import rr.generation.cache as cache_mod
from rr.generation.base import Completion
from rr.generation.cache import GenerationCache, parse_entry

IDENT = {"model_id": "m", "revision": "r"}


def _line(key: str, text: str, p: int = 3, c: int = 1) -> bytes:
    return json.dumps({"key": key, "text": text, "prompt_tokens": p, "completion_tokens": c}).encode() + b"\n"


def full_load(folder: Path) -> tuple[dict[str, Completion], dict[str, int]]:
    """The former reader: every shard into one dict; skipped lines per shard name."""
    entries: dict[str, Completion] = {}
    skipped: dict[str, int] = {}
    for path in sorted(folder.glob("*.jsonl")):
        n = 0
        for raw in path.read_bytes().split(b"\n"):
            if raw.strip():
                e = parse_entry(raw)
                if e is None:
                    n += 1
                else:
                    entries[e[0]] = e[1]
        if n:
            skipped[path.name] = n
    return entries, skipped


def _fixture(root: Path) -> Path:
    """Four shards: interleaved writers, a key rewritten in a later shard and within a shard,
    torn lines inside and at the end, a valid last line without its newline."""
    d = GenerationCache(root, IDENT, writer="probe").dir
    a, b = GenerationCache(root, IDENT, writer="a"), GenerationCache(root, IDENT, writer="b")
    for i in range(40):  # two concurrent writers, batch by batch
        a.put_many([(f"k{i}", Completion(f"a{i}", i, 1))])
        b.put_many([(f"k{i + 20}", Completion(f"b{i}", i, 2))])
    with open(a.shard, "ab") as f:
        f.write(_line("k5", "a5 again") + b'{"key": "torn')  # torn by a kill
    a2 = GenerationCache(root, IDENT, writer="a")  # the same writer name, pid recycled
    a2.put_many([("k100", Completion("after torn", 1, 1))])
    (d / "c-0.jsonl").write_bytes(_line("k3", "c3") + _line("k60", "c60"))
    (d / "z-0.jsonl").write_bytes(
        _line("k1", "z wins") + b"\xff\xfe junk\n" + _line("k200", "no newline")[:-1]
    )
    return d


def _assert_same(root: Path, d: Path, probe: list[str], count: bool = True) -> GenerationCache:
    expected, skipped = full_load(d)
    cache = GenerationCache(root, IDENT, writer="job")
    cache.prefetch(probe)
    for k in probe:
        assert cache.get(k) == expected.get(k), k
    assert cache.torn_lines == sum(skipped.values())
    assert {p.name: n for p, n in cache.skipped_by_shard.items()} == skipped
    if count:  # len() counts distinct key hashes
        assert len(cache) == len(expected)
    return cache


PROBE = [f"k{i}" for i in range(0, 70)] + ["k100", "k200", "missing", "torn"]


def test_lookup_equals_full_load_with_torn_lines_and_concurrent_writers(tmp_path: Path) -> None:
    d = _fixture(tmp_path)
    cache = _assert_same(tmp_path, d, PROBE)
    assert cache.get("k1") == Completion("z wins", 3, 1)  # last shard in name order wins
    assert cache.get("k5") == Completion("a5 again", 3, 1)  # last line of a shard wins
    assert cache.get("k200") == Completion("no newline", 3, 1)
    # a2 indexed a and b when it opened the cache; a grew since, c and z are new
    assert cache.torn_lines == 2 and cache.indexes_built == 3
    assert sorted(p.name for p in (d / "index").glob("*.arrow")) == sorted(
        p.name + ".arrow" for p in d.glob("*.jsonl")
    )
    again = _assert_same(tmp_path, d, PROBE)  # every index is found up to date: none rebuilt
    assert again.indexes_built == 0


def test_index_older_than_its_shard_is_extended_over_the_new_lines_only(tmp_path: Path) -> None:
    d = _fixture(tmp_path)
    _assert_same(tmp_path, d, PROBE)
    shard = sorted(d.glob("b-*.jsonl"))[0]
    with open(shard, "ab") as f:  # the writer went on after the index was built
        f.write(_line("k1", "b grew") + _line("new", "new entry"))
    cache = _assert_same(tmp_path, d, [*PROBE, "new"])
    assert cache.get("new") == Completion("new entry", 3, 1) and cache.indexes_built == 1


def test_missing_corrupt_foreign_or_stale_index_is_rebuilt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    d = _fixture(tmp_path)
    _assert_same(tmp_path, d, PROBE)
    shards = sorted(d.glob("*.jsonl"))
    idx = [d / "index" / (p.name + ".arrow") for p in shards]
    idx[0].unlink()  # missing
    idx[1].write_bytes(b"ARROW1 not really")  # corrupt
    idx[2].write_bytes(idx[3].read_bytes())  # another shard's index
    with caplog.at_level(logging.WARNING):
        cache = _assert_same(tmp_path, d, PROBE)
    assert cache.indexes_built == 3
    assert "unreadable" in caplog.text and "does not match its shard" in caplog.text
    # a shard replaced by other content under its index: the fingerprint no longer matches
    shards[3].write_bytes(_line("k1", "replaced") + _line("k7", "replaced too"))
    cache = _assert_same(tmp_path, d, PROBE)
    assert cache.indexes_built == 1 and cache.get("k7") == Completion("replaced too", 3, 1)


def test_index_pointing_at_wrong_lines_never_changes_an_answer(tmp_path: Path) -> None:
    """A damaged index that still loads (offsets permuted, metadata intact): every hit is checked."""
    d = _fixture(tmp_path)
    _assert_same(tmp_path, d, PROBE)
    path = d / "index" / (sorted(d.glob("a-*.jsonl"))[0].name + ".arrow")
    with pa.OSFile(str(path), "rb") as src:
        table = pa.ipc.open_file(src).read_all()
    offsets = np.roll(table.column("offset").to_numpy(), 1)
    bad = pa.table({"hash": table.column("hash"), "offset": offsets}).replace_schema_metadata(
        table.schema.metadata
    )
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, bad.schema) as w:
        w.write_table(bad)
    _assert_same(tmp_path, d, PROBE)


def test_hash_collisions_give_exact_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a 2-bit hash nearly every key collides; the key on the line decides."""
    real = cache_mod.key_hashes
    monkeypatch.setattr(cache_mod, "key_hashes", lambda keys: real(keys) % np.uint64(4))
    d = _fixture(tmp_path)
    _assert_same(tmp_path, d, PROBE, count=False)


def test_a_job_sees_its_own_writes_and_the_shards_as_opened(tmp_path: Path) -> None:
    d = _fixture(tmp_path)
    cache = GenerationCache(tmp_path, IDENT, writer="job")
    other = GenerationCache(tmp_path, IDENT, writer="other")
    other.put_many([("late", Completion("written after the job opened the cache", 1, 1))])
    assert cache.get("late") is None  # as the former reader: shards as they were when opened
    cache.put_many([("k1", Completion("mine", 1, 1)), ("mine", Completion("x", 1, 1))])
    assert cache.get("k1") == Completion("mine", 1, 1) and cache.get("mine") == Completion("x", 1, 1)
    cache.close()  # the writer indexes its own shard: the next job parses nothing
    nxt = GenerationCache(tmp_path, IDENT, writer="next")
    assert nxt.indexes_built == 1  # only `other`, which was not closed
    assert nxt.get("mine") == Completion("x", 1, 1) and nxt.get("late") is not None
    assert (d / "index" / (cache.shard.name + ".arrow")).exists()
