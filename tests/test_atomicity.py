"""An import killed at any point leaves the store as it was (or fully switched, if the kill
came after the switch): never half-written. Real processes, real SIGKILL, on-disk stores."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import write_bundle

from provgraph.store import open_store

SMALL = "call_id,case,condition,replicate\nC1,s1,A,1\nC2,s1,B,1\n"
PLANNED = "PREFIX pg: <https://w3id.org/provgraph/ns#> SELECT (COUNT(*) AS ?n) WHERE { ?c a pg:PlannedCall }"


def big_plan(rows: int) -> str:
    return "call_id,case,condition,replicate\n" + "".join(
        f"K{i},case{i // 10},cond{i % 10},1\n" for i in range(rows)
    )


def snapshot(store_dir: Path) -> tuple[set[str], int]:
    import io

    import pyoxigraph as ox

    store = open_store(store_dir)
    try:
        buf = io.BytesIO()
        store.dump(buf, ox.RdfFormat.N_QUADS)
        quads = {
            line.rsplit(" ", 2)[0]
            for line in buf.getvalue().decode().splitlines()
            if "urn:provgraph:catalog" not in line
        }
        planned = int(store.select(PLANNED)[0]["n"].value)
        # every named graph is reachable from the catalog: nothing orphaned or half-loaded
        from provgraph.store import catalog

        assert set(store.named_graphs()) == {s.graph for s in catalog.slots(store)} | {catalog.CATALOG}
        return quads, planned
    finally:
        store.close()


def ingest_cmd(root: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-c",
        "from provgraph.cli import main; main()",
        "-v",
        "-C",
        str(root),
        "ingest",
        *extra,
    ]


@pytest.fixture
def bundle_with_store(tmp_path: Path) -> tuple[Path, set[str]]:
    root = write_bundle(tmp_path / "b", {"plan.csv": SMALL})
    subprocess.run(ingest_cmd(root), check=True, capture_output=True)
    before, planned = snapshot(root / ".provgraph" / "store")
    assert planned == 2
    return root, before


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.0, 0.3, 0.8, 1.5, 3.0])
def test_sigkill_during_import_leaves_old_or_new_state(bundle_with_store, delay: float) -> None:
    root, before = bundle_with_store
    rows = 120_000
    (root / "plan.csv").write_text(big_plan(rows))
    proc = subprocess.Popen(ingest_cmd(root), stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:  # wait until the bulk load has started
        if "loading" in line:
            break
    time.sleep(delay)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    after, planned = snapshot(root / ".provgraph" / "store")
    assert planned in (2, rows), f"half-written store: {planned} planned calls"
    if planned == 2:
        assert after == before


SCRIPT = textwrap.dedent("""
    import os, sys
    from provgraph.store import catalog
    stage = sys.argv[1]
    real_switch = catalog.switch
    def crashing_switch(*args, **kwargs):
        if stage == "before-switch":
            os._exit(9)
        real_switch(*args, **kwargs)
        if stage == "after-switch":
            os._exit(9)
    catalog.switch = crashing_switch
    from provgraph.cli import main
    main(["-C", sys.argv[2], "ingest"])
""")


@pytest.mark.parametrize(("stage", "expect_new"), [("before-switch", False), ("after-switch", True)])
def test_crash_around_the_switch(bundle_with_store, stage: str, expect_new: bool) -> None:
    root, before = bundle_with_store
    (root / "plan.csv").write_text(SMALL + "C3,s2,A,1\n")
    proc = subprocess.run([sys.executable, "-c", SCRIPT, stage, str(root)], capture_output=True)
    assert proc.returncode == 9
    after, planned = snapshot(root / ".provgraph" / "store")
    if expect_new:
        assert planned == 3
    else:
        assert planned == 2
        assert after == before


DROP_SCRIPT = textwrap.dedent("""
    import os, sys
    from provgraph.store import oxigraph
    oxigraph.DROP_CHUNK, oxigraph.DROP_FLUSH_EVERY = 500, 1_000
    real_init = oxigraph.OxigraphStore.__init__
    removed = [0]

    class Dying:  # the real store, killed after its 2,500th removal
        def __init__(self, real):
            self.real = real
        def __getattr__(self, name):
            return getattr(self.real, name)
        def remove(self, quad):
            self.real.remove(quad)
            removed[0] += 1
            if removed[0] == 2_500:
                os._exit(9)

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        self._ox = Dying(self._ox)
    oxigraph.OxigraphStore.__init__ = init
    from provgraph.cli import main
    main(["-C", sys.argv[1], "ingest"])
""")


def _graph_sizes(store_dir: Path) -> dict[str, int]:
    import pyoxigraph as ox

    raw = ox.Store(str(store_dir))  # opened bare: no recovery runs
    try:
        return {g.value: len(list(raw.quads_for_pattern(None, None, None, g))) for g in raw.named_graphs()}
    finally:
        del raw


def test_killed_while_dropping_the_replaced_graph(tmp_path: Path) -> None:
    # the old graph goes in pieces after the switch; a kill between them leaves part of it,
    # which no catalog entry points to: the next open removes the rest
    root = write_bundle(tmp_path / "b", {"plan.csv": big_plan(1_000)})
    subprocess.run(ingest_cmd(root), check=True, capture_output=True)
    before = _graph_sizes(root / ".provgraph" / "store")
    (root / "plan.csv").write_text(big_plan(1_001))
    proc = subprocess.run([sys.executable, "-c", DROP_SCRIPT, str(root)], capture_output=True, text=True)
    assert proc.returncode == 9, proc.stderr
    after = _graph_sizes(root / ".provgraph" / "store")
    (half,) = [g for g in before if 0 < after.get(g, 0) < before[g] - 2_000]  # killed midway
    _, planned = snapshot(root / ".provgraph" / "store")  # asserts no graph is left orphaned
    assert planned == 1_001
    assert half not in _graph_sizes(root / ".provgraph" / "store")
