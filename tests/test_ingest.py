"""The import framework on a real store: detection, atomic replacement, no-op re-import,
and bad input that is reported record by record while the good records import."""

from __future__ import annotations

import hashlib
import re
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
from conftest import PLAN_CONTRACT, ingest_bundle, write_bundle
from hypothesis import given
from hypothesis import strategies as st

from provgraph.bundle.layout import Bundle
from provgraph.errors import ImporterError
from provgraph.ingest import registry
from provgraph.ingest.api import CERTAIN, NO, PG, RDF_TYPE, ImportContext, Importer, Source
from provgraph.ingest.base import Member, Members
from provgraph.ingest.planner import choose_importer, plan_bundle
from provgraph.ingest.run import ingest_paths
from provgraph.ingest.sources import CachedRows, HashCache
from provgraph.ingest.testing import registered
from provgraph.rdf.terms import IRI, TripleWriter, UnstorableValue
from provgraph.store import catalog, open_store

PLAN = "call_id,case,condition,replicate\nC1,s1,A,1\nC2,s1,B,1\n"
CALLS = '{"call_id": "C1", "status": "ok", "output": "out/C1.txt"}\n'


def quads(store) -> set[str]:
    """All data quads except the catalog's own bookkeeping (graph names are fresh per import)."""
    import io

    import pyoxigraph as ox

    buf = io.BytesIO()
    store.dump(buf, ox.RdfFormat.N_QUADS)
    lines = buf.getvalue().decode().splitlines()
    return {line.rsplit(" ", 2)[0] for line in lines if "urn:provgraph:catalog" not in line}


@pytest.fixture
def test_plugins(monkeypatch):
    eps = dict(registry._entry_points())
    for name, cls in (("twin-a", "TwinA"), ("twin-b", "TwinB"), ("crashing", "Crashing")):
        eps[name] = EntryPoint(name, f"plugins_for_tests:{cls}", registry.GROUP)
    monkeypatch.setattr(registry, "_entry_points", lambda: eps)
    registry.get.cache_clear()
    yield
    registry.get.cache_clear()


def test_builtin_importers_are_entry_points() -> None:
    assert {"contract", "plan", "calls", "files"} <= set(registry.names())
    with pytest.raises(ImporterError, match="unknown importer 'nope'; available: "):
        registry.get("nope")


def test_bundle_plan_detects_each_source(tmp_path: Path) -> None:
    root = write_bundle(
        tmp_path / "b",
        {
            "plan.csv": PLAN,
            "calls.jsonl": CALLS,
            "out/C1.txt": "report",
            "notes/readme.md": "x",
            "loose.txt": "y",
            ".hidden/x": "z",
        },
    )
    bundle = Bundle.open(root)
    plan, problems = plan_bundle(bundle, root)
    assert problems == []
    got = {bundle.relpath(p): i.name for p, i in plan}
    assert got == {
        "provgraph.toml": "contract",
        "plan.csv": "plan",
        "calls.jsonl": "calls",
        "out": "files",
        "notes": "files",
        "loose.txt": "files",
    }
    assert bundle.relpath(plan[0][0]) == "provgraph.toml"  # the contract goes first


def test_tie_is_an_error_listing_candidates(tmp_path: Path, test_plugins) -> None:
    root = write_bundle(tmp_path / "b", {"x.twin": "1"})
    bundle = Bundle.open(root)
    with pytest.raises(
        ImporterError, match=r"x.twin: several importers match equally well \(twin-a, twin-b\)"
    ):
        choose_importer(root / "x.twin", bundle)
    assert choose_importer(root / "x.twin", bundle, "twin-b").name == "twin-b"
    plan, problems = plan_bundle(bundle, root)
    assert [str(p) for p in problems] == [
        "x.twin: several importers match equally well (twin-a, twin-b); choose one in [ingest].importers"
    ]
    assert "x.twin" not in {bundle.relpath(p) for p, _ in plan}


def test_contract_override_wins_over_detection(tmp_path: Path, test_plugins) -> None:
    contract = PLAN_CONTRACT + '\n[ingest]\nimporters = { "x.twin" = "twin-a" }\n'
    root = write_bundle(tmp_path / "b", {"x.twin": "1"}, contract)
    bundle = Bundle.open(root)
    plan, problems = plan_bundle(bundle, root)
    assert problems == []
    assert {bundle.relpath(p): i.name for p, i in plan}["x.twin"] == "twin-a"


def test_reimport_is_a_noop_and_changed_bytes_replace(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {"plan.csv": PLAN, "calls.jsonl": CALLS, "out/C1.txt": "r"})
    store, results, _ = ingest_bundle(root)
    assert {r.outcome for r in results} == {"imported"}
    before = quads(store)
    count = store.quad_count()
    _, again, _ = ingest_bundle(root, store)
    assert {r.outcome for r in again} == {"unchanged"}
    assert store.quad_count() == count
    assert quads(store) == before

    (root / "plan.csv").write_text(PLAN + "C3,s2,A,1\n")
    _, third, _ = ingest_bundle(root, store)
    outcome = {r.rel: r.outcome for r in third}
    assert outcome["plan.csv"] == "imported" and outcome["calls.jsonl"] == "unchanged"
    rows = store.select(
        "PREFIX pg: <https://w3id.org/provgraph/ns#> "
        "SELECT ?id WHERE { ?c a pg:PlannedCall ; pg:callId ?id } ORDER BY ?id"
    )
    assert [r["id"].value for r in rows] == ["C1", "C2", "C3"]
    # exactly one graph per source: the old plan graph is gone
    assert len(store.named_graphs()) == len(catalog.slots(store)) + 1


def test_import_activity_records_source_and_importer(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {"plan.csv": PLAN})
    store, _, _ = ingest_bundle(root)
    rows = store.select("""PREFIX pg: <https://w3id.org/provgraph/ns#>
        PREFIX prov: <http://www.w3.org/ns/prov#>
        SELECT ?path ?sha ?size ?name ?version WHERE {
          ?i a pg:Import ; prov:used ?src ; prov:wasAssociatedWith ?agent .
          ?src pg:path ?path ; pg:sha256 ?sha ; pg:byteSize ?size .
          ?agent pg:name ?name ; pg:version ?version . FILTER(?path = "plan.csv") }""")
    import hashlib

    (row,) = rows
    assert row["sha"].value == hashlib.sha256(PLAN.encode()).hexdigest()
    assert int(row["size"].value) == len(PLAN)
    assert (row["name"].value, row["version"].value) == ("plan", "1")


def test_bad_plan_rows_are_reported_and_good_rows_import(tmp_path: Path) -> None:
    plan = (
        b"call_id,case,condition,replicate\n"
        b"C1,s1,A,1\n"
        b"C2,s1,B,two\n"  # 3: not a number
        b"C1,s2,A,1\n"  # 4: duplicate call id
        b",s2,B,1\n"  # 5: empty call id
        b"C5,s2,B\n"  # 6: short row
        b"C6,s\xff,B,1\n"  # 7: not UTF-8
        b"C7,s1,A,1\n"  # 8: same cell as C1
        b"C8,s3,A,0\n"  # 9: replicate 0
        b"C9,s3,B,1\n"
    )
    root = write_bundle(tmp_path / "b", {"plan.csv": plan})
    store, results, _ = ingest_bundle(root)
    (result,) = [r for r in results if r.rel == "plan.csv"]
    assert result.outcome == "imported"
    assert [(p.line, p.reason) for p in result.problems] == [
        (3, "replicate must be a whole number, got 'two'"),
        (4, "duplicate call_id 'C1' (first on line 2)"),
        (5, "empty call_id"),
        (6, "expected 4 fields, found 3"),
        (7, "not UTF-8 text"),
        (8, "case 's1', condition 'A', replicate 1 is planned twice (first on line 2)"),
        (9, "replicate must be at least 1, got 0"),
    ]
    assert str(result.problems[0]) == "plan.csv:3: replicate must be a whole number, got 'two'"
    rows = store.select(
        "PREFIX pg: <https://w3id.org/provgraph/ns#> "
        "SELECT ?id WHERE { ?c a pg:PlannedCall ; pg:callId ?id } ORDER BY ?id"
    )
    assert [r["id"].value for r in rows] == ["C1", "C9"]
    # the rejections are in the graph too, and reported again on a no-op re-import
    _, again, _ = ingest_bundle(root, store)
    (result2,) = [r for r in again if r.rel == "plan.csv"]
    assert result2.outcome == "unchanged"
    assert [(p.line, p.reason) for p in result2.problems] == [(p.line, p.reason) for p in result.problems]


def test_bad_call_records_are_reported(tmp_path: Path) -> None:
    calls = "\n".join(
        [
            '{"call_id": "C1", "status": "ok", "output": "out/C1.txt"}',
            '{"call_id": "C2", "status": "ok"',  # 2 malformed
            '{"call_id": "C3", "status": "ok", "ouput": "x"}',  # 3 unknown key
            '{"call_id": 4, "status": "ok"}',  # 4 wrong type
            '{"call_id": "C5", "status": "finished"}',  # 5 unknown status
            '{"call_id": "C6", "status": "ok", "status": "error"}',  # 6 duplicate key
            "[1, 2]",  # 7 not an object
            '{"call_id": "C8", "status": "ok", "started_at": "yesterday"}',  # 8 bad timestamp
            '{"call_id": "C9", "status": "Succeeded", "x_latency_ms": 5}',
            "",
        ]
    )
    root = write_bundle(tmp_path / "b", {"calls.jsonl": calls, "plan.csv": PLAN})
    store, results, _ = ingest_bundle(root)
    (result,) = [r for r in results if r.rel == "calls.jsonl"]
    reasons = {p.line: p.reason for p in result.problems}
    assert set(reasons) == {2, 3, 4, 5, 6, 7, 8}
    assert reasons[2].startswith("malformed JSON")
    assert reasons[3].startswith("unknown key(s) ouput")
    assert reasons[4] == "call_id must be str, got int"
    assert reasons[5].startswith("unknown status 'finished'")
    assert reasons[6] == "duplicate key 'status' in one record"
    assert reasons[7] == "expected a JSON object, got list"
    assert reasons[8].startswith("started_at is not an ISO 8601 timestamp")
    rows = store.select(
        "PREFIX pg: <https://w3id.org/provgraph/ns#> "
        "SELECT ?id ?st ?raw WHERE { ?r a pg:CallRecord ; pg:callId ?id ; pg:status ?st "
        "OPTIONAL { ?r pg:rawStatus ?raw } } ORDER BY ?id"
    )
    assert [(r["id"].value, r["st"].value, r["raw"] and r["raw"].value) for r in rows] == [
        ("C1", "ok", None),
        ("C9", "ok", "Succeeded"),
    ]


def test_missing_column_fails_the_file_and_keeps_the_old_graph(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {"plan.csv": PLAN})
    store, _, _ = ingest_bundle(root)
    before = quads(store)
    (root / "plan.csv").write_text("call_id,case,cond\nC1,s1,A\n")
    bundle = Bundle.open(root)
    results, _ = ingest_paths(store, bundle, [root / "plan.csv"], "plan")
    (result,) = results
    assert result.outcome == "failed"
    assert result.error == "plan.csv:1: missing column(s) condition (header: call_id, case, cond)"
    assert quads(store) == before


def test_crashing_importer_leaves_no_partial_graph(tmp_path: Path, test_plugins) -> None:
    root = write_bundle(tmp_path / "b", {"a.crash": "x"})
    store, results, _ = ingest_bundle(root)
    (result,) = [r for r in results if r.rel == "a.crash"]
    assert result.outcome == "failed"
    assert "importer 'crashing' failed: KeyError" in result.error
    assert catalog.current(store, "import:crashing:a.crash") is None
    assert not store.ask(
        "ASK { ?s a <https://w3id.org/provgraph/ns#File> ; ?p ?o "
        "FILTER(STRSTARTS(STR(?s), 'https://example.org/t/thing/')) }"
    )


def test_output_path_outside_bundle_never_matches_a_file(tmp_path: Path) -> None:
    calls = '{"call_id": "C1", "status": "ok", "output": "../elsewhere/C1.txt"}\n'
    root = write_bundle(tmp_path / "b", {"calls.jsonl": calls, "plan.csv": PLAN})
    store, _, _ = ingest_bundle(root)
    (row,) = store.select(
        "PREFIX pg: <https://w3id.org/provgraph/ns#> SELECT ?f WHERE { ?r pg:outputFile ?f }"
    )
    assert row["f"].value.startswith("https://example.org/t/external/")


def test_on_disk_store_persists(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {"plan.csv": PLAN})
    location = tmp_path / "store"
    store = open_store(location)
    ingest_bundle(root, store)
    n = store.quad_count()
    store.close()
    reopened = open_store(location)
    assert reopened.quad_count() == n
    reopened.close()


def test_call_record_image_fields(tmp_path: Path) -> None:
    digest = "a" * 64
    calls = (
        f'{{"call_id": "C1", "status": "ok", "image": "img/s1.png", "image_sha256": "{digest}"}}\n'
        '{"call_id": "C2", "status": "ok", "image_sha256": "ABC"}\n'
    )
    root = write_bundle(tmp_path / "b", {"calls.jsonl": calls, "plan.csv": PLAN})
    store, results, _ = ingest_bundle(root)
    (result,) = [r for r in results if r.rel == "calls.jsonl"]
    assert [(p.line, p.reason) for p in result.problems] == [
        (2, "image_sha256 must be 64 lower-case hex digits, got 'ABC'")
    ]
    (row,) = store.select(
        "PREFIX pg: <https://w3id.org/provgraph/ns#> "
        "SELECT ?img ?sha WHERE { ?r pg:inputImage ?img ; pg:imageSha256 ?sha }"
    )
    assert row["img"].value == "https://example.org/t/file/img/s1.png"
    assert row["sha"].value == digest


def slot_keys(store) -> set[str]:
    return {s.key for s in catalog.slots(store)}


def test_deleted_sources_are_removed_on_a_full_ingest(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {"plan.csv": PLAN, "calls.jsonl": CALLS, "notes.txt": "x"})
    store, _, _ = ingest_bundle(root)
    assert "import:files:notes.txt" in slot_keys(store)
    (root / "notes.txt").unlink()
    _, results, _ = ingest_bundle(root, store)
    assert [(r.rel, r.outcome) for r in results if r.outcome == "removed"] == [("notes.txt", "removed")]
    assert "import:files:notes.txt" not in slot_keys(store)
    assert not store.ask('ASK { ?f <https://w3id.org/provgraph/ns#path> "notes.txt" }')


def test_a_folder_read_differently_replaces_its_old_source(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {"plan.csv": PLAN, "logs/a.txt": "x"})
    store, _, _ = ingest_bundle(root)
    assert "import:files:logs" in slot_keys(store)
    (root / "logs" / "calls.jsonl").write_text(CALLS)
    _, results, _ = ingest_bundle(root, store)
    keys = slot_keys(store)
    assert "import:files:logs" not in keys
    assert {"import:calls:logs/calls.jsonl", "import:files:logs/a.txt"} <= keys
    assert ("logs", "removed") in [(r.rel, r.outcome) for r in results]
    # a.txt is described by exactly one graph
    rows = store.select(
        'SELECT ?g WHERE { GRAPH ?g { ?f <https://w3id.org/provgraph/ns#path> "logs/a.txt" } }'
    )
    assert len(rows) == 1


def test_partial_ingest_uses_the_whole_bundle_plan(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {"plan.csv": PLAN, "out/C1.txt": "a", "out/C2.txt": "b"})
    store = open_store(None)
    bundle = Bundle.open(root)
    results, problems = ingest_paths(store, bundle, [root / "out" / "C1.txt"])
    assert problems == []
    # the file is part of the folder's source, so the folder is what gets (re)imported
    assert [(r.rel, r.importer) for r in results] == [("out", "files")]
    (root / "skip").mkdir()
    (root / "skip" / "x.txt").write_text("x")
    contract = (root / "provgraph.toml").read_text() + '\n[ingest]\nexclude = ["skip"]\n'
    (root / "provgraph.toml").write_text(contract)
    bundle = Bundle.open(root)
    results, problems = ingest_paths(store, bundle, [root / "skip" / "x.txt"])
    assert results == []
    assert [str(p) for p in problems] == ["skip/x.txt: not imported: hidden, or excluded by [ingest].exclude"]


def test_explicit_importer_for_one_path(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {"plan.csv": PLAN})
    store, _, _ = ingest_bundle(root)
    bundle = Bundle.open(root)
    results, _ = ingest_paths(store, bundle, [root / "plan.csv"], "files")
    assert [(r.rel, r.importer, r.outcome) for r in results] == [
        ("plan.csv", "files", "imported"),
        ("plan.csv", "plan", "removed"),
    ]
    assert "import:plan:plan.csv" not in slot_keys(store)
    with pytest.raises(ImporterError, match="does not read a folder"):
        ingest_paths(store, bundle, [root], "plan")


class _Unstorable(Importer):
    """Writes one good triple, then whatever value its ``*.bad`` file names."""

    name = "unstorable"
    handles = "file"

    def detect(self, path: Path, bundle: Bundle) -> int:
        return CERTAIN if path.suffix == ".bad" else NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        ctx.add(ctx.source_iri, RDF_TYPE, PG.File)
        kind = source.path.read_text().strip()
        ctx.add(ctx.source_iri, PG.message, "x\ud800" if kind == "surrogate" else "v" * (16 << 20))


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("surrogate", r"a string holds a lone surrogate \\ud800: not storable as UTF-8 text"),
        ("huge", "a value of 16777[0-9]+ bytes: over 15 MiB, the limit for one stored value"),
    ],
)
def test_an_unstorable_value_fails_its_source_alone(tmp_path: Path, kind: str, reason: str) -> None:
    root = write_bundle(tmp_path / "b", {"one.bad": kind, "calls.jsonl": CALLS})
    with registered(_Unstorable):
        ingested = ingest_bundle(root)
    assert ingested.result("one.bad").outcome == "failed"
    error = ingested.result("one.bad").error
    prefix = re.escape("one.bad: cannot store a value (the source is not imported): ")
    assert re.fullmatch(prefix + reason, error or "")
    assert ingested.result("calls.jsonl").records == 1
    assert ingested.select("SELECT ?f WHERE { GRAPH ?g { ?f a pg:File } }") == []


def test_the_writer_refuses_an_unstorable_value_before_writing_it() -> None:
    import io

    out = io.StringIO()
    writer = TripleWriter(out)
    writer.add(IRI("http://e/s"), IRI("http://e/p"), "caf\u00e9")
    for bad in ("a\udc80", "v" * (16 << 20), IRI("http://e/" + "\u00e9" * (8 << 20))):
        with pytest.raises(UnstorableValue):
            writer.add(IRI("http://e/s"), IRI("http://e/p"), bad)
    assert writer.count == 1 and out.getvalue().count("\n") == 1


def test_a_nul_in_a_csv_row_costs_only_that_row(tmp_path: Path) -> None:
    plan = "call_id,case,condition,replicate\nC1,s1,A,1\nC2,s\x001,B,1\nC3,s1,A,2\n"
    root = write_bundle(tmp_path / "b", {"plan.csv": plan})
    result = ingest_bundle(root).result("plan.csv")
    assert result.importer == "plan"  # not taken for a binary file: the other rows import
    assert result.records + len(result.problems) == 3 and {p.line for p in result.problems} <= {3}


def test_an_unclosed_quote_in_a_csv_row_costs_only_that_row(tmp_path: Path) -> None:
    plan = 'call_id,case,condition,replicate\nC1,s1,A,1\nC2,"s1,B,1\nC3,s1,A,2\nC4,s1,B,2\n'
    root = write_bundle(tmp_path / "b", {"plan.csv": plan})
    result = ingest_bundle(root).result("plan.csv")
    assert result.records == 3
    reasons = [str(p) for p in result.problems]
    assert reasons == ["plan.csv:3: expected 4 fields, found 2 (an unclosed quote?)"]


@pytest.mark.parametrize("brk", ["\x1c", "\x0b", "\r", "\x85", "\u2028"])
def test_a_rejection_quoting_a_line_break_stays_one_line(tmp_path: Path, brk: str) -> None:
    """A header the fuzzer flipped into a line-break character is quoted escaped (found by
    bench/fuzz.py: `str.splitlines` cut such a message in two)."""
    contract = PLAN_CONTRACT + '\n[ingest]\nimporters = { "plan.csv" = "plan" }\n'  # as --importer plan
    root = write_bundle(tmp_path / "b", {"plan.csv": f"call_id,ca{brk}se,condition\nC1,s1,A\n"}, contract)
    _, results, _ = ingest_bundle(root)
    (result,) = [r for r in results if r.rel == "plan.csv"]
    assert result.outcome == "failed" and "missing column(s) case" in result.error
    assert len(result.error.splitlines()) == 1


_NAMES = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)


@given(st.lists(st.tuples(_NAMES, st.binary(min_size=1, max_size=8), st.integers(0, 2**40)), max_size=30))
def test_a_trees_members_read_back_as_written_and_hash_as_its_manifest(files) -> None:
    """A folder's files are held as one manifest (provgraph.ingest.base.Members) and read back
    as Member objects: the same files in the same order, names with newlines or non-ASCII
    characters included, and the manifest the tree digest was always taken over."""
    rows = [(f"dir/{name}", hashlib.sha256(data).hexdigest(), size) for name, data, size in files]
    members = Members(rows)
    expected = tuple(Member(*row) for row in rows)
    assert len(members) == len(rows) and tuple(members) == expected and members == expected
    assert hash(members) == hash(expected) and members == Members(rows)
    assert members.manifest == "".join(f"{sha}  {rel}\n" for rel, sha, _ in rows).encode()
    assert members.size == sum(size for *_, size in rows)
    if rows:
        assert members[-1] == expected[-1] and members[0] == expected[0]
        assert members[1:3] == expected[1:3] and members[::-1] == expected[::-1]
    with pytest.raises(IndexError):
        members[len(rows)]


_PATHS = st.lists(
    st.tuples(st.sampled_from(["a", "a/b", "ab", "dicom"]), st.text("xyz/é0.", min_size=1, max_size=6)),
    max_size=40,
    unique=True,
)


@given(rows=_PATHS, asked=st.lists(st.text("xyz/é0.ab", min_size=1, max_size=9), max_size=30))
def test_a_folders_cached_hashes_read_in_chunks_answer_as_all_of_them(tmp_path_factory, rows, asked) -> None:
    """A folder's cached hashes are read a chunk at a time as look-ups ask for increasing paths
    (a dict of every row was a row per file in memory: 10^6 output files at 10^6 calls): every
    look-up, in order, out of order, absent or across chunk boundaries (3 rows a chunk here),
    answers what the whole folder's rows would."""
    cache = HashCache(tmp_path_factory.mktemp("cache"))
    table = {f"{folder}/{name}": (len(name), 1, 2, 3, f"{i:064x}") for i, (folder, name) in enumerate(rows)}
    cache._pending = [(path, *row) for path, row in table.items()]
    cache.commit()
    for folder in ("a", "ab", "."):
        prefix = "" if folder == "." else folder + "/"
        whole = {p: r for p, r in table.items() if p.startswith(prefix)}
        known = CachedRows(cache._db, folder)
        known._CHUNK = 3
        wanted = sorted(whole) + sorted(prefix + a for a in asked) + [prefix + a for a in asked]
        for path in wanted:
            assert known.get(path) == whole.get(path), path
    cache.close()
