"""Ingest-level state: an ingest killed (SIGKILL) after some of its sources switched leaves a
run entry in the catalog; `info` reports it, `check` fails closed naming the sources left old,
and the next ingest completes it. Real processes, a real kill, on-disk and server stores."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import REPO, copy_bundle
from oxigraph_server import OxigraphServer

from provgraph.bundle.layout import Bundle
from provgraph.errors import StoreError
from provgraph.ingest.run import ingest_paths
from provgraph.lineage.gate import require_complete_ingest
from provgraph.store import catalog, open_store

EXAMPLE = REPO / "examples" / "output_gate" / "flawed"

#: An ingest that stops (and says so) right after its first source switched: the parent then
#: kills it with SIGKILL, so the kill always lands between two sources of one ingest.
STOPPING_INGEST = textwrap.dedent("""
    import sys, time
    from provgraph.store import catalog
    real_switch = catalog.switch
    def switch_then_wait(store, key, *args):
        real_switch(store, key, *args)
        if key.startswith("import:"):
            store.flush()
            print("SWITCHED", key, file=sys.stderr, flush=True)
            time.sleep(120)
    catalog.switch = switch_then_wait
    from provgraph.cli import main
    main(sys.argv[1:])
""")


def change_every_source(root: Path) -> None:
    """New bytes in each source, so each one is re-read and switched."""
    for rel in ("plan.csv", "calls.jsonl", "outputs/C001.txt"):
        path = root / rel
        path.write_bytes(path.read_bytes() + b"\n")
    (root / "provgraph.toml").write_text((root / "provgraph.toml").read_text() + "\n# edited\n")


def kill_ingest_midway(root: Path, store: str, *targets: str) -> str:
    """Run `provgraph ingest` in a child process, SIGKILL it after its first switch; returns
    the key that switched."""
    args = [sys.executable, "-c", STOPPING_INGEST, "-C", str(root), "--store", store, "ingest", *targets]
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    assert proc.stderr is not None
    try:
        for line in proc.stderr:
            if line.startswith("SWITCHED "):
                os.kill(proc.pid, signal.SIGKILL)
                break
        else:
            pytest.fail(f"the ingest ended without switching a source: {proc.stderr.read()}")
    finally:
        proc.stderr.close()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    return line.split()[1]


def assert_killed_ingest_handled(cli, root: Path, store: str) -> None:
    """Ingest, kill a re-ingest midway; then `info`, `check`, `export`, re-ingest, `check`."""
    opts = ["-C", str(root), "--store", store]
    assert cli(*opts, "ingest").code == 0
    info = json.loads(cli(*opts, "info", "--format", "json").out)
    before = {g["source"]: g["graph"] for g in info["graphs"]}
    change_every_source(root)
    switched = kill_ingest_midway(root, store)

    info = json.loads(cli(*opts, "info", "--format", "json").out)
    [run] = info["unfinished_ingests"]
    assert run["scope"] == ["."]
    graphs = {g["source"]: g["graph"] for g in info["graphs"]}
    old = [k for k in before if k.startswith("import:") and graphs[k] == before[k]]
    assert graphs[switched] != before[switched]
    assert switched not in run["still_old"]
    assert set(old) <= set(run["still_old"]) and len(old) >= 2
    assert run["planned"] == len([k for k in before if k.startswith("import:")])
    table = cli(*opts, "info")
    assert table.code == 0
    assert "half-updated: an ingest started" in table.out
    assert f"{len(run['still_old'])} of {run['planned']} planned source(s) left old" in table.out

    r = cli(*opts, "check")
    assert r.code == 2, r.out
    [line] = r.err.splitlines()
    assert "the store is half-updated" in line and "run `provgraph ingest` again" in line
    assert "plan.csv (plan)" in line or "plan.csv" not in " ".join(run["still_old"])
    assert "gate:" not in r.out  # no report: the gate could not decide

    export = cli(*opts, "export", "--format", "nquads")
    assert export.code == 0
    assert "urn:provgraph:ingest-run" not in export.out and "urn:provgraph:catalog" not in export.out

    r = cli(*opts, "ingest")
    assert r.code == 0, r.err
    assert json.loads(cli(*opts, "info", "--format", "json").out)["unfinished_ingests"] == []
    assert "half-updated" not in cli(*opts, "info").out
    r = cli(*opts, "check")
    assert r.code == 1 and "gate: FAIL" in r.out  # the flawed example's own verdict again


def test_killed_ingest_on_the_embedded_store(cli, tmp_path: Path) -> None:
    root = copy_bundle(EXAMPLE, tmp_path / "b")
    assert_killed_ingest_handled(cli, root, str(root / ".provgraph" / "store"))


def test_killed_ingest_on_a_server(cli, tmp_path: Path) -> None:
    server = OxigraphServer(tmp_path / "oxigraph").start()
    try:
        root = copy_bundle(EXAMPLE, tmp_path / "b")
        assert_killed_ingest_handled(cli, root, server.url)
    finally:
        server.kill()


def test_a_narrower_ingest_settles_its_sources_but_not_the_whole_run(cli, tmp_path: Path) -> None:
    root = copy_bundle(EXAMPLE, tmp_path / "b")
    location = str(root / ".provgraph" / "store")
    assert cli("-C", str(root), "ingest").code == 0
    change_every_source(root)
    kill_ingest_midway(root, location)
    store = open_store(location)
    try:
        [run] = catalog.unfinished_ingests(store)
        assert "import:plan:plan.csv" in run.pending
        ingest_paths(store, Bundle.open(root), [root / "plan.csv"])
        [after] = catalog.unfinished_ingests(store)  # the other sources are still old
        assert after.iri == run.iri
        assert set(after.pending) == set(run.pending) - {"import:plan:plan.csv"}
        with pytest.raises(StoreError, match="half-updated"):
            require_complete_ingest(store)
        ingest_paths(store, Bundle.open(root), [root])
        assert catalog.unfinished_ingests(store) == []
        require_complete_ingest(store)
    finally:
        store.close()


def test_a_killed_ingest_of_a_path_names_that_path(cli, tmp_path: Path) -> None:
    root = copy_bundle(EXAMPLE, tmp_path / "b")
    location = str(root / ".provgraph" / "store")
    assert cli("-C", str(root), "ingest").code == 0
    for name in ("C001.txt", "C002.txt"):
        (root / "outputs" / name).write_text("changed\n")
    (root / "plan.csv").write_bytes((root / "plan.csv").read_bytes() + b"\n")
    kill_ingest_midway(root, location, str(root / "outputs"), str(root / "plan.csv"))
    r = cli("-C", str(root), "check")
    assert r.code == 2
    assert "an ingest of outputs plan.csv started" in r.err
    assert "run `provgraph ingest outputs plan.csv` again" in r.err
    assert cli("-C", str(root), "ingest", str(root / "plan.csv"), str(root / "outputs")).code == 0
    assert cli("-C", str(root), "check").code == 1


def test_completed_and_rejecting_ingests_leave_no_entry(tmp_path: Path) -> None:
    root = copy_bundle(EXAMPLE, tmp_path / "b")
    (root / "calls.jsonl").write_text("{not json\n")  # a rejected source still completes the ingest
    store = open_store(None)
    results, _ = ingest_paths(store, Bundle.open(root), [root])
    assert {r.outcome for r in results} >= {"imported"}
    assert catalog.unfinished_ingests(store) == []
    results, _ = ingest_paths(store, Bundle.open(root), [root])  # all unchanged
    assert catalog.unfinished_ingests(store) == []
    # the entry is catalog-internal: no slot, no current graph, nothing a reader sees as data
    run = catalog.begin_ingest(store, ["."], ["import:plan:plan.csv"])
    assert [s.key for s in catalog.slots(store)] == sorted(s.key for s in catalog.slots(store))
    assert all(not s.key.startswith("urn:") for s in catalog.slots(store))
    catalog.finish_ingest(store, [run])
    assert catalog.unfinished_ingests(store) == []


def test_a_source_that_failed_to_import_closes_the_gate_until_it_imports(cli, tmp_path: Path) -> None:
    """A source that could not be read left the rules reading its evidence as absent, and the
    gate could pass (a texts source, found by a holdout calibration shape): the failure is kept
    in the catalog, `info` names it and `check` refuses to decide (exit 2) until it imports."""
    contract = '[project]\nname = "t"\nbase_iri = "https://example.org/t/"\n\n[release]\ninclude = ["*.md"]\n'
    root = tmp_path / "b"
    root.mkdir()
    (root / "provgraph.toml").write_text(contract)
    (root / "stats.json").write_text('{"statistics": [{"name": "cochran_q", "value": 1.2}')  # cut off
    assert cli("-C", str(root), "ingest").code == 2
    (failed,) = json.loads(cli("-C", str(root), "info", "--format", "json").out)["failed_sources"]
    assert failed["source"].endswith("stats.json") and "not a JSON document" in failed["error"]
    r = cli("-C", str(root), "check")
    assert r.code == 2 and "1 source(s) could not be imported" in r.err and "stats.json:1:" in r.err
    (root / "stats.json").write_text('{"statistics": [{"name": "cochran_q", "value": 1.2}]}\n')
    assert cli("-C", str(root), "ingest").code == 0
    assert json.loads(cli("-C", str(root), "info", "--format", "json").out)["failed_sources"] == []
    assert cli("-C", str(root), "check").code == 0


def test_a_failed_source_that_leaves_the_bundle_no_longer_closes_the_gate(cli, tmp_path: Path) -> None:
    """A source that never imported has no graph to remove: deleting it must still end its
    failure, or the gate would stay closed for a file that is gone."""
    contract = '[project]\nname = "t"\nbase_iri = "https://example.org/t/"\n\n[release]\ninclude = ["*.md"]\n'
    root = tmp_path / "b"
    root.mkdir()
    (root / "provgraph.toml").write_text(contract)
    (root / "stats.json").write_text('{"statistics": [')  # cut off
    assert cli("-C", str(root), "ingest").code == 2
    assert cli("-C", str(root), "check").code == 2
    (root / "stats.json").unlink()
    assert cli("-C", str(root), "ingest").code == 0
    assert json.loads(cli("-C", str(root), "info", "--format", "json").out)["failed_sources"] == []
    assert cli("-C", str(root), "check").code == 0
