"""Helpers shared by the view, report and browser tests: example stores, Turtle loading,
generated flawed bundles, and PATH without graphviz."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

import pyoxigraph as ox
from conftest import FIXTURES, REPO, copy_bundle, ingest_bundle, write_bundle

from provgraph.lineage.gate import run_gate
from provgraph.rules import load_rules
from provgraph.store import catalog

EXAMPLE = REPO / "examples" / "output_gate"
ACCOUNTING_TTL = FIXTURES / "views" / "accounting.ttl"


def example_store(twin: str, tmp_path: Path, record: bool = True):
    """The output-gate example ingested into a memory store, with its check recorded."""
    root = copy_bundle(EXAMPLE / twin, tmp_path / twin)
    store, _, problems = ingest_bundle(root)
    assert not problems
    report = run_gate(store, load_rules(), record=record)
    return store, report


def load_turtle(store, path: Path, key: str = "fixture:turtle") -> None:
    """Load a Turtle file into its own current graph, as an import would."""
    data = path.read_bytes()
    with tempfile.TemporaryDirectory(prefix="provgraph-test-") as tmp:
        nt = Path(tmp) / "data.nt"
        ox.serialize(ox.parse(data, format=ox.RdfFormat.TURTLE), str(nt), format=ox.RdfFormat.N_TRIPLES)
        catalog.replace(store, key, hashlib.sha256(data).hexdigest(), nt)


def generated_flawed_bundle(root: Path, calls: int = 30) -> Path:
    """A call plan with every output defect the report accounts for, written by the test:
    zero-byte outputs, a missing output, a failed call, a call with no record, an unplanned
    record."""
    plan = ["call_id,case,condition,replicate"]
    records = []
    files: dict[str, str | bytes] = {}
    for i in range(calls):
        cid = f"C{i:03d}"
        plan.append(f"{cid},study-{i // 3},cond-{'ABC'[i % 3]},1")
        if i == 0:
            continue  # planned, never run
        status = "error" if i == 1 else "ok"
        out = f"outputs/{cid}.txt"
        records.append(f'{{"call_id": "{cid}", "status": "{status}", "output": "{out}"}}')
        if i in (2, 3):
            files[out] = b""  # zero-byte, logged ok
        elif i == 4:
            pass  # logged ok, never written
        else:
            files[out] = f"report for {cid}\n"
    records.append('{"call_id": "C999", "status": "ok", "output": "outputs/C999.txt"}')
    files["outputs/C999.txt"] = "unplanned\n"
    files["plan.csv"] = "\n".join(plan) + "\n"
    files["calls.jsonl"] = "\n".join(records) + "\n"
    return write_bundle(root, files)


def path_without_dot(tmp_path: Path) -> str:
    """A PATH holding the Python interpreter's folder but no graphviz ``dot``."""
    folder = tmp_path / "bin-without-dot"
    folder.mkdir(exist_ok=True)
    keep = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and not (Path(p) / "dot").exists()]
    path = os.pathsep.join([str(folder), *keep])
    assert shutil.which("dot", path=path) is None
    return path
