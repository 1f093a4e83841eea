"""The per-call evidence view (provgraph/rules/callview.py) on small bundles: what it derives
for one call from several records (the rule-level matrix is tests/test_call_evidence_matrix.py)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import ingest_bundle, write_bundle

from provgraph.lineage.gate import refresh_derived
from provgraph.rdf.vocab import PG_NS

PLAN = "call_id,case,condition,replicate\nC1,s1,A,1\n"


def view(store, call: str, prop: str) -> list[str]:
    rows = store.select(
        f"SELECT ?v WHERE {{ ?c <{PG_NS}callId> {json.dumps(call)} ; <{PG_NS}{prop}> ?v }} ORDER BY ?v"
    )
    return [r["v"].value for r in rows]


def test_a_retry_keeps_its_history_and_every_image_it_sent(tmp_path: Path) -> None:
    """C1 failed with image a.png and was answered with image b.png (no hash taken at the
    request): the call's final state is its ok record, its history keeps the error, and both
    files' bytes count as what it sent (the first file alone hid the second)."""
    answered = "2026-07-01T11:00:00Z"
    records = [
        {"call_id": "C1", "status": "error", "image": "a.png", "ended_at": "2026-07-01T10:00:00Z"},
        {
            "call_id": "C1",
            "status": "ok",
            "image": "b.png",
            "output": "out.txt",
            "ended_at": "2026-07-01T11:00:00Z",
        },
    ]
    records[1]["ended_at"] = answered
    files = {
        "plan.csv": PLAN,
        "calls.jsonl": "".join(json.dumps(r) + "\n" for r in records),
        "a.png": b"\x89PNG first",
        "b.png": b"\x89PNG second",
        "out.txt": "an answer\n",
    }
    store, _, _ = ingest_bundle(write_bundle(tmp_path / "b", files))
    refresh_derived(store)
    assert view(store, "C1", "finalStatus") == ["ok"]
    assert view(store, "C1", "failedStatus") == ["error"]
    assert view(store, "C1", "attemptCount") == ["2"] and view(store, "C1", "okCount") == ["1"]
    assert len(view(store, "C1", "sentImageSha256")) == 2
    assert len(view(store, "C1", "sentImage")) == 2
