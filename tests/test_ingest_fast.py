"""The ingest fast paths of issue 21 write exactly what the plain paths wrote: the batched
writer, the string-literal and IRI-key shortcuts, hashing in one right-sized read, and the
second thread that hashes the next sources while one is imported."""

from __future__ import annotations

import hashlib
import io
import os
from decimal import Decimal
from pathlib import Path

import pytest
from conftest import write_bundle

from provgraph.bundle.layout import Bundle
from provgraph.ingest import prefetch, sources
from provgraph.ingest.run import ingest_paths
from provgraph.rdf import terms
from provgraph.rdf.terms import IRI, BatchWriter, Lit, TripleWriter, UnstorableValue, escape_key, mint
from provgraph.store import open_store

S, P = IRI("http://e/s"), IRI("http://e/p")
#: Every kind of object the importers write, and strings that need each N-Triples escape.
VALUES = [
    IRI("http://e/o"),
    "plain",
    'say "hi"',
    "back\\slash",
    "two\nlines\r\n",
    "caf\u00e9",
    "",
    3,
    -0,
    2.5,
    float("nan"),
    True,
    Decimal("1E-9"),
    Lit('x"y', "http://e/dt"),
    None,
]


def test_the_batched_writer_writes_what_the_plain_writer_writes() -> None:
    plain, batched = io.StringIO(), io.StringIO()
    one, many = TripleWriter(plain), BatchWriter(batched)
    for i in range(3 * terms.BATCH + 7):  # several batches and a partial one
        value = VALUES[i % len(VALUES)]
        one.add(S, P, value)
        many.add(S, P, value)
    assert many.count == one.count and batched.getvalue() != plain.getvalue()  # held back
    many.flush()
    assert batched.getvalue() == plain.getvalue() and many.count == one.count


def test_lines_formatted_elsewhere_keep_their_place_after_batched_ones() -> None:
    out = io.StringIO()
    writer = BatchWriter(out)
    writer.add(S, P, "first")
    writer.add_lines('<http://e/s> <http://e/p> "second" .\n', 1)
    writer.add(S, P, "third")
    writer.flush()
    assert [line.split('"')[1] for line in out.getvalue().splitlines()] == ["first", "second", "third"]
    assert writer.count == 3


def test_the_batched_writer_refuses_an_unstorable_value_before_writing_it() -> None:
    out = io.StringIO()
    writer = BatchWriter(out)
    writer.add(S, P, "caf\u00e9")
    for bad in ("a\udc80", "v" * (16 << 20), IRI("http://e/" + "\u00e9" * (8 << 20))):
        with pytest.raises(UnstorableValue):
            writer.add(S, P, bad)
    writer.flush()
    assert writer.count == 1 and out.getvalue().count("\n") == 1


@pytest.mark.parametrize("key", ["C000001", "a b/c>", "..", ".", "x.txt", "\u00e9t\u00e9", "Z9", 7, "\u0661"])
def test_iri_keys_escape_the_same_from_the_cache_and_without_it(key: object) -> None:
    """Arabic-Indic digit one (U+0661) is ``isalnum()`` but not ASCII: it must be percent-encoded."""
    terms._ESCAPED.clear()
    fresh = escape_key(key)
    assert escape_key(key) == fresh == terms._escape(str(key))
    iri = mint("http://e/", "case", key, "k")
    assert iri == "http://e/case/" + fresh + "/k"
    assert all(c.isascii() for c in iri)


def test_the_key_cache_stays_bounded() -> None:
    terms._ESCAPED.clear()
    for i in range(3 * terms._ESCAPED_MAX):
        escape_key(f"k.{i}")
    escape_key("long." * 100)
    assert len(terms._ESCAPED) <= terms._ESCAPED_MAX
    assert "long." * 100 not in terms._ESCAPED


def test_a_bad_kind_or_no_key_is_still_refused() -> None:
    with pytest.raises(ValueError, match="must match"):
        mint("http://e/", "Bad Kind", "x")
    with pytest.raises(ValueError, match="at least one key"):
        mint("http://e/", "case")
    with pytest.raises(ValueError, match="must not be empty"):
        mint("http://e/", "case", "")


@pytest.mark.parametrize("size", [0, 1, 5000, sources._WHOLE, sources._WHOLE + sources._CHUNK + 3])
def test_hashing_reads_every_byte_small_or_large(tmp_path: Path, size: int) -> None:
    path = tmp_path / "f.bin"
    data = os.urandom(size)
    path.write_bytes(data)
    digest, got, key = sources.hash_file(path)
    st = path.stat()
    assert (digest, got) == (hashlib.sha256(data).hexdigest(), size)
    assert key == (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def test_a_file_that_cannot_be_read_is_named(tmp_path: Path) -> None:
    with pytest.raises(sources.InputError, match="cannot read"):
        sources.hash_file(tmp_path / "gone.txt")


PLAN = "call_id,case,condition\nC1,s1,A\nC2,s1,B\n"


def test_hashing_ahead_imports_every_source_in_plan_order(tmp_path: Path, monkeypatch) -> None:
    """More sources than the thread may run ahead: each is hashed once, and imported."""
    monkeypatch.setattr(prefetch, "AHEAD", 1)
    files = {"plan.csv": PLAN, **{f"d{i}/r.txt": f"report {i}\n" for i in range(6)}}
    root = write_bundle(tmp_path / "b", files)
    store = open_store(tmp_path / "store")
    results, problems = ingest_paths(store, Bundle.open(root), [root])
    assert not problems and {r.outcome for r in results} == {"imported"}
    assert [r.rel for r in results][1:] == sorted(r.rel for r in results[1:])  # contract first
    assert {r.rel for r in results} == {"provgraph.toml", "plan.csv", *(f"d{i}" for i in range(6))}
    store.close()


def test_a_source_that_fails_to_hash_costs_only_itself(tmp_path: Path, monkeypatch) -> None:
    files = {"plan.csv": PLAN, "a/r.txt": "a\n", "b/r.txt": "b\n"}
    root = write_bundle(tmp_path / "b", files)
    real = sources.hash_file

    def flaky(path: Path):
        if path.name == "r.txt" and path.parent.name == "a":
            raise sources.InputError(path, "cannot read: Input/output error")
        return real(path)

    monkeypatch.setattr(sources, "hash_file", flaky)
    store = open_store(tmp_path / "store")
    results, _ = ingest_paths(store, Bundle.open(root), [root])
    outcome = {r.rel: r.outcome for r in results}
    assert outcome == {"provgraph.toml": "imported", "plan.csv": "imported", "a": "failed", "b": "imported"}
    (failed,) = [r for r in results if r.outcome == "failed"]
    assert "cannot read: Input/output error" in (failed.error or "")
    store.close()


def test_the_hashing_thread_stops_when_the_imports_stop(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {f"d{i}/r.txt": "x\n" for i in range(8)})
    bundle = Bundle.open(root)
    paths = [bundle.resolve(f"d{i}") for i in range(8)]
    with prefetch.Prefetch(bundle, paths, tmp_path / "cache") as ahead:
        first = ahead.take()()
        assert first.rel == "d0" and first.kind == "tree"
    assert not ahead._thread.is_alive()  # left early (an error in the import loop): no thread left
