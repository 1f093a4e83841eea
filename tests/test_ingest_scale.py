"""What makes ingest scale, on real stores: the store loads while the importer writes (and an
import that fails midway leaves nothing), unchanged files are not hashed twice, and detection
only asks importers whose suffix hint fits."""

from __future__ import annotations

import os
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
from conftest import PLAN_CONTRACT, RULE_FIXTURES, ingest_bundle, rule_bundle, write_bundle
from fixtures.rulepairs import TWINS

from provgraph.bundle.layout import Bundle
from provgraph.errors import StoreError
from provgraph.ingest import registry, sources
from provgraph.ingest.api import FALLBACK
from provgraph.ingest.run import ingest_paths
from provgraph.store import catalog, open_store

PLAN = "call_id,case,condition\nC1,s1,A\nC2,s1,B\n"


@pytest.fixture
def late_plugin(monkeypatch):
    eps = dict(registry._entry_points())
    eps["crashing-late"] = EntryPoint("crashing-late", "plugins_for_tests:CrashingLate", registry.GROUP)
    monkeypatch.setattr(registry, "_entry_points", lambda: eps)
    registry.get.cache_clear()
    yield
    registry.get.cache_clear()


def test_failing_after_megabytes_leaves_no_graph(tmp_path: Path, late_plugin) -> None:
    root = write_bundle(tmp_path / "b", {"x.late": "x", "plan.csv": PLAN})
    store = open_store(tmp_path / "store")
    assert store.streams_loads  # the embedded store loads while the importer writes
    _, results, _ = ingest_bundle(root, store)
    by = {r.rel: r for r in results}
    assert by["x.late"].outcome == "failed" and "late failure" in by["x.late"].error
    assert by["plan.csv"].outcome == "imported"
    assert catalog.current(store, "import:crashing-late:x.late") is None
    live = {s.graph for s in catalog.slots(store)} | {catalog.CATALOG}
    assert set(store.named_graphs()) == live  # the abandoned staging graph was removed
    assert not store.ask("ASK { ?s ?p ?o FILTER(CONTAINS(STR(?s), '/thing/x.late/')) }")
    store.close()


def test_a_large_source_is_loaded_in_segments(tmp_path: Path, monkeypatch) -> None:
    # one chunk (1 MiB) per bulk load: a plan of 30,000 calls (several MiB of N-Triples) takes
    # several loads into the same staging graph, each of whole lines, and every triple arrives
    # exactly once
    plan = "call_id,case,condition\n" + "".join(f"C{i},s{i // 2},{'AB'[i % 2]}\n" for i in range(30_000))
    root = write_bundle(tmp_path / "b", {"plan.csv": plan}, PLAN_CONTRACT)
    loads: list[str] = []
    real = type(open_store(tmp_path / "probe")).bulk_load_bytes
    monkeypatch.setattr(catalog, "_SEGMENT", 1)
    store = open_store(tmp_path / "store")
    monkeypatch.setattr(
        type(store), "bulk_load_bytes", lambda self, b, g: (loads.append(g), real(self, b, g))[1]
    )
    _, results, _ = ingest_bundle(root, store)
    (result,) = [r for r in results if r.rel == "plan.csv"]
    graph = catalog.current(store, "import:plan:plan.csv").graph
    assert loads.count(graph) > 3  # (the contract is another, smaller import)
    assert store.quad_count(graph) == result.triples
    assert (
        int(
            store.select(
                "SELECT (COUNT(*) AS ?n) WHERE { ?c a <https://w3id.org/provgraph/ns#PlannedCall> }"
            )[0]["n"].value
        )
        == 30_000
    )
    store.close()


def test_a_large_old_graph_is_dropped_in_pieces(tmp_path: Path, monkeypatch) -> None:
    # a re-ingest of a changed source drops the graph it replaces; a large one goes quad by quad
    # in pieces with the write buffers flushed between them (remove_graph's one transaction held
    # every quad: bench/README.md), and every quad of it goes, and nothing of any other graph
    from provgraph.store import oxigraph

    monkeypatch.setattr(oxigraph, "DROP_CHUNK", 1_000)
    monkeypatch.setattr(oxigraph, "DROP_FLUSH_EVERY", 3_000)
    plan = "call_id,case,condition\n" + "".join(f"C{i},s{i // 2},{'AB'[i % 2]}\n" for i in range(2_000))
    root = write_bundle(tmp_path / "b", {"plan.csv": plan}, PLAN_CONTRACT)
    store = open_store(tmp_path / "store")
    ingest_bundle(root, store)
    old = catalog.current(store, "import:plan:plan.csv").graph
    others = {s.graph: store.quad_count(s.graph) for s in catalog.slots(store) if s.graph != old}
    assert store.quad_count(old) > 5 * oxigraph.DROP_CHUNK
    removed: list[object] = []
    flushes: list[int] = []
    real_remove, real_flush = type(store._ox).remove, type(store._ox).flush

    class Counting:  # the real store, its removals and flushes counted
        def __getattr__(self, name: str) -> object:
            return getattr(real_ox, name)

        def remove(self, quad: object) -> None:
            removed.append(quad)
            real_remove(real_ox, quad)

        def flush(self) -> None:
            flushes.append(len(removed))
            real_flush(real_ox)

    real_ox, store._ox = store._ox, Counting()
    (root / "plan.csv").write_text(plan + "C9999,s9,A\n")
    _, results, _ = ingest_bundle(root, store)
    assert [r.outcome for r in results if r.rel == "plan.csv"] == ["imported"]
    store._ox = real_ox
    assert old not in store.named_graphs() and store.quad_count(old) == 0
    assert len(removed) > 5 * oxigraph.DROP_CHUNK  # in pieces, quad by quad
    during = [n for n in flushes if 0 < n < len(removed)]
    assert during[:2] == [3_000, 6_000]  # the buffers flushed as the removal went
    assert {g: store.quad_count(g) for g in others} == others
    assert store.quad_count(catalog.current(store, "import:plan:plan.csv").graph) > 0
    store.close()


def test_a_small_graph_is_dropped_in_one_transaction(tmp_path: Path) -> None:
    store = open_store(tmp_path / "store")
    before = set(store.named_graphs())
    store.update(
        "INSERT DATA { GRAPH <urn:g:small> { <urn:a> <urn:p> 1, 2, 3 } "
        "GRAPH <urn:g:keep> { <urn:a> <urn:p> 4 } }"
    )
    store.drop_graph("urn:g:small")
    store.drop_graph("urn:g:absent")  # no error
    assert set(store.named_graphs()) == before | {"urn:g:keep"}
    assert (store.quad_count("urn:g:small"), store.quad_count("urn:g:keep")) == (0, 1)
    store.close()


def test_a_loader_failure_fails_the_import(tmp_path: Path, monkeypatch) -> None:
    root = write_bundle(tmp_path / "b", {"plan.csv": PLAN * 1})
    store = open_store(tmp_path / "store")

    def broken(self, ntriples, graph):
        raise StoreError("disk full")

    monkeypatch.setattr(type(store), "bulk_load_bytes", broken)
    _, results, _ = ingest_bundle(root, store)
    (plan,) = [r for r in results if r.rel == "plan.csv"]
    assert plan.outcome == "failed" and "disk full" in plan.error
    assert catalog.current(store, "import:plan:plan.csv") is None
    store.close()


def test_unchanged_files_are_not_read_again(tmp_path: Path, monkeypatch) -> None:
    files = {"plan.csv": PLAN, **{f"out/{i}.txt": f"report {i}\n" for i in range(20)}}
    root = write_bundle(tmp_path / "b", files, PLAN_CONTRACT)
    store = open_store(tmp_path / "store")
    ingest_bundle(root, store)
    # beside the store, not in the bundle (which may be read-only or under version control)
    assert (tmp_path / "store.cache" / "hashes.sqlite").is_file()
    assert not (root / ".provgraph").exists()
    read: list[Path] = []
    real = sources.hash_file
    monkeypatch.setattr(sources, "hash_file", lambda p: (read.append(p), real(p))[1])
    _, results, _ = ingest_bundle(root, store)
    assert read == [] and {r.outcome for r in results} == {"unchanged"}
    # a file rewritten with the same size and modification time is hashed again (its ctime moved)
    target = root / "out" / "3.txt"
    st = target.stat()
    target.write_text("report X\n")
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert target.stat().st_size == st.st_size and target.stat().st_mtime_ns == st.st_mtime_ns
    _, results, _ = ingest_bundle(root, store)
    assert [p.name for p in read] == ["3.txt"]
    assert {r.rel: r.outcome for r in results}["out"] == "imported"
    store.close()


def test_suffix_hints_hold_on_every_fixture_file(tmp_path: Path) -> None:
    """An importer's ``suffixes`` hint must cover every file its detect() claims."""
    checked = 0
    for rule_id in sorted(p.name for p in RULE_FIXTURES.iterdir() if p.is_dir()):
        for twin in TWINS:
            root = rule_bundle(rule_id, twin, tmp_path / rule_id / twin)
            checked += _check_suffix_hints(root)
    assert checked > 100


def _check_suffix_hints(root: Path) -> int:
    """How many (file, importer) pairs of ``root`` were checked."""
    checked = 0
    bundle = Bundle.open(root)
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        for importer in registry.all_importers():
            if importer.suffixes is None or not importer.accepts(path):
                continue
            try:
                score = importer.detect(path, bundle)
            except Exception:
                continue
            checked += 1
            if score > FALLBACK:
                assert path.suffix.lower() in importer.suffixes, (importer.name, path)
    return checked


def test_planning_lists_a_large_tree_once(tmp_path: Path, monkeypatch) -> None:
    """The bundle is walked once per ingest: the planner, the hashing of the one tree and the
    importers all read that listing (issue 21: no re-listing)."""
    files = {f"outputs/{i // 50:02d}/{i}.txt": "x" for i in range(500)}
    root = write_bundle(tmp_path / "b", {"plan.csv": PLAN, **files}, PLAN_CONTRACT)
    walks: list[str] = []
    real = Bundle._walk
    monkeypatch.setattr(Bundle, "_walk", lambda b, f, rel: (walks.append(rel), real(b, f, rel))[1])
    store = open_store(None)
    results, problems = ingest_paths(store, Bundle.open(root), [root])
    assert walks == ["."] and not problems
    assert {r.rel for r in results} == {"provgraph.toml", "plan.csv", "outputs"}


def test_a_segment_the_real_loader_refuses_fails_that_source_only(tmp_path: Path, monkeypatch) -> None:
    # the plan's segment reaches Oxigraph cut mid-line, so the real loader refuses it (a
    # SyntaxError) after the plan was read: the plan is reported failed, its path first, with
    # the loader's reason; its staging graph is gone, no catalog entry points to it, it is
    # listed as failed (the gate stays closed), and the sources before and after it import
    root = write_bundle(
        tmp_path / "b", {"plan.csv": PLAN, "zz.txt": "after the plan\n", "notes/1.md": "# 1\n"}
    )
    store = open_store(tmp_path / "store")
    real = type(store).bulk_load_bytes
    monkeypatch.setattr(
        type(store),
        "bulk_load_bytes",
        lambda self, nt, graph: real(self, nt[:-3] if b"PlannedCall" in nt else nt, graph),
    )
    results, _ = ingest_paths(store, Bundle.open(root), [root])
    by = {r.rel: r for r in results}
    assert by["plan.csv"].outcome == "failed"
    error = by["plan.csv"].error
    assert error.startswith("plan.csv: not imported: ")  # the source first, on one line
    assert "failed: Parser error" in error and "\n" not in error  # then the loader's own reason
    assert {r.outcome for rel, r in by.items() if rel != "plan.csv"} == {"imported"}
    assert list(by).index("plan.csv") < len(by) - 1  # a source came after it
    assert catalog.current(store, "import:plan:plan.csv") is None
    assert [k for k, _ in catalog.failed_sources(store)] == ["import:plan:plan.csv"]
    live = {s.graph for s in catalog.slots(store)} | {catalog.CATALOG}
    assert set(store.named_graphs()) == live  # no staging graph left
    store.close()
