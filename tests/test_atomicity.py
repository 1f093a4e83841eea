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
